"""How ``python -m smartvector_bench.tools.reproduce`` measures one command: run it from the repository as a child
process in a session of its own, poll its process tree's memory while it lives, and forward stop signals to every
running command (``RUNNING``; several when steps run side by side). See :mod:`.reproduce` for what is measured."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from smartvector_bench.tools.gate.common import REPO
from smartvector_bench.tools.reproduce_plan import Command

MB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
POLL_S = 0.25
RUNNING: dict = {"pids": set(), "signal": None}   # the running commands and the first stop signal received


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
    RUNNING["pids"].add(proc.pid)
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
        RUNNING["pids"].discard(proc.pid)
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


def forward_signal(signum, _frame) -> None:
    """SIGINT / SIGTERM: to each running command's process group (a second signal: SIGKILL); stop after it."""
    again = RUNNING["signal"] is not None
    RUNNING["signal"] = RUNNING["signal"] or signum
    for pid in list(RUNNING["pids"]):
        try:
            os.killpg(pid, signal.SIGKILL if again else signum)
        except OSError:
            pass
