"""How experiment=lvl_eval scores LiveVectorLake against the lvl_corpus ground truth: the re-embedding share,
change detection, the mapping of returned lake rows to corpus rows, and temporal accuracy.

Every function reads what ``experiments/lvl_lake.py`` recorded while driving the lake (``Ingested``,
``LakeRows``, the hits of ``time_queries``); the formulas are in ``smartvector_bench.core.evaluation.metrics``. Returned
rows are judged by the shared evaluator (``smartvector_bench.core.evaluation.evaluator.judge_sets``: a lake row stands
for the set of corpus rows ``CorpusMap`` gives, and top-1 / MRR@k / recall@k come from its ``rank_summary``); only
the lake's own window check is scored here.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from experiments.lvl_lake import Ingested, LakeRows
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.evaluator import judge_sets, rank_summary
from smartvector_bench.core.dataset.documents import EMBED_CLASSES, POSITION_CLASSES, DocVersion
from smartvector_bench.core.evaluation.metrics.summary import latency_stats, prf, ratio, rounded, share_stats
from experiments.lvl_report import SERIES
from smartvector_bench.systems.livevectorlake.cold import to_us
from smartvector_bench.systems.updates import chunk_hash


def reembedding(ingested: list[Ingested], n_boot: int, seed: int) -> dict:
    """Re-embedding share per document and version step, and the public code's global de-duplication."""
    by_doc: dict[str, list[Ingested]] = {}
    for x in ingested:
        by_doc.setdefault(x.v.doc_id, []).append(x)
    rows = []
    for doc_id in sorted(by_doc):
        xs = sorted(by_doc[doc_id], key=lambda x: x.v.version)
        for prev, x in zip(xs, xs[1:]):
            n = len(x.v.paragraphs)
            rows.append({"doc_id": doc_id, "step": f"v{prev.v.version}->v{x.v.version}",
                         "from_version": prev.v.version, "to_version": x.v.version, "paragraphs": n,
                         "embedded": len(x.asked), "share": rounded(len(x.asked) / n) if n else None,
                         "truth_new_or_modified": sum(c in EMBED_CLASSES for c in x.v.truth)})
    # The public code's way: one global hash set; a step "re-processes" the hashes no document had before.
    seen: set[str] = set()
    glob: dict[str, dict] = {}
    by_version: dict[int, list[Ingested]] = {}
    for x in ingested:
        by_version.setdefault(x.v.version, []).append(x)
    steps_order = []
    for version in sorted(by_version):
        xs = by_version[version]
        hashes = {chunk_hash(p) for x in xs for p in x.v.paragraphs}
        if version > min(by_version):
            step = f"v{version - 1}->v{version}"
            steps_order.append(step)
            paragraphs = sum(len(x.v.paragraphs) for x in xs)
            glob[step] = {"new_global_hashes": len(hashes - seen), "paragraphs": paragraphs,
                          "share": ratio(len(hashes - seen), paragraphs)}
        seen |= hashes
    g_new = sum(g["new_global_hashes"] for g in glob.values())
    g_par = sum(g["paragraphs"] for g in glob.values())

    def summary(sel: list[dict]) -> dict:
        shares = [r["share"] for r in sel if r["share"] is not None]
        emb, par = sum(r["embedded"] for r in sel), sum(r["paragraphs"] for r in sel)
        return {**share_stats(shares, n_boot, seed), "embedded": emb, "paragraphs": par,
                "pooled": ratio(emb, par)}

    steps = sorted({r["step"] for r in rows}, key=lambda s: tuple(int(p) for p in s[1:].split("->v")))
    return {
        "definition": ("per document and version step v -> v+1: paragraphs the lake asked to embed / paragraphs "
                       "of version v+1; mean over documents (95% bootstrap CI over documents), median, p90; pooled "
                       "= all embedded / all paragraphs of the group"),
        "by_step": {s: summary([r for r in rows if r["step"] == s]) for s in steps},
        "all_steps": summary(rows),
        "full_reindex_share": 1.0,
        "global_dedup": {
            "definition": ("the public code's way (one global hash set): distinct paragraph hashes of the step's "
                           "versions that NO document had in any earlier version / all paragraphs of the step's "
                           "versions; not a per-document re-embedding share"),
            "by_step": {s: glob[s] for s in steps_order},
            "all_steps": {"new_global_hashes": g_new, "paragraphs": g_par, "share": ratio(g_new, g_par)},
        },
        "per_document": rows,
    }


