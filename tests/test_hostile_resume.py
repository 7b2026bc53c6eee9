"""Hostile cases of resume and of one run's folder (issue 28, "Resume reuses stale results" and "Concurrency and
interruption"): the resume key covers every file of the packages, each plug-in's code and the dataset through its
symlinks; a result is reused only with its recorded outputs intact; a rerun with fewer systems drops the others'
run files; one run per folder (a lock); what a killed run left is cleared, and its status reads interrupted.
Each test asserts on the outcome or error, the message, and what is left on disk."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments import main as main_experiment
from smartvector_bench.core.results import provenance as prov
from smartvector_bench.core import scratch
from smartvector_bench.core.dataset import file_sha256
from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.sweeps import STATUS_FILE, jobs, resume
from smartvector_bench.tools.sweeps.plan import PlannedJob

from .conftest import BIN, REPO, TINY, compose_config, run_cli, write_tiny

HOST = socket.gethostname()
FAST = ["embedder=hashing", "experiment.n_boot=20", "experiment.n_permutations=20", "print_table=false"]
PLUGIN = '''
import os
import time

import numpy as np
from smartvector_bench.core.run import Run


class SlowCosine:
    """Cosine; with hang=true every later fsync blocks, so the run stops inside its first run-file write."""

    def __init__(self, name: str = "slow_ret", hang: bool = False):
        self.name, self.hang = name, bool(hang)

    def index(self, corpus, vectors, serve_time):
        self.vectors = np.asarray(vectors, dtype=np.float64)

    def search(self, query_vectors, as_of, k, texts=None, **labels):
        scores = np.asarray(query_vectors, dtype=np.float64) @ self.vectors.T
        ranked = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        top = np.take_along_axis(scores, ranked, axis=1)
        if self.hang:
            os.fsync = lambda fd: time.sleep(600)
        return Run(self.name, ranked, top, np.clip(top[:, 0], 0.0, 1.0))

    def describe(self):
        return {"rule": "cosine", "hang": self.hang}
'''


def _status(folder: Path) -> dict:
    return json.loads((folder / STATUS_FILE).read_text())


def _fake_job(folder: Path, config: dict):
    """A job that writes a result carrying the current resume key (as an experiment does)."""
    def job() -> str:
        (folder / "metrics.json").write_text(json.dumps({"systems": {}, "provenance": {
            "config_sha256": prov.config_sha256(config), "resume_key": prov.resume_key(config)}}))
        return "ran"
    return job


def _dead_pid() -> int:
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    for pid in range(pid_max - 1, 1, -1):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    raise AssertionError("no free pid")


def _hold(folder: Path) -> int:
    """Take the folder's lock as another run would (another open file: it conflicts even in this process)."""
    fd = os.open(folder / scratch.LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"pid": 4242, "host": "elsewhere", "started": "2026-01-01T00:00:00Z"}).encode())
    return fd


# -- the resume key --------------------------------------------------------------------------------------------

