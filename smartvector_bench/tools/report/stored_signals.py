"""``signals.jsonl`` beside a run folder's ``metrics.json``: the four signals of every stored hit of the systems
whose score is the four-signal fusion (their recorded ``_target_`` names a class that is
``systems.base.FusesSignals``: SmartVector and its variants, KGSmartVector, any plug-in that says so),
for run files of format 1.0, which hold none, so the report's drill-down can show them without a rerun.

The signals are those of the STORED ranked lists: the dataset regenerated as ``stored_queries`` does (sha256
checked), embedded with the recorded embedder (``provenance.config.embedder``), each system built from its
recorded config, indexed and searched as experiments/main.py does (the same state), then ``hit_signals`` on the
run file's ranked ids and the queries' as_of. This host's embeddings may differ from the run's in the last float32
bits, so nothing is stored unless, for every hit, the signals fused with the system's configured weights give the
run file's stored score within :data:`FUSION_TOL` (:func:`fusion_misses`). A run made with 1.1 run files
(``make results``) gets the file from the run files' own signals, under the same check (:func:`from_run_files`).

Line 1 is ``{"_meta": {...}}``; then one compact line per (system, query): ``system``, ``query_id``, ``ranked``
(as in the run file) and ``signals`` (``core.run.SIGNAL_KEYS`` -> one value per hit, rounded to 6 places).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from pathlib import Path
from typing import Mapping

import numpy as np

from smartvector_bench.core.atomic import atomic_write_json, atomic_write_text
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results.base import read_json
from smartvector_bench.core.run import RUN_DIGITS, SIGNAL_KEYS, check_run_row, json_number, read_run_rows
from smartvector_bench.systems import locate
from smartvector_bench.systems.base import FusesSignals
from smartvector_bench.systems.smartvector.signals.fusion import Weights, fuse
from smartvector_bench.tools.report import stored_queries

# a 1.0 run file rounds scores and signals to 6 decimals and the cosine is float32's: a few 1e-6 at most
FUSION_TOL = 1e-5
FILE = "signals.jsonl"
FORMAT = "smartvector-bench drill-down signals"
VERSION = "1.0"
PROVENANCE = "PROVENANCE.json"


def fusion_class(node) -> type | None:
    """The class a recorded system config's ``_target_`` names, when it is :class:`FusesSignals`; else None."""
    if not isinstance(node, Mapping):
        return None
    try:
        cls = locate(node.get("_target_"), "retrievers")
    except BenchError:
        return None
    return cls if isinstance(cls, type) and issubclass(cls, FusesSignals) else None


def _weights(system: str, cfg: Mapping) -> tuple[Weights | None, str | None]:
    """(the weights the system's run scores fuse its signals with, None) or (None, what is wrong)."""
    cls = fusion_class(cfg)
    if cls is None:
        return None, f"retrievers.{system}._target_={cfg.get('_target_')!r}: not the four-signal fusion"
    try:
        w = cls.fusion_weights(cfg, f"retrievers.{system}")
    except (BenchError, TypeError, ValueError) as exc:
        return None, f"retrievers.{system}.weights: {exc}"
    return (w, None) if w is not None else (None, f"retrievers.{system}: its config does not fix its weights")


def fused_systems(metrics: dict, folder: Path) -> dict[str, dict]:
    """System -> its config, for the folder's systems with a run file whose score is the four-signal fusion with
    weights their recorded config fixes (an unreadable one is kept, so that the check names it)."""
    cfg = ((metrics.get("provenance") or {}).get("config") or {}).get("retrievers") or {}
    out = {}
    for name in metrics.get("systems") or {}:
        node = cfg.get(name)
        cls = fusion_class(node)
        if cls is None or not (folder / f"run_{name}.jsonl").is_file():
            continue
        try:
            if cls.fusion_weights(node, f"retrievers.{name}") is None:
                continue  # fitted on dev: no weights to check against
        except (BenchError, TypeError, ValueError):
            pass  # unreadable weights: kept, so that the check names them
        out[name] = dict(node)
    return out


