"""``python -m smartvector_bench.tools.publish`` (``make results``): rerun the default experiments through the real
CLI and publish their outputs, with provenance, under ``results/<name>/``; publish finished sweep presets too.

    python -m smartvector_bench.tools.publish                          # every experiment + the sweeps found
    python -m smartvector_bench.tools.publish --only main,reembed_cost # these experiments only (no sweeps)

Each experiment runs as ``smartvector-bench experiment=<name> hydra.run.dir=<fixed temp folder>
embedder.cache_path=null print_table=false`` with ``OMP_NUM_THREADS=1`` (the command and environment ``make regress``
reruns: ``rerun_command`` and ``RERUN_ENV`` in ``tools/gate/rerun.py``), two at a time on two or more cores
(``--jobs``). Only after the run exits 0 and its result JSON parses are the files its kind declares
(``experiments/__init__.py``) copied into ``results/<name>/``; a main-kind run also gets ``queries.jsonl`` and
``signals.jsonl``, the report's drill-down inputs (``tools/report/``). Every file is written atomically, the result
JSON after the others and ``PROVENANCE.json`` last (schema version, git sha and dirty flag, package versions, machine
and its fingerprint, the command, config and dataset sha256, the sha256 of every published file). Files of an earlier
publication that the new run did not produce are deleted. A failed rerun publishes nothing for that experiment,
leaves its previous publication untouched and makes the exit code 1.

Sweeps are not run here: a preset's folder made by ``smartvector-bench -m experiment=<preset>`` and collected by
``smartvector-collect`` is published from ``multirun/<preset>/`` (``tidy.csv``, ``tidy.provenance.json``,
``summary.json``, ``queries.csv``, and the metrics.json and run files of the jobs ``make regress`` reruns, under
``runs/<job_dir>/``) into ``results/<preset>/`` when every planned job completed (``--allow-incomplete`` to publish a
partial sweep). ``--sweeps auto`` (the default without ``--only``) publishes every preset folder found and skips,
with a warning, those still incomplete; a preset named explicitly that is missing or incomplete is an error (exit 1).
``--sweeps none``: none.

``--store-queries main,main_large,handbook`` reruns nothing: it writes ``queries.jsonl`` into each already published
run folder from its dataset regenerated from the recorded config (refused unless the sha256 is the recorded one) and
adds it to that folder's ``PROVENANCE.json``. ``--store-signals main`` likewise writes ``signals.jsonl`` (the
four-signal systems' per-hit signals of the stored hits, recomputed with the recorded embedder and refused unless
they fuse to every stored score; ``tools/report/stored_signals.py``).
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import hashlib
import io
import json
import platform
import shlex
import shutil
import sys
import time
from pathlib import Path

from experiments import OPTIONAL_RUN_FILES
from smartvector_bench.core.atomic import atomic_write_bytes, atomic_write_json
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results.provenance import git_sha, package_versions
from smartvector_bench.tools.gate.common import EXPERIMENTS, REPO, RESULTS_DIR, rel
from smartvector_bench.core.results import MainMetrics
from smartvector_bench.tools.gate import children
from smartvector_bench.tools.gate.rerun import RERUN_ENV, Rerun, add_rerun_options, rerun_many
from smartvector_bench.tools.gate.sweep_reruns import RUNS, jobs_to_store
from smartvector_bench.tools.report import stored_queries, stored_signals

PROG = "publish"
PUBLISH_SCHEMA = "1.0"
MULTIRUN_DIR = REPO / "multirun"
SWEEP_REQUIRED = ("tidy.csv", "tidy.provenance.json")
SWEEP_OPTIONAL = ("summary.json", "queries.csv")
_write, _write_json = atomic_write_bytes, atomic_write_json
PROVENANCE_FILE = "PROVENANCE.json"


class PublishError(Exception):
    """Nothing of this experiment or sweep was published."""


class Incomplete(PublishError):
    """A sweep with failed or missing jobs."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _matches(fname: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(fname, p) for p in patterns)