def test_an_edited_data_file_of_the_packages_reruns(tmp_path, monkeypatch):
    names = [rel for rel, _ in prov.source_files(prov.REPO, prov.CODE_PACKAGES)]
    assert "data_gen/catalog/topics/a.json" in names and "smartvector_bench/core/schema/dataset.schema.json" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    copy = tmp_path / "repo"  # the real catalog, copied: the working tree is never edited
    shutil.copytree(REPO / "data_gen", copy / "data_gen", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(prov, "code_sha256", lambda: prov.source_sha256(copy, ("data_gen",)))
    out, config, said = tmp_path / "run", {"experiment": {"name": "main"}}, []
    out.mkdir()
    assert resume.run_or_skip(out, config, _fake_job(out, config), say=said.append) == ("ran", False)
    assert resume.run_or_skip(out, config, _fake_job(out, config), say=said.append)[1] is True
    topics = copy / "data_gen" / "catalog" / "topics" / "a.json"
    old = prov.code_sha256()
    topics.write_text(topics.read_text().replace("Annual Leave Policy", "Annual Leave Rules"))
    assert resume.run_or_skip(out, config, _fake_job(out, config), say=said.append) == ("ran", False)
    assert said[-1] == (f"smartvector-bench: rerunning {out}: metrics.json is out of date: the code changed "
                        f"({old[:12]} -> {prov.code_sha256()[:12]})")
    assert _status(out)["status"] == "complete" and _status(out)["resume_key"]["code_sha256"] == prov.code_sha256()


def test_an_edited_plugin_outside_the_project_reruns(tmp_path, monkeypatch):
    name = "hostile_resume_plug"
    pkg = tmp_path / "src" / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .helpers import bonus\nclass Cosine:\n    pass\n")
    (pkg / "helpers.py").write_text("bonus = 0.0\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    for mod in (name, f"{name}.helpers"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    config = {"experiment": {"name": "main"},
              "retrievers": {"mine": {"_target_": f"{name}.Cosine"},
                             "plain_cosine": {"_target_": "smartvector_bench.systems.cosine.PlainCosine"}}}
    assert prov.plugins_sha256({"retrievers": {"plain_cosine": config["retrievers"]["plain_cosine"]}}) == "none"
    first = prov.plugins_sha256(config)
    assert first != "none" and name not in sys.modules  # found without importing it
    __import__(name)  # as the CLI's config check does: then read from the imported module
    assert prov.plugins_sha256(config) == first
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"bytecode")
    assert prov.plugins_sha256(config) == first

    out, said = tmp_path / "run", []
    out.mkdir()
    assert resume.run_or_skip(out, config, _fake_job(out, config), say=said.append) == ("ran", False)
    (pkg / "helpers.py").write_text("bonus = 0.5\n")  # not the module named by _target_: its package
    second = prov.plugins_sha256(config)
    assert second != first
    assert resume.run_or_skip(out, config, _fake_job(out, config), say=said.append) == ("ran", False)
    assert said == [f"smartvector-bench: rerunning {out}: metrics.json is out of date: the plug-in code changed "
                    f"({first[:12]} -> {second[:12]})"]
    assert _status(out)["resume_key"]["plugins_sha256"] == second


def test_the_dataset_key_follows_symlinks_and_refuses_loops(tmp_path):
    ds = write_tiny(tmp_path / "ds")
    shutil.move(ds / "qrels", tmp_path / "real_qrels")
    (ds / "qrels").symlink_to(tmp_path / "real_qrels")
    (ds / "gone").symlink_to(tmp_path / "nowhere")  # dangling: no content, left out
    config = {"experiment": {"name": "main"}, "dataset": {"path": str(ds)}}
    first = prov.dataset_digest(config)
    assert first == prov.folder_sha256(shutil.copytree(ds, tmp_path / "plain", symlinks=False,
                                                       ignore=shutil.ignore_patterns("gone")))
    out, said = tmp_path / "run", []
    out.mkdir()
    assert resume.run_or_skip(out, config, _fake_job(out, config), say=said.append) == ("ran", False)
    qrels = tmp_path / "real_qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().replace("\t2\n", "\t1\n", 1))
    second = prov.dataset_digest(config)
    assert second != first
    assert resume.run_or_skip(out, config, _fake_job(out, config), say=said.append) == ("ran", False)
    assert said == [f"smartvector-bench: rerunning {out}: metrics.json is out of date: the dataset content changed "
                    f"({first[:12]} -> {second[:12]})"]

    (ds / "labels" / "up").symlink_to("..")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with pytest.raises(BenchError) as err:
        resume.run_or_skip(fresh, config, _fake_job(fresh, config), say=said.append)
    assert str(err.value) == (f"{ds}/labels/up: a symlink loop (it leads back to {ds}, a folder above it); remove "
                              "the link or point it elsewhere")
    assert list(fresh.iterdir()) == []  # refused before anything was written
    (ds / "labels" / "up").unlink()
    (ds / "self.jsonl").symlink_to("self.jsonl")
    with pytest.raises(BenchError, match=r"self\.jsonl: a symlink loop \(following it never reaches a file\)"):
        prov.dataset_digest(config)


