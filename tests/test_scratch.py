"""Scratch space under the run folder and clean termination (smartvector_bench/core/scratch.py): temp files of a job go
to ``<run>/.scratch`` and are removed at its end; SIGTERM stops a job through an exception (status ``failed``);
a joblib sweep's workers die with their parent. The end-to-end tests kill real ``smartvector-bench`` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from data_gen.params import params_from_config
from data_gen.writer import write_dataset
from smartvector_bench.core import scratch
from smartvector_bench.systems import build_retriever

from .conftest import BIN, REPO, TINY, compose_config


def _entries(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


# -- job_scratch ------------------------------------------------------------------------------------------------

def test_temp_files_go_under_the_run_folder_and_are_removed(tmp_path):
    before_dir, before_env = tempfile.gettempdir(), os.environ.get("TMPDIR")
    with scratch.job_scratch(tmp_path / "run") as where:
        assert where == (tmp_path / "run" / ".scratch").absolute() and where.is_dir()
        assert tempfile.gettempdir() == str(where) and os.environ["TMPDIR"] == str(where)
        assert Path(tempfile.mkdtemp(prefix="x-")).parent == where
        out = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                             capture_output=True, text=True, check=True)
        assert out.stdout.strip() == str(where)  # subprocesses inherit $TMPDIR
        assert scratch.system_tempdir() == before_dir
    assert not where.exists() and (tmp_path / "run").is_dir()
    assert tempfile.gettempdir() == before_dir and os.environ.get("TMPDIR") == before_env


def test_scratch_is_removed_after_an_exception_and_state_restored(tmp_path):
    before = tempfile.tempdir
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(ValueError, match="boom"):
        with scratch.job_scratch(tmp_path) as where:
            (where / "f").write_text("x")
            raise ValueError("boom")
    assert not where.exists() and tempfile.tempdir == before
    assert signal.getsignal(signal.SIGTERM) is handler


def test_nested_scopes_share_the_folder_and_restore_in_order(tmp_path):
    with scratch.job_scratch(tmp_path / "a") as a:
        with scratch.job_scratch(tmp_path / "a") as same:
            assert same == a
        assert a.is_dir() and tempfile.gettempdir() == str(a)  # the inner scope did not remove the outer's
        with scratch.job_scratch(tmp_path / "b") as b:
            assert tempfile.gettempdir() == str(b)
        assert not b.exists() and tempfile.gettempdir() == str(a)
    assert not a.exists()


def test_a_killed_runs_leftover_scratch_is_cleared(tmp_path):
    (tmp_path / ".scratch" / "old").mkdir(parents=True)
    with scratch.job_scratch(tmp_path) as where:
        assert _entries(where) == set()


def test_sigterm_raises_terminated_and_cleans_up(tmp_path):
    with pytest.raises(scratch.Terminated) as info:
        with scratch.job_scratch(tmp_path) as where:
            (where / "f").write_text("x")
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted by the handler
    assert isinstance(info.value, SystemExit) and info.value.code == 128 + signal.SIGTERM
    assert str(info.value) == "terminated by SIGTERM"
    assert not where.exists()
    assert signal.getsignal(signal.SIGTERM) is not scratch._handler


def test_terminated_survives_pickling():
    import pickle

    exc = pickle.loads(pickle.dumps(scratch.Terminated(signal.SIGHUP, "why")))
    assert (exc.code, exc.signum, str(exc)) == (128 + signal.SIGHUP, signal.SIGHUP, "terminated by SIGHUP (why)")


def test_ignored_sighup_stays_ignored(tmp_path):
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with scratch.job_scratch(tmp_path):
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is scratch._handler
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_outside_the_main_thread_only_the_handlers_are_skipped(tmp_path):
    seen = {}

    def job():
        with scratch.job_scratch(tmp_path) as where:
            seen["tempdir"] = tempfile.gettempdir() == str(where)
            seen["handler"] = signal.getsignal(signal.SIGTERM) is scratch._handler
        seen["removed"] = not where.exists()

    t = threading.Thread(target=job)
    t.start()
    t.join()
    assert seen == {"tempdir": True, "handler": False, "removed": True}


def test_watch_parent_needs_a_parent_outside_worker_processes():
    assert not scratch.in_worker_process()
    assert scratch.watch_parent() is False  # pytest is no multiprocessing child: nothing to watch


WATCHED_CHILD = r"""
import os, sys, time
from pathlib import Path
from smartvector_bench.core import scratch
out = Path(sys.argv[1])
with scratch.job_scratch(out) as where:
    scratch.watch_parent(parent_pid=os.getppid(), interval=0.1)
    (where / "busy").write_text("x")
    print("READY", flush=True)
    try:
        time.sleep(60)
    except scratch.Terminated as exc:
        (out / "stopped.txt").write_text(str(exc))
        raise
