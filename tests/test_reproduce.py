"""``python -m smartvector_bench.tools.reproduce`` (``make reproduce-all``): the plan covers every published folder
under results/, in an order that works, and the runner measures, stops, writes and renders as documented. The
commands run here are tiny ``python -c`` programs (no experiment runs)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import pytest

from experiments import RUNS, SWEEPS
from smartvector_bench.tools import reproduce as R
from smartvector_bench.tools import reproduce_report as report
from smartvector_bench.tools.gate.files import REPORT_PAGE
from smartvector_bench.tools.reproduce_plan import BEFORE_DIR, STATIC, TIMINGS_FILE, Command, Step, plan, select

from .conftest import REPO

RESULTS = REPO / "results"
PY = sys.executable


def _step(name: str, *codes: str, group: str = "experiments") -> Step:
    return Step(name, group, tuple(Command((PY, "-c", c)) for c in codes), produces=())


# -- the plan -----------------------------------------------------------------------------------------------------

def test_every_published_folder_and_file_has_a_producer():
    """A new folder or file under results/ without a step that makes it fails here."""
    produced = {p.split("/")[0] for s in plan() for p in s.produces}
    entries = sorted(p.name for p in RESULTS.iterdir() if not p.name.startswith(".") and p.name != REPORT_PAGE)
    orphans = [e for e in entries if e not in produced and e not in STATIC and e != TIMINGS_FILE]
    assert not orphans, f"results/ entries no step of reproduce_plan.py produces: {orphans}"
    assert set(produced) - set(entries) <= {TIMINGS_FILE}, "a step publishes a folder results/ does not hold"


def test_every_perf_file_is_made_by_a_step():
    """results/perf/ holds the bench's files (its PROVENANCE.json lists them) and files of other tools, each of
    which needs a step of its own (perf/embedding.json: tools/perf/embedding.py, not make bench)."""
    listed = set(json.loads((RESULTS / "perf" / "PROVENANCE.json").read_text())["files"]) | {"PROVENANCE.json"}
    exact = {p for s in plan() for p in s.produces}
    others = sorted(f"perf/{p.name}" for p in (RESULTS / "perf").iterdir() if p.is_file() and p.name not in listed)
    assert others, "perf/ has only the bench's own files: drop the perf_embedding step?"
    assert [o for o in others if o not in exact] == []


def test_every_preset_is_a_step_in_order():
    steps = plan()
    names = [s.name for s in steps]
    assert [s.name for s in steps if s.group == "experiments"] == list(RUNS)
    assert [s.name for s in steps if s.group == "sweeps"] == list(SWEEPS)
    assert names[-1] == "expected", "the manifest comes after every step that writes under results/"
    last_result = max(i for i, s in enumerate(steps) if s.produces and s.name != "expected")
    assert names.index("figures") > last_result and names.index("claims") > last_result
    for s in steps:
        if s.group == "sweeps":  # run the sweep (one math thread), then publish it from its folder
            run, pub = s.commands
            assert run.argv[1:] == ("-m", f"experiment={s.name}") and run.env["OMP_NUM_THREADS"] == "1"
            assert pub.argv[-6:] == ("--sweeps", s.name, "--multirun-dir", "multirun", "--results-dir", "results")


def test_the_bundle_datasets_need_their_bundles():
    by = {s.name: s.needs for s in plan()}
    hb, sp = "../shared/corpora/18f-handbook.bundle", "../shared/corpora/github-site-policy.bundle"
    assert by["handbook"] == (hb,) and by["facts"] == (hb, sp) and by["regimes_facts"] == (hb, sp)
    assert by["main"] == by["seeds"] == by["perf"] == ()


def test_other_folders_go_into_the_commands(tmp_path):
    steps = {s.name: s for s in plan(tmp_path / "res", tmp_path / "mr", tmp_path / "fig", "joblib_local")}
    assert f"hydra.sweep.dir={tmp_path / 'mr' / 'seeds'}" in steps["seeds"].commands[0].argv
    assert "hydra/launcher=joblib_local" in steps["seeds"].commands[0].argv
    assert steps["main"].commands[0].argv[-1] == str(tmp_path / "res")
    assert steps["perf"].commands[0].argv[-1] == f"out_dir={tmp_path / 'res' / 'perf'}"
    assert steps["figures"].commands[0].argv[-2:] == ("--out", str(tmp_path / "fig"))


def test_select_by_step_and_group():
    steps = plan()
    assert [s.name for s in select(steps, ["bench"], [])] == ["perf", "perf_embedding"]
    no_bench = select(steps, [], ["bench"])
    assert len(no_bench) == len(steps) - 2 and all(s.group != "bench" for s in no_bench)
    assert [s.name for s in select(steps, ["expected", "main"], ["derived"])] == ["main"]
    with pytest.raises(ValueError, match="unknown step 'bogus'; allowed: experiments, sweeps, bench, derived"):
        select(steps, ["bogus"], [])


# -- measuring ----------------------------------------------------------------------------------------------------

ALLOC = "x = b'\\x01' * (200 << 20); import time; time.sleep(0.6)"


def test_a_200_mb_process_shows_at_least_200_mb():
    rec = R.run_measured(Command((PY, "-c", ALLOC)))
    assert rec["exit_code"] == 0 and rec["seconds"] >= 0.6
    assert 200 <= rec["peak_rss_mb"] < 400, rec
    assert rec["peak_tree_rss_mb"] >= 200 and rec["cpu_seconds"] >= 0


def test_a_grandchild_counts_in_both_peaks():
    """The publisher and the sweeps run the work in child processes of the command."""
    code = f"import os, shlex, sys; assert os.system(shlex.join([sys.executable, '-c', {ALLOC!r}])) == 0"
    rec = R.run_measured(Command((PY, "-c", code)))
    assert rec["exit_code"] == 0 and rec["peak_rss_mb"] >= 200 and rec["peak_tree_rss_mb"] >= 200


def test_a_small_process_is_not_charged_for_an_earlier_one():
    """ru_maxrss of RUSAGE_CHILDREN is a maximum over every child ever waited, and a child's own ru_maxrss counts
    its forking parent's RSS (this test's process): the peak is the sampled VmHWM of the child's program."""
    R.run_measured(Command((PY, "-c", ALLOC)))
    assert R.run_measured(Command((PY, "-c", "pass")))["peak_rss_mb"] < 150