def fusion_misses(system: str, lines: list[dict], cfg: dict | None) -> list[str]:
    """The hits of ``lines`` (run file rows with ``signals``) whose score is not ``fuse`` of their signals with the
    weights of ``cfg`` (the system's recorded config) within :data:`FUSION_TOL`; one item naming the problem when
    the system's score is not the fusion, its weights are unreadable or no line has signals."""
    lines = [r for r in lines if isinstance(r.get("signals"), dict) and check_run_row(r) is None]
    if not lines:
        return ["no signals"]
    w, why = _weights(system, cfg or {})
    if w is None:
        return [why]
    bad = []
    for rec in lines:
        for n, score in enumerate(rec.get("scores") or [], 1):
            vals = {name: rec["signals"][key][n - 1] for key, name in SIGNAL_KEYS.items()}
            if score is None or any(v is None for v in vals.values()):
                bad.append(f"{rec['query_id']} rank {n}: a null score or signal")
            elif not abs(float(fuse(w, **{k: np.float64(v) for k, v in vals.items()})) - score) <= FUSION_TOL:
                bad.append(f"{rec['query_id']} rank {n}: score {score}, fused {float(fuse(w, **vals)):.6f}")
    return bad


def check(folder: Path, system: str, lines: list[dict], cfg: dict) -> None:
    """BenchError unless every hit's signals fuse to the run file's stored score (:func:`fusion_misses`)."""
    bad = fusion_misses(system, lines, cfg)
    if bad:
        raise BenchError(f"{folder / f'run_{system}.jsonl'}: the signals do not reproduce the stored scores "
                         f"within {FUSION_TOL:g} ({bad[0]}); refusing to store {FILE}")


def _computed(folder: Path, metrics: dict, systems: dict[str, dict], ds) -> dict[str, list[dict]]:
    """Per system, the run file's rows with ``signals`` from the rebuilt system (see the module docstring)."""
    from smartvector_bench.core.embedding import build_embedder
    from smartvector_bench.systems import build_retriever

    cfg = (metrics.get("provenance") or {}).get("config") or {}
    embedder = build_embedder(dict(cfg.get("embedder") or {}))
    corpus, queries = ds.corpus, ds.queries
    corpus_vecs, query_vecs = embedder.encode(corpus.texts), embedder.encode(queries.texts)
    serve_time = float(queries.query_time.min())  # as experiments/main.py: consolidation just before query 1
    k = int((metrics.get("experiment") or {}).get("k") or 10)
    row_of = {qid: i for i, qid in enumerate(queries.ids)}
    out = {}
    for name, node in systems.items():
        path = folder / f"run_{name}.jsonl"
        _, rows = read_run_rows(path)
        ranked = np.full((len(queries), k), -1, dtype=np.int64)
        for rec in rows:
            if rec["query_id"] not in row_of or len(rec["ranked"]) > k:
                raise BenchError(f"{path}: query {rec['query_id']!r}: not a query of the dataset or more than "
                                 f"{k} hits")
            for r, cid in enumerate(rec["ranked"]):
                if cid not in corpus.index_of:
                    raise BenchError(f"{path}: query {rec['query_id']!r}: unknown chunk id {cid!r}")
                ranked[row_of[rec["query_id"]], r] = corpus.index_of[cid]
        retriever = build_retriever(name, node)
        retriever.index(corpus, corpus_vecs, serve_time)
        retriever.search(query_vecs, queries.as_of, k, texts=queries.texts)  # the state hit_signals reads after
        sig = retriever.hit_signals(query_vecs, queries.as_of, ranked)
        out[name] = [{**rec, "signals": {key: [json_number(sig[n][row_of[rec["query_id"]], r], RUN_DIGITS)
                                                for r in range(len(rec["ranked"]))]
                                          for key, n in SIGNAL_KEYS.items()}} for rec in rows]
    return out