def change_detection(ingested: list[Ingested], lrows: LakeRows) -> dict:
    """The lake's class of every position and its deletions against edits.jsonl (update steps only)."""
    by_doc: dict[str, list[Ingested]] = {}
    for x in ingested:
        by_doc.setdefault(x.v.doc_id, []).append(x)
    confusion = {t: dict.fromkeys(POSITION_CLASSES, 0) for t in POSITION_CLASSES}
    strict = Counter()  # truth "new or modified" vs lake embedded
    need = Counter()  # truth "needs a vector": new or modified AND its text not in the previous version
    dele = Counter()
    reverts = {"n": 0, "lake_classes": Counter(), "embedded": 0, "text_in_history_before_previous_version": 0}
    moved = {"n": 0, "lake_classes": Counter(), "embedded": 0}
    truth_new = {"n": 0, "lake_classes": Counter()}
    duplicates: list[dict] = []
    lineage = {"n": 0, "parent_hash_matches": 0, "mismatches": []}
    disagreements: list[dict] = []
    deletion_errors: list[dict] = []
    initial = {"paragraphs": 0, "lake_new": 0}
    asked_ok = True
    cdc_deleted = truth_deleted = 0
    steps = 0
    for doc_id in sorted(by_doc):
        xs = sorted(by_doc[doc_id], key=lambda x: x.v.version)
        history: set[str] = set()
        for j, x in enumerate(xs):
            lake_cls = list(x.result.position_classes)
            embed_pos = [i for i, c in enumerate(lake_cls) if c in EMBED_CLASSES]
            asked_ok &= (sorted(x.asked) == sorted(x.v.paragraphs[i] for i in embed_pos)
                         and x.result.embedded == len(x.asked) and len(lake_cls) == len(x.v.paragraphs))
            if j == 0:
                initial["paragraphs"] += len(lake_cls)
                initial["lake_new"] += sum(c == "new" for c in lake_cls)
                history |= {chunk_hash(p) for p in x.v.paragraphs}
                continue
            steps += 1
            prev = xs[j - 1].v
            prev_hashes = {chunk_hash(p) for p in prev.paragraphs}
            older = history - prev_hashes
            for i, (t, lc) in enumerate(zip(x.v.truth, lake_cls)):
                confusion[t][lc] += 1
                h = chunk_hash(x.v.paragraphs[i])
                truth_embed = t in EMBED_CLASSES
                truth_need = truth_embed and h not in prev_hashes
                lake_embed = lc in EMBED_CLASSES
                strict["tp"] += truth_embed and lake_embed
                strict["pred"] += lake_embed
                strict["actual"] += truth_embed
                need["tp"] += truth_need and lake_embed
                need["pred"] += lake_embed
                need["actual"] += truth_need
                if t != lc:
                    disagreements.append({"doc_id": doc_id, "version": x.v.version, "position": i, "truth": t,
                                          "lake": lc, "revert": x.v.revert[i]})
                if truth_embed and h in prev_hashes:
                    duplicates.append({"doc_id": doc_id, "version": x.v.version, "position": i, "truth": t,
                                       "lake": lc, "lake_embedded": lake_embed})
                if x.v.revert[i]:
                    reverts["n"] += 1
                    reverts["lake_classes"][lc] += 1
                    reverts["embedded"] += lake_embed
                    reverts["text_in_history_before_previous_version"] += h in older
                if t == "modified":  # does the new row's parent_hash point at the paragraph it replaced?
                    lineage["n"] += 1
                    want = chunk_hash(prev.paragraphs[x.v.old_position[i]])
                    got = lrows.parent.get((doc_id, x.v.version, i))
                    lineage["parent_hash_matches"] += got == want
                    if got != want:
                        lineage["mismatches"].append({"doc_id": doc_id, "version": x.v.version, "position": i,
                                                      "old_position": x.v.old_position[i], "lake_class": lc})
                if t == "moved":
                    moved["n"] += 1
                    moved["lake_classes"][lc] += 1
                    moved["embedded"] += lake_embed
                if t == "new":
                    truth_new["n"] += 1
                    truth_new["lake_classes"][lc] += 1
            history |= {chunk_hash(p) for p in x.v.paragraphs}
            truth_d = set(x.v.deleted)
            lake_d = set(lrows.deleted.get((doc_id, x.v.version), []))
            dele["tp"] += len(truth_d & lake_d)
            dele["pred"] += len(lake_d)
            dele["actual"] += len(truth_d)
            for pos in sorted(truth_d ^ lake_d):
                deletion_errors.append({"doc_id": doc_id, "version": x.v.version, "old_position": pos,
                                        "truth_deleted": pos in truth_d, "lake_deleted": pos in lake_d,
                                        "truth_class_of_old_paragraph": _fate(x.v, pos)})
            cdc_deleted += int(x.result.classes.get("deleted", 0))
            truth_deleted += len(truth_d)
    per_class = {}
    for c in POSITION_CLASSES:
        per_class[c] = prf(confusion[c][c], sum(confusion[t][c] for t in POSITION_CLASSES),
                           sum(confusion[c].values()))
    n_pos = sum(sum(r.values()) for r in confusion.values())
    agree = sum(confusion[c][c] for c in POSITION_CLASSES)
    return {
        "definition": ("update steps (version >= 2) only; per position of the new version, the lake's class "
                       "(IngestResult.position_classes) against edits.jsonl; deletions: the old positions the lake "
                       "closed with status 'deleted' against the ground truth's deleted old positions"),
        "update_steps": steps,
        "positions": n_pos,
        "class_agreement": {"agree": agree, "of": n_pos, "share": ratio(agree, n_pos)},
        "confusion_truth_by_lake": confusion,
        "per_class": per_class,
        "must_embed": {
            **prf(need["tp"], need["pred"], need["actual"]),
            "definition": ("truth: new or modified AND its text not in the previous version of the document (a "
                           "paragraph whose exact text the document already had needs no new vector); lake: "
                           "classed new or modified (sent to vectors_for)"),
        },
        "must_embed_strict": {
            **prf(strict["tp"], strict["pred"], strict["actual"]),
            "definition": "truth: new or modified (the paragraph's identity in the generator), whatever its text",
        },
        "new_or_modified_text_already_in_previous_version": duplicates,
        "deletions": {**prf(dele["tp"], dele["pred"], dele["actual"]),
                      "cdc_deleted_count": cdc_deleted, "truth_deleted_count": truth_deleted,
                      "errors": deletion_errors},
        "modified_lineage": {**lineage, "definition": (
            "truth-modified paragraphs: does the lake's new row's parent_hash equal the hash of the paragraph it "
            "replaced (edits.jsonl old_position)? CDC sets parent_hash to the previous version's hash at the same "
            "position")},
        "reverts": {**reverts, "lake_classes": dict(reverts["lake_classes"])},
        "moved": {**moved, "lake_classes": dict(moved["lake_classes"])},
        "truth_new": {**truth_new, "lake_classes": dict(truth_new["lake_classes"])},
        "disagreements": disagreements,
        "initial_versions": initial,
        "asked_texts_match_position_classes": bool(asked_ok),
    }


