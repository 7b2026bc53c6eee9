"""Run the perf cases of a profile (``conf/bench_profile/*.yaml``) and write ``out_dir``:

- ``runs.csv``: every measured repetition (one row per rep / query / value, :class:`~.timing.Row`);
- ``summary.csv``: per (case, system, n_vectors, vectors, metric): median, p05, p95, p99, min, max, IQR, n, and
  for batch times and latencies the ratio of medians against ``faiss_flat`` at the same size in this run;
- ``targets.csv`` and ``perf.md``: each target of issue 6 and each anchor from the seed systems, our figure,
  the bar and a verdict (:mod:`.targets`);
- ``PROVENANCE.json``: profile config, seed, git sha, package versions, machine, per-file sha256.

Every file is written to a temp file and renamed; the CSVs and the table come from the same rows.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import platform
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.atomic import atomic_write_json, atomic_write_text
from smartvector_bench.core.provenance import provenance
from smartvector_bench.tools.perf.timing import Row, summarize

RUN_FIELDS = ("case", "system", "n_vectors", "vectors", "metric", "rep", "value", "unit", "note")
SUMMARY_FIELDS = ("case", "system", "n_vectors", "vectors", "metric", "unit", "median", "p05", "p95", "p99",
                  "min", "max", "iqr", "n", "ratio_vs_flat", "note")
BASELINE = "faiss_flat"
RATIO_METRICS = {("search_batch", "batch_s"), ("search_latency", "query_ms")}
# Systems timed by the search case on the same query batch as faiss_flat: only their ratios mean anything
# (the peer and reference cases run their own query sets; they carry their own baselines).
SAME_BATCH = ("faiss_flat", "faiss_hnsw", "smartvector_exhaustive", "smartvector_exhaustive_numpy", "smartvector_rerank",
              "smartvector_rerank_hnsw")


def _log(msg: str) -> None:
    print(f"[perf {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def fingerprint(data) -> str:
    """sha256 of a scale dataset's ids, times and vectors: equal seeds and configs give equal fingerprints."""
    h = hashlib.sha256()
    c = data.corpus
    h.update("\n".join(c.ids).encode())
    for a in (c.created_at, c.valid_from, c.valid_to, data.queries.as_of, data.corpus_vectors, data.query_vectors):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _consolidation_ks(c: dict, n: int) -> list[int]:
    """The candidate counts run at size n: ``k``, plus ``recall_k`` at the all-pairs size (where the pairs the
    candidates miss are measured; the all-pairs run is shared)."""
    from smartvector_bench.tools.perf.consolidation import DEFAULT_K

    ks = [int(c.get("k") or DEFAULT_K)]
    if n == int(c["all_pairs_size"]):
        ks += [int(k) for k in c.get("recall_k") or [] if int(k) not in ks]
    return ks


def run_profile(cfg: dict, progress=_log, datasets: list | None = None) -> list[Row]:
    """Every case of the profile, in order; returns all rows (nothing written). ``datasets`` (if given)
    receives each scale dataset's info and fingerprint, for the provenance."""
    from smartvector_bench.tools.scale import scale_dataset as _scale

    seed = int(cfg.get("seed", 0))
    out: list[Row] = []
    s = cfg["search"]

    def scale_dataset(n: int, **kw):
        data = _scale(n, **kw)
        if datasets is not None:
            datasets.append({**{k: v for k, v in data.info.items() if k != "timings_s"},
                             "sha256": fingerprint(data)})
        return data

    from smartvector_bench.tools.perf.search import run_search

    for vectors, sizes in (("synthetic", s["sizes"]), ("real", s.get("real_sizes") or [])):
        for n in sizes:
            progress(f"search: {n:,} vectors ({vectors}), {s['n_queries']} queries")
            data = scale_dataset(int(n), seed=seed, vectors=vectors, n_queries=int(s["n_queries"]))
            out += run_search(data, reps=int(s["reps"]), n_latency=int(s["n_latency"]),
                              candidates=int(s["candidates"]), hnsw=dict(s["hnsw"]),
                              consolidation=search_consolidation(s, int(n)), exhaustive=bool(s["exhaustive"]),
                              hnsw_enabled=int(n) <= int(s["hnsw_max_size"]), progress=progress)
            del data

    from smartvector_bench.tools.perf.consolidation import bench_consolidation
    from smartvector_bench.tools.perf.peers import bench_kg, bench_livevectorlake
    from smartvector_bench.tools.perf.reference import bench_reference
    from smartvector_bench.tools.perf.ripple import bench_ripple

    # The other cases: (profile section, what it runs on one dataset of each of its sizes).
    cases = {
        "consolidation": lambda d, c, n: [row for k in _consolidation_ks(c, n) for row in bench_consolidation(
            d, reps=int(c["reps"]), k=k, all_pairs=n == int(c["all_pairs_size"]))],
        "ripple": lambda d, c, n: bench_ripple(d, n_origins=int(c["n_origins"]), seed=seed),
        "lvl": lambda d, c, n: bench_livevectorlake(d, reps=int(c["reps"]), n_latency=int(c["n_latency"])),
        "kg": lambda d, c, n: bench_kg(d, reps=int(c["reps"]), n_latency=int(c["n_latency"])),
        "reference": lambda d, c, n: bench_reference(d, n_queries=int(c["n_queries"]), reps=int(c["reps"]),
                                                     candidates=int(cfg["search"]["candidates"])),
    }
    for key, case in cases.items():
        section = cfg.get(key) or {}
        for n in section.get("sizes", []):
            progress(f"{key}: {int(n):,} vectors")
            data = scale_dataset(int(n), seed=seed, n_queries=int(section.get("n_queries", s["n_queries"])))
            out += case(data, section, int(n))
            del data
    return out


