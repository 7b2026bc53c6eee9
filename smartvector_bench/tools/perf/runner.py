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

import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.atomic import atomic_write_json, atomic_write_text
from smartvector_bench.core.provenance import provenance
from smartvector_bench.tools.perf.cases import CASES, search_case
from smartvector_bench.tools.perf.machine import machine_info
from smartvector_bench.tools.perf.summary import RUN_FIELDS, SUMMARY_FIELDS, csv_text, read_runs, summary_rows
from smartvector_bench.tools.perf.targets import evaluate_targets, render_markdown
from smartvector_bench.tools.perf.timing import Row
from smartvector_bench.tools.scale import scale_dataset


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


def run_profile(cfg: dict, progress=_log, datasets: list | None = None) -> list[Row]:
    """Every case of the profile, in order (``search``, then :data:`.cases.CASES`); returns all rows (nothing
    written). ``datasets`` (if given) receives each scale dataset's info and fingerprint, for the provenance."""
    seed = int(cfg.get("seed", 0))
    out: list[Row] = []
    s = cfg["search"]

    def dataset(n: int, **kw):
        data = scale_dataset(n, **kw)
        if datasets is not None:
            datasets.append({**{k: v for k, v in data.info.items() if k != "timings_s"},
                             "sha256": fingerprint(data)})
        return data

    for vectors, sizes in (("synthetic", s["sizes"]), ("real", s.get("real_sizes") or [])):
        for n in sizes:
            progress(f"search: {n:,} vectors ({vectors}), {s['n_queries']} queries")
            data = dataset(int(n), seed=seed, vectors=vectors, n_queries=int(s["n_queries"]))
            out += search_case(data, s, int(n), progress)
            del data

    for key, case in CASES.items():
        section = cfg.get(key) or {}
        for n in section.get("sizes", []):
            progress(f"{key}: {int(n):,} vectors")
            data = dataset(int(n), seed=seed, n_queries=int(section.get("n_queries", s["n_queries"])))
            out += case(data, section, int(n), cfg)
            del data
    return out


def resummarize(out_dir: str | Path) -> dict:
    """Rebuild summary.csv, targets.csv and perf.md from a stored runs.csv (no measurement), keeping the
    provenance of the run that measured them."""
    out_dir = Path(out_dir)
    prov = json.loads((out_dir / "PROVENANCE.json").read_text(encoding="utf-8"))
    cfg = prov["config"]
    return write_results(out_dir, cfg, read_runs(out_dir / "runs.csv"), prov["wall_seconds"], prov["datasets"],
                         provenance_override=prov)


def write_results(out_dir: str | Path, cfg: dict, runs: list[Row], wall_s: float,
                  datasets: list | None = None, provenance_override: dict | None = None) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summary_rows(runs)
    targets = evaluate_targets(summary)
    files = {
        "runs.csv": csv_text([r.as_dict() for r in runs], RUN_FIELDS),
        "summary.csv": csv_text(summary, SUMMARY_FIELDS),
        "targets.csv": csv_text(targets, ("id", "what", "n_vectors", "measured", "unit", "bar", "verdict", "detail")),
        "perf.md": render_markdown(summary, targets, cfg, machine=(provenance_override or {}).get("machine")
                                   or machine_info()),
    }
    # provenance first: the git status must not see this run's own output files as changes
    prov = dict(provenance_override) if provenance_override else {**provenance(cfg), "schema_version": SCHEMA_VERSION, "profile": cfg.get("profile"),
            "seed": int(cfg.get("seed", 0)), "wall_seconds": round(wall_s, 1), "datasets": datasets or [],
            "machine": machine_info()}
    for name, text in files.items():
        atomic_write_text(out_dir / name, text)
    prov["files"] = {name: {"bytes": len(text.encode()), "sha256": hashlib.sha256(text.encode()).hexdigest()}
                     for name, text in files.items()}
    atomic_write_json(out_dir / "PROVENANCE.json", prov)
    return {"summary": summary, "targets": targets}


if __name__ == "__main__":  # python -m smartvector_bench.tools.perf.runner resummarize results/perf
    if len(sys.argv) != 3 or sys.argv[1] != "resummarize":
        print("usage: python -m smartvector_bench.tools.perf.runner resummarize OUT_DIR", file=sys.stderr)
        raise SystemExit(2)
    resummarize(sys.argv[2])
    print((Path(sys.argv[2]) / "perf.md").read_text(encoding="utf-8"))