def test_env_and_exit_code_and_log(tmp_path):
    log = tmp_path / "s.log"
    rec = R.run_measured(Command((PY, "-c", "import os, sys; print(os.environ['SVB_X']); sys.exit(3)"),
                                 {"SVB_X": "hello"}), log)
    assert rec["exit_code"] == 3 and log.read_text() == "hello\n"
    assert R.run_measured(Command(("/nonexistent/prog",)))["error"].startswith("could not start")


# -- running a plan -----------------------------------------------------------------------------------------------

def test_a_failing_step_stops_the_run_and_keeps_the_timings(tmp_path, capsys):
    out = tmp_path / "timings.json"
    steps = [_step("one", "pass"), _step("two", "print('x')", "import sys; sys.exit(3)"), _step("three", "pass")]
    code, doc = R.run_plan(steps, out, warm={})
    err = capsys.readouterr().err
    assert code == 1
    assert err.splitlines()[0].startswith("reproduce: error: step two failed: `")
    assert "exited with code 3 after" in err.splitlines()[0]
    saved = json.loads(out.read_text())
    assert saved == doc and saved["status"] == "failed" and saved["failed_step"] == "two"
    assert [s["name"] for s in saved["steps"]] == ["one", "two"] and saved["done"] == ["one"]
    assert [c["exit_code"] for c in saved["steps"][1]["commands"]] == [0, 3]
    assert saved["planned"] == ["one", "two", "three"]


def test_a_complete_run_records_each_step_and_the_machine(tmp_path, capsys):
    out = tmp_path / "t.json"
    steps = [_step("a", ALLOC), _step("b", "pass", "pass", group="bench")]
    code, doc = R.run_plan(steps, out, argv=["--x"], warm={})
    printed = capsys.readouterr().out
    assert code == 0 and doc["status"] == "complete" and doc["kind"] == "timings"
    assert "[1/2] a: done in" in printed and "[2/2] b: done in" in printed
    a, b = doc["steps"]
    assert a["peak_rss_mb"] >= 200 and len(b["commands"]) == 2
    assert doc["total_seconds"] == pytest.approx(a["seconds"] + b["seconds"], abs=0.11)
    assert doc["total_seconds_without_bench"] == pytest.approx(a["seconds"], abs=0.11)
    assert doc["step_seconds_sum"] == pytest.approx(a["seconds"] + b["seconds"], abs=0.11)
    assert doc["machine"]["cores"] >= 1 and doc["git"]["sha"] and doc["packages"]["numpy"]
    assert doc["command"][-1] == "--x"
    table = report.summary_text(doc)
    assert table.splitlines()[0].split() == ["step", "seconds", "peak", "RSS", "MB", "tree", "RSS", "MB", "CPU", "s",
                                             "status"]
    assert "bench excluded" in table


