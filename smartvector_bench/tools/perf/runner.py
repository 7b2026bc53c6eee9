"""Run the perf cases of a profile (``conf/bench_profile/*.yaml``) and write ``out_dir``:

- ``runs.csv``: every measured repetition (one row per rep / query / value, :class:`~.timing.Row`);
- ``summary.csv``: per (case, system, n_vectors, vectors, metric): median, p05, p95, p99, min, max, IQR, n, and
  for batch times and latencies the ratio of medians against ``faiss_flat`` at the same size in this run;
- ``targets.csv`` and ``perf.md``: each target of issue 6 and each anchor from the seed systems, our figure,
  the bar and a verdict (:mod:`.targets`);
- ``PROVENANCE.json``: profile config, seed, git sha, package versions, machine, per-file sha256;
- ``filtered_ann.csv`` (when the run has the filtered-ANN case): its table (:mod:`.filtered_report`).

``only=[section, ...]`` (:func:`merge_results`) runs those sections alone and merges their rows into the stored
run of ``out_dir``, so one case can be re-measured without rerunning the whole profile.

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
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results.provenance import provenance
from smartvector_bench.tools.perf import filtered_report
from smartvector_bench.tools.perf.cases import CASES, search_case
from smartvector_bench.tools.perf.machine import machine_info
from smartvector_bench.tools.perf.summary import RUN_FIELDS, SUMMARY_FIELDS, csv_text, read_runs, summary_rows
from smartvector_bench.tools.perf.targets import evaluate_targets, render_markdown
from smartvector_bench.tools.perf.timing import Row, release_memory
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


def run_profile(cfg: dict, progress=_log, datasets: list | None = None, only: list | None = None) -> list[Row]:
    """Every case of the profile, in order (``search``, then :data:`.cases.CASES`); returns all rows (nothing
    written). ``datasets`` (if given) receives each scale dataset's info and fingerprint, for the provenance.
    ``only``: just these sections (``search`` or keys of CASES)."""
    unknown = sorted(set(only or []) - {"search", *CASES})
    if unknown:
        raise BenchError(f"only: {unknown[0]!r} is not a profile section; allowed: search, {', '.join(CASES)}")
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
        if only and "search" not in only:
            break
        for n in sizes:
            progress(f"search: {n:,} vectors ({vectors}), {s['n_queries']} queries")
            data = dataset(int(n), seed=seed, vectors=vectors, n_queries=int(s["n_queries"]))
            out += search_case(data, s, int(n), progress)
            del data
            release_memory()

    for key, case in CASES.items():
        section = (cfg.get(key) or {}) if not only or key in only else {}
        for n in section.get("sizes", []):
            progress(f"{key}: {int(n):,} vectors")
            data = dataset(int(n), seed=seed, n_queries=int(section.get("n_queries", s["n_queries"])))
            out += case(data, section, int(n), cfg)
            del data
            release_memory()  # what a case freed is not the next one's RSS
    return out


def resummarize(out_dir: str | Path) -> dict:
    """Rebuild summary.csv, targets.csv and perf.md from a stored runs.csv (no measurement), keeping the
    provenance of the run that measured them."""
    out_dir = Path(out_dir)
    prov = json.loads((out_dir / "PROVENANCE.json").read_text(encoding="utf-8"))
    cfg = prov["config"]
    return write_results(out_dir, cfg, read_runs(out_dir / "runs.csv"), prov["wall_seconds"], prov["datasets"],
                         provenance_override=prov)


def require_stored(out_dir: str | Path, only: list) -> Path:
    """``out_dir`` if it holds a stored run to merge into (checked before a partial run, not after it)."""
    out_dir = Path(out_dir)
    if not (out_dir / "runs.csv").is_file() or not (out_dir / "PROVENANCE.json").is_file():
        raise BenchError(f"only={list(only)}: {out_dir} has no stored run (runs.csv, PROVENANCE.json) to merge into")
    return out_dir


def merge_results(out_dir: str | Path, cfg: dict, runs: list[Row], wall_s: float, datasets: list,
                  only: list) -> dict:
    """Write ``out_dir`` from its stored run with ``runs`` (sections ``only`` of ``cfg``, just measured) put in:
    a stored row whose (case, system, n_vectors, vectors) was measured again is replaced, every other row is
    kept. The provenance stays the stored run's, with these sections' config replaced and a ``merged`` entry
    (sections, git, packages, machine, wall seconds, datasets) saying where their rows come from."""
    out_dir = require_stored(out_dir, only)
    prov = json.loads((out_dir / "PROVENANCE.json").read_text(encoding="utf-8"))
    new = {(r.case, r.system, r.n_vectors, r.vectors) for r in runs}
    kept = [r for r in read_runs(out_dir / "runs.csv") if (r.case, r.system, r.n_vectors, r.vectors) not in new]
    part = {k: cfg[k] for k in only if k in cfg}
    now = provenance(cfg)  # before anything is written (git status)
    prov["config"] = {**prov["config"], **part}
    prov["merged"] = [m for m in prov.get("merged", []) if sorted(m["sections"]) != sorted(only)] + [{
        "sections": sorted(only), "config": part, "git": now["git"], "packages": now["packages"],
        "machine": machine_info(), "wall_seconds": round(wall_s, 1), "datasets": datasets,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}]
    prov.pop("files", None)
    return write_results(out_dir, prov["config"], kept + runs, prov["wall_seconds"], prov["datasets"],
                         provenance_override=prov)


def write_results(out_dir: str | Path, cfg: dict, runs: list[Row], wall_s: float,
                  datasets: list | None = None, provenance_override: dict | None = None) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summary_rows(runs)
    targets = evaluate_targets(summary)
    filtered = filtered_report.table(summary)
    others = [r for r in summary if r["case"] != filtered_report.CASE]  # that case has its own section
    files = {
        "runs.csv": csv_text([r.as_dict() for r in runs], RUN_FIELDS),
        "summary.csv": csv_text(summary, SUMMARY_FIELDS),
        "targets.csv": csv_text(targets, ("id", "what", "n_vectors", "measured", "unit", "bar", "verdict", "detail")),
        "perf.md": render_markdown(others, targets, cfg, machine=(provenance_override or {}).get("machine")
                                   or machine_info()) + filtered_report.markdown(filtered, cfg.get("filtered_ann")),
    }
    if filtered:
        files["filtered_ann.csv"] = csv_text(filtered, filtered_report.FIELDS)
    # provenance first: the git status must not see this run's own output files as changes
    prov = dict(provenance_override) if provenance_override else {**provenance(cfg), "schema_version": SCHEMA_VERSION, "profile": cfg.get("profile"),
            "seed": int(cfg.get("seed", 0)), "wall_seconds": round(wall_s, 1), "datasets": datasets or [],
            "machine": machine_info()}
    for name, text in files.items():
        atomic_write_text(out_dir / name, text)
    if not filtered:  # a run without the case leaves no table of an earlier one behind
        (out_dir / "filtered_ann.csv").unlink(missing_ok=True)
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