def _fate(v: DocVersion, old_pos: int) -> str:
    """What the ground truth says happened to the old paragraph at ``old_pos``."""
    if old_pos in v.deleted:
        return "deleted"
    for t, o in zip(v.truth, v.old_position):
        if o == old_pos:
            return t
    return "unknown"


class CorpusMap:
    """Map a returned lake row to the corpus rows it stands for: same doc_id, same (normalised) text, and a
    validity window containing ``as_of``. More than one when a document holds the same text twice."""

    def __init__(self, corpus):
        self.corpus = corpus
        self.by_text: dict[tuple[str, str], list[int]] = {}
        for i in range(len(corpus)):
            self.by_text.setdefault((str(corpus.doc_id[i]), chunk_hash(corpus.texts[i])), []).append(i)

    def rows(self, doc_id: str, text: str, as_of: float) -> list[int]:
        c = self.corpus
        return [i for i in self.by_text.get((doc_id, chunk_hash(text)), [])
                if c.valid_from[i] <= as_of < c.valid_to[i]]


def _lake_window_holds(hit, t_us: int) -> bool:
    """The lake's own window of a returned row (microseconds, open-ended when valid_to is not finite) holds t."""
    return to_us(hit.valid_from) <= t_us and (not np.isfinite(hit.valid_to) or t_us < to_us(hit.valid_to))