def _replace_folder_files(dest: Path, files: dict[str, bytes], order: list[str], patterns: tuple[str, ...]) -> None:
    """Write ``files`` into ``dest`` atomically, one by one in ``order``; then delete earlier published files
    matching ``patterns`` that are not in the new set (PROVENANCE.json is written by the caller, last)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in order:
        _write(dest / name, files[name])
    for old in dest.iterdir():
        if old.is_file() and old.name not in files and _matches(old.name, patterns):
            old.unlink()


# -- experiments ----------------------------------------------------------------------------------------------

def collect_run_files(name: str, run_dir: Path) -> dict[str, bytes]:
    """The files of a finished run that are published, read into memory (so a publication is all or nothing)."""
    exp = EXPERIMENTS[name]
    files: dict[str, bytes] = {}
    for pattern in exp.files:
        hits = sorted(p for p in run_dir.glob(pattern) if p.is_file())
        if not hits:
            raise PublishError(f"{name}: the run produced no {pattern} in {run_dir}")
        for p in hits:
            files[p.name] = p.read_bytes()
    files |= {p.name: p.read_bytes() for pat in OPTIONAL_RUN_FILES for p in sorted(run_dir.glob(pat))}  # a model
    try:
        result = json.loads(files[exp.result_file])
    except ValueError as exc:
        raise PublishError(f"{name}: {exp.result_file} is not valid JSON ({exc})") from exc
    if not isinstance(result.get("provenance"), dict):
        raise PublishError(f"{name}: {exp.result_file} carries no provenance")
    if exp.kind == "main":  # the drill-down's inputs, from the run's own dataset/ (sha256 checked)
        try:
            files[stored_queries.FILE] = stored_queries.build(run_dir, result)[0].encode("utf-8")
        except BenchError as exc:
            raise PublishError(f"{name}: {stored_queries.FILE}: {exc}") from None
        try:  # and the four-signal systems' signals, checked against their scores like --store-signals
            text = stored_signals.from_run_files(run_dir, result)
        except BenchError as exc:
            raise PublishError(f"{name}: {stored_signals.FILE}: {exc}") from None
        if text is not None:
            files[stored_signals.FILE] = text.encode("utf-8")
    for fname, data in files.items():  # every run file of main carries its own _meta provenance line
        if fname.endswith(".jsonl"):
            first = data.split(b"\n", 1)[0]
            if b'"_meta"' not in first:
                raise PublishError(f"{name}: {fname} has no _meta provenance line")
    return files


def experiment_provenance(name: str, r: Rerun, files: dict[str, bytes]) -> dict:
    exp = EXPERIMENTS[name]
    result = json.loads(files[exp.result_file])
    prov, ds = result["provenance"], result.get("dataset") or {}
    command = [Path(r.command[0]).name if i == 0 else c for i, c in enumerate(r.command)]
    return {
        "schema_version": PUBLISH_SCHEMA,
        "kind": "experiment",
        "experiment": name,
        "results_schema_version": result.get("schema_version"),
        "command": command,
        "command_line": shlex.join(command),
        "cwd": ".",
        "env": dict(RERUN_ENV),
        "git": prov.get("git"),
        "packages": prov.get("packages"),
        "python": prov.get("python"),
        "platform": platform.platform(),
        "machine": prov.get("machine"),
        "machine_fingerprint": prov.get("machine_fingerprint"),
        "config_sha256": prov.get("config_sha256"),
        "dataset_sha256": ds.get("sha256"),
        "dataset_seed": ds.get("seed"),
        "embedder": result.get("embedder"),
        "published_at": _now(),
        "run_wall_time_s": round(r.wall_time_s, 1),
        "files": {f: {"sha256": _sha(d), "bytes": len(d)} for f, d in sorted(files.items())},
        "note": ("Every published file came from this one run. Result JSONs carry the full provenance "
                 "(resolved config included) and run_<system>.jsonl files a _meta line; table.md and CSV files "
                 "are covered by this file's sha256 list."),
    }


@children.held  # a SIGTERM / SIGINT waits until the folder is published whole
def publish_experiment(name: str, r: Rerun, results_dir: Path) -> dict:
    files = collect_run_files(name, r.run_dir)
    prov = experiment_provenance(name, r, files)
    result_file = EXPERIMENTS[name].result_file
    order = sorted(f for f in files if f != result_file) + [result_file]  # the result JSON after the others
    dest = results_dir / name
    _replace_folder_files(dest, files, order, (*EXPERIMENTS[name].files, *OPTIONAL_RUN_FILES))
    _write_json(dest / PROVENANCE_FILE, prov)
    return prov


# -- sweeps ----------------------------------------------------------------------------------------------------

def find_sweeps(multirun_dir: Path) -> list[str]:
    if not multirun_dir.is_dir():
        return []
    return sorted(p.name for p in multirun_dir.iterdir() if p.is_dir() and (p / "tidy.csv").is_file())


def _csv_values(data: bytes, column: str) -> list[str]:
    reader = csv.DictReader(io.StringIO(data.decode("utf-8")))
    return sorted({row[column] for row in reader if row.get(column)})


@children.held
def publish_sweep(preset: str, multirun_dir: Path, results_dir: Path, allow_incomplete: bool) -> dict:
    if preset in EXPERIMENTS:
        raise PublishError(f"sweep {preset!r}: the name of an experiment; results/{preset}/ is that experiment's")
    src = multirun_dir / preset
    if not src.is_dir():
        raise PublishError(f"sweep {preset!r}: {rel(src)} not found (run `smartvector-bench -m "
                           f"experiment={preset}` first)")
    files: dict[str, bytes] = {}
    for fname in SWEEP_REQUIRED:
        if not (src / fname).is_file():
            raise PublishError(f"sweep {preset!r}: {rel(src / fname)} not found (collect it with "
                               f"`smartvector-collect {rel(src)}`)")
        files[fname] = (src / fname).read_bytes()
    for fname in SWEEP_OPTIONAL:
        if (src / fname).is_file():
            files[fname] = (src / fname).read_bytes()
    try:
        sweep_prov = json.loads(files["tidy.provenance.json"])
        summary = json.loads(files["summary.json"]) if "summary.json" in files else None
    except ValueError as exc:
        raise PublishError(f"sweep {preset!r}: unreadable JSON ({exc})") from exc
    jobs = (summary or {}).get("jobs") or sweep_prov.get("jobs") or {}
    incomplete = int(jobs.get("failed") or 0) + int(jobs.get("missing") or 0)
    if incomplete and not allow_incomplete:
        raise Incomplete(f"sweep {preset!r}: {jobs.get('failed', 0)} failed and {jobs.get('missing', 0)} missing "
                           f"of {jobs.get('planned', '?')} planned jobs; rerun the preset (it resumes) or pass "
                           "--allow-incomplete")
    stored = jobs_to_store(preset, src / "tidy.csv")  # the jobs the gate reruns keep metrics.json and run files
    for d in stored:
        keep = [src / d / MainMetrics.FILE, *(p for g in ("run_*.jsonl", *OPTIONAL_RUN_FILES)
                                               for p in sorted((src / d).glob(g)))]
        if not keep[0].is_file() or len(keep) < 2:
            raise PublishError(f"sweep {preset!r}: {rel(src / d)} lacks metrics.json or run files (make regress reruns it)")
        files |= {f"{RUNS}/{d}/{p.name}": p.read_bytes() for p in keep}
    header = files["tidy.csv"].split(b"\n", 1)[0].decode("utf-8")
    cols = header.split(",")
    prov = {
        "schema_version": PUBLISH_SCHEMA,
        "kind": "sweep",
        "preset": preset,
        "source": rel(src),
        "command": ["smartvector-bench", "-m", f"experiment={preset}"],
        "command_line": f"smartvector-bench -m experiment={preset} && smartvector-collect {rel(src)}",
        "git": {"sha": sweep_prov.get("git_sha"), "dirty": sweep_prov.get("git_dirty")},
        "packages": sweep_prov.get("packages"),
        "config_sha256": _csv_values(files["tidy.csv"], "config_sha256") if "config_sha256" in cols else None,
        "dataset_sha256": _csv_values(files["tidy.csv"], "dataset_sha256") if "dataset_sha256" in cols else None,
        "jobs": jobs,
        "complete": not incomplete,
        "sweep_provenance": sweep_prov,
        "publisher": {"git": git_sha(), "packages": package_versions()},
        "published_at": _now(),
        "files": {f: {"sha256": _sha(d), "bytes": len(d)} for f, d in sorted(files.items())},
        "stored_jobs": stored,
        "note": "Copied from the sweep folder as collected (tidy.csv repeats git sha, config and dataset sha256 on "
                "every row); the jobs make regress reruns keep their metrics.json and run files in runs/<job_dir>/.",
    }
    dest = results_dir / preset
    shutil.rmtree(dest / RUNS, ignore_errors=True)  # the stored jobs of an earlier publication
    order = sorted(f for f in files if f.startswith(f"{RUNS}/"))
    order += [f for f in ("queries.csv", "tidy.csv", "summary.json", "tidy.provenance.json") if f in files]
    _replace_folder_files(dest, files, order, SWEEP_REQUIRED + SWEEP_OPTIONAL)
    _write_json(dest / PROVENANCE_FILE, prov)
    return prov


# -- command line ----------------------------------------------------------------------------------------------

def _split(values: list[str] | None) -> list[str]:
    return list(dict.fromkeys(n.strip() for v in values or [] for n in v.split(",") if n.strip()))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m smartvector_bench.tools.publish",
                                 description="Rerun the default experiments and publish them, with provenance, "
                                             "under results/.")
    ap.add_argument("--only", action="append", metavar="NAMES",
                    help=f"comma-separated experiments to rerun ({', '.join(EXPERIMENTS)}, or none); "
                         "default: every one of them, then every sweep finished under --multirun-dir (the publisher "
                         "runs no sweep: `smartvector-bench -m experiment=<preset>` does)")
    ap.add_argument("--sweeps", action="append", metavar="PRESETS",
                    help="comma-separated sweep presets to publish from multirun/<preset>/ (auto: every one "
                         "found; none); default: auto without --only, none with it")
    ap.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where to publish (default results/)")
    ap.add_argument("--multirun-dir", type=Path, default=MULTIRUN_DIR, help="where sweeps are (default multirun/)")
    ap.add_argument("--allow-incomplete", action="store_true", help="publish sweeps with failed or missing jobs")
    ap.add_argument("--store-queries", action="append", metavar="NAMES",
                    help=f"comma-separated published main-kind run folders to give a {stored_queries.FILE} (each "
                         "query's text, as_of and correct/stale/rumor ids, for the report) from the dataset "
                         "regenerated from the recorded config (sha256 checked); reruns nothing (alone, it "
                         "implies --only none --sweeps none)")
    ap.add_argument("--store-signals", action="append", metavar="NAMES",
                    help=f"like --store-queries, for {stored_signals.FILE}: the four-signal systems' per-hit signals, "
                         "recomputed, refused unless they fuse to every stored score within 1e-5")
    add_rerun_options(ap, keep_help="run into DIR and keep the full run folders",
                      set_help="extra Hydra override for every rerun (testing; recorded in the command)")
    return ap.parse_args(argv)


def store_side_files(names: list[str], results_dir: Path, command: str, module=stored_queries) -> list[str]:
    """``--store-queries`` / ``--store-signals`` (``module``): write each folder's side file; returns the names
    that failed (one line each)."""
    failures, flag = [], "--store-queries" if module is stored_queries else "--store-signals"
    for name in names:
        folder = results_dir / name
        try:
            if not (folder / "metrics.json").is_file():
                raise BenchError(f"{rel(folder / 'metrics.json')}: not found; publish {name} first")
            entry = module.store(folder, command)
        except (BenchError, OSError) as exc:
            failures.append(name)
            print(f"{PROG}: {flag} {name}: {exc}", file=sys.stderr)
            continue
        what = (f"{entry['n_queries']} queries" if module is stored_queries else
                f"{entry['n_lines']} (system, query) lines of {', '.join(entry['systems'])}")
        print(f"{name}: stored {what} in {rel(folder / module.FILE)} from {entry['source']} (dataset sha256 "
              f"{entry['dataset_sha256'][:12]}, as recorded)", flush=True)
    return failures


@children.stops_children(PROG)  # as the gate: reruns stopped, the temp folder removed, exit 143 / 130
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    store, store_sig = _split(args.store_queries), _split(args.store_signals)
    for flag, given_names in (("--store-queries", store), ("--store-signals", store_sig)):
        bad = [n for n in given_names if n not in EXPERIMENTS or EXPERIMENTS[n].kind != "main"]
        if bad:
            allowed = ", ".join(n for n, e in EXPERIMENTS.items() if e.kind == "main")
            print(f"{PROG}: error: {flag}: {bad[0]!r} is not a main-kind experiment; allowed: {allowed}",
                  file=sys.stderr)
            return 2
    store_any = store or store_sig
    if store_any and not args.only:  # storing alone reruns nothing
        args.only, args.sweeps = ["none"], args.sweeps or ["none"]
    only = _split(args.only)
    if only == ["none"]:
        names = []
    elif only:
        bad = [n for n in only if n not in EXPERIMENTS]
        if bad:
            print(f"{PROG}: error: --only: unknown experiment {bad[0]!r}; allowed: {', '.join(EXPERIMENTS)}, none",
                  file=sys.stderr)
            return 2
        names = only
    else:
        names = list(EXPERIMENTS)
    sweeps_arg = _split(args.sweeps) or (["none"] if only else ["auto"])
    if sweeps_arg == ["auto"]:
        sweeps = find_sweeps(args.multirun_dir)
    elif sweeps_arg == ["none"]:
        sweeps = []
    else:
        sweeps = sweeps_arg

    failures: list[str] = []
    if store_any:
        given = argv if argv is not None else sys.argv[1:]
        command = shlex.join(["python", "-m", "smartvector_bench.tools.publish", *given])
        failures += store_side_files(store, args.results_dir, command)
        failures += store_side_files(store_sig, args.results_dir, command, stored_signals)
    if names:
        workdir = children.workdir(args.keep, "svb-publish-")
        print(f"rerunning {', '.join(names)} in {workdir} ...", flush=True)
        reruns = rerun_many(names, workdir, jobs=args.jobs, extra=tuple(args.overrides))
        for name, r in reruns.items():
            if not r.ok:
                failures.append(name)
                print(f"{name}: FAILED ({r.error}) after {r.wall_time_s:.1f} s; nothing published. "
                      f"Command: {shlex.join(r.command)}\n{r.log_tail()}", file=sys.stderr)
                continue
            try:
                prov = publish_experiment(name, r, args.results_dir)
            except (PublishError, OSError) as exc:
                failures.append(name)
                print(f"{name}: not published: {exc}", file=sys.stderr)
                continue
            print(f"{name}: published {len(prov['files'])} files to {rel(args.results_dir / name)} "
                  f"(run {r.wall_time_s:.1f} s; git {str((prov['git'] or {}).get('sha'))[:12]}"
                  f"{' dirty' if (prov['git'] or {}).get('dirty') else ''})", flush=True)
    auto = sweeps_arg == ["auto"]
    for preset in sweeps:
        try:
            prov = publish_sweep(preset, args.multirun_dir, args.results_dir, args.allow_incomplete)
        except Incomplete as exc:
            if auto:  # found, not asked for: a sweep still running or partly failed is skipped, not an error
                print(f"{PROG}: skipped: {exc}", file=sys.stderr)
                continue
            failures.append(preset)
            print(f"{PROG}: {exc}", file=sys.stderr)
            continue
        except (PublishError, OSError) as exc:
            failures.append(preset)
            print(f"{PROG}: {exc}", file=sys.stderr)
            continue
        print(f"{preset}: published {len(prov['files'])} sweep files to {rel(args.results_dir / preset)}")
    if not names and not sweeps and not store_any:
        print("nothing to publish (no experiment chosen and no sweep folder found)")
    if failures:
        print(f"{PROG}: not published: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