def render(per_system: dict[str, list[dict]], dataset_sha256: str, source: str) -> str:
    meta = {"format": FORMAT, "version": VERSION, "dataset_sha256": dataset_sha256, "systems": list(per_system),
            "source": source, "signals": list(SIGNAL_KEYS),
            "check": "every hit's signals fused with the system's configured weights give the run file's score "
                     "within 1e-5 (stored_signals.fusion_misses)"}
    lines = [json.dumps({"_meta": meta}, ensure_ascii=False, sort_keys=True)]
    lines += [json.dumps({"system": name, "query_id": rec["query_id"], "ranked": rec["ranked"],
                          "signals": rec["signals"]}, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
              for name, rows in per_system.items() for rec in rows]
    return "\n".join(lines) + "\n"


def _checked(folder: Path, systems: dict[str, dict], per_system: dict[str, list[dict]]) -> dict[str, list[dict]]:
    if not per_system:
        raise BenchError(f"{folder / 'metrics.json'}: no four-signal system with a run file; nothing to store")
    for name, lines in per_system.items():
        check(folder, name, lines, systems[name])
    return per_system


def build(folder: Path, metrics: dict | None = None) -> tuple[str, dict]:
    """(the file's text, a summary) recomputed from the dataset and the embedder (the module docstring)."""
    folder = Path(folder)
    metrics = read_json(folder / "metrics.json") if metrics is None else metrics
    systems = fused_systems(metrics, folder)
    with tempfile.TemporaryDirectory(prefix="svb-signals-") as tmp:
        ds, source = stored_queries.dataset_of(folder, metrics, Path(tmp))
        per = _checked(folder, systems, _computed(folder, metrics, systems, ds) if systems else {})
    how = f"recomputed: {source}, embedded with {(metrics.get('embedder') or '?')}, hit_signals on the stored hits"
    return render(per, ds.sha256, how), {"systems": list(per), "dataset_sha256": ds.sha256, "source": how,
                                         "n_lines": sum(len(v) for v in per.values())}


def from_run_files(folder: Path, metrics: dict) -> str | None:
    """The file from a finished run's 1.1 run files' own signals (same check); None when they carry none."""
    folder = Path(folder)
    systems = fused_systems(metrics, folder)
    rows = {n: read_run_rows(folder / f"run_{n}.jsonl")[1] for n in systems}
    per = {n: r for n, r in rows.items() if r and all(isinstance(x.get("signals"), dict) for x in r)}
    if not per:
        return None
    return render(_checked(folder, systems, per), (metrics.get("dataset") or {}).get("sha256"),
                  "the run files' own signals")


def store(folder: Path, command: str) -> dict:
    """Write ``folder/signals.jsonl`` and record it in ``PROVENANCE.json`` (``files`` and ``stored_signals``),
    PROVENANCE.json first, as ``stored_queries.store`` does (and for its reason). Nothing is written on refusal."""
    folder = Path(folder)
    prov_path = folder / PROVENANCE
    prov = read_json(prov_path) if prov_path.is_file() else None
    if not isinstance(prov, dict) or not isinstance(prov.get("files"), dict):
        raise BenchError(f"{prov_path}: missing or without 'files'; publish the run first")
    text, summary = build(folder)
    data = text.encode("utf-8")
    prov["files"][FILE] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    entry = {"command_line": command, "stored_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **summary}
    prov["stored_signals"] = entry
    atomic_write_json(prov_path, prov)
    atomic_write_text(folder / FILE, text)
    return entry


def read(folder: Path, dataset_sha256: str | None = None) -> tuple[dict[tuple[str, str], dict], str] | None:
    """((system, query id) -> {ranked, signals}, the file's source) of ``folder/signals.jsonl``; None without it.
    BenchError (file:line) on a malformed line or a dataset sha256 other than the run's."""
    path = Path(folder) / FILE
    if not path.is_file():
        return None
    out, source = {}, ""
    for lineno, rec in stored_queries.side_lines(path, FORMAT, dataset_sha256, "--store-signals"):
        if lineno == 1:
            source = str(rec.get("source") or "")
            continue
        sig = rec.get("signals") if isinstance(rec, dict) else None
        if not isinstance(sig, dict) or not isinstance(rec.get("ranked"), list) or set(sig) != set(SIGNAL_KEYS) \
                or any(not isinstance(v, list) or len(v) != len(rec["ranked"]) for v in sig.values()):
            raise BenchError(f"{path}:{lineno}: expected system, query_id, ranked and signals "
                             f"({', '.join(SIGNAL_KEYS)}: one value per hit)")
        out[(str(rec.get("system")), str(rec.get("query_id")))] = rec
    return out, source