# -- the outputs -----------------------------------------------------------------------------------------------

def test_a_missing_or_edited_output_reruns_naming_it(tmp_path, tiny_dataset):
    config = compose_config(TINY + FAST + ["systems=[plain_cosine,valid_cosine]", f"dataset.path={tiny_dataset}"])
    out, said = tmp_path / "run", []
    run = lambda: main_experiment.run(config, out)  # noqa: E731
    assert resume.run_or_skip(out, config, run, say=said.append)[1] is False
    outputs = _status(out)["outputs"]
    assert sorted(outputs) == ["metrics.json", "qrels_dev.trec", "qrels_test.trec", "run_plain_cosine.jsonl",
                               "run_plain_cosine.trec", "run_valid_cosine.jsonl", "run_valid_cosine.trec", "table.md"]
    assert all(file_sha256(out / n) == sha for n, sha in outputs.items())
    assert resume.run_or_skip(out, config, run, say=said.append)[1] is True
    assert _status(out)["status"] == "skipped" and _status(out)["outputs"] == outputs

    (out / "run_valid_cosine.jsonl").unlink()
    (out / "run_plain_cosine.trec").write_text("q1 Q0 c1 1 9.0 forged\n")
    forged = file_sha256(out / "run_plain_cosine.trec")
    said.clear()
    assert resume.run_or_skip(out, config, run, say=said.append)[1] is False
    assert said == [f"smartvector-bench: rerunning {out}: run_plain_cosine.trec was changed after the run wrote it "
                    f"(sha256 {outputs['run_plain_cosine.trec'][:12]} -> {forged[:12]}); "
                    "run_valid_cosine.jsonl is missing"]
    assert (out / "run_valid_cosine.jsonl").is_file() and file_sha256(out / "run_plain_cosine.trec") != forged
    assert _status(out)["status"] == "complete"

    older = {k: v for k, v in _status(out).items() if k != "outputs"}  # a folder written before outputs were kept
    (out / STATUS_FILE).write_text(json.dumps(older))
    said.clear()
    assert resume.run_or_skip(out, config, lambda: "reran", say=said.append) == ("reran", False)
    assert said == [f"smartvector-bench: rerunning {out}: {STATUS_FILE} records no sha256 of the outputs (written by "
                    "an older version)"]
    assert sorted(_status(out)["outputs"]) == sorted(outputs)


def test_a_rerun_with_fewer_systems_removes_the_others_run_files(tmp_path, tiny_main_run):
    out = tmp_path / "run"
    shutil.copytree(tiny_main_run[0], out, ignore=shutil.ignore_patterns("dataset"))
    every = sorted(p.name for p in out.glob("run_*"))
    config = compose_config(TINY + FAST + ["systems=[plain_cosine,valid_cosine]"])
    said: list[str] = []
    resume.run_or_skip(out, config, lambda: main_experiment.run(config, out), say=said.append)
    kept = ["run_plain_cosine.jsonl", "run_plain_cosine.trec", "run_valid_cosine.jsonl", "run_valid_cosine.trec"]
    dropped = sorted(set(every) - set(kept))
    assert len(dropped) >= 10 and said[0].startswith(f"smartvector-bench: rerunning {out}: metrics.json is out of "
                                                     "date: the configuration changed")
    assert said[1:] == [f"smartvector-bench: {out}: removed the run files of systems not in this run: "
                        f"{', '.join(dropped)}"]
    assert sorted(p.name for p in out.glob("run_*")) == kept
    assert sorted(_status(out)["outputs"]) == sorted(["metrics.json", "qrels_dev.trec", "qrels_test.trec",
                                                      "table.md", *kept])


# -- one run per folder, and what a killed run leaves ----------------------------------------------------------