def judge_queries(hits_per_query: list, queries, qidx: np.ndarray, cmap: CorpusMap, k: int) -> dict:
    """Map every query's first ``k`` returned lake rows to corpus rows and judge them through the evaluator's
    set-valued relevance (``judge_sets``: rank of the first row that maps to a relevant corpus row, qrels score
    >= 1; on an lvl_corpus, the fact row in force at ``as_of``). Also counts the returned rows whose window
    excludes ``as_of`` by the lake's own valid_from / valid_to (LVL's leakage) and by the corpus (a row mapping
    to no corpus row). ``gold`` in a record names the query's best relevant row (``queries.gold``), ``relevant``
    all of them; ``judged`` holds the evaluator's per-query arrays, aligned to ``records``."""
    qs = [int(q) for q in np.asarray(qidx).tolist()]
    if len(qs) != len(hits_per_query):
        raise BenchError(f"{len(hits_per_query)} hit lists for {len(qs)} queries")
    mapped = []
    outside_lake = 0
    for q, hits in zip(qs, hits_per_query):
        as_of = float(queries.as_of[q])
        mapped.append([cmap.rows(h.doc_id, h.text, as_of) for h in hits[:k]])
        outside_lake += sum(not _lake_window_holds(h, to_us(as_of)) for h in hits[:k])
    judged = judge_sets(mapped, queries, k, qidx=np.asarray(qs, dtype=np.int64))
    ids = cmap.corpus.ids
    records = []
    for i, q in enumerate(qs):
        rank = int(judged["rank"][i]) or None
        records.append({"query_id": queries.ids[q], "category": str(queries.category[q]),
                        "as_of": float(queries.as_of[q]), "gold": ids[int(queries.gold[q])],
                        "relevant": [ids[r] for r in queries.relevant.row(q).tolist()],
                        "top1": [ids[r] for r in mapped[i][0]] if mapped[i] else [], "gold_rank": rank,
                        "correct": bool(judged["correct"][i]), "rr": float(judged["rr"][i]),
                        # the lake's own rows and cosines: the regression gate compares these across machines
                        "ranked": [h.chunk_id for h in hits_per_query[i][:k]],
                        "scores": [float(h.score) for h in hits_per_query[i][:k]]})
    return {"records": records, "judged": judged, "returned": int(judged["n_hits"].sum()),
            "outside_window_lake": int(outside_lake), "outside_window_corpus": int(judged["n_unmapped"].sum())}


def temporal_section(first_hits: dict[str, list], queries, groups: dict[str, np.ndarray], corpus, k: int,
                     n_boot: int, seed: int) -> dict:
    """The JSON's ``temporal``: accuracy of the first repetition's hits per category (the evaluator's
    ``rank_summary``, a plain per-query bootstrap), and temporal leakage."""
    qidx = np.concatenate([np.asarray(groups[s], dtype=np.int64) for s in SERIES])
    j = judge_queries([h for s in SERIES for h in first_hits[s]], queries, qidx, CorpusMap(corpus), k)
    first = np.repeat(SERIES, [len(groups[s]) for s in SERIES]) != "cold_uncached"  # hot + cold_cached: each query once
    historical = np.asarray(queries.category).astype(str)[qidx] == "historical"
    returned, out_lake, out_corpus = j["returned"], j["outside_window_lake"], j["outside_window_corpus"]
    return {
        "definition": (f"the first repetition's top-{k} rows of each query (query_only); a row is mapped to the "
                       "corpus rows of the same doc_id and normalised text whose window contains the query's as_of; "
                       "top-1 correct when the first row maps to a row of the query's relevant set (qrels score "
                       ">= 1: the fact row in force at as_of); MRR@k over the first relevant hit"),
        "current": rank_summary(j["judged"], k, n_boot, seed, select=first & ~historical),
        "historical": rank_summary(j["judged"], k, n_boot, seed, select=first & historical),
        "historical_uncached_cold": rank_summary(j["judged"], k, n_boot, seed, select=~first),
        "leakage": {"returned": returned, "outside_window_lake": out_lake, "outside_window_corpus": out_corpus,
                    "share_lake": ratio(out_lake, returned) if returned else None,
                    "share_corpus": ratio(out_corpus, returned) if returned else None,
                    "definition": ("returned rows (all three series) whose window excludes as_of: by the lake's "
                                   "valid_from/valid_to, and by the corpus (no corpus row of that doc_id and text is "
                                   "valid at as_of)")},
        "per_query": [r for r, f in zip(j["records"], first) if f],
    }


def ingest_section(ingested: list[Ingested]) -> dict:
    """The JSON's ``ingest``: what the lake did over all versions, and its ingest wall time."""
    results = [x.result for x in ingested]
    updates = [x for x in ingested if x.v.version > min(y.v.version for y in ingested if y.v.doc_id == x.v.doc_id)]
    walls = np.array([x.wall_s for x in ingested])
    upd_walls = np.array([x.wall_s for x in updates]) if updates else np.zeros(0)
    return {
        "document_versions": len(ingested), "commits": sum(r.seq is not None for r in results),
        "paragraphs": sum(r.n_paragraphs for r in results),
        "embedded": sum(len(x.asked) for x in ingested),
        "embedded_in_updates": sum(len(x.asked) for x in updates),
        "classes": {c: sum(int(r.classes.get(c, 0)) for r in results)
                    for c in ("unchanged", "moved", "modified", "new", "deleted")},
        "rows_added": sum(r.rows_added for r in results), "rows_closed": sum(r.rows_closed for r in results),
        "wall_ms_all": latency_stats(walls), "wall_ms_updates": latency_stats(upd_walls),
        "note": ("ingest wall time excludes embedding (vectors are looked up); the paper's 1.2-1.8 s update latency "
                 "includes it"),
    }
