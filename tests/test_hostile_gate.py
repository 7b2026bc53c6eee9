"""Hostile inputs (issue 28), the gate's side: SIGTERM / SIGINT to the gate or the publisher during a rerun stops
the child and the child's own children and removes the temp folder, exit 143 / 130 in one line, no traceback;
an expected.json edited by hand (an entry deleted, added or changed, its count or schema) is refused in one line
naming the folder and the entry, exit 2, and nothing is written.

The signal tests do not rerun experiments: a driver calls the gate's and the publisher's own ``main`` with the
child command swapped for a small script that spawns a grandchild and sleeps; one test sends SIGTERM to the real
``python -m smartvector_bench.tools.gate`` a moment into its rerun."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from smartvector_bench.tools.gate import children
from smartvector_bench.tools.gate import cli as gate_cli
from smartvector_bench.tools.gate.common import EXPECTED
from smartvector_bench.tools.gate.files import folder_problems, read_expected
from smartvector_bench.tools.gate.rerun import run_logged

from .conftest import REPO

# A rerun stand-in: starts a grandchild (which ignores SIGTERM and SIGINT when FAKE_STUBBORN=1, so only SIGKILL
# ends it), writes "<its pid> <the grandchild's pid>" into FAKE_PIDS/, then sleeps.
CHILD = """\
import os, subprocess, sys, time
stubborn = os.environ.get("FAKE_STUBBORN") == "1"
code = "import signal, time\\n" + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
                                  "signal.signal(signal.SIGINT, signal.SIG_IGN)\\n" if stubborn else "") + "time.sleep(120)"
grandchild = subprocess.Popen([sys.executable, "-c", code])
with open(os.path.join(os.environ["FAKE_PIDS"], f"{os.getpid()}.pids"), "w") as fh:
    fh.write(f"{os.getpid()} {grandchild.pid}")
time.sleep(120)
"""
# The gate (or the publisher) as `make regress` runs it, its reruns' command swapped for CHILD.
DRIVER = """\
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal's foreground job
from smartvector_bench.tools.gate import children, cli, rerun
children.GRACE_S = 1.0
rerun.bench_executable = cli.bench_executable = lambda: [sys.executable, sys.argv[1]]
if sys.argv[2] == "gate":
    sys.exit(cli.main(sys.argv[3:]))
from smartvector_bench.tools import publish
sys.exit(publish.main(sys.argv[3:]))
"""


def alive(pid: int) -> bool:
    """Running: a zombie is dead (an orphan's zombie stays until an init that may never reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except (OSError, IndexError):
        return False


def _wait_for(predicate, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def _pids(folder: Path) -> list[int]:
    return [int(p) for f in sorted(folder.glob("*.pids")) for p in f.read_text().split()]


def _tiny_results(root: Path) -> Path:
    """A results root the gate reruns main and reembed_cost from (their result files need only exist)."""
    for folder, name in (("main", "metrics.json"), ("reembed_cost", "reembed_cost.json")):
        (root / folder).mkdir(parents=True)
        (root / folder / name).write_text("{}\n")
    assert gate_cli.main(["--write-expected", "--results-from", str(root), "--expected",
                          str(root / "expected.json")]) == 0
    return root


@pytest.mark.parametrize("prog, sig, stubborn", [
    ("gate", signal.SIGTERM, False),
    ("gate", signal.SIGINT, True),       # grandchildren deaf to both: SIGKILL after the grace period
    ("publish", signal.SIGTERM, False),
])
def test_a_signal_stops_every_rerun_and_its_children_and_removes_the_temp_folder(tmp_path, capsys, prog, sig,
                                                                                  stubborn):
    root = _tiny_results(tmp_path / "results")
    capsys.readouterr()
    (tmp_path / "child.py").write_text(CHILD)
    pids, tmp = tmp_path / "pids", tmp_path / "tmp"
    pids.mkdir()
    tmp.mkdir()
    args = (["--only", "main,reembed_cost", "--no-committed", "--results", str(root), "--jobs", "2"] if prog == "gate"
            else ["--only", "main,reembed_cost", "--results-dir", str(tmp_path / "published"), "--jobs", "2"])
    env = dict(os.environ, FAKE_PIDS=str(pids), FAKE_STUBBORN=str(int(stubborn)), TMPDIR=str(tmp), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path / "child.py"), prog, *args], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: len(_pids(pids)) == 4 or proc.poll() is not None, 60, "two reruns and their children")
        started = _pids(pids)
        assert len(started) == 4 and all(alive(p) for p in started), proc.communicate(timeout=5)
        work = [p.name for p in tmp.iterdir()]
        assert len(work) == 1 and work[0].startswith(f"svb-{'regress' if prog == 'gate' else 'publish'}-")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    name = {"gate": "smartvector-regress", "publish": "publish"}[prog]
    assert proc.returncode == 128 + sig, (out, err)
    assert err == (f"{name}: interrupted by {signal.Signals(sig).name}; stopped 2 reruns and removed "
                   f"{tmp / work[0]}\n"), err
    assert [p for p in started if alive(p)] == []
    assert list(tmp.iterdir()) == [] and not (tmp_path / "published").exists()


