"""``python -m smartvector_bench.tools.reproduce`` (``make reproduce-all``): from a clean clone (after ``make
install``) to every published result, step by step, each step's wall time and peak memory into
``results/timings.json``.

    python -m smartvector_bench.tools.reproduce --dry-run             # the plan: every step and its commands
    python -m smartvector_bench.tools.reproduce                       # everything (hours on 2 cores)
    python -m smartvector_bench.tools.reproduce --skip bench          # everything but make bench's steps
    python -m smartvector_bench.tools.reproduce --skip bench --jobs 2 # experiments and sweeps two at a time
    python -m smartvector_bench.tools.reproduce --steps main,seeds --out /tmp/timings.json
    python -m smartvector_bench.tools.reproduce --render              # the markdown table of the timings file
    python -m smartvector_bench.tools.reproduce --write-docs          # ... into docs/operations.md's section

The steps (``reproduce_plan.py``) run in plan order, each command as a child process in a session of its own, from
the repository; with ``--jobs N``, up to N of the experiments and sweeps run side by side (they write separate
folders, and the sweeps' shared embedding cache is SQLite in WAL mode), while the bench and the derived files run
alone. A step records its start and end (seconds from the run's start); a group's and the run's time is the wall
time their steps covered, not the sum (``step_seconds_sum``). Per command, measured here: the wall time; the peak
RSS of the largest single process (the largest ``VmHWM``, the kernel's high-water mark since exec, of the child and
its descendants, read while they live; ``ru_maxrss`` from ``os.wait4`` is kept as ``ru_maxrss_mb`` and used only
when no process was sampled: Linux counts the forking parent's RSS in it); the peak of the summed RSS of the whole
live process tree (``/proc/<pid>/stat`` of the child and its descendants, sampled every 0.25 s: what the machine
must hold at once when a step runs processes side by side; a shorter peak can be missed, shared pages count once per
process); and the CPU seconds (user + system of the child and its waited-for descendants). A step's figures are the
sum of its commands' seconds and the maximum of their peaks. MB here is 2^20 bytes.

The timings file is rewritten (atomically: temp file, then rename) after every step, so a failed or interrupted
run keeps the timings so far. A failing command stops the run with one line naming the step and its exit code
(exit 1; steps already running side by side finish first); SIGINT / SIGTERM go to every running command's process
group (a second one: SIGKILL), the run stops after them and exits 130 / 143. When the file is under the results
root and the ``expected`` step ran, the manifest is written once more at the end, so that
``results/expected.json`` records the final timings file. Measuring one command: :mod:`.reproduce_measure`.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.results.provenance import _cpuinfo, git_sha, package_versions
from smartvector_bench.tools import reproduce_report as report
from smartvector_bench.tools.gate.common import REPO, RESULTS_DIR, rel
from smartvector_bench.tools.reproduce_measure import MB, POLL_S, RUNNING, forward_signal, run_measured
from smartvector_bench.tools.reproduce_plan import (BEFORE_DIR, GROUPS, MULTIRUN_DIR, TIMINGS_FILE, Step, plan,
                                                      select)

PROG = "reproduce"
SCHEMA_VERSION = "1.0"
LOGS = REPO / "outputs" / "reproduce-logs"  # --jobs above 1 without --logs (outputs/ is git-ignored)

# Groups whose steps are independent (each writes its own folder; the sweeps share the embedding cache, which is
# SQLite in WAL mode), so that ``--jobs`` runs them side by side.
CONCURRENT = ("experiments", "sweeps")


# -- the timings file --------------------------------------------------------------------------------------------

def machine_info() -> dict:
    info = _cpuinfo()
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = round(int(line.split()[1]) / 1024)
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu_model": info.get("model name") or platform.processor() or None, "cores": cores,
            "cpus": os.cpu_count(), "memory_mb": mem, "arch": platform.machine(), "platform": platform.platform(),
            "python": platform.python_version()}


def warm_state(steps: list[Step]) -> dict:
    """What makes this run faster than a clean clone's: the embedding cache, finished sweep jobs a sweep skips,
    numba's compiled kernels."""
    cache = REPO / ".cache" / "embeddings.sqlite"
    numba = Path(os.environ.get("NUMBA_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                 / "smartvector-bench" / "numba")
    jobs = {s.name: len(list(Path(s.resumes).glob("*/metrics.json"))) for s in steps if s.resumes}
    return {"embedding_cache_mb": round(cache.stat().st_size / MB, 1) if cache.is_file() else 0.0,
            "sweep_jobs_done": {k: v for k, v in jobs.items() if v},
            "numba_cache_files": sum(1 for p in numba.rglob("*") if p.is_file()) if numba.is_dir() else 0}


def step_record(step: Step, commands: list[dict]) -> dict:
    peaks = [c["peak_rss_mb"] for c in commands if c.get("peak_rss_mb") is not None]
    trees = [c["peak_tree_rss_mb"] for c in commands if c.get("peak_tree_rss_mb") is not None]
    failed = next((c for c in commands if c["exit_code"] != 0), None)
    return {"name": step.name, "group": step.group, "what": step.what, "produces": list(step.produces),
            "writes": list(step.writes), "commands": commands,
            "seconds": round(sum(c["seconds"] for c in commands), 1),
            "peak_rss_mb": max(peaks) if peaks else None, "peak_tree_rss_mb": max(trees) if trees else None,
            "cpu_seconds": round(sum(c["cpu_seconds"] or 0 for c in commands), 1),
            "status": "ok" if failed is None else "failed", "exit_code": None if failed is None else failed["exit_code"]}


def timings_doc(argv: list[str], steps: list[Step], records: list[dict], config: dict, started: str,
                status: str, warm: dict, git: dict | None = None) -> dict:
    """``git``: the checkout's state when the run started (later the run's own results make it dirty)."""
    by_group = {g: _span([r for r in records if r["group"] == g]) for g in GROUPS
                if any(r["group"] == g for r in records)}
    total = _span(records)
    failed = next((r for r in records if r["status"] != "ok"), None)
    return {"schema_version": SCHEMA_VERSION, "kind": "timings", "status": status,
            "command": ["python", "-m", "smartvector_bench.tools.reproduce", *argv],
            "started_at": started, "written_at": _now(),
            "failed_step": failed["name"] if failed else None,
            "planned": [s.name for s in steps], "done": [r["name"] for r in records if r["status"] == "ok"],
            "total_seconds": total, "seconds_by_group": by_group,
            "total_seconds_without_bench": _span([r for r in records if r["group"] != "bench"]),
            "step_seconds_sum": round(sum(r["seconds"] for r in records), 1),
            "steps": records, "warm_start": warm, "config": config,
            "git": git or git_sha(), "packages": package_versions(), "machine": machine_info(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "note": "seconds: a step's wall time; total_seconds and seconds_by_group: the wall time the steps covered "
                    "(steps side by side count once; step_seconds_sum adds them up); peak_rss_mb: the largest single process (the largest VmHWM of the "
                    "process tree, sampled; ru_maxrss_mb: os.wait4's, which counts the forking parent); peak_tree_rss_mb: the summed RSS of the live process tree, sampled every "
                    f"{POLL_S} s; cpu_seconds: user + system. MB = 2^20 bytes. A warm_start other than zeros "
                    "means this was not a clean clone's time (cache, finished sweep jobs)."}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- running the plan --------------------------------------------------------------------------------------------

def _span(records: list[dict]) -> float:
    """The wall time the steps covered: the union of their [started_s, ended_s] intervals (steps that ran side by
    side count once; a record without them, from a sequential run's older schema, counts its seconds)."""
    spans = sorted((r["started_s"], r["ended_s"]) for r in records if "started_s" in r)
    total, end = sum(r["seconds"] for r in records if "started_s" not in r), None
    for a, b in spans:
        if end is None or a > end:
            total, end = total + b - a, b
        elif b > end:
            total, end = total + b - end, b
    return round(total, 1)


def batches(steps: list[Step], jobs: int) -> list[list[Step]]:
    """The plan cut into batches run one after the other: consecutive steps of ``CONCURRENT`` groups share a batch
    (up to ``jobs`` of them run at once); every other step is a batch alone (the bench on a quiet machine, the
    derived files after every result)."""
    out: list[list[Step]] = []
    for step in steps:
        if jobs > 1 and step.group in CONCURRENT and out and out[-1][0].group in CONCURRENT:
            out[-1].append(step)
        else:
            out.append([step])
    return out


def run_plan(steps: list[Step], out: Path, argv: list[str] | None = None, config: dict | None = None,
             logs: Path | None = None, warm: dict | None = None, jobs: int = 1) -> tuple[int, dict]:
    """Run ``steps`` in plan order, ``jobs`` at a time where they are independent (:func:`batches`), writing ``out``
    after each; after a failing command no new step starts (those running finish). Returns (exit code: 0, 1 for a
    failed step, 128 + signal when interrupted; the timings document)."""
    records: dict[int, dict] = {}
    started, t0, lock, git = _now(), time.perf_counter(), threading.Lock(), git_sha()
    state = {"code": 0, "status": "complete"}
    argv, config, warm = argv or [], config or {}, warm if warm is not None else warm_state(steps)
    RUNNING["signal"] = None
    index = {id(s): i for i, s in enumerate(steps, 1)}

    def document(status: str) -> dict:
        return timings_doc(argv, steps, [records[k] for k in sorted(records)], config, started, status, warm, git)

    atomic_write_json(out, document("running"))

    def run_step(step: Step) -> None:
        i = index[id(step)]
        tag = f"[{i}/{len(steps)}] {step.name}"
        if state["code"] or RUNNING["signal"]:
            return  # the run is stopping: this step never starts
        log = Path(logs) / f"{step.name}.log" if logs else None
        if log:
            log.write_bytes(b"")
        commands: list[dict] = []
        begin = time.perf_counter() - t0
        for cmd in step.commands:
            if RUNNING["signal"]:
                break
            print(f"{tag}: {cmd.line()}" + (f" (output: {rel(log)})" if log and jobs > 1 else ""), flush=True)
            rec = run_measured(cmd, log)
            commands.append(rec)
            if rec["exit_code"] != 0:
                break
        with lock:
            if not commands:  # stopped before the step started
                if not state["code"]:
                    state["status"], state["code"] = "interrupted", 128 + RUNNING["signal"]
                    print(f"{PROG}: interrupted by {signal.Signals(RUNNING['signal']).name} before step {step.name}; "
                          f"timings so far in {rel(out)}", file=sys.stderr, flush=True)
                return
            record = step_record(step, commands)
            record["started_s"], record["ended_s"] = round(begin, 1), round(time.perf_counter() - t0, 1)
            records[i] = record
            stopped = RUNNING["signal"]
            if record["status"] == "ok" and not stopped:
                print(f"{tag}: done in {report.duration(record['seconds'])}, peak RSS "
                      f"{report.mb(record['peak_rss_mb'])} (process tree {report.mb(record['peak_tree_rss_mb'])}), "
                      f"CPU {record['cpu_seconds']:.0f} s", flush=True)
            else:
                bad = commands[-1]
                why = bad.get("error") or (f"was killed by {signal.Signals(-bad['exit_code']).name}"
                                           if (bad["exit_code"] or 0) < 0 else f"exited with code {bad['exit_code']}")
                if stopped:
                    record["status"] = "interrupted"
                    if state["status"] != "failed":
                        state["status"], state["code"] = "interrupted", 128 + stopped
                    print(f"{PROG}: interrupted by {signal.Signals(stopped).name} in step {step.name}; "
                          f"timings so far in {rel(out)}", file=sys.stderr, flush=True)
                else:
                    state["status"], state["code"] = "failed", 1
                    print(f"{PROG}: error: step {step.name} failed: `{bad['command']}` {why} after "
                          f"{report.duration(bad['seconds'])}; timings so far in {rel(out)}", file=sys.stderr,
                          flush=True)
                if log and log.is_file():
                    print(report.tail(log), file=sys.stderr)
            atomic_write_json(out, document(state["status"] if state["code"] else "running"))

    for batch in batches(steps, jobs):
        if state["code"]:
            break
        if len(batch) == 1:
            run_step(batch[0])
        else:
            with ThreadPoolExecutor(min(jobs, len(batch)), thread_name_prefix="step") as pool:
                for f in [pool.submit(run_step, s) for s in batch]:
                    f.result()
        if not state["code"] and RUNNING["signal"]:  # stopped between steps: the next batch never starts
            state["status"], state["code"] = "interrupted", 128 + RUNNING["signal"]
    doc = document(state["status"])
    atomic_write_json(out, doc)
    return state["code"], doc


def refresh_manifest(steps: list[Step], out: Path, results_dir: Path) -> None:
    """The manifest again, now that the timings file under the results root is final."""
    expected = next((s for s in steps if s.name == "expected"), None)
    if not Path(out).resolve().is_relative_to(Path(results_dir).resolve()):
        return
    if expected is None:
        print(f"{PROG}: note: the manifest does not record {rel(out)} (make regress refuses an unrecorded file) "
              "until `python -m smartvector_bench.tools.gate --write-expected`")
        return
    cmd = expected.commands[0]
    r = subprocess.run(cmd.argv, cwd=REPO, env={**os.environ, **cmd.full_env()}, capture_output=True, text=True)
    print(f"{PROG}: {'rewrote' if r.returncode == 0 else 'FAILED to rewrite'} the manifest with the final "
          f"{rel(out)} ({cmd.line()})", file=sys.stdout if r.returncode == 0 else sys.stderr)


# -- command line ------------------------------------------------------------------------------------------------

def _split(values: list[str] | None) -> list[str]:
    return [n.strip() for v in values or [] for n in v.split(",") if n.strip()]


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number of steps at once, at least 1")
    return n


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=f"python -m smartvector_bench.tools.{PROG}",
        description="Run every step from a clean clone to every published result (experiments, sweeps, bench, "
                    "figures, doc tables, manifest), each step's wall time and peak RSS into a timings file.",
        epilog=f"Groups: {', '.join(GROUPS)}. `--dry-run` lists the steps and their commands. "
               "docs/operations.md, \"Time to reproduce\".")
    ap.add_argument("--steps", action="append", metavar="NAMES",
                    help="comma-separated steps or groups to run (default: all), in plan order")
    ap.add_argument("--skip", action="append", metavar="NAMES",
                    help="comma-separated steps or groups to leave out (e.g. bench: the headline figure)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and exit; runs and writes nothing")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"the timings file (default: <results-dir>/{TIMINGS_FILE})")
    ap.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where results are published (results/)")
    ap.add_argument("--multirun-dir", type=Path, default=MULTIRUN_DIR, help="where the sweeps run (multirun/)")
    ap.add_argument("--figures-dir", type=Path, default=None, help="where figures go (paper_figures/figures/)")
    ap.add_argument("--sweep-launcher", default=None, metavar="NAME",
                    help="hydra/launcher for the sweeps (e.g. joblib_local); default: Hydra's, one job at a time")
    ap.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                    help="run up to N independent steps at once (experiments and sweeps; the bench and the derived "
                         "files always run alone); default 1. `make reproduce-all` passes JOBS (default 2)")
    ap.add_argument("--logs", type=Path, default=None, metavar="DIR",
                    help=f"write each step's output to DIR/<step>.log (default: this terminal; with --jobs above 1, "
                         f"{rel(LOGS)})")
    ap.add_argument("--render", action="store_true", help="print the markdown table of the timings file; run nothing")
    ap.add_argument("--write-docs", action="store_true",
                    help=f"rewrite the {report.MARK} section of docs/operations.md from the timings file; run nothing")
    ap.add_argument("--before", type=Path, default=None, metavar="DIR",
                    help="with --render or --write-docs: add each step's time in the timings files of DIR (an "
                         f"earlier reproduction; default <results-dir>/{BEFORE_DIR} when it exists)")
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    out = args.out or Path(args.results_dir) / TIMINGS_FILE
    if args.render or args.write_docs:
        try:
            doc = report.load(out)
            text = report.render(doc)
            kept = Path(args.results_dir) / BEFORE_DIR
            before = args.before or (kept if kept.is_dir() and args.out is None else None)
            if before is not None:
                text += "\n" + report.render_before(doc, report.load_before(before))
            if args.write_docs:
                report.write_docs(text)
                print(f"wrote the {report.MARK} section of {rel(report.DOC)} from {rel(out)}")
            else:
                print(text, end="")
        except report.TimingsError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
        return 0
    steps = plan(args.results_dir, args.multirun_dir, args.figures_dir, args.sweep_launcher)
    try:
        chosen = select(steps, _split(args.steps), _split(args.skip))
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    warm = warm_state(chosen)
    if args.dry_run:
        print(report.plan_text(chosen, Path(args.results_dir), out, warm))
        return 0
    missing = [(s.name, m) for s in chosen for m in s.missing()]
    if missing:
        names = ",".join(dict.fromkeys(n for n, _ in missing))
        print(f"{PROG}: error: step {missing[0][0]} needs {missing[0][1]}, which is missing (the git bundles sit "
              f"beside the clone, in ../shared/corpora); nothing was run. Leave them out with --skip {names}",
              file=sys.stderr)
        return 2
    if not chosen:
        print(f"{PROG}: error: no step left to run", file=sys.stderr)
        return 2
    for line in report.warm_lines(warm):
        print(f"{PROG}: note: {line}", flush=True)
    if args.jobs > 1 and not args.logs:
        args.logs = LOGS  # side-by-side commands would interleave their output on the terminal
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    config = {"steps": [s.name for s in chosen], "skipped": [s.name for s in steps if s not in chosen],
              "results_dir": rel(args.results_dir), "multirun_dir": rel(args.multirun_dir),
              "figures_dir": rel(args.figures_dir) if args.figures_dir else None,
              "sweep_launcher": args.sweep_launcher, "out": rel(out), "jobs": args.jobs}
    old = {s: signal.signal(s, forward_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code, doc = run_plan(chosen, out, argv, config, args.logs, warm, jobs=args.jobs)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    print(report.summary_text(doc))
    if code == 0:
        refresh_manifest(chosen, out, Path(args.results_dir))
    return code


if __name__ == "__main__":
    sys.exit(main())
