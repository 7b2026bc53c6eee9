"""The committed check: the results root as committed, before anything is rerun. Host-independent and quick.

1. Files (``files.py``): the manifest and each ``PROVENANCE.json``.
2. Replay (``replay.py``): every folder of experiment=main, each stored sweep job (``<preset>/runs/``) included,
   recomputed by today's code from its run files; a stored job's rows of tidy.csv and queries.csv must be its own.
3. Sweeps (``sweeps.py``): each summary.json from its tidy.csv; the other result files read through their result
   objects (a file without the shape of its kind is one row naming the key)."""

from __future__ import annotations

import csv
import json
import platform
from pathlib import Path

from smartvector_bench.core.results.provenance import fingerprint, machine, package_versions
from smartvector_bench.core.run import read_run_lines
from smartvector_bench.core.results import MainMetrics, ResultError, system_rows
from smartvector_bench.tools.gate import files, sweeps
from smartvector_bench.tools.gate.common import EXPERIMENTS, Row, read_result, rel
from smartvector_bench.tools.gate.outputs import experiment_dir
from smartvector_bench.tools.gate.replay import replay_main
from smartvector_bench.tools.gate.sweep_reruns import RUNS
from smartvector_bench.tools.gate.tolerances import exact_host


def this_host() -> dict:
    """This process's machine fingerprint, packages and Python, as a provenance record gives them."""
    return {"machine_fingerprint": fingerprint(machine()), "packages": package_versions(),
            "python": platform.python_version()}


def host_note(exact: bool, why: str) -> str:  # the tolerance column of a row: how it was compared, and why
    return ("exact (" if exact else "rounding bounds (") + why + ")"


def _replay(label: str, folder: Path, host: dict) -> list[Row]:
    try:
        prov = MainMetrics.load(folder / MainMetrics.FILE).provenance
    except ResultError as exc:
        return [Row(f"{label}: metrics.json", "readable", "ERROR", "-", False, str(exc))]
    exact, why = exact_host(prov, host)
    return replay_main(label, folder, exact, host_note(exact, why))


def _csv_rows(path: Path, job_dir: str) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r.get("job_dir") == job_dir]


def _cells(rows: dict, keys) -> dict:
    return {k: {c: "" if v is None else str(v) for c, v in r.items() if c in keys} for k, r in rows.items()}


def stored_job_rows(folder: Path, job: Path) -> list[Row]:
    """A sweep's stored job (``folder/runs/<job_dir>/``) against the sweep's tables: its tidy.csv rows are
    ``system_rows`` of its metrics.json, its queries.csv rows the flags and confidence of its run files."""
    tidy = {(r["system"], r["split"]): r for r in _csv_rows(folder / sweeps.TIDY, job.name)}
    mine = {(r["system"], r["split"]): r for r in system_rows(json.loads((job / MainMetrics.FILE).read_text("utf-8")))}
    keys = set(next(iter(tidy.values()), {})) & set(next(iter(mine.values()), {}))  # system_rows' columns
    pairs = [("tidy.csv", tidy, mine, keys, "its metrics.json's")]
    if (folder / sweeps.QUERIES).is_file():
        flags = ("correct", "stale", "rumor", "confidence")
        runs = {(f.name[4:-6], rec["query_id"]): {k: int(rec[k]) if k != "confidence" and rec[k] is not None
                                                   else rec[k] for k in flags}
                for f in sorted(job.glob("run_*.jsonl")) for _, rec in read_run_lines(f)[1]}
        stored = {(r["system"], r["query_id"]): r for r in _csv_rows(folder / sweeps.QUERIES, job.name)}
        pairs.append(("queries.csv", stored, runs, set(flags), "its run files'"))
    rows = []
    for name, table, want, cols, whose in pairs:
        a, b = _cells(table, cols), _cells(want, cols)
        misses = [f"{' '.join(k)}: {name} {a.get(k)}, expected {b.get(k)}" for k in sorted(set(a) | set(b))
                  if a.get(k) != b.get(k)]
        rows.append(Row(f"{rel(job)}: {name} rows", whose, "equal" if not misses else f"{len(misses)} differ",
                        "exact", not misses, "; ".join(misses[:3])))
    return rows


def check_committed(expected_path: Path, expected: dict) -> tuple[list[Row], Path]:
    manifest = expected["manifest"]
    root = files.manifest_root(expected_path, manifest)
    if not root.is_dir():
        return [Row("manifest root", "a folder", "MISSING", "file", False, f"{root} not found", rel(root))], root
    rows = [Row(r.metric, r.expected, r.got, r.tolerance, r.ok, r.note, rel(root / r.file))
            for r in files.check_manifest(root, manifest, expected_path) + files.check_provenance(root)]
    host = this_host()
    for name, exp in EXPERIMENTS.items():
        folder = experiment_dir(root, name) if (root / name).is_dir() else None
        if folder is None:
            continue
        if exp.kind == "main":
            rows += _replay(rel(folder), folder, host)
            continue
        why = ""
        try:
            read_result(name, folder / exp.result_file)
        except ResultError as exc:
            why = str(exc)
        rows.append(Row(rel(folder / exp.result_file), f"a {exp.kind} result", "ERROR" if why else "readable", "-",
                        not why, why))
    rows += [Row(r.metric, r.expected, r.got, r.tolerance, r.ok, r.note, rel(root / r.file))
             for r in sweeps.check_summaries(root)]
    for folder in sweeps.sweep_folders(root):
        for job in sorted(p for p in (folder / RUNS).glob("*") if p.is_dir()):
            rows += _replay(rel(job), job, host) + stored_job_rows(folder, job)
    return rows, root