def test_a_rerun_past_its_timeout_is_stopped_with_its_children(tmp_path, monkeypatch):
    monkeypatch.setattr(children, "GRACE_S", 0.5)
    (tmp_path / "child.py").write_text(CHILD)
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {"FAKE_PIDS": str(pids), "FAKE_STUBBORN": "1"}
    error, took = run_logged([sys.executable, str(tmp_path / "child.py")], tmp_path / "log", env, timeout=2.0)
    assert error == "timed out after 2 s" and took < 10
    started = _pids(pids)
    assert len(started) == 2 and [p for p in started if alive(p)] == []


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals need the main thread")
def test_a_publication_under_way_is_finished_before_the_signal_stops_it(monkeypatch, capsys):
    monkeypatch.setattr(children, "_stopping", False)  # both restored after the test: later reruns may start
    monkeypatch.setattr(children, "_pending", None)
    saved = {s: signal.getsignal(s) for s in children.SIGNALS}
    done = []

    @children.held
    def publish():
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs at once; the signal waits for the return
        done.append("the whole folder")

    @children.stops_children("publish")
    def main():
        publish()
        done.append("the next folder")
        return 0

    try:
        assert main() == 128 + signal.SIGTERM
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
    assert done == ["the whole folder"]
    assert capsys.readouterr().err == "publish: interrupted by SIGTERM; stopped 0 reruns\n"