def test_the_file_is_written_atomically_after_every_step(tmp_path, monkeypatch):
    """A step sees the file of the steps before it, whole; a failed write leaves the last whole file."""
    out = tmp_path / "t.json"
    check = f"import json; d = json.load(open({str(out)!r})); assert d['status'] == 'running', d; " \
            "assert [s['name'] for s in d['steps']] == ['a'], d"
    code, _ = R.run_plan([_step("a", "pass"), _step("b", check)], out, warm={})
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]
    before = out.read_bytes()

    def fail(*a):
        raise OSError("disk full")

    monkeypatch.setattr("smartvector_bench.core.atomic.os.replace", fail)
    with pytest.raises(OSError, match="disk full"):
        R.run_plan([_step("c", "pass")], out, warm={})
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]


def test_sigterm_stops_the_running_command_and_the_run(tmp_path):
    out = tmp_path / "t.json"
    old = signal.signal(signal.SIGTERM, R.forward_signal)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        timer.start()
        t0 = time.perf_counter()
        code, doc = R.run_plan([_step("slow", "import time; time.sleep(60)"), _step("next", "pass")], out, warm={})
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, old)
    assert code == 128 + signal.SIGTERM and time.perf_counter() - t0 < 20
    assert doc["status"] == "interrupted" and [s["name"] for s in doc["steps"]] == ["slow"]
    assert doc["steps"][0]["commands"][0]["exit_code"] == -signal.SIGTERM


SLEEP = "import time; time.sleep({})"


def test_batches_put_only_independent_neighbours_together():
    steps = [_step("e1"), _step("e2"), _step("s1", group="sweeps"), _step("p", group="bench"),
             _step("s2", group="sweeps"), _step("f", group="derived"), _step("g", group="derived")]
    names = [[s.name for s in b] for b in R.batches(steps, 2)]
    assert names == [["e1", "e2", "s1"], ["p"], ["s2"], ["f"], ["g"]]
    assert [[s.name for s in b] for b in R.batches(steps, 1)] == [[s.name] for s in steps]


def test_jobs_run_independent_steps_side_by_side_and_the_bench_alone(tmp_path, capsys):
    out = tmp_path / "t.json"
    steps = [_step("a", SLEEP.format(1.5)), _step("b", SLEEP.format(1.5), group="sweeps"),
             _step("p", SLEEP.format(0.5), group="bench"), _step("c", SLEEP.format(0.5))]
    code, doc = R.run_plan(steps, out, warm={}, jobs=2, logs=tmp_path)
    assert code == 0 and [s["name"] for s in doc["steps"]] == ["a", "b", "p", "c"]  # plan order, not end order
    a, b, p, c = doc["steps"]
    assert a["started_s"] < b["ended_s"] and b["started_s"] < a["ended_s"]  # a and b overlapped
    assert p["started_s"] >= max(a["ended_s"], b["ended_s"]) and c["started_s"] >= p["ended_s"]  # p alone
    covered = (max(a["ended_s"], b["ended_s"]) - min(a["started_s"], b["started_s"])  # the union of the intervals
               + p["ended_s"] - p["started_s"] + c["ended_s"] - c["started_s"])
    assert doc["total_seconds"] == pytest.approx(covered, abs=0.2) and doc["total_seconds"] < doc["step_seconds_sum"]
    assert doc["seconds_by_group"]["experiments"] == pytest.approx(a["ended_s"] - a["started_s"] + c["ended_s"]
                                                                   - c["started_s"], abs=0.2)
    assert doc["total_seconds_without_bench"] == pytest.approx(doc["total_seconds"] - p["ended_s"] + p["started_s"],
                                                               abs=0.2)
    assert "(output: " in capsys.readouterr().out


