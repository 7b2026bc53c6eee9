"""The reruns of the gate and the publisher as child processes that never outlive them.

Each rerun starts in a session of its own (:func:`run`), so a Ctrl-C at the terminal reaches the gate alone and the
gate can signal the child's whole process group: the child's own children (a sweep's workers) stop with it. A
command's ``main`` wrapped in :func:`stops_children` turns SIGTERM and SIGINT into this, whatever it was doing:
start no more reruns, forward the signal to every running rerun's group, SIGKILL what is left after ``GRACE_S``,
remove the temp folders made by :func:`workdir`, print one line and return 128 + the signal (143, 130).
``smartvector-bench`` stops cleanly on either signal itself (``core/scratch.py``); everything else it writes is
under the temp folder. :func:`held` keeps a publication whole: a signal waits until its files are written.
A SIGKILL to the gate cannot be caught; only then do its children run on.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

GRACE_S = 5.0  # from the forwarded signal to SIGKILL: smartvector-bench cleans up in well under a second
SIGNALS = (signal.SIGTERM, signal.SIGINT)

_lock = threading.Lock()
_running: set[subprocess.Popen] = set()
_temps: list[Path] = []
_stopping = False  # set once interrupted: queued reruns must not start afterwards
_held = 0
_pending: int | None = None  # a signal that arrived inside held()


class Interrupted(BaseException):
    """SIGTERM or SIGINT, raised in the main thread (a BaseException, like KeyboardInterrupt: nothing catches it
    by accident on its way out)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def stopping() -> bool:
    return _stopping


def run(command: list[str], timeout: float | None = None, **popen) -> int | None:
    """Run ``command`` in a new session and wait: its exit code (negative: the signal that ended it), or None when
    it was not started because the command is stopping. On a timeout its group is stopped (SIGTERM, then SIGKILL)
    and TimeoutExpired raised."""
    with _lock:  # so an interrupt sees every child that started, and none starts after it
        if _stopping:
            return None
        proc = subprocess.Popen(command, start_new_session=True, **popen)
        _running.add(proc)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_groups([proc], signal.SIGTERM, GRACE_S)
        raise
    finally:
        with _lock:
            _running.discard(proc)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in group ``pgid``: read from /proc where there is one, since an
    orphaned zombie stays until an init that may never reap it."""
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, pgrp, ...
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in "ZX":
            return True
    return False


def stop_groups(procs: list[subprocess.Popen], sig: int, grace: float) -> None:
    """``sig`` to each child's process group; after at most ``grace`` seconds SIGKILL to what is left of it."""
    for p in procs:
        _signal_group(p.pid, sig)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        while time.monotonic() < deadline and _group_alive(p.pid):
            time.sleep(0.05)
        _signal_group(p.pid, signal.SIGKILL)
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process SIGKILL cannot end (in the kernel)
            pass
        killed = time.monotonic() + 1.0  # SIGKILL is delivered asynchronously: gone before we say so
        while time.monotonic() < killed and _group_alive(p.pid):
            time.sleep(0.01)


def workdir(keep: Path | None, prefix: str) -> Path:
    """``keep`` (created if needed, and kept), else a new temp folder removed when the wrapped command ends."""
    if keep is not None:
        Path(keep).mkdir(parents=True, exist_ok=True)
        return Path(keep)
    path = Path(tempfile.mkdtemp(prefix=prefix))
    with _lock:
        _temps.append(path)
    return path


def _remove_temps() -> list[Path]:
    with _lock:
        temps, _temps[:] = list(_temps), []
    for t in temps:
        shutil.rmtree(t, ignore_errors=True)
    return temps


def _on_signal(signum, frame):
    global _pending
    for sig in SIGNALS:  # a second signal must not cut the cleanup short (it is bounded by GRACE_S)
        signal.signal(sig, signal.SIG_IGN)
    if _held:
        _pending = signum
        return
    raise Interrupted(signum)


def held(fn):
    """Decorator: SIGTERM/SIGINT wait until ``fn`` returns (a publication is written whole or not at all)."""
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        global _held
        _held += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _held -= 1
            if not _held and _pending is not None:
                raise Interrupted(_pending)
    return inner


def stops_children(prog: str):
    """Decorator of a command's ``main``: see the module docstring."""
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            global _stopping, _pending
            _stopping, _pending = False, None  # a fresh start (a second call in one process: the tests)
            main = threading.current_thread() is threading.main_thread()
            # a signal ignored (SIGINT of a background job, nohup) stays ignored, as core/scratch.py does
            saved = {sig: signal.signal(sig, _on_signal) for sig in SIGNALS
                     if main and signal.getsignal(sig) not in (signal.SIG_IGN, None)}
            try:
                return fn(*args, **kwargs)
            except (Interrupted, KeyboardInterrupt) as exc:
                signum = getattr(exc, "signum", signal.SIGINT)
                saved = {sig: signal.SIG_IGN for sig in saved}  # and stay so: the process is on its way out
                with _lock:
                    _stopping = True
                    procs = list(_running)
                stop_groups(procs, signum, GRACE_S)
                removed = _remove_temps()
                n = len(procs)
                print(f"{prog}: interrupted by {signal.Signals(signum).name}; stopped {n} rerun{'' if n == 1 else 's'}"
                      + (f" and removed {', '.join(map(str, removed))}" if removed else ""), file=sys.stderr,
                      flush=True)
                return 128 + signum
            finally:
                _remove_temps()
                for sig, handler in saved.items():
                    signal.signal(sig, handler)
        return inner
    return wrap