def test_the_real_gate_stops_its_rerun_on_sigterm(tmp_path):
    """`python -m smartvector_bench.tools.gate --only main --no-committed`, SIGTERM a moment into the rerun (the
    hashing embedder: the rerun never loads the model)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "smartvector_bench.tools.gate", "--only", "main", "--no-committed",
                             "--set", "embedder=hashing"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith(f"rerunning main in {tmp}/svb-regress-"), (first, proc.stderr.read())
        work = first.split(" in ", 1)[1].split(" (", 1)[0]

        def reruns() -> list[int]:
            return [int(p.parent.name) for p in Path("/proc").glob("[0-9]*/cmdline")
                    if work.encode() in _read(p) and int(p.parent.name) != proc.pid]
        _wait_for(lambda: reruns(), 20, "the rerun's process")
        started = reruns()
        time.sleep(1.0)  # well into its imports
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143, (out, err)
    assert err == f"smartvector-regress: interrupted by SIGTERM; stopped 1 rerun and removed {work}\n", err
    assert [p for p in started if alive(p)] == [] and reruns() == []
    assert list(tmp.iterdir()) == []


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


# -- expected.json checks itself ----------------------------------------------------------------------------------

@pytest.fixture
def results(tmp_path) -> Path:
    """A results root: main with a PROVENANCE.json listing its files, a sweep without one, a README."""
    root = tmp_path / "results"
    (root / "main").mkdir(parents=True)
    (root / "seeds").mkdir()
    files = {"metrics.json": "{}\n", "run_bm25.trec": "q0 Q0 d1 1 0.9 bm25\n", "run_bm25.jsonl": "{}\n"}
    for name, text in files.items():
        (root / "main" / name).write_text(text)
    (root / "main" / "PROVENANCE.json").write_text(json.dumps({"files": {
        n: {"sha256": hashlib.sha256(t.encode()).hexdigest(), "bytes": len(t)} for n, t in files.items()}}))
    (root / "seeds" / "tidy.csv").write_text("job,system\n0,bm25\n")
    (root / "README.md").write_text("# results\n")
    assert gate_cli.main(["--write-expected", "--results-from", str(root), "--expected",
                          str(root / "expected.json")]) == 0
    return root


def _forge(root: Path, edit) -> bytes:
    doc = json.loads((root / "expected.json").read_text())
    edit(doc)
    (root / "expected.json").write_text(json.dumps(doc, indent=2))
    return (root / "expected.json").read_bytes()


def _delete(name):
    def edit(doc):
        del doc["manifest"]["files"][name]
        doc["manifest"]["n_files"] -= 1
    return edit


def _add(doc):
    doc["manifest"]["files"]["main/forged.txt"] = {"sha256": "0" * 64, "bytes": 3}
    doc["manifest"]["n_files"] += 1


@pytest.mark.parametrize("case, edit, unlink, says", [
    ("deleted", _delete("main/run_bm25.trec"), None,
     "main: 4 entries recorded, 3 listed (missing: main/run_bm25.trec)"),
    ("deleted with its file", _delete("main/run_bm25.trec"), "main/run_bm25.trec",
     "main: 4 entries recorded, 3 listed (missing: main/run_bm25.trec)"),  # named by main/PROVENANCE.json
    ("a root file deleted with it", _delete("README.md"), "README.md", "the root's own files: 1 entry recorded, 0 "
                                                                       "listed"),
    ("added", _add, None, "main: 4 entries recorded, 5 listed (added: main/forged.txt)"),
    ("edited", lambda d: d["manifest"]["files"]["seeds/tidy.csv"].update(bytes=99), None,
     "seeds: 1 entry, digest "),
])
def test_an_expected_json_edited_by_hand_is_refused_naming_the_entry(results, capsys, case, edit, unlink, says):
    forged = _forge(results, edit)
    if unlink:
        (results / unlink).unlink()
    before = sorted(p.relative_to(results).as_posix() for p in results.rglob("*"))
    code = gate_cli.main(["--expected", str(results / "expected.json"), "--results-from", str(results)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"smartvector-regress: error: {results / 'expected.json'}: {says}") and \
        err.endswith("; not what --write-expected wrote: restore it from git or regenerate it (--write-expected)\n") \
        and err.count("\n") == 1, err
    if case == "edited":
        assert "(edited: seeds/tidy.csv)" in err
    assert (results / "expected.json").read_bytes() == forged
    assert sorted(p.relative_to(results).as_posix() for p in results.rglob("*")) == before


@pytest.mark.parametrize("edit, says", [
    (lambda d: d.update(schema_version="2.0"), "schema_version '2.0'; this gate reads '3.0' only"),
    (lambda d: d.pop("folders"), "missing key 'folders'"),
    (lambda d: d.update(values={"main.top1": 0.3}), "unknown key 'values'"),
    (lambda d: d["manifest"].update(n_files=99), "manifest.n_files 99, 6 entries listed"),
    (lambda d: d["manifest"]["files"]["README.md"].update(sha256="nope"), "manifest.files.README.md: expected "),
])
def test_an_expected_json_not_as_the_gate_writes_it_is_refused(results, capsys, edit, says):
    forged = _forge(results, edit)
    assert gate_cli.main(["--expected", str(results / "expected.json"), "--results-from", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"smartvector-regress: error: {results / 'expected.json'}: cannot read the manifest "
                          f"({says}") and err.endswith("regenerate it with --write-expected\n") and err.count("\n") == 1
    assert (results / "expected.json").read_bytes() == forged


def test_the_gate_accepts_what_it_writes_and_the_committed_expected_json(results):
    assert folder_problems(results / "expected.json", read_expected(results / "expected.json")) == []
    doc = read_expected(EXPECTED)
    assert doc["schema_version"] == "3.0" and sum(f["entries"] for f in doc["folders"].values()) == \
        doc["manifest"]["n_files"] == len(doc["manifest"]["files"])
