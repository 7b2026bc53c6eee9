"""Scratch space under the run folder, clean termination on SIGTERM/SIGHUP, and sweep workers that die with
their parent.

- :func:`job_scratch` wraps one job. Inside it every temporary file of the process goes to
  ``<out_dir>/.scratch/``: ``tempfile.tempdir`` and ``$TMPDIR`` point there, so our retrievers (livevectorlake,
  kg_smartvector, lvl_eval's lake), libraries and subprocesses all write under the run folder, and even a
  ``kill -9`` leaves nothing in the system temp dir. SIGTERM and SIGHUP raise :class:`Terminated` (a
  ``SystemExit`` with code 128 + signal number), so ``finally`` blocks run and ``sweeps.resume.run_or_skip``
  records the job as ``failed``. On the way out (normal return or any exception) the previous temp dir, ``$TMPDIR``
  and signal handlers are restored and ``.scratch/`` is removed. A ``.scratch/`` left by a killed run is removed
  when the next job in that folder starts.
- :func:`watch_parent`, for a sweep worker (joblib/loky; :func:`in_worker_process`): a daemon thread polls
  ``os.getppid()``; once the parent has died (the worker was re-parented) it sends SIGTERM to the worker's main
  thread, so the job stops through :class:`Terminated` as above, then ends the process with ``os._exit`` as soon
  as the job's scratch is cleaned up (at most ``grace`` seconds later): loky catches every exception of a job and
  would otherwise keep the orphan waiting for work.

- :func:`run_lock` makes a run folder one run's at a time: ``fcntl.flock`` on ``<out_dir>/.lock``, held for the
  whole job and released by the kernel however the process ends (kill -9 included). A second run into the folder
  is refused in one line before it writes anything there; the holder, once in, removes what interrupted atomic
  writes left (``core/atomic.py`` ``remove_leftovers``). The lock file stays (removing it would let two runs lock
  two different files); it is no output of the run.

``prctl(PR_SET_PDEATHSIG)`` is deliberately not used: the kernel sends it when the *thread* that spawned the
worker exits, and loky spawns replacement workers from its executor-manager thread, so the signal's meaning
depends on loky internals we cannot see from the worker; polling works the same everywhere and costs one
``getppid()`` per interval.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import shutil
import socket
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from smartvector_bench.core.atomic import remove_leftovers
from smartvector_bench.core.errors import BenchError

SCRATCH = ".scratch"
LOCK_FILE = ".lock"
PROG = "smartvector-bench"
SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))

_lock = threading.RLock()
_active: dict[str, int] = {}  # scratch folder -> how many job_scratch scopes use it (nested use)
_depth = 0  # job_scratch scopes open in this process
_system_tempdir: str | None = None  # the temp dir before the outermost job_scratch
_idle = threading.Event()  # set while no job_scratch is open
_idle.set()
_reason: str | None = None  # why the process signalled itself (watch_parent), shown in Terminated's message

_watcher: threading.Thread | None = None
_watcher_pid: int | None = None


class Terminated(SystemExit):
    """Raised by the SIGTERM/SIGHUP handler of :func:`job_scratch`; exit code 128 + signal number."""

    def __init__(self, signum: int, reason: str | None = None):
        super().__init__(128 + signum)
        self.signum = signum
        self.reason = reason

    def __reduce__(self):  # pickled to a sweep's parent (loky sends a job's exception back): keep the signal
        return type(self), (self.signum, self.reason)

    def __str__(self) -> str:
        text = f"terminated by {signal.Signals(self.signum).name}"
        return f"{text} ({self.reason})" if self.reason else text


def _handler(signum, frame):
    raise Terminated(signum, _reason)


def scratch_dir(out_dir: str | Path) -> Path:
    return Path(out_dir).absolute() / SCRATCH


def system_tempdir() -> str:
    """The temp dir as it was outside every :func:`job_scratch` (for files meant to outlive the job, e.g.
    ``retrievers.livevectorlake.keep_lake``)."""
    with _lock:
        return _system_tempdir if _depth else tempfile.gettempdir()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _install_handlers() -> dict[int, object]:
    """Our handler for SIGTERM/SIGHUP (main thread only: elsewhere signal.signal raises); a signal that is
    ignored (SIG_IGN, e.g. SIGHUP under nohup) stays ignored. Returns the handlers replaced."""
    saved: dict[int, object] = {}
    if not _main_thread():
        return saved
    for sig in SIGNALS:
        previous = signal.getsignal(sig)
        if previous is signal.SIG_IGN or previous is None:  # None: set outside Python; leave it alone
            continue
        signal.signal(sig, _handler)
        saved[sig] = previous
    return saved


@contextmanager
def job_scratch(out_dir: str | Path) -> Iterator[Path]:
    """One job's scratch folder ``<out_dir>/.scratch`` (yielded); see the module docstring."""
    global _depth, _system_tempdir
    path = scratch_dir(out_dir)
    key = str(path)
    with _lock:
        owner = key not in _active  # nested use of the same folder: only the outermost scope removes it
        if owner:
            if path.exists():  # left by a killed run
                shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True, exist_ok=True)
        _active[key] = _active.get(key, 0) + 1
        saved_tempdir, saved_env = tempfile.tempdir, os.environ.get("TMPDIR")  # restored as they were
        if _depth == 0:
            _system_tempdir = tempfile.gettempdir()
        _depth += 1
        _idle.clear()
        tempfile.tempdir = key
        os.environ["TMPDIR"] = key
    try:
        saved_handlers = _install_handlers()
    except BaseException:
        _leave(key, owner, saved_tempdir, saved_env, {})
        raise
    try:
        yield path
    except Terminated as exc:
        if owner:
            print(f"{PROG}: {exc}; job {Path(out_dir)} stopped", file=sys.stderr, flush=True)
        raise
    finally:
        _leave(key, owner, saved_tempdir, saved_env, saved_handlers)


