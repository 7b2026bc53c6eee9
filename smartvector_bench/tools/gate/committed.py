"""The committed check: the results root as committed, before anything is rerun. Host-independent and quick.

1. Files (``files.py``): every file under the root recorded in the manifest with its sha256, none unrecorded,
   each equal to the bytes its ``PROVENANCE.json`` lists.
2. Replay (``replay.py``): every folder of experiment=main (``main``, ``main_large``, ``handbook``; each stored
   job of a sweep under ``<preset>/runs/``) recomputed by today's code from its run files; a stored sweep job's
   rows of ``tidy.csv`` and ``queries.csv`` must be the ones its metrics.json and run files give.
3. Sweeps (``sweeps.py``): each ``summary.json`` recomputed from its ``tidy.csv``; the other result files read
   through their result objects (a file without the shape of its kind is one row naming the key).

Each row names its file."""

from __future__ import annotations

import csv
import json
import platform
from pathlib import Path

from smartvector_bench.core.provenance import fingerprint, machine, package_versions
from smartvector_bench.core.results import MainMetrics, ResultError, system_rows
from smartvector_bench.tools.gate import files, sweeps
from smartvector_bench.tools.gate.common import EXPERIMENTS, Row, read_result, rel
from smartvector_bench.tools.gate.outputs import experiment_dir
from smartvector_bench.tools.gate.replay import replay_main
from smartvector_bench.tools.gate.tolerances import exact_host

RUNS = "runs"  # <preset>/runs/<job_dir>/: a sweep's jobs that the gate reruns, with their run files


def this_host() -> dict:
    """This process's machine fingerprint, packages and Python, as a provenance record gives them."""
    return {"machine_fingerprint": fingerprint(machine()), "packages": package_versions(),
            "python": platform.python_version()}


def host_note(exact: bool, why: str) -> str:
    return "exact (" + why + ")" if exact else "rounding bounds (" + why + ")"


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


def _cell(v) -> str:
    return "" if v is None else str(v)


def stored_job_rows(folder: Path, job: Path) -> list[Row]:
    """A sweep's stored job (``folder/runs/<job_dir>/``) against the sweep's tables: its tidy.csv rows are
    ``system_rows`` of its metrics.json, its queries.csv rows the flags and confidence of its run files."""
    label, name = rel(job), job.name
    metrics = json.loads((job / MainMetrics.FILE).read_text(encoding="utf-8"))
    misses = []
    tidy = {(r["system"], r["split"]): r for r in _csv_rows(folder / sweeps.TIDY, name)}
    for want in system_rows(metrics):
        got = tidy.pop((want["system"], want["split"]), None)
        if got is None:
            misses.append(f"no tidy row for {want['system']} {want['split']}")
            continue
        misses += [f"{want['system']} {want['split']} {k}: tidy {got.get(k)!r}, metrics.json {_cell(v)!r}"
                   for k, v in want.items() if k in got and got[k] != _cell(v)]
    misses += [f"tidy row {s} {sp} has no system in metrics.json" for s, sp in tidy]
    rows = [Row(f"{label}: tidy.csv rows", "its metrics.json's", "equal" if not misses else f"{len(misses)} differ",
                "exact", not misses, "; ".join(misses[:3]))]
    if (folder / sweeps.QUERIES).is_file():
        queries, misses = _csv_rows(folder / sweeps.QUERIES, name), []
        byq = {(r["system"], r["query_id"]): r for r in queries}
        for run_file in sorted(job.glob("run_*.jsonl")):
            system = run_file.name[len("run_"):-len(".jsonl")]
            for line in run_file.read_text(encoding="utf-8").splitlines()[1:]:
                rec = json.loads(line)
                got = byq.pop((system, rec["query_id"]), None)
                want = {f: _cell(None if rec[f] is None else int(rec[f])) for f in ("correct", "stale", "rumor")}
                want["confidence"] = _cell(rec["confidence"])
                if got is None or any(got[k] != v for k, v in want.items()):
                    misses.append(f"{system} {rec['query_id']}: queries.csv {got and {k: got[k] for k in want}}, "
                                  f"run file {want}")
        misses += [f"queries.csv row {s} {q} has no run file line" for s, q in byq]
        rows.append(Row(f"{label}: queries.csv rows", "its run files'", "equal" if not misses else
                        f"{len(misses)} differ", "exact", not misses, "; ".join(misses[:3])))
    return rows


def check_committed(expected_path: Path, expected: dict) -> tuple[list[Row], Path]:
    manifest = expected["manifest"]
    root = files.manifest_root(expected_path, manifest)
    if not root.is_dir():
        return [Row("manifest root", "a folder", "MISSING", "file", False, f"{root} not found", rel(root))], root
    checks = files.check_manifest(root, manifest, expected_path) + files.check_provenance(root)
    rows = [Row(c.check, c.expected, c.got, "file", c.ok, c.note, rel(root / c.file)) for c in checks]
    host = this_host()
    for name, exp in EXPERIMENTS.items():
        folder = experiment_dir(root, name) if (root / name).is_dir() else None
        if folder is None:
            continue
        if exp.kind == "main":
            rows += _replay(rel(folder), folder, host)
            continue
        try:
            read_result(name, folder / exp.result_file)
            rows.append(Row(f"{rel(folder / exp.result_file)}", f"a {exp.kind} result", "readable", "-", True))
        except ResultError as exc:
            rows.append(Row(f"{rel(folder / exp.result_file)}", f"a {exp.kind} result", "ERROR", "-", False, str(exc)))
    rows += [Row(r.metric, r.expected, r.got, r.tolerance, r.ok, r.note, rel(root / r.file))
             for r in sweeps.check_summaries(root)]
    for folder in sweeps.sweep_folders(root):
        for job in sorted(p for p in (folder / RUNS).glob("*") if p.is_dir()):
            rows += _replay(rel(job), job, host) + stored_job_rows(folder, job)
    return rows, root
