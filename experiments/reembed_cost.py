"""experiment=reembed_cost: how many chunks does each update strategy re-embed per document edit?

The SmartVector paper claims a single-word edit re-embeds one chunk with its surgical update instead of the
whole document (its figures: ``core.evaluation.paper_claims.PAPER_REEMBED_COST``). Here every strategy (``full``,
``cdc``, ``surgical``; see ``smartvector_bench.systems.updates``) replays the same seeded edit stream over the dataset's
documents (latest version of each ``doc_id``), and we count, per edit, the chunks re-embedded and the texts actually
sent to the model, and time the update. The embedder's cache is disabled: these are real embedding calls. After
the last edit every strategy's store is compared with a from-scratch rebuild of the final documents
(chunk texts, offsets, vectors, and the top-k chunks of every dataset query over a FAISS index).

Documents are rebuilt from the corpus (``updates.edits.corpus_documents``): a document's chunks in force at its
latest version, in ``offset_start`` order, so a corpus whose unchanged chunks span several versions
(``dataset=git_history``) works too; a dataset without ``metadata.doc_id`` or ``metadata.offset_start`` (a plain
BEIR folder) is refused in one line right after loading, before anything is embedded.

Writes, in ``out_dir``: ``reembed_cost.md`` and the same table as ``table.md`` (printed by the CLI) and,
last, ``reembed_cost.json`` (:class:`~smartvector_bench.core.results.ReembedCost`). Everything is validated
before the first file is written.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from experiments.main import prepare_dataset
from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.atomic import atomic_write_text
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.paper_claims import PAPER_REEMBED_COST
from smartvector_bench.core.index import FlatIndex
from smartvector_bench.core.evaluation.metrics.bootstrap import bootstrap_mean_ci
from smartvector_bench.core.results.provenance import provenance
from smartvector_bench.core.results import ReembedCost
from smartvector_bench.core.run import rank_by_score
from smartvector_bench.core.settings import choice
from smartvector_bench.systems.updates import STRATEGIES, Chunker, DocumentStore, UpdateResult, compare, get_strategy
from smartvector_bench.systems.updates.cdc import CLASSES
from smartvector_bench.systems.updates.edits import (DEFAULT_MIX, EDIT_TYPES, check_mix, corpus_documents, final_texts,
                                              make_edits)
from experiments.config import (MAXIMUM, VECTOR_S, check_data_bounds, check_dataset, check_embedder, check_resampling,
                                experiment_settings)

PAPER_CLAIM = PAPER_REEMBED_COST  # shown beside our counts, never used to compute them


@dataclass
class ReembedSettings:
    POSITIVE = ("n_edits", "chunk_chars", "k", "n_boot")
    MAXIMUM = MAXIMUM

    name: str = "reembed_cost"
    strategies: list = field(default_factory=lambda: list(STRATEGIES))
    mix: dict = field(default_factory=lambda: dict(DEFAULT_MIX))
    n_edits: int = 300
    edit_seed: int = 0
    chunker: str = choice("sentences", "paragraphs")
    chunk_chars: int = 200
    k: int = 10
    vector_atol: float = 1e-6
    n_boot: int = 1000
    bootstrap_seed: int = 0
    progress: bool = True


def settings(exp: dict) -> ReembedSettings:
    """Validate ``cfg["experiment"]``; every error names ``experiment.<key>`` and what is allowed."""
    exp = dict(exp or {})
    strategies = exp.get("strategies", list(STRATEGIES))
    if isinstance(strategies, str):
        strategies = [strategies]
    if not isinstance(strategies, (list, tuple)) or not strategies:
        raise BenchError(f"experiment.strategies={strategies!r}: choose at least one; allowed: "
                         f"{', '.join(STRATEGIES)}")
    for name in strategies:
        if name not in STRATEGIES:
            raise BenchError(f"experiment.strategies: unknown strategy {name!r}; allowed: {', '.join(STRATEGIES)}")
    if len(set(strategies)) != len(strategies):
        raise BenchError(f"experiment.strategies={list(strategies)}: a strategy is listed twice")
    mix = check_mix(exp.get("mix", DEFAULT_MIX), "experiment.mix")
    s = experiment_settings(ReembedSettings, exp, nested={"strategies": list(strategies), "mix": mix})
    return s


# -- statistics ------------------------------------------------------------------------------------------------

def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def strategy_stats(rows: list[tuple[UpdateResult, int, float]], n_boot: int, seed: int) -> dict:
    """Per-edit counts, embedding calls and wall times of one strategy on one group of edits."""
    counts = np.array([r.reembedded for r, _, _ in rows], dtype=np.float64)
    times = np.array([t for _, _, t in rows], dtype=np.float64)
    lo, hi = bootstrap_mean_ci(counts, n_boot=n_boot, seed=seed) if len(rows) else (None, None)
    out = {
        "n_edits": len(rows),
        "chunks_reembedded_mean": _r(counts.mean()) if len(rows) else None,
        "chunks_reembedded_ci": [_r(lo), _r(hi)] if len(rows) else [None, None],
        "chunks_reembedded_per_edit": [int(c) for c in counts],
        "embedding_calls": int(sum(c for _, c, _ in rows)),
        "wall_time_s": {"median": _r(np.median(times), 7) if len(rows) else None,
                        "p95": _r(np.quantile(times, 0.95), 7) if len(rows) else None,
                        "per_edit": [round(float(t), 7) for t in times]},
    }
    if rows and rows[0][0].classes is not None:
        out["classes"] = {c: int(sum(r.classes[c] for r, _, _ in rows)) for c in CLASSES}
    return out


# -- equivalence -----------------------------------------------------------------------------------------------

def _flat(stores: dict[str, DocumentStore]) -> tuple[list[tuple[str, int]], np.ndarray]:
    ids = [(d, c.index) for d in sorted(stores) for c in stores[d].chunks]
    vecs = np.concatenate([stores[d].vectors for d in sorted(stores)], axis=0)
    return ids, vecs


def top_k_ids(stores: dict[str, DocumentStore], query_vecs: np.ndarray, k: int) -> list[list[tuple[str, int]]]:
    """Top-k chunk ids (doc_id, position) per query over a FAISS FlatIndex; ties to the lower row."""
    ids, vecs = _flat(stores)
    ranked, _ = rank_by_score(FlatIndex(vecs).all_scores(query_vecs), k)
    return [[ids[j] for j in row if j >= 0] for row in ranked]


def _rank_gap(reference: dict[str, DocumentStore], query_vecs: np.ndarray, top: list, ref_top: list
              ) -> float | None:
    """Over queries whose top-k differ: the largest rebuilt-score difference between the two chunks found at
    the same rank (None if a chunk id does not exist in the rebuild). Small = the lists differ only by
    the order of near-tied chunks (duplicate texts in several documents)."""
    ids, vecs = _flat(reference)
    row = {cid: i for i, cid in enumerate(ids)}
    gap = 0.0
    for q, (a, b) in enumerate(zip(top, ref_top)):
        for x, y in zip(a, b):
            if x != y:
                if x not in row or y not in row or len(a) != len(b):
                    return None
                gap = max(gap, abs(float(query_vecs[q] @ vecs[row[x]]) - float(query_vecs[q] @ vecs[row[y]])))
    return gap


def equivalence(stores: dict[str, DocumentStore], reference: dict[str, DocumentStore], query_vecs: np.ndarray,
                k: int, atol: float, reference_top: list | None = None) -> dict:
    per_doc = {d: compare(stores[d], reference[d]) for d in sorted(reference)}
    diffs = [c["max_abs_vector_diff"] for c in per_doc.values()]
    shapes_ok = all(x is not None for x in diffs)
    max_diff = max(diffs) if shapes_ok and diffs else None
    top = top_k_ids(stores, query_vecs, k)
    ref_top = reference_top if reference_top is not None else top_k_ids(reference, query_vecs, k)
    mismatched = sum(a != b for a, b in zip(top, ref_top))
    gap = _rank_gap(reference, query_vecs, top, ref_top) if mismatched else 0.0
    out = {
        "texts": all(c["texts"] for c in per_doc.values()),
        "offsets": all(c["offsets"] and c["slices"] for c in per_doc.values()),
        "vectors": bool(shapes_ok and max_diff is not None and max_diff <= atol),
        "max_abs_vector_diff": None if max_diff is None else float(f"{max_diff:.3g}"),
        "vector_atol": atol,
        f"top_{k}": mismatched == 0,
        "queries_with_different_top_k": int(mismatched),
        "max_score_gap_at_differing_ranks": None if gap is None else float(f"{gap:.3g}"),
        "documents_differing": sorted(d for d, c in per_doc.items()
                                      if not (c["texts"] and c["offsets"] and c["slices"]
                                              and c["max_abs_vector_diff"] is not None
                                              and c["max_abs_vector_diff"] <= atol)),
    }
    out["equivalent"] = bool(out["texts"] and out["offsets"] and out["vectors"] and out[f"top_{k}"])
    return out


# -- report ----------------------------------------------------------------------------------------------------

def _cell(m: dict, reduction: float | None) -> str:
    if not m["n_edits"]:
        return "-"
    lo, hi = m["chunks_reembedded_ci"]
    red = "" if reduction is None else f" ({-100 * reduction:+.0f}%)"
    return f"{m['chunks_reembedded_mean']:.2f} [{lo:.2f}, {hi:.2f}]{red}"


def _gap(e: dict) -> str:
    if not e["queries_with_different_top_k"]:
        return ""
    g = e["max_score_gap_at_differing_ranks"]
    return "; chunk ids not in the rebuild" if g is None else f"; max score gap {g:.1e}"


def render(result: dict) -> str:
    ds, cfg = result["dataset"], result["config"]
    groups = [t for t in EDIT_TYPES if result["edits"]["by_type"].get(t)] + ["all"]
    k = cfg["k"]
    lines = [
        "## Re-embedding cost per document edit (experiment=reembed_cost)",
        "",
        f"{ds['n_documents']} documents (latest version of each), {ds['mean_chunks_per_document']:.2f} chunks per "
        f"document on average ({cfg['chunker']}, chunk_chars={cfg['chunk_chars']}); {cfg['n_edits']} seeded edits "
        f"(edit_seed={cfg['edit_seed']}); embedder {result['embedder']}, cache off.",
        "",
        "Mean chunks re-embedded per edit [95% bootstrap CI] (change vs full):",
        "",
        "| strategy | " + " | ".join(f"{g} (n={result['edits']['by_type'][g] if g != 'all' else cfg['n_edits']})"
                                      for g in groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for name, s in result["strategies"].items():
        cells = [_cell(s["by_edit_type"][g], s["reduction_vs_full"].get(g) if name != "full" else None)
                 for g in groups]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", ("| strategy | embedding calls | median wall time / edit | p95 | texts | offsets | vectors "
                   f"(max abs diff) | top-{k} of every query | equivalent to rebuild |"),
              "|---|---|---|---|---|---|---|---|---|"]
    yes = {True: "yes", False: "**no**"}
    for name, s in result["strategies"].items():
        a, e = s["by_edit_type"]["all"], s["equivalent_to_rebuild"]
        diff = "-" if e["max_abs_vector_diff"] is None else f"{e['max_abs_vector_diff']:.1e}"
        lines.append(f"| {name} | {a['embedding_calls']} | {1000 * a['wall_time_s']['median']:.2f} ms | "
                     f"{1000 * a['wall_time_s']['p95']:.2f} ms | {yes[e['texts']]} | {yes[e['offsets']]} | "
                     f"{yes[e['vectors']]} ({diff}) | {yes[e[f'top_{k}']]} "
                     f"({e['queries_with_different_top_k']} of {ds['n_queries']} differ{_gap(e)}) | "
                     f"{yes[e['equivalent']]} |")
    sizes = sorted({k for st in result["strategies"].values() for k in st["single_word_by_document_chunks"]})
    if sizes:
        lines += ["", "Single-word edits by the edited document's size in chunks (the paper's documents average "
                  f"{PAPER_CLAIM['full']}): mean chunks re-embedded (n edits):", "",
                  "| strategy | " + " | ".join(f"{k} chunks" for k in sizes) + " |", "|---|" + "---|" * len(sizes)]
        for name, st in result["strategies"].items():
            by = st["single_word_by_document_chunks"]
            lines.append(f"| {name} | " + " | ".join(
                f"{by[k]['chunks_reembedded_mean']:.2f} (n={by[k]['n_edits']})" if k in by else "-" for k in sizes)
                + " |")
    if "cdc" in result["strategies"]:
        c = result["strategies"]["cdc"]["by_edit_type"]["all"]["classes"]
        lines += ["", "cdc chunk classes over all edits: " + ", ".join(f"{n} {c[n]}" for n in CLASSES)
                  + " (`moved` is our addition to LiveVectorLake's four classes)."]
    lines += ["", (f"Paper claim: a single-word edit re-embeds {PAPER_CLAIM['surgical']} chunk instead of "
                   f"{PAPER_CLAIM['full']} for the whole document (-{100 * PAPER_CLAIM['reduction']:.0f}%). "
                   "Wall times are informational (they vary between runs); counts and equivalence are "
                   "deterministic for a given seed and config."),
              "",
              (f"Provenance: schema {result['schema_version']}, dataset sha256 {ds['sha256']}, git "
               f"{result['provenance']['git']['sha']}, config sha256 {result['provenance']['config_sha256']}")]
    return "\n".join(lines) + "\n"


# -- the experiment --------------------------------------------------------------------------------------------

def validate(cfg: dict) -> ReembedSettings:
    """``experiment.*``, the dataset and the embedder keys, before any work or write."""
    s = settings(cfg.get("experiment"))
    check_dataset(cfg)
    check_embedder(cfg)
    return s


def run(cfg: dict, out_dir: str | Path) -> dict:
    out_dir = Path(out_dir)
    s = validate(cfg)
    chunker = Chunker(s.chunker, s.chunk_chars)
    # Cache off: the experiment measures real embedding calls and wall time. The embedder encodes one text per
    # forward pass, so a vector does not depend on its batch (padding would move MiniLM outputs by ~1e-7, enough
    # to reorder the exact ties between duplicate chunks the edit stream copies between documents).
    emb_cfg = {**dict(cfg["embedder"]), "cache_path": None}
    embedder = build_embedder(emb_cfg)
    dataset = prepare_dataset(cfg, out_dir)
    check_data_bounds(s, dataset)  # k; then n_boot: one per-edit interval per strategy and group (about 16)
    check_resampling(s, s.n_edits, 16 * len(s.strategies) * VECTOR_S * s.n_edits,
                     what=f"{s.n_edits} edits, {len(s.strategies)} strategies")
    # Before any embedding: one line naming a missing field (doc_id, offset_start) of an external dataset.
    docs = corpus_documents(dataset.corpus, dataset.path / "corpus.jsonl")
    if chunker.separator != "\n":  # paragraph chunks: the dataset's sections (lines) become paragraphs
        docs = {d: chunker.separator.join(t.split("\n")) for d, t in docs.items()}
    edits = make_edits(docs, s.n_edits, s.mix, s.edit_seed, chunker.separator)
    progress = bool(s.progress)

    # Initial index (not counted): built once, copied for each strategy.
    base = {d: DocumentStore.build(d, t, chunker, embedder.encode, dim=embedder.dim) for d, t in docs.items()}
    query_vecs = embedder.encode(dataset.queries.texts)

    per_strategy: dict[str, list[tuple[UpdateResult, int, float]]] = {}
    stores_after: dict[str, dict[str, DocumentStore]] = {}
    doc_chunks_before: list[int] = []  # size of the edited document, in chunks, just before each edit
    for name in s.strategies:
        apply = get_strategy(name)
        stores = {d: st.copy() for d, st in base.items()}
        rows = []
        for e in tqdm(edits, desc=f"reembed_cost {name}", unit="edit", disable=not progress, leave=False):
            store = stores[e.doc_id]
            if store.text != e.old_text:
                raise AssertionError(f"{name}: edit {e.edit_id} expects a text the store does not hold")
            if len(doc_chunks_before) < len(edits):
                doc_chunks_before.append(len(store.chunks))
            calls = embedder.calls
            t0 = time.perf_counter()
            result = apply(store, e.new_text, embedder.encode)
            elapsed = time.perf_counter() - t0
            rows.append((result, embedder.calls - calls, elapsed))
        per_strategy[name], stores_after[name] = rows, stores

    # From-scratch rebuild of every final document (one embedding batch per document, not counted).
    final = final_texts(docs, edits)
    reference = {d: DocumentStore.build(d, t, chunker, embedder.encode, dim=embedder.dim) for d, t in final.items()}
    reference_top = top_k_ids(reference, query_vecs, s.k)

    by_type = {t: sum(e.type == t for e in edits) for t in EDIT_TYPES}
    strategies = {}
    for name, rows in per_strategy.items():
        groups = {t: [row for row, e in zip(rows, edits) if e.type == t] for t in EDIT_TYPES}
        groups["all"] = rows
        # The paper gives one figure per single-word edit for documents of a few chunks: break it down by size.
        sizes = {}
        for row, e, size in zip(rows, edits, doc_chunks_before):
            if e.type == "single_word":
                sizes.setdefault(str(size) if size < 4 else "4+", []).append(row)
        strategies[name] = {
            "by_edit_type": {g: strategy_stats(r, s.n_boot, s.bootstrap_seed) for g, r in groups.items()},
            "single_word_by_document_chunks": {k: strategy_stats(v, s.n_boot, s.bootstrap_seed)
                                               for k, v in sorted(sizes.items())},
            "equivalent_to_rebuild": equivalence(stores_after[name], reference, query_vecs, s.k, s.vector_atol,
                                                 reference_top),
        }
    for name, st in strategies.items():
        red = {}
        for g, m in st["by_edit_type"].items():
            full = strategies.get("full", {}).get("by_edit_type", {}).get(g)
            ok = full and full["chunks_reembedded_mean"] and m["chunks_reembedded_mean"] is not None
            red[g] = _r(1.0 - m["chunks_reembedded_mean"] / full["chunks_reembedded_mean"]) if ok else None
        st["reduction_vs_full"] = red

    n_chunks = sum(len(st.chunks) for st in base.values())
    result = ReembedCost(
        schema_version=SCHEMA_VERSION,
        experiment="reembed_cost",
        dataset={"path": str(dataset.path), "sha256": dataset.sha256, "seed": dataset.seed,
                 "n_documents": len(docs), "n_chunks": n_chunks,
                 "mean_chunks_per_document": _r(n_chunks / len(docs)),
                 "n_queries": len(dataset.queries)},
        embedder=embedder.model_id,
        config=asdict(s),
        edits={"by_type": by_type,
               "fallbacks": sum(e.type != e.requested for e in edits),
               "records": [e.describe() for e in edits]},
        strategies=strategies,
        paper_claim=PAPER_CLAIM,
        provenance=provenance(cfg),
    ).validate(out_dir / ReembedCost.FILE)  # before the first file is written
    table = render(result.to_dict())
    atomic_write_text(out_dir / "reembed_cost.md", table)
    atomic_write_text(out_dir / "table.md", table)
    result.save(out_dir / ReembedCost.FILE)
    return result.to_dict()
