"""``python -m smartvector_bench.tools.reproduce`` (``make reproduce-all``): from a clean clone (after ``make
install``) to every published result, step by step, each step's wall time and peak memory into
``results/timings.json``.

    python -m smartvector_bench.tools.reproduce --dry-run             # the plan: every step and its commands
    python -m smartvector_bench.tools.reproduce                       # everything (hours on 2 cores)
    python -m smartvector_bench.tools.reproduce --skip bench          # everything but make bench's steps
    python -m smartvector_bench.tools.reproduce --steps main,seeds --out /tmp/timings.json
    python -m smartvector_bench.tools.reproduce --render              # the markdown table of the timings file
    python -m smartvector_bench.tools.reproduce --write-docs          # ... into docs/operations.md's section

The steps (``reproduce_plan.py``) run one after the other, each command as a child process in a session of its
own, from the repository. Per command, measured here: the wall time; the peak RSS of the largest single process
(the largest ``VmHWM``, the kernel's high-water mark since exec, of the child and its descendants, read while they
live; ``ru_maxrss`` from ``os.wait4`` is kept as ``ru_maxrss_mb`` and used only when no process was sampled: Linux
counts the forking parent's RSS in it); the peak of the summed RSS of the whole live process
tree (``/proc/<pid>/stat`` of the child and its descendants, sampled every 0.25 s: what the machine must hold at
once when a step runs processes side by side; a shorter peak can be missed, shared pages count once per process);
and the CPU seconds (user + system of the child and its waited-for descendants). A step's figures are the sum of
its commands' seconds and the maximum of their peaks. MB here is 2^20 bytes.

The timings file is rewritten (atomically: temp file, then rename) after every step, so a failed or interrupted
run keeps the timings so far. A failing command stops the run with one line naming the step and its exit code
(exit 1); SIGINT / SIGTERM go to the running command's process group (a second one: SIGKILL), the run stops after
it and exits 130 / 143. When the file is under the results root and the ``expected`` step ran, the manifest is
written once more at the end, so that ``results/expected.json`` records the final timings file.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.provenance import _cpuinfo, git_sha, package_versions
from smartvector_bench.tools import reproduce_report as report
from smartvector_bench.tools.gate.common import REPO, RESULTS_DIR, rel
from smartvector_bench.tools.reproduce_plan import (GROUPS, MULTIRUN_DIR, TIMINGS_FILE, Command, Step, plan,
                                                    select)

PROG = "reproduce"
SCHEMA_VERSION = "1.0"
MB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
POLL_S = 0.25

_child: dict = {"pid": None, "signal": None}   # the running command and the first stop signal received


# -- measuring one command ---------------------------------------------------------------------------------------

def _hwm(pid: int) -> int:
    """The process's RSS high-water mark since its exec (``VmHWM``), 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_rss_bytes(root: int) -> tuple[int, int] | None:
    """(the summed RSS, the largest high-water mark) of ``root`` and every live descendant (``/proc``), None where
    there is no ``/proc``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    children, rss = defaultdict(list), {}
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue  # gone meanwhile
        fields = data[data.rfind(b")") + 2:].split()  # after "pid (comm) ": state, ppid, ... rss is field 24
        pid = int(e)
        children[int(fields[1])].append(pid)
        rss[pid] = int(fields[21]) * PAGE
    total, hwm, todo, seen = 0, 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += rss.get(pid, 0)
        hwm = max(hwm, _hwm(pid))
        todo += children.get(pid, [])
    return total, hwm


def run_measured(cmd: Command, log: Path | None = None, poll_s: float = POLL_S) -> dict:
    """Run ``cmd`` from the repository (its env added to ours), its output to ``log`` or ours; returns its
    record: exit code (negative: killed by that signal), seconds, peak RSS (largest process, whole tree), CPU."""
    out = open(log, "ab") if log else None
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd.argv, cwd=REPO, env={**os.environ, **cmd.full_env()}, stdout=out,
                                stderr=subprocess.STDOUT if out else None, start_new_session=True)
    except OSError as exc:
        if out:
            out.close()
        return {"argv": list(cmd.argv), "command": cmd.line(), "exit_code": None, "error": f"could not start: {exc}",
                "seconds": 0.0, "peak_rss_mb": None, "peak_tree_rss_mb": None, "cpu_seconds": None}
    _child["pid"] = proc.pid
    peak_tree, peak_hwm, delay = 0, 0, 0.01
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            tree = tree_rss_bytes(proc.pid)
            if tree:
                peak_tree, peak_hwm = max(peak_tree, tree[0]), max(peak_hwm, tree[1])
            time.sleep(delay)
            delay = min(poll_s, delay * 2)
    except BaseException:  # a KeyboardInterrupt outside main's handlers: leave no command running
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
        except OSError:
            pass
        raise
    finally:
        _child["pid"] = None
        if out:
            out.close()
    seconds = time.perf_counter() - t0
    proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    # ru_maxrss is only a fallback: Linux carries the forking parent's high-water mark into the child's count, so
    # a child of a large process (a pytest worker) reports at least that process's RSS
    maxrss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)  # Linux: kB
    peak = peak_hwm or maxrss
    return {"argv": list(cmd.argv), "command": cmd.line(), "exit_code": code, "seconds": round(seconds, 3),
            "peak_rss_mb": round(peak / MB, 1), "ru_maxrss_mb": round(maxrss / MB, 1),
            "peak_tree_rss_mb": round(peak_tree / MB, 1) if peak_tree else None,
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2)}


def _forward(signum, _frame) -> None:
    """SIGINT / SIGTERM: to the running command's process group (a second signal: SIGKILL); stop after it."""
    again = _child["signal"] is not None
    _child["signal"] = _child["signal"] or signum
    if _child["pid"]:
        try:
            os.killpg(_child["pid"], signal.SIGKILL if again else signum)
        except OSError:
            pass


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
                status: str, warm: dict) -> dict:
    by_group = {g: round(sum(r["seconds"] for r in records if r["group"] == g), 1) for g in GROUPS
                if any(r["group"] == g for r in records)}
    total = round(sum(r["seconds"] for r in records), 1)
    failed = next((r for r in records if r["status"] != "ok"), None)
    return {"schema_version": SCHEMA_VERSION, "kind": "timings", "status": status,
            "command": ["python", "-m", "smartvector_bench.tools.reproduce", *argv],
            "started_at": started, "written_at": _now(),
            "failed_step": failed["name"] if failed else None,
            "planned": [s.name for s in steps], "done": [r["name"] for r in records if r["status"] == "ok"],
            "total_seconds": total, "seconds_by_group": by_group,
            "total_seconds_without_bench": round(total - by_group.get("bench", 0.0), 1),
            "steps": records, "warm_start": warm, "config": config,
            "git": git_sha(), "packages": package_versions(), "machine": machine_info(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "note": "seconds: wall time; peak_rss_mb: the largest single process (the largest VmHWM of the "
                    "process tree, sampled; ru_maxrss_mb: os.wait4's, which counts the forking parent); peak_tree_rss_mb: the summed RSS of the live process tree, sampled every "
                    f"{POLL_S} s; cpu_seconds: user + system. MB = 2^20 bytes. A warm_start other than zeros "
                    "means this was not a clean clone's time (cache, finished sweep jobs)."}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- running the plan --------------------------------------------------------------------------------------------

def run_plan(steps: list[Step], out: Path, argv: list[str] | None = None, config: dict | None = None,
             logs: Path | None = None, warm: dict | None = None) -> tuple[int, dict]:
    """Run ``steps`` in order, writing ``out`` after each; stops at the first failing command. Returns (exit code:
    0, 1 for a failed step, 128 + signal when interrupted; the timings document)."""
    records: list[dict] = []
    started, code, status = _now(), 0, "complete"
    argv, config, warm = argv or [], config or {}, warm if warm is not None else warm_state(steps)
    _child["signal"] = None
    doc = timings_doc(argv, steps, records, config, started, "running", warm)
    atomic_write_json(out, doc)
    for i, step in enumerate(steps, 1):
        tag = f"[{i}/{len(steps)}] {step.name}"
        log = Path(logs) / f"{step.name}.log" if logs else None
        if log:
            log.write_bytes(b"")
        commands: list[dict] = []
        for cmd in step.commands:
            if _child["signal"]:
                break
            print(f"{tag}: {cmd.line()}", flush=True)
            rec = run_measured(cmd, log)
            commands.append(rec)
            if rec["exit_code"] != 0:
                break
        if not commands:  # stopped before the step started
            status, code = "interrupted", 128 + _child["signal"]
            print(f"{PROG}: interrupted by {signal.Signals(_child['signal']).name} before step {step.name}; "
                  f"timings so far in {rel(out)}", file=sys.stderr, flush=True)
            break
        record = step_record(step, commands)
        records.append(record)
        stopped = _child["signal"]
        if record["status"] == "ok" and not stopped:
            print(f"{tag}: done in {report.duration(record['seconds'])}, peak RSS {report.mb(record['peak_rss_mb'])}"
                  f" (process tree {report.mb(record['peak_tree_rss_mb'])}), CPU {record['cpu_seconds']:.0f} s",
                  flush=True)
        else:
            bad = commands[-1]
            why = bad.get("error") or (f"was killed by {signal.Signals(-bad['exit_code']).name}"
                                       if (bad["exit_code"] or 0) < 0 else f"exited with code {bad['exit_code']}")
            if stopped:
                record["status"], status = "interrupted", "interrupted"
                code = 128 + stopped
                print(f"{PROG}: interrupted by {signal.Signals(stopped).name} in step {step.name}; "
                      f"timings so far in {rel(out)}", file=sys.stderr, flush=True)
            else:
                status, code = "failed", 1
                print(f"{PROG}: error: step {step.name} failed: `{bad['command']}` {why} after "
                      f"{report.duration(bad['seconds'])}; timings so far in {rel(out)}", file=sys.stderr, flush=True)
            if log and log.is_file():
                print(report.tail(log), file=sys.stderr)
        doc = timings_doc(argv, steps, records, config, started, status if code else "running", warm)
        atomic_write_json(out, doc)
        if code:
            return code, doc
    doc = timings_doc(argv, steps, records, config, started, status, warm)
    atomic_write_json(out, doc)
    return code, doc


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
    ap.add_argument("--logs", type=Path, default=None, metavar="DIR",
                    help="write each step's output to DIR/<step>.log (default: this terminal)")
    ap.add_argument("--render", action="store_true", help="print the markdown table of the timings file; run nothing")
    ap.add_argument("--write-docs", action="store_true",
                    help=f"rewrite the {report.MARK} section of docs/operations.md from the timings file; run nothing")
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    out = args.out or Path(args.results_dir) / TIMINGS_FILE
    if args.render or args.write_docs:
        try:
            text = report.render(report.load(out))
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
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    config = {"steps": [s.name for s in chosen], "skipped": [s.name for s in steps if s not in chosen],
              "results_dir": rel(args.results_dir), "multirun_dir": rel(args.multirun_dir),
              "figures_dir": rel(args.figures_dir) if args.figures_dir else None,
              "sweep_launcher": args.sweep_launcher, "out": rel(out)}
    old = {s: signal.signal(s, _forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code, doc = run_plan(chosen, out, argv, config, args.logs, warm)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    print(report.summary_text(doc))
    if code == 0:
        refresh_manifest(chosen, out, Path(args.results_dir))
    return code


if __name__ == "__main__":
    sys.exit(main())