"""


def test_an_orphaned_worker_stops_cleanly(tmp_path):
    """A middle process starts the 'worker' and is SIGKILLed; the worker notices within the poll interval,
    stops its job through Terminated (its except/finally run, the scratch is removed) and exits."""
    middle = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]]); "
              "print(p.pid, flush=True); p.wait()")
    proc = subprocess.Popen([sys.executable, "-c", middle, WATCHED_CHILD, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True, cwd=REPO)
    worker = int(proc.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / ".scratch" / "busy").exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        assert _gone(worker, 10)
    finally:
        proc.kill()
        proc.stdout.close()
        try:
            os.kill(worker, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert (tmp_path / "stopped.txt").read_text().startswith("terminated by SIGTERM (the sweep's main process")
    assert not (tmp_path / ".scratch").exists()


# -- retrievers ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny():
    from smartvector_bench.core.dataset import load_dataset
    from smartvector_bench.core.embedding import build_embedder

    base = Path(tempfile.mkdtemp(prefix="svb-test-scratch-"))
    cfg = compose_config(TINY + ["embedder=hashing"])
    write_dataset(params_from_config(cfg["dataset"]), base / "ds")
    ds = load_dataset(base / "ds")
    vecs = build_embedder(dict(cfg["embedder"])).encode(ds.corpus.texts)
    yield cfg, ds.corpus, np.asarray(vecs), float(ds.queries.query_time.min())
    import shutil

    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("system", ["livevectorlake", "kg_smartvector"])
def test_retriever_temp_folders_live_in_the_scratch_and_are_removed(tmp_path, tiny, system):
    cfg, corpus, vecs, serve = tiny
    with scratch.job_scratch(tmp_path) as where:
        r = build_retriever(system, dict(cfg["retrievers"][system]))
        r.index(corpus, vecs, serve)
        made = _entries(where)
        assert len(made) == 1 and next(iter(made)).startswith(system.replace("kg_smartvector", "kg_smartvector_"))
        r.index(corpus, vecs, serve)  # a second index() replaces the first folder
        assert len(_entries(where)) == 1 and _entries(where) != made
        r.close()
        assert _entries(where) == set()
        r.index(corpus, vecs, serve)
        del r  # garbage collection removes it too
        assert _entries(where) == set()


def test_a_kept_lake_goes_to_the_system_temp_dir(tmp_path, tiny, monkeypatch):
    cfg, corpus, vecs, serve = tiny
    system_tmp = tmp_path / "systmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    with scratch.job_scratch(tmp_path / "run") as where:
        r = build_retriever("livevectorlake", {**cfg["retrievers"]["livevectorlake"], "keep_lake": True})
        r.index(corpus, vecs, serve)
        assert _entries(where) == set() and len(_entries(system_tmp)) == 1
        r.close()
    assert len(_entries(system_tmp)) == 1


CLEANUP_CHILD = r"""
import sys, tempfile
import numpy as np
from smartvector_bench.systems import build_retriever
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import build_embedder
ds = load_dataset(sys.argv[1])
vecs = build_embedder({"kind": "hashing", "dim": 64, "cache_path": None}).encode(ds.corpus.texts)
keep = []
TARGETS = {"livevectorlake": "smartvector_bench.systems.livevectorlake.retriever.LiveVectorLakeRetriever",
           "kg_smartvector": "smartvector_bench.systems.kg_smartvector.retriever.KGSmartVector"}
for system in ("livevectorlake", "kg_smartvector"):
    r = build_retriever(system, {"_target_": TARGETS[system]})
    r.index(ds.corpus, np.asarray(vecs), float(ds.queries.query_time.min()))
    keep.append(r)
print(sorted(p.name for p in __import__("pathlib").Path(tempfile.gettempdir()).iterdir()), flush=True)
if sys.argv[2] == "raise":
    raise RuntimeError("boom")