def test_one_run_per_folder_and_a_refused_run_touches_nothing(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / STATUS_FILE).write_text('{"status": "complete"}')
    with scratch.run_lock(out) as removed:
        assert removed == [] and scratch.holds_lock(out) and scratch.folder_in_use(out)
        holder = json.loads((out / scratch.LOCK_FILE).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == HOST
        start = time.monotonic()
        with pytest.raises(BenchError) as err:
            with scratch.run_lock(out, "wait for it or choose another hydra.run.dir"):
                pytest.fail("a second holder")
        assert time.monotonic() - start < 2
        assert str(err.value) == (f"{out} is in use by another run (pid {os.getpid()} on host {HOST}, started "
                                  f"{holder['started']}); wait for it or choose another hydra.run.dir")
    assert not scratch.holds_lock(out) and not scratch.folder_in_use(out)

    fd = _hold(out)  # another run, mid-write
    try:
        (out / ".run_a.trec.abcd1234.tmp").write_text("its half-written file")
        with pytest.raises(BenchError, match=r"is in use by another run \(pid 4242 on host elsewhere, started "
                                             r"2026-01-01T00:00:00Z\)"):
            with scratch.run_lock(out, busy_retries=0):
                pass
    finally:
        os.close(fd)
    assert (out / ".run_a.trec.abcd1234.tmp").exists() and _status(out) == {"status": "complete"}
    with scratch.run_lock(out) as removed:  # the lock is free again: the holder's leftovers are cleared
        assert removed == [".run_a.trec.abcd1234.tmp"]
        shutil.rmtree(out)  # a rejected config's folder is discarded under the lock
    with scratch.run_lock(out):
        assert (out / scratch.LOCK_FILE).is_file()


def test_leftovers_of_interrupted_writes_are_removed_at_the_next_start(tmp_path):
    out = tmp_path / "run"
    leftovers = [".run_plain_cosine.trec.k2_x9q1z.tmp", ".metrics.json.a1b2c3d4.tmp"]
    kept = [".notes.tmp", "keep.tmp", "run_plain_cosine.trec", ".dataset.not_random_x"]
    out.mkdir()
    for name in leftovers + kept[:3]:
        (out / name).write_text("x")
    for name in (".dataset.abcd1234", ".dataset.old", kept[3]):
        (out / name).mkdir()
    with scratch.run_lock(out) as removed:
        assert removed == sorted([*leftovers, ".dataset.abcd1234", ".dataset.old"])
    assert sorted(p.name for p in out.iterdir()) == sorted([*kept, scratch.LOCK_FILE])


def test_a_killed_runs_status_reads_interrupted(tmp_path):
    out, dead = tmp_path / "job", _dead_pid()
    (out / ".hydra").mkdir(parents=True)
    job = PlannedJob(0, ["dataset.seed=1"], {"dataset.seed": "1"}, "job")
    running = {"status": "running", "pid": dead, "host": HOST, "time_iso": "2026-01-01T00:00:00Z"}
    (out / STATUS_FILE).write_text(json.dumps(running))
    assert resume.job_state(out, running) == "interrupted"
    r = jobs.read_job(job, out)
    assert (r.status, r.note) == ("missing", f"interrupted: the run (pid {dead} on host {HOST}, started "
                                             "2026-01-01T00:00:00Z) stopped before writing metrics.json")
    alive = {**running, "pid": os.getpid()}
    assert resume.job_state(out, alive) == "interrupted"  # pid alive (reused) but no run holds the lock
    assert resume.job_state(out, {**running, "host": "elsewhere"}) == "interrupted"
    fd = _hold(out)
    try:
        assert resume.job_state(out, alive) == "running"
        assert resume.job_state(out, {**running, "host": "elsewhere"}) == "running"
        (out / STATUS_FILE).write_text(json.dumps(alive))
        assert jobs.read_job(job, out).note.startswith(f"still running (pid {os.getpid()} on host {HOST}")
    finally:
        os.close(fd)

    (out / STATUS_FILE).write_text(json.dumps(running))
    config, said = {"experiment": {"name": "main"}}, []
    with scratch.run_lock(out):
        assert resume.run_or_skip(out, config, _fake_job(out, config), say=said.append) == ("ran", False)
    assert said == [f"smartvector-bench: {out}: the previous run there was interrupted (pid {dead} on host {HOST}, "
                    "started 2026-01-01T00:00:00Z)"]
    status = _status(out)
    assert status["status"] == "complete" and status["previous_run"] == {
        "status": "interrupted", "pid": dead, "host": HOST, "time_iso": "2026-01-01T00:00:00Z"}


# -- through the CLI -------------------------------------------------------------------------------------------

def test_cli_second_run_refused_kill_9_rerun_and_plugin_edit(tmp_path, tiny_dataset):
    """A run hung inside a run-file write holds its folder: a second run is refused in one line without touching
    it; kill -9; the rerun clears the temp file and says the previous run was interrupted; an edit of the plug-in
    (outside the project) then reruns, naming it."""
    src, conf, run = tmp_path / "src", tmp_path / "conf", tmp_path / "run"
    (src / "slow_ret").mkdir(parents=True)
    (src / "slow_ret" / "__init__.py").write_text(PLUGIN)
    (conf / "retriever").mkdir(parents=True)
    (conf / "retriever" / "slow_ret.yaml").write_text(
        "# @package retrievers.slow_ret\n_target_: slow_ret.SlowCosine\nhang: false\n")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}
    args = ["--config-dir", str(conf), *TINY, *FAST, "systems=[plain_cosine,slow_ret]",
            f"dataset.path={tiny_dataset}", f"hydra.run.dir={run}"]
    with open(tmp_path / "first.out", "w") as stdout, open(tmp_path / "first.err", "w") as stderr:
        first = subprocess.Popen([str(BIN / "smartvector-bench"), *args, "retrievers.slow_ret.hang=true"],
                                 stdout=stdout, stderr=stderr, cwd=REPO,
                                 env=dict(os.environ, HF_HUB_OFFLINE="1", **env))
    try:
        deadline = time.monotonic() + 120
        while not (run.is_dir() and list(run.glob(".run_*.tmp"))):
            assert first.poll() is None, (tmp_path / "first.err").read_text()[-2000:]
            assert time.monotonic() < deadline, "the first run never reached its run files"
            time.sleep(0.05)
        status = (run / STATUS_FILE).read_bytes()
        second = run_cli("smartvector-bench", *args, env=env)
        assert second.returncode == 2, second.stderr[-2000:]
        started = json.loads((run / scratch.LOCK_FILE).read_text())["started"]
        assert second.stderr.strip().splitlines() == [
            f"smartvector-bench: error: {run} is in use by another run (pid {first.pid} on host {HOST}, started "
            f"{started}); wait for it or choose another hydra.run.dir"]
        assert (run / STATUS_FILE).read_bytes() == status and not (run / "metrics.json").exists()
        assert json.loads(status)["status"] == "running"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=15)
    finally:
        first.kill()
    tmp_file = [p.name for p in run.glob(".run_*.tmp")]
    assert tmp_file and resume.job_state(run, json.loads(status)) == "interrupted"

    again = run_cli("smartvector-bench", *args, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert (f"smartvector-bench: {run}: the previous run there was interrupted (pid {first.pid} on host {HOST}, "
            f"started {json.loads(status)['time_iso']})") in again.stdout
    assert not list(run.glob(".*.tmp")) and not (run / ".scratch").exists()
    assert _status(run)["status"] == "complete" and _status(run)["previous_run"]["pid"] == first.pid
    assert (run / "run_slow_ret.trec").is_file() and (run / "metrics.json").is_file()

    key = json.loads((run / "metrics.json").read_text())["provenance"]["resume_key"]["plugins_sha256"]
    with open(src / "slow_ret" / "__init__.py", "a") as fh:
        fh.write("\nEDITED = True\n")
    edited = run_cli("smartvector-bench", *args, env=env)
    assert edited.returncode == 0, edited.stderr[-2000:]
    now = json.loads((run / "metrics.json").read_text())["provenance"]["resume_key"]["plugins_sha256"]
    line = next(x for x in edited.stdout.splitlines() if x.startswith(f"smartvector-bench: rerunning {run}: "))
    assert now != key and f"the plug-in code changed ({key[:12]} -> {now[:12]})" in line
    assert _status(run)["status"] == "complete"