def _leave(key: str, owner: bool, saved_tempdir, saved_env, saved_handlers: dict) -> None:
    """Undo one job_scratch scope. SIGTERM/SIGHUP are held back meanwhile, so a second signal cannot cut the
    cleanup short; one that arrives is delivered to the restored handler right after."""
    global _depth
    mask = None
    if _main_thread() and hasattr(signal, "pthread_sigmask"):
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        for sig, handler in saved_handlers.items():
            signal.signal(sig, handler)
        with _lock:
            tempfile.tempdir = saved_tempdir
            if saved_env is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = saved_env
            _active[key] -= 1
            if not _active[key]:
                del _active[key]
            if owner:
                shutil.rmtree(key, ignore_errors=True)
            _depth -= 1
            if _depth == 0:
                _idle.set()
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


# -- one run per folder -----------------------------------------------------------------------------------------

_held: set[str] = set()  # run folders whose lock this process holds


def _holder(lock: Path) -> str:
    """Who holds ``lock``, from what it wrote into the file."""
    try:
        info = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        info = None
    if not isinstance(info, dict):
        return "its pid is not recorded yet"
    return f"pid {info.get('pid', '?')} on host {info.get('host', '?')}, started {info.get('started', '?')}"


def _acquire(folder: Path, hint: str, busy_retries: int) -> int:
    lock = folder / LOCK_FILE
    for _ in range(busy_retries + 50):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise BenchError(f"{folder}: cannot create the run's lock file {LOCK_FILE} ({exc.strerror or exc})") \
                from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: by a run, or for an instant by a reader's probe (folder_in_use), so retry briefly
            os.close(fd)
            busy_retries -= 1
            if busy_retries < 0:
                raise BenchError(f"{folder} is in use by another run ({_holder(lock)}); {hint}") from None
            time.sleep(0.1)
            continue
        try:  # the file locked must still be the one on disk (a rejected run may have removed its folder)
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except OSError:
            same = False
        if same:
            now = time.time()
            info = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": now,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
            return fd
        os.close(fd)
    raise BenchError(f"{folder}: the run's lock file {LOCK_FILE} keeps being replaced; {hint}")


@contextmanager
def run_lock(out_dir: str | Path, hint: str = "wait for it or choose another output folder",
             busy_retries: int = 3) -> Iterator[list[str]]:
    """Hold ``<out_dir>/.lock`` for the block (see the module docstring), yielding the leftovers of interrupted
    writes it removed. Raises :class:`BenchError` at once (after ``busy_retries`` tries 0.1 s apart) when
    another run holds it, naming that run and ending with ``hint``."""
    folder = Path(out_dir).absolute()
    fd = _acquire(folder, hint, busy_retries)
    with _lock:
        _held.add(str(folder))
    try:
        yield remove_leftovers(folder)
    finally:
        with _lock:
            _held.discard(str(folder))
        os.close(fd)  # closing releases the lock


def holds_lock(out_dir: str | Path) -> bool:
    """Whether this process holds ``out_dir``'s run lock."""
    with _lock:
        return str(Path(out_dir).absolute()) in _held


def folder_in_use(out_dir: str | Path) -> bool:
    """Whether some run holds ``out_dir``'s lock (this process's own included). Probes with a shared lock taken
    and dropped at once, which :func:`run_lock` tolerates by retrying."""
    if holds_lock(out_dir):
        return True
    try:
        fd = os.open(Path(out_dir) / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


# -- sweep workers ---------------------------------------------------------------------------------------------

def in_worker_process() -> bool:
    """True in a process started by multiprocessing or loky (a joblib sweep job runs in one: its
    ``multiprocessing.parent_process()`` is the sweep's main process)."""
    return multiprocessing.parent_process() is not None


def watch_parent(parent_pid: int | None = None, interval: float = 0.5, grace: float = 5.0) -> bool:
    """Stop this process when its parent dies (once per process; later calls do nothing).

    ``parent_pid``: the process to outlive, by default ``multiprocessing.parent_process()``'s pid. Returns
    whether a watcher runs (False in a process that is no worker and was given no ``parent_pid``)."""
    global _watcher, _watcher_pid
    with _lock:
        if _watcher is not None and _watcher_pid == os.getpid() and _watcher.is_alive():
            return True
        if parent_pid is None:
            parent = multiprocessing.parent_process()
            if parent is None:
                return False
            parent_pid = parent.pid
        _watcher = threading.Thread(target=_watch, args=(int(parent_pid), interval, grace), daemon=True,
                                    name="smartvector-watch-parent")
        _watcher_pid = os.getpid()
        _watcher.start()
        return True


def _watch(parent_pid: int, interval: float, grace: float) -> None:
    global _reason
    while os.getppid() == parent_pid:
        time.sleep(interval)
    _reason = f"the sweep's main process {parent_pid} exited"
    main = threading.main_thread()
    if main.is_alive() and main.ident is not None and hasattr(signal, "pthread_kill"):
        signal.pthread_kill(main.ident, signal.SIGTERM)  # to the main thread: it wakes from blocking calls
    else:
        os.kill(os.getpid(), signal.SIGTERM)
    # Under job_scratch the handler raises Terminated in the job; wait for its cleanup (and the job's status
    # record), then end the process. Without a handler SIGTERM has already ended it.
    time.sleep(0.05)
    _idle.wait(grace)
    os._exit(128 + signal.SIGTERM)  # no stdio flush: the main thread may hold the stream's lock