def test_with_jobs_a_failure_lets_running_steps_finish_and_starts_no_new_one(tmp_path, capsys):
    out = tmp_path / "t.json"
    steps = [_step("slow", SLEEP.format(1.5)), _step("bad", "import sys; sys.exit(4)"), _step("later", "pass"),
             _step("f", "pass", group="derived")]
    code, doc = R.run_plan(steps, out, warm={}, jobs=2)
    assert code == 1 and doc["status"] == "failed" and doc["failed_step"] == "bad"
    assert [s["name"] for s in doc["steps"]] == ["slow", "bad"] and doc["steps"][0]["status"] == "ok"
    assert "step bad failed" in capsys.readouterr().err
    assert json.loads(out.read_text()) == doc


def test_sigterm_stops_every_step_running_side_by_side(tmp_path):
    out = tmp_path / "t.json"
    old = signal.signal(signal.SIGTERM, R.forward_signal)

    def stop_when_both_run():  # not a fixed delay: on a loaded machine the second step may start late
        deadline = time.monotonic() + 15
        while len(R.RUNNING["pids"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    timer = threading.Thread(target=stop_when_both_run, daemon=True)
    try:
        timer.start()
        t0 = time.perf_counter()
        code, doc = R.run_plan([_step("x", SLEEP.format(60)), _step("y", SLEEP.format(60)), _step("z", "pass")],
                               out, warm={}, jobs=2)
    finally:
        timer.join()
        signal.signal(signal.SIGTERM, old)
    assert code == 128 + signal.SIGTERM and time.perf_counter() - t0 < 20
    assert doc["status"] == "interrupted" and [s["name"] for s in doc["steps"]] == ["x", "y"]
    assert [s["commands"][0]["exit_code"] for s in doc["steps"]] == [-signal.SIGTERM] * 2


def test_jobs_must_be_a_positive_number(capsys):
    for bad in ("0", "two"):
        with pytest.raises(SystemExit) as exc:
            R.main(["--jobs", bad, "--dry-run"])
        assert exc.value.code == 2 and "--jobs" in capsys.readouterr().err


def test_the_manifest_is_rewritten_after_the_final_timings(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    mark = tmp_path / "calls"
    expected = Step("expected", "derived", (Command((PY, "-c", f"open({str(mark)!r}, 'a').write('x')")),), ("expected.json",))
    out = res / TIMINGS_FILE
    assert R.run_plan([expected], out, warm={})[0] == 0
    R.refresh_manifest([expected], out, res)
    assert mark.read_text() == "xx"
    R.refresh_manifest([expected], tmp_path / "elsewhere.json", res)  # not under the results root: not needed
    assert mark.read_text() == "xx"


# -- the command line ---------------------------------------------------------------------------------------------

def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert R.main(["--dry-run", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert not out.exists()
    for s in plan():
        assert f". {s.name} [{s.group}]" in text
        for c in s.commands:
            assert c.line() in text
    assert R.main(["--dry-run", "--skip", "bench", "--out", str(out)]) == 0
    assert " perf " not in capsys.readouterr().out


def test_bad_names_and_missing_bundles_stop_before_running(tmp_path, capsys, monkeypatch):
    out = tmp_path / "t.json"
    assert R.main(["--steps", "nope", "--out", str(out)]) == 2
    assert "unknown step 'nope'" in capsys.readouterr().err
    monkeypatch.setattr(R, "plan", lambda *a: [Step("x", "experiments", (Command((PY, "-c", "pass")),), (),
                                                    needs=("../no-such-corpus.bundle",))])
    assert R.main(["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "step x needs ../no-such-corpus.bundle, which is missing" in err and "--skip x" in err
    assert not out.exists()


def test_main_runs_renders_and_writes_the_docs_section(tmp_path, capsys, monkeypatch):
    out = tmp_path / "t.json"
    monkeypatch.setattr(R, "plan", lambda *a: [_step("a", "pass"), _step("p", "pass", group="bench")])
    monkeypatch.setattr(R, "warm_state", lambda steps: {"embedding_cache_mb": 0.0})
    assert R.main(["--out", str(out), "--skip", "bench"]) == 0
    printed = capsys.readouterr().out
    assert "[1/1] a: done in" in printed and "total" in printed
    assert R.main(["--render", "--out", str(out)]) == 0
    md = capsys.readouterr().out
    assert "| step | what | wall | peak RSS, largest process | peak RSS, process tree | CPU |" in md
    assert "| a |" in md and "**total, bench excluded**" in md and "Not run: p." in md
    assert "a clean start" in md
    doc = tmp_path / "ops.md"
    doc.write_text(f"# x\n{report.START}\nplaceholder\n{report.END}\ntail\n")
    report.write_docs(md, doc)
    assert doc.read_text() == f"# x\n{report.START}\n{md}{report.END}\ntail\n"
    doc.write_text("no markers\n")
    with pytest.raises(report.TimingsError, match="no <!-- timings:start -->"):
        report.write_docs(md, doc)
    (tmp_path / "bad.json").write_text('{"kind": "other"}')
    assert R.main(["--render", "--out", str(tmp_path / "bad.json")]) == 2
    assert "kind: not a timings file" in capsys.readouterr().err


def test_the_docs_and_the_makefile_hold_the_command():
    ops = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    assert ops.count(report.START) == 1 and ops.count(report.END) == 1 and "## Time to reproduce" in ops
    make = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "\nreproduce-all:" in make and "-m smartvector_bench.tools.reproduce --jobs $(JOBS)" in make


def test_the_git_state_is_the_one_at_the_start(tmp_path, monkeypatch):
    """The run's own results dirty the checkout; the timings file records it as it was when the run began."""
    states = iter([{"sha": "a" * 40, "dirty": False}] + [{"sha": "a" * 40, "dirty": True}] * 10)
    monkeypatch.setattr(R, "git_sha", lambda: next(states))
    _, doc = R.run_plan([_step("a", "pass")], tmp_path / "t.json", warm={})
    assert doc["git"] == {"sha": "a" * 40, "dirty": False}


def test_render_sets_an_earlier_reproduction_beside_this_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(R, "plan", lambda *a: [_step("a", "pass"), _step("b", "pass")])
    monkeypatch.setattr(R, "warm_state", lambda steps: {})
    before, out = tmp_path / "before", tmp_path / "after.json"
    for name in ("a", "b"):  # two runs of one step each, as an earlier commit's make reproduce-all-nobench STEPS=
        assert R.main(["--steps", name, "--out", str(before / f"{name}.json")]) == 0
    assert R.main(["--out", str(out)]) == 0
    capsys.readouterr()
    assert R.main(["--render", "--out", str(out), "--before", str(before)]) == 0
    md = capsys.readouterr().out
    docs = [json.loads((before / f"{n}.json").read_text()) for n in ("a", "b")]
    after = json.loads(out.read_text())
    total = sum(d["total_seconds_without_bench"] for d in docs)
    assert "| step | before | after |" in md and "2 run(s)" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| a | ") and ln.count("|") == 4)
    assert row == f"| a | {report.duration(docs[0]['steps'][0]['seconds'])} | " \
                  f"{report.duration(after['steps'][0]['seconds'])} |"
    assert f"| **total, bench excluded** | **{report.duration(total)}** |" in md
    # refused: a step in two files, an unfinished run, an empty folder
    (before / "c.json").write_text((before / "a.json").read_text())
    assert R.main(["--render", "--out", str(out), "--before", str(before)]) == 2
    assert "step a is also in" in capsys.readouterr().err
    doc = json.loads((before / "a.json").read_text())
    (before / "c.json").write_text(json.dumps({**doc, "status": "running", "steps": []}))
    assert R.main(["--render", "--out", str(out), "--before", str(before)]) == 2
    assert "only a complete run can be compared" in capsys.readouterr().err
    assert R.main(["--render", "--out", str(out), "--before", str(tmp_path / "none")]) == 2
    assert "no timings file" in capsys.readouterr().err


def test_the_docs_section_is_the_render_of_the_committed_timings():
    """docs/operations.md's timings section comes from results/ (`reproduce --write-docs`), never by hand."""
    results = REPO / "results"
    text = report.render(report.load(results / TIMINGS_FILE))
    if (results / BEFORE_DIR).is_dir():
        text += "\n" + report.render_before(report.load(results / TIMINGS_FILE), report.load_before(results / BEFORE_DIR))
    ops = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    assert ops.split(report.START, 1)[1].split(report.END, 1)[0] == f"\n{text}"