def search_consolidation(s: dict, n: int) -> dict | None:
    """How the search case's smartvector consolidates before serving: all pairs (the default config) up to
    ``all_pairs_max_size``, ANN candidate pairs up to ``consolidation_max_size``, none above (at 1M it fits with the
    columnar event log but takes ~500 s, most of it the candidate search; see README, Performance)."""
    if n > int(s["consolidation_max_size"]):
        return {"enabled": False}
    if n > int(s["all_pairs_max_size"]):
        return {"candidates": int(s["consolidation_k"])}
    return None


# -- tables ---------------------------------------------------------------------------------------------------

def summary_rows(runs: list[Row]) -> list[dict]:
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for r in runs:
        groups[(r.case, r.system, r.n_vectors, r.vectors, r.metric)].append(r)
    out = []
    for (case, system, n, vectors, metric), rs in groups.items():
        values = [r.value for r in rs]
        s = summarize(values)
        p99 = float(np.percentile(values, 99)) if values else float("nan")
        out.append({"case": case, "system": system, "n_vectors": n, "vectors": vectors, "metric": metric,
                    "unit": rs[0].unit, **{k: s[k] for k in ("median", "p05", "p95")}, "p99": p99,
                    **{k: s[k] for k in ("min", "max", "iqr", "n")}, "ratio_vs_flat": "",
                    "note": rs[0].note})
    index = {(d["case"], d["system"], d["n_vectors"], d["vectors"], d["metric"]): d for d in out}
    for d in out:
        if (d["case"], d["metric"]) in RATIO_METRICS and d["system"] in SAME_BATCH:
            base = index.get((d["case"], BASELINE, d["n_vectors"], d["vectors"], d["metric"]))
            if base and base["median"] > 0:
                d["ratio_vs_flat"] = d["median"] / base["median"]
    out.sort(key=lambda d: (d["case"], d["n_vectors"], d["vectors"], d["system"], d["metric"]))
    return out


def _csv(rows: list[dict], fields: tuple[str, ...]) -> str:
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
    """The rows of a ``runs.csv`` written by :func:`write_results`."""
    with Path(path).open(newline="", encoding="utf-8") as fh:
        return [Row(r["case"], r["system"], int(r["n_vectors"]), r["vectors"], r["metric"], int(r["rep"]),
                    float(r["value"]), r["unit"], r["note"]) for r in csv.DictReader(fh)]


def resummarize(out_dir: str | Path) -> dict:
    """Rebuild summary.csv, targets.csv and perf.md from a stored runs.csv (no measurement), keeping the
    provenance of the run that measured them."""
    import json

    out_dir = Path(out_dir)
    prov = json.loads((out_dir / "PROVENANCE.json").read_text(encoding="utf-8"))
    cfg = prov["config"]
    return write_results(out_dir, cfg, read_runs(out_dir / "runs.csv"), prov["wall_seconds"], prov["datasets"],
                         provenance_override=prov)


def write_results(out_dir: str | Path, cfg: dict, runs: list[Row], wall_s: float,
                  datasets: list | None = None, provenance_override: dict | None = None) -> dict:
    from smartvector_bench.tools.perf.targets import evaluate_targets, render_markdown

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summary_rows(runs)
    targets = evaluate_targets(summary)
    files = {
        "runs.csv": _csv([r.as_dict() for r in runs], RUN_FIELDS),
        "summary.csv": _csv(summary, SUMMARY_FIELDS),
        "targets.csv": _csv(targets, ("id", "what", "n_vectors", "measured", "unit", "bar", "verdict", "detail")),
        "perf.md": render_markdown(summary, targets, cfg),
    }
    for name, text in files.items():
        atomic_write_text(out_dir / name, text)
    prov = dict(provenance_override) if provenance_override else {**provenance(cfg), "schema_version": SCHEMA_VERSION, "profile": cfg.get("profile"),
            "seed": int(cfg.get("seed", 0)), "wall_seconds": round(wall_s, 1), "datasets": datasets or [],
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}}}
    prov["files"] = {name: {"bytes": len(text.encode()), "sha256": hashlib.sha256(text.encode()).hexdigest()}
                     for name, text in files.items()}
    atomic_write_json(out_dir / "PROVENANCE.json", prov)
    return {"summary": summary, "targets": targets}


if __name__ == "__main__":  # python -m smartvector_bench.tools.perf.runner resummarize results/perf
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "resummarize":
        print("usage: python -m smartvector_bench.tools.perf.runner resummarize OUT_DIR", file=sys.stderr)
        raise SystemExit(2)
    resummarize(sys.argv[2])
    print((Path(sys.argv[2]) / "perf.md").read_text(encoding="utf-8"))