"""


@pytest.mark.parametrize("how", ["return", "raise"])
def test_retriever_temp_folders_are_removed_at_interpreter_exit(tmp_path, tiny, how):
    """No job_scratch: the folders are in $TMPDIR and still removed when the process ends, with or without an
    uncaught exception (weakref.finalize / TemporaryDirectory run at exit)."""
    base = Path(tempfile.mkdtemp(prefix="svb-test-scratch-"))
    try:
        cfg = compose_config(TINY + ["embedder=hashing"])
        write_dataset(params_from_config(cfg["dataset"]), base / "ds")
        systmp = tmp_path / "systmp"
        systmp.mkdir()
        env = dict(os.environ, TMPDIR=str(systmp), HF_HUB_OFFLINE="1")
        r = subprocess.run([sys.executable, "-c", CLEANUP_CHILD, str(base / "ds"), how], capture_output=True,
                           text=True, env=env, cwd=REPO, timeout=300)
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)
    assert (r.returncode != 0) == (how == "raise"), r.stderr
    listed = r.stdout.strip()
    assert "livevectorlake-" in listed and "kg_smartvector_" in listed, r.stderr
    assert _entries(systmp) == set()
    assert "Exception ignored" not in r.stderr


# -- end to end: smartvector-bench killed -----------------------------------------------------------------------

def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        if state == "Z":  # exited, not yet reaped by its (new) parent
            return True
        time.sleep(0.1)
    return False


def _children(pid: int) -> set[int]:
    """Every descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                parents[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = set(), [pid]
    while todo:
        cur = todo.pop()
        kids = {c for c, pp in parents.items() if pp == cur} - out
        out |= kids
        todo.extend(kids)
    return out


def _start(args: list[str], systmp: Path) -> subprocess.Popen:
    """The CLI with a private system temp dir; its output goes to files beside it (a pipe nobody reads could
    fill up and stall it), read back by _output."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", TMPDIR=str(systmp))
    with open(systmp.parent / "stdout.txt", "w") as out, open(systmp.parent / "stderr.txt", "w") as err:
        return subprocess.Popen([str(BIN / "smartvector-bench"), *args], stdout=out, stderr=err, cwd=REPO, env=env)


def _output(systmp: Path) -> str:
    return "".join((systmp.parent / f).read_text()[-3000:] for f in ("stdout.txt", "stderr.txt"))


def _wait_for(predicate, proc: subprocess.Popen, systmp: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"exited early ({proc.returncode}): {_output(systmp)}")
        assert time.monotonic() < deadline, f"timed out: {_output(systmp)}"
        time.sleep(0.02)


def _in_a_retriever(scratch_dir: Path):
    def check() -> bool:
        try:
            return any(p.name.startswith(("livevectorlake-", "kg_smartvector_")) for p in scratch_dir.iterdir())
        except FileNotFoundError:
            return False
    return check


# Enough data that the two systems index for a few seconds, so the signal lands inside one of them
# (livevectorlake commits each version on its own here: batched, its index takes a fraction of a second).
E2E = ["experiment=main", "systems=[livevectorlake,kg_smartvector]", "embedder=hashing",
       "dataset.n_families=12", "print_table=false", "retrievers.livevectorlake.ingest_batch=1"]


@pytest.mark.slow
def test_sigterm_stops_a_run_cleanly(tmp_path):
    systmp, run = tmp_path / "systmp", tmp_path / "run"
    systmp.mkdir()
    proc = _start([*E2E, f"hydra.run.dir={run}"], systmp)
    try:
        _wait_for(_in_a_retriever(run / ".scratch"), proc, systmp)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    finally:
        proc.kill()
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert "smartvector-bench: terminated by SIGTERM; job " in err
    assert _entries(systmp) == set()
    assert not (run / ".scratch").exists()
    status = json.loads((run / "job_status.json").read_text())
    assert status["status"] == "failed" and "terminated by SIGTERM" in status["error"]


@pytest.mark.slow
def test_kill_9_leaves_nothing_in_the_system_temp_dir(tmp_path):
    systmp, run = tmp_path / "systmp", tmp_path / "run"
    systmp.mkdir()
    proc = _start([*E2E, f"hydra.run.dir={run}"], systmp)
    try:
        _wait_for(_in_a_retriever(run / ".scratch"), proc, systmp)
        proc.kill()
        proc.wait(timeout=15)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert _entries(systmp) == set()
    assert _entries(run / ".scratch")  # the leftovers are in the run folder, removed by the next run there


@pytest.mark.slow
def test_a_joblib_sweeps_workers_die_with_their_parent(tmp_path):
    systmp, sweep = tmp_path / "systmp", tmp_path / "sweep"
    systmp.mkdir()
    proc = _start(["-m", *E2E, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "dataset.seed=1,2",
                   f"hydra.sweep.dir={sweep}"], systmp)
    workers: set[int] = set()

    def busy() -> list[Path]:  # the job folders whose job is inside a retriever
        return [j for j in sweep.glob("*/") if _in_a_retriever(j / ".scratch")()] if sweep.is_dir() else []

    try:
        _wait_for(lambda: len(busy()) == 2, proc, systmp, timeout=180)
        jobs = busy()
        workers = _children(proc.pid)  # two loky workers and the resource trackers
        assert len(workers) >= 2
        proc.kill()
        proc.wait(timeout=15)
        left = {pid for pid in workers if not _gone(pid, 10)}
    finally:
        proc.kill()
        for pid in _children(proc.pid) | workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert left == set()
    for job in jobs:  # each worker stopped its job through the SIGTERM path: status failed, scratch removed
        status = json.loads((job / "job_status.json").read_text())
        assert status["status"] == "failed" and "main process" in status["error"], status
        assert not (job / ".scratch").exists()
    assert _entries(systmp) == set()
