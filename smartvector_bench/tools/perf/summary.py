"""The perf tables built from measured rows: ``summary.csv``'s per-group statistics and ratios, the CSV text
of ``runs.csv`` / ``summary.csv``, and reading a stored ``runs.csv`` back.

Shared by the runner (which writes the files) and the one-case command line (:mod:`.cases`, which prints the
summary), so neither imports the other.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

import numpy as np

from smartvector_bench.tools.perf.timing import Row, timing_stats

RUN_FIELDS = ("case", "system", "n_vectors", "vectors", "metric", "rep", "value", "unit", "note")
SUMMARY_FIELDS = ("case", "system", "n_vectors", "vectors", "metric", "unit", "median", "p05", "p95", "p99",
                  "min", "max", "iqr", "n", "ratio_vs_flat", "note")
BASELINE = "faiss_flat"
RATIO_METRICS = {("search_batch", "batch_s"), ("search_latency", "query_ms"), ("filtered_ann", "query_ms")}
# Systems timed by the search case on the same query batch as faiss_flat: only their ratios mean anything
# (the peer and reference cases run their own query sets; they carry their own baselines).
SAME_BATCH = ("faiss_flat", "faiss_hnsw", "smartvector_exhaustive", "smartvector_exhaustive_numba",
              "smartvector_exhaustive_numpy", "smartvector_rerank", "smartvector_rerank_hnsw")
# Cases whose every system answers the same queries as that case's own faiss_flat (filtered_ann: the exact
# filtered search over the in-force vectors), so all their ratios mean something.
SAME_QUERIES_CASES = ("filtered_ann",)


def summary_rows(runs: list[Row]) -> list[dict]:
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for r in runs:
        groups[(r.case, r.system, r.n_vectors, r.vectors, r.metric)].append(r)
    out = []
    for (case, system, n, vectors, metric), rs in groups.items():
        values = [r.value for r in rs]
        s = timing_stats(values)
        p99 = float(np.percentile(values, 99)) if values else float("nan")
        out.append({"case": case, "system": system, "n_vectors": n, "vectors": vectors, "metric": metric,
                    "unit": rs[0].unit, **{k: s[k] for k in ("median", "p05", "p95")}, "p99": p99,
                    **{k: s[k] for k in ("min", "max", "iqr", "n")}, "ratio_vs_flat": "",
                    "note": rs[0].note})
    index = {(d["case"], d["system"], d["n_vectors"], d["vectors"], d["metric"]): d for d in out}
    for d in out:
        if (d["case"], d["metric"]) in RATIO_METRICS and (d["system"] in SAME_BATCH
                                                           or d["case"] in SAME_QUERIES_CASES):
            base = index.get((d["case"], BASELINE, d["n_vectors"], d["vectors"], d["metric"]))
            if base and base["median"] > 0:
                d["ratio_vs_flat"] = d["median"] / base["median"]
    out.sort(key=lambda d: (d["case"], d["n_vectors"], d["vectors"], d["system"], d["metric"]))
    return out


def csv_text(rows: list[dict], fields: tuple[str, ...]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _fmt(r.get(k, "")) for k in fields})
    return buf.getvalue()


def _fmt(v) -> str:
    if isinstance(v, float):
        return repr(v) if np.isfinite(v) else str(v)
    return str(v)


def read_runs(path: str | Path) -> list[Row]:
    """The rows of a ``runs.csv`` written by the runner."""
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return [Row(r["case"], r["system"], int(r["n_vectors"]), r["vectors"], r["metric"], int(r["rep"]),
                    float(r["value"]), r["unit"], r["note"]) for r in csv.DictReader(fh)]
