"""The regression gate (smartvector_bench/tools/gate/) and the publisher (smartvector_bench/tools/publish.py).

Fast tests compare small runs made here (tiny dataset, hashing embedder) with ``--results-from``; the model test
runs the real gate for ``main`` through the CLI against the committed results/expected.json."""

from __future__ import annotations

import csv
import hashlib
import importlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smartvector_bench.tools import publish
from smartvector_bench.tools.gate import cli as gate_cli
from smartvector_bench.tools.gate.committed import check_committed
from smartvector_bench.tools.gate.expected import read_expected
from smartvector_bench.tools.gate.rerun import Rerun

from .conftest import REPO, TINY, compose_config

# Overrides of the small runs, per experiment (also passed to the CLI by the rerun tests, so the CLI reproduces
# the in-process runs exactly).
SMALL = {  # fewer bootstrap resamples than the default 1,000: the gate checks them, their count does not matter
    "main": TINY + ["embedder=hashing", "experiment.n_boot=100"],
    "reembed_cost": TINY + ["embedder=hashing", "experiment.n_edits=30", "experiment.progress=false"],
    "feedback_loop": TINY + ["embedder=hashing", "experiment.n_boot=20"],
    "main_large": TINY + ["embedder=hashing", "experiment.n_boot=100"],
}


def _run_small(name: str, out: Path) -> None:
    cfg = compose_config([f"experiment={name}", *SMALL[name]])
    module = importlib.import_module(f"experiments.{cfg['experiment']['name']}")  # main_large runs experiments.main
    module.run(cfg, out)


@pytest.fixture(scope="module")
def small_results(tmp_path_factory) -> Path:
    """A results root (``<root>/<experiment>/``) of small real runs, and its derived ``expected.json``."""
    root = tmp_path_factory.mktemp("small_results")
    for name in SMALL:  # lvl_eval (also rerun by the gate) has its own tests; these four are the small ones
        _run_small(name, root / name)
    assert gate_cli.main(["--write-expected", "--results-from", str(root),
                         "--expected", str(root / "expected.json")]) == 0
    return root


@pytest.fixture
def results(small_results, tmp_path) -> Path:
    """A private copy of the small results, free to break."""
    dst = tmp_path / "results"
    shutil.copytree(small_results, dst)
    return dst


def gate(results: Path, *args: str, capsys, committed: bool = False) -> tuple[int, str]:
    """The gate on a results folder. By default with ``--no-committed``: the folder is compared as outputs (the
    table of values and invariants, what these tests read) and not as a committed tree with a manifest, which
    the committed-check tests below cover."""
    code = gate_cli.main(["--results-from", str(results), "--expected", str(results / "expected.json"),
                         *([] if committed else ["--no-committed"]), *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def _edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=1))  # allow_nan: a NaN is written as NaN on purpose


def _failed_rows(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("| ") and "| FAIL" in ln]


# -- passes, and the table ---------------------------------------------------------------------------------------

def test_unmodified_results_pass(results, capsys):
    code, out = gate(results, capsys=capsys)
    assert code == 0, out
    assert "0 failed" in out and not _failed_rows(out)
    code, out = gate(results, capsys=capsys, committed=True)
    assert code == 0, out
    assert "committed: " in out and " 0 failed (" in out and "FAIL" not in out
    counts = json.loads((results / "expected.json").read_text())["counts"]
    assert set(counts) == set(SMALL) and all(c > 50 for c in counts.values())


def test_verbose_prints_the_whole_table(results, capsys):
    code, out = gate(results, "--verbose", capsys=capsys)
    assert code == 0
    assert "| metric | expected | got | tolerance | verdict |" in out
    assert "| main.systems.smartvector.test.top1 |" in out
    assert "| reembed_cost.strategies.surgical.by_edit_type.single_word.chunks_reembedded_mean |" in out
    assert "| feedback_loop.summary.smartvector_live.top1_last |" in out
    assert "| main.systems.smartvector.test.mrr_at_1 |" in out  # the invariant rows are listed too
    assert "PASS" in out and "FAIL" not in out


def test_expected_values_are_derived_from_the_results(results):
    doc = json.loads((results / "expected.json").read_text())
    exp = doc["experiments"]
    metrics = json.loads((results / "main" / "metrics.json").read_text())
    entry = exp["main"]["main.systems.smartvector.test.top1"]
    assert entry == {"value": metrics["systems"]["smartvector"]["test"]["top1"], "tolerance": 0.0, "kind": "exact4"}
    rc = json.loads((results / "reembed_cost" / "reembed_cost.json").read_text())
    key = "reembed_cost.strategies.surgical.equivalent_to_rebuild.equivalent"
    assert exp["reembed_cost"][key] == {"value": rc["strategies"]["surgical"]["equivalent_to_rebuild"]["equivalent"],
                                        "tolerance": 0.0, "kind": "exact"}
    assert "feedback_loop.summary.smartvector_live.top1_last" in exp["feedback_loop"]
    assert exp["feedback_loop"]["feedback_loop.csv.columns"]["kind"] == "columns"
    every = [k for m in exp.values() for k in m]
    assert not [k for k in every if any(w in k for w in ("wall_time", "latency", "timings", "_s.", "index_s"))]
    assert all(s["kind"] != "abs" or s["why"] for m in exp.values() for s in m.values())
    assert any("wall time" in n.lower() for n in doc["notes"])


# -- expected values ---------------------------------------------------------------------------------------------

def test_an_expected_value_off_by_more_than_its_tolerance_fails_naming_it(results, capsys):
    metric = "main.systems.smartvector.test.top1"
    _edit_json(results / "expected.json",
               lambda d: d["experiments"]["main"][metric].update(value=d["experiments"]["main"][metric]["value"] + 0.01))
    code, out = gate(results, capsys=capsys)
    assert code == 1
    rows = _failed_rows(out)
    assert len(rows) == 1 and rows[0].startswith(f"| {metric} |"), rows
    assert "REGRESSION: " + metric in out


def test_rounding_and_abs_tolerances(results, capsys):
    metric = "main.systems.plain_cosine.dev.ece"
    abs_metric = "reembed_cost.strategies.cdc.equivalent_to_rebuild.max_abs_vector_diff"

    def nudge(d, by, abs_by):
        d["experiments"]["main"][metric]["value"] = round(d["experiments"]["main"][metric]["value"], 4) + by
        spec = d["experiments"]["reembed_cost"][abs_metric]
        assert spec["kind"] == "abs" and spec["tolerance"] == 1e-6
        spec["value"] = spec["value"] + abs_by

    _edit_json(results / "expected.json", lambda d: nudge(d, 1e-6, 5e-7))  # within 4 decimals / within 1e-6
    code, out = gate(results, capsys=capsys)
    assert code == 0, _failed_rows(out)
    _edit_json(results / "expected.json", lambda d: nudge(d, 2e-4, 5e-6))
    code, out = gate(results, capsys=capsys)
    assert code == 1
    failed = {r.split(" | ")[0][2:] for r in _failed_rows(out)}
    assert failed == {metric, abs_metric}


# -- missing metrics ---------------------------------------------------------------------------------------------

def test_a_metric_missing_from_the_results_fails_naming_it(results, capsys):
    # a key MainMetrics does not require (a required one fails the whole file: the next test)
    _edit_json(results / "main" / "metrics.json", lambda m: m["systems"]["smartvector"]["test"].pop("permutation_p"))
    code, out = gate(results, capsys=capsys)
    assert code == 1
    rows = _failed_rows(out)
    assert [r for r in rows if r.startswith("| main.systems.smartvector.test.permutation_p |")
            and "| MISSING | 4 dp | FAIL" in r and "key main.systems.smartvector.test.permutation_p missing" in r], rows


@pytest.mark.parametrize("key", ["systems.smartvector.test.recall_at_5", "calibration"])
def test_a_committed_metrics_file_without_a_required_key_is_one_error_naming_file_and_key(tmp_path, key):
    """The committed results/main/metrics.json, one key MainMetrics requires removed: the gate (its real command
    line) reads it through MainMetrics and reports one line naming the file and the key, exit 1, no traceback."""
    path = tmp_path / "main" / "metrics.json"
    path.parent.mkdir()
    doc = json.loads((REPO / "results" / "main" / "metrics.json").read_text(encoding="utf-8"))
    *parents, last = key.split(".")
    at = doc
    for k in parents:
        at = at[k]
    del at[last]
    path.write_text(json.dumps(doc), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "smartvector_bench.tools.gate", "--no-committed", "--only", "main",
                           "--results-from", str(tmp_path)], cwd=REPO, capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out
    failed = _failed_rows(proc.stdout)
    assert len(failed) == 1, failed
    assert failed[0].startswith(f"| main.{key} | a main result file | ERROR |")
    assert f"{path}: {key}: missing" in failed[0] and "expected values not compared" in failed[0]
    assert f"REGRESSION: main.{key}" in proc.stderr.splitlines()


def test_a_whole_system_missing_fails(results, capsys):
    _edit_json(results / "main" / "metrics.json", lambda m: m["systems"].pop("oracle"))
    code, out = gate(results, capsys=capsys)
    assert code == 1
    assert "key main.systems.oracle missing" in out


def test_a_csv_column_removed_fails_naming_it(results, capsys):
    path = results / "feedback_loop" / "feedback_loop.csv"
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    buf = io.StringIO()
    fields = [c for c in rows[0] if c != "stale_rate"]
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue())
    code, out = gate(results, capsys=capsys)
    assert code == 1
    failed = _failed_rows(out)
    assert any(r.startswith("| feedback_loop.csv.columns |") and "stale_rate" in r for r in failed), failed
    assert any(".stale_rate |" in r and "column 'stale_rate' missing" in r for r in failed)


def test_only_an_experiment_absent_from_the_folder_fails(results, capsys):
    shutil.rmtree(results / "reembed_cost")
    code, out = gate(results, "--only", "main,reembed_cost", capsys=capsys)
    assert code == 1 and "reembed_cost (outputs)" in out
    code, out = gate(results, capsys=capsys)  # without --only: what the folder holds, the rest is skipped
    assert code == 0 and "reembed_cost: not in" in out


# -- invariants --------------------------------------------------------------------------------------------------

def _drop_expected(results: Path, *metrics: str) -> None:
    """Remove entries from the expected file, so that a miss can only come from an invariant."""
    _edit_json(results / "expected.json", lambda d: [d["experiments"]["main"].pop(m) for m in metrics])


@pytest.mark.parametrize("key, value, reason", [
    ("top1", 1.5, "out of range"),
    ("ece", -0.1, "out of range"),
    ("rumor_rate", float("nan"), "NaN"),
    ("stale_rate", None, "None where a number is expected"),
])
def test_a_metric_out_of_its_range_breaks_an_invariant(results, capsys, key, value, reason):
    metric = f"main.systems.smartvector.test.{key}"
    _drop_expected(results, metric)
    _edit_json(results / "main" / "metrics.json", lambda m: m["systems"]["smartvector"]["test"].update({key: value}))
    code, out = gate(results, capsys=capsys)
    assert code == 1
    rows = _failed_rows(out)
    assert any(r.startswith(f"| {metric} |") and "invariant" in r and reason in r for r in rows), rows


def test_n_queries_off_by_one_breaks_invariants(results, capsys):
    metric = "main.systems.livevectorlake.dev.n_queries"
    _drop_expected(results, metric)
    _edit_json(results / "main" / "metrics.json",
               lambda m: m["systems"]["livevectorlake"]["dev"].update(n_queries=m["systems"]["livevectorlake"]["dev"]
                                                                      ["n_queries"] + 1))
    code, out = gate(results, capsys=capsys)
    assert code == 1
    failed = "\n".join(_failed_rows(out))
    assert f"| {metric} | == judged dev queries" in failed  # against the run file
    assert "| main.systems.livevectorlake.dev.ece_bins.counts | sum == n_queries" in failed
    assert "| main.systems.livevectorlake.dev+test n_queries |" in failed  # against the dataset


def test_top1_disagreeing_with_the_ranked_lists_breaks_mrr_at_1(results, capsys):
    """Swap ranks 1 and 2 of a test query whose top-1 is relevant and whose rank 2 is not, in a run file;
    metrics.json is untouched."""
    from smartvector_bench.core.dataset import load_dataset

    ds = load_dataset(results / "main" / "dataset")
    relevant = {qid: {ds.corpus.ids[int(r)] for r in ds.queries.relevant.row(i)} for i, qid in enumerate(ds.queries.ids)}
    for path in sorted((results / "main").glob("run_*.jsonl")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines[1:], 1):
            row = json.loads(line)
            if (row["correct"] and row["split"] == "test" and len(row["ranked"]) > 1
                    and row["ranked"][1] not in relevant[row["query_id"]]):
                row["ranked"][0], row["ranked"][1] = row["ranked"][1], row["ranked"][0]
                lines[i] = json.dumps(row)
                path.write_text("\n".join(lines) + "\n")
                system = path.stem[len("run_"):]
                break
        else:
            continue
        break
    else:
        pytest.fail("no system got a test query right on the tiny dataset")
    code, out = gate(results, capsys=capsys)
    assert code == 1
    rows = _failed_rows(out)
    names = [r.split(" | ")[0][2:] for r in rows]
    assert names[0] == f"main.systems.{system}.test.mrr_at_1", rows
    assert "a relevant chunk (qrels) at rank 1 in the run file" in rows[0]
    # the gate's own recomputation sees it too: the stored correct flags, MRR@10 (1 -> 1/2) and ECE
    assert {f"main run_{system}.jsonl: test correct flags", f"main.systems.{system}.test.mrr_at_10",
            f"main.systems.{system}.test.ece"} <= set(names), names
    # and the per-hit labels (run file 1.1) no longer follow the swapped ids (the flags still match labels[0])
    assert f"main run_{system}.jsonl: hit labels" in names, names
    assert all(n.startswith((f"main.systems.{system}.test.", f"main run_{system}.jsonl: test ",
                             f"main run_{system}.jsonl: hit labels")) for n in names)


def test_ece_bin_counts_must_sum_to_n_queries(results, capsys):
    metric = "main.systems.oracle.test.ece_bins.counts"
    _drop_expected(results, metric)
    _edit_json(results / "main" / "metrics.json",
               lambda m: m["systems"]["oracle"]["test"]["ece_bins"]["counts"].__setitem__(0, 1000))
    code, out = gate(results, capsys=capsys)
    assert code == 1
    assert any(r.startswith(f"| {metric} | sum == n_queries") for r in _failed_rows(out))


def test_bad_expected_file_is_bad_input(results, capsys):
    code, out = gate(results, "--expected", str(results / "nope.json"), capsys=capsys)
    assert code == 2 and "cannot read the expected values" in out
    code, out = gate(results, "--only", "bm25", capsys=capsys)
    assert code == 2 and "unknown experiment 'bm25'" in out


# -- the committed results: manifest, then values and invariants recomputed from the committed files ----------------

def committed_fails(results: Path) -> list[tuple[str, str]]:
    """(file relative to the results root, check or metric) of every failing committed row, through the function
    the CLI runs first."""
    expected = read_expected(results / "expected.json")
    rows, root = check_committed(results / "expected.json", expected)
    assert root == results.resolve()
    return [(str(Path(r.file).relative_to(root)), r.metric) for r in rows if not r.ok]


def _bump(path: Path, system: str, split: str, key: str, by: float) -> None:
    doc = json.loads(path.read_text())
    doc["systems"][system][split][key] = round(doc["systems"][system][split][key] + by, 6)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def _calibration_ece(results: Path, system: str = "plain_cosine") -> list[str]:
    """The calibration block's raw test ECE of ``system``, per method (none before the evaluator writes it)."""
    cal = json.loads((results / "main" / "metrics.json").read_text()).get("calibration") or {}
    return [f"calibration.{system}.{method}.ece" for method in cal.get(system) or {}]


def test_the_manifest_records_every_file_but_the_expected_file(results):
    manifest = json.loads((results / "expected.json").read_text())["manifest"]
    on_disk = sorted(p.relative_to(results).as_posix() for p in results.rglob("*") if p.is_file())
    assert manifest["root"] == "." and sorted(manifest["files"]) == [f for f in on_disk if f != "expected.json"]
    info = manifest["files"]["main/metrics.json"]
    assert info == {"sha256": hashlib.sha256((results / "main" / "metrics.json").read_bytes()).hexdigest(),
                    "bytes": (results / "main" / "metrics.json").stat().st_size}
    assert committed_fails(results) == []


def test_a_committed_ece_edit_fails_naming_the_file_and_the_metric(results, small_results, capsys, monkeypatch):
    _bump(results / "main" / "metrics.json", "plain_cosine", "test", "ece", 0.01)
    # the hash, the expected value and the gate's own ECE recomputed from the run file (and the calibration
    # block's raw test ECE, once the evaluator writes one: it no longer equals the split's)
    assert committed_fails(results) == [("main/metrics.json", "sha256"),
                                        ("main/metrics.json", "systems.plain_cosine.test.ece"),
                                        ("main/metrics.json", "systems.plain_cosine.test.ece"),
                                        *[("main/metrics.json", m) for m in _calibration_ece(results)]]

    def fake_rerun_many(names, workdir, jobs=1, extra=(), per_name=None):  # reproduces the unedited results
        print("rerunning (fake)")
        for n in names:
            shutil.copytree(small_results / n, Path(workdir) / n)
        return {n: Rerun(n, ["fake"], Path(workdir) / n, Path(workdir) / f"{n}.log") for n in names}

    monkeypatch.setattr(gate_cli, "rerun_many", fake_rerun_many)
    # the default invocation (no --results-from): the committed files are checked first, then the rerun, which
    # passes; the edit alone fails the gate
    code = gate_cli.main(["--expected", str(results / "expected.json"), "--only", "main"])
    out, err = capsys.readouterr()
    assert code == 1
    before_rerun, after = out.split("rerunning (fake)")
    assert "main: ok" in after and not _failed_rows(after)
    assert re.match(r"\d+ passed, 0 failed \(main: ", out.splitlines()[-1])
    line = next(ln for ln in before_rerun.splitlines() if "systems.plain_cosine.test.ece" in ln)
    assert line.strip().startswith("FAIL ") and "main/metrics.json: systems.plain_cosine.test.ece expected " in line
    assert ", committed " in line and "differs at 4 decimals" in line
    assert "main/metrics.json: sha256 expected " in before_rerun
    n_failed = 3 + len(_calibration_ece(results))
    assert "committed: " in out.splitlines()[-1] and f", {n_failed} failed (" in out.splitlines()[-1]
    assert "main/metrics.json: systems.plain_cosine.test.ece" in err


def test_a_committed_recall_edit_fails_naming_it(results, capsys):
    _bump(results / "main" / "metrics.json", "oracle", "dev", "recall_at_5", -0.05)
    assert ("main/metrics.json", "systems.oracle.dev.recall_at_5") in committed_fails(results)
    code, out = gate(results, capsys=capsys, committed=True)  # --results-from the committed root: compared once
    assert code == 1 and "the committed results, compared above" in out and not _failed_rows(out)
    assert "main/metrics.json: systems.oracle.dev.recall_at_5 expected " in out


@pytest.mark.parametrize("edit", ["whitespace", "timing", "table"])
def test_an_untracked_edit_fails_on_the_hash_naming_the_file(results, edit):
    if edit == "table":
        path = results / "main" / "table.md"
        path.write_text(path.read_text().replace("|", "| ", 1))
    else:
        path = results / "main" / "metrics.json"
        doc = json.loads(path.read_text())
        if edit == "timing":
            doc["timings_s"] = {k: v + 1.0 for k, v in doc["timings_s"].items()}
        path.write_text(json.dumps(doc, indent=1 if edit == "whitespace" else 2, sort_keys=True) + "\n")
    assert committed_fails(results) == [(path.relative_to(results).as_posix(), "sha256")]


def test_a_deleted_file_fails(results, capsys):
    (results / "main" / "table.md").unlink()
    assert committed_fails(results) == [("main/table.md", "sha256")]
    code, out = gate(results, capsys=capsys, committed=True)
    assert code == 1 and "main/table.md: sha256 expected " in out and ", committed MISSING" in out


def test_an_unrecorded_file_fails(results, capsys):
    shutil.copy(results / "main" / "run_oracle.jsonl", results / "main" / "run_oracle_v2.jsonl")
    (results / "notes.txt").write_text("scratch\n")
    assert committed_fails(results) == [("main/run_oracle_v2.jsonl", "recorded"), ("notes.txt", "recorded")]
    code, out = gate(results, capsys=capsys, committed=True)
    assert code == 1 and "main/run_oracle_v2.jsonl: recorded expected in the manifest, committed NOT RECORDED" in out


def test_sources_must_agree_with_the_manifest_and_a_manifest_is_required(results, capsys):
    _edit_json(results / "expected.json", lambda d: d["sources"]["main"].update(sha256="0" * 64))
    assert committed_fails(results) == [("main/metrics.json", "sources.main.sha256")]
    _edit_json(results / "expected.json", lambda d: d.pop("manifest"))
    code, out = gate(results, capsys=capsys, committed=True)
    assert code == 1 and "no file manifest: regenerate the expected file with --write-expected" in out


def test_no_committed_skips_the_check_and_another_folder_is_still_compared(results, tmp_path, capsys):
    _bump(results / "main" / "metrics.json", "plain_cosine", "test", "ece", 0.01)
    code, out = gate(results, capsys=capsys)  # --no-committed: only the folder, as outputs
    assert code == 1 and "not checked (--no-committed)" in out
    assert [r.split(" | ")[0][2:] for r in _failed_rows(out)] == (["main.systems.plain_cosine.test.ece"] * 2 +
                                                                  [f"main.{m}" for m in _calibration_ece(results)])
    other = tmp_path / "run"
    shutil.copytree(results / "feedback_loop", other)  # a run folder that is not the committed one: compared too
    code = gate_cli.main(["--expected", str(results / "expected.json"), "--results-from", str(other)])
    out = capsys.readouterr().out
    assert code == 1 and "main/metrics.json: systems.plain_cosine.test.ece expected" in out
    assert re.match(r"\d+ passed, 0 failed \(feedback_loop: \d+ passed, 0 failed\);", out.splitlines()[-1])
    n_failed = 3 + len(_calibration_ece(results))
    assert f", {n_failed} failed (" in out.splitlines()[-1]  # the committed check's misses, counted apart


# -- rerun mode and the publisher, through the real CLI (hashing embedder) ------------------------------------------

def _cli_overrides(name: str) -> list[str]:
    return [a for o in SMALL[name] for a in ("--set", o)]


def test_rerun_through_the_cli_reproduces_the_small_run(small_results, tmp_path, capsys):
    code = gate_cli.main(["--only", "reembed_cost", "--expected", str(small_results / "expected.json"),
                         "--keep", str(tmp_path / "runs"), *_cli_overrides("reembed_cost")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "reembed_cost: ok" in out and "experiment=reembed_cost" in out
    assert (tmp_path / "runs" / "reembed_cost" / "reembed_cost.json").is_file()


def test_a_failing_rerun_fails_the_gate(small_results, tmp_path, capsys):
    code = gate_cli.main(["--only", "reembed_cost", "--expected", str(small_results / "expected.json"),
                         "--keep", str(tmp_path / "runs"), *_cli_overrides("reembed_cost"),
                         "--set", "experiment.n_edits=0"])
    out = capsys.readouterr().out
    assert code == 1
    assert "| reembed_cost (rerun) | exit 0 | exit code 2 |" in out and "n_edits" in out


def test_publish_reruns_through_the_cli_and_writes_provenance(tmp_path, capsys):
    dest = tmp_path / "results"
    code = publish.main(["--only", "main", "--results-dir", str(dest), *_cli_overrides("main")])
    assert code == 0, capsys.readouterr().err
    files = sorted(p.name for p in (dest / "main").iterdir())
    systems = list(compose_config()["retrievers"])
    assert files == sorted(["PROVENANCE.json", "metrics.json", "table.md", "qrels_dev.trec", "qrels_test.trec",
                            "queries.jsonl", "signals.jsonl"]  # signals: the four-signal systems' run files have them
                           + [f"run_{s}.{ext}" for s in systems for ext in ("jsonl", "trec")])
    prov = json.loads((dest / "main" / "PROVENANCE.json").read_text())
    metrics = json.loads((dest / "main" / "metrics.json").read_text())
    assert prov["command"][:2] == ["smartvector-bench", "experiment=main"] and "embedder=hashing" in prov["command"]
    assert prov["git"] == metrics["provenance"]["git"] and "dirty" in prov["git"]
    assert prov["config_sha256"] == metrics["provenance"]["config_sha256"]
    assert prov["dataset_sha256"] == metrics["dataset"]["sha256"]
    assert prov["packages"]["numpy"] and prov["env"]["OMP_NUM_THREADS"] == "1"
    for fname, info in prov["files"].items():
        assert hashlib.sha256((dest / "main" / fname).read_bytes()).hexdigest() == info["sha256"], fname
    assert set(prov["files"]) == set(files) - {"PROVENANCE.json"}
    # A failed rerun publishes nothing and leaves the previous publication as it was.
    before = {p.name: p.read_bytes() for p in (dest / "main").iterdir()}
    code = publish.main(["--only", "main", "--results-dir", str(dest), *_cli_overrides("main"),
                                 "--set", "dataset.contradiction_rate=1.5"])
    err = capsys.readouterr().err
    assert code == 1 and "main: FAILED" in err and "contradiction_rate" in err
    assert {p.name: p.read_bytes() for p in (dest / "main").iterdir()} == before
    # The committed check of a publication: it passes; an edit re-blessed with --write-expected still fails,
    # on the PROVENANCE.json hash of the file (the bytes the recorded run published).
    exp = ["--expected", str(dest / "expected.json")]
    assert gate_cli.main(["--write-expected", "--results-from", str(dest), *exp]) == 0
    assert gate_cli.main(["--results-from", str(dest), *exp]) == 0, capsys.readouterr().out
    _bump(dest / "main" / "metrics.json", "oracle", "dev", "recall_at_5", -0.05)
    assert gate_cli.main(["--write-expected", "--results-from", str(dest), *exp]) == 0
    capsys.readouterr()
    # ... and on the value the gate recomputes from the run file and the dataset
    assert committed_fails(dest) == [("main/metrics.json", "PROVENANCE.json sha256"),
                                     ("main/metrics.json", "systems.oracle.dev.recall_at_5")]


def _fake_sweep(multirun: Path, preset: str, failed: int = 0) -> None:
    d = multirun / preset
    d.mkdir(parents=True)
    (d / "tidy.csv").write_text("sweep,job,system,split,top1,dataset_sha256,config_sha256\n"
                                f"{preset},0,smartvector,test,0.5,d1,c1\n{preset},1,smartvector,test,0.6,d2,c2\n")
    (d / "tidy.provenance.json").write_text(json.dumps({"git_sha": "abc", "git_dirty": ["False"],
                                                        "packages": {"numpy": "2"}, "preset": preset}))
    (d / "summary.json").write_text(json.dumps({"jobs": {"planned": 2, "complete": 2 - failed, "skipped": 0,
                                                         "failed": failed, "missing": 0}}))
    (d / "queries.csv").write_text("job,system,query_id,correct\n0,smartvector,q1,1\n")
    (d / "0").mkdir()  # job folders are not published
    (d / "0" / "metrics.json").write_text("{}")


def test_publish_sweeps_found_and_refuses_incomplete_ones(tmp_path, capsys):
    multirun, dest = tmp_path / "multirun", tmp_path / "results"
    _fake_sweep(multirun, "seeds")
    _fake_sweep(multirun, "contradiction_sweep", failed=1)
    code = publish.main(["--only", "none", "--sweeps", "seeds,contradiction_sweep,half_life",
                                 "--multirun-dir", str(multirun), "--results-dir", str(dest)])
    err = capsys.readouterr().err
    assert code == 1
    assert "contradiction_sweep" in err and "1 failed" in err and "half_life" in err
    assert sorted(p.name for p in (dest / "seeds").iterdir()) == ["PROVENANCE.json", "queries.csv", "summary.json",
                                                                  "tidy.csv", "tidy.provenance.json"]
    assert not (dest / "contradiction_sweep").exists() and not (dest / "half_life").exists()
    prov = json.loads((dest / "seeds" / "PROVENANCE.json").read_text())
    assert prov["kind"] == "sweep" and prov["git"]["sha"] == "abc" and prov["dataset_sha256"] == ["d1", "d2"]
    assert prov["config_sha256"] == ["c1", "c2"] and prov["command"] == ["smartvector-bench", "-m", "experiment=seeds"]
    for name in ("tidy.csv", "queries.csv"):  # every file PROVENANCE.json lists is there, as collected
        assert (dest / "seeds" / name).read_bytes() == (multirun / "seeds" / name).read_bytes()
    assert set(prov["files"]) == {"queries.csv", "summary.json", "tidy.csv", "tidy.provenance.json"}
    # auto: every sweep folder found; an incomplete one is skipped with a warning, or published when allowed
    code = publish.main(["--only", "none", "--sweeps", "auto",
                                 "--multirun-dir", str(multirun), "--results-dir", str(dest)])
    assert code == 0 and "skipped: sweep 'contradiction_sweep'" in capsys.readouterr().err
    assert not (dest / "contradiction_sweep").exists()
    code = publish.main(["--only", "none", "--sweeps", "auto", "--allow-incomplete",
                                 "--multirun-dir", str(multirun), "--results-dir", str(dest)])
    assert code == 0
    assert json.loads((dest / "contradiction_sweep" / "PROVENANCE.json").read_text())["complete"] is False


# -- the true gate -----------------------------------------------------------------------------------------------

def test_the_committed_results_pass_the_gate():
    """The committed results/ and results/expected.json agree (file hashes, every expected value and invariant
    recomputed from the files). The reruns of `make regress` are not repeated here: CI runs `make regress`
    itself (.ci/run), and rerunning main with the real model would add two minutes to `make test`."""
    if not (REPO / "results" / "expected.json").is_file():
        pytest.fail("results/expected.json is missing: run `make results` (the publisher, then the gate's --write-expected)")
    r = subprocess.run([sys.executable, "-m", "smartvector_bench.tools.gate", "--results-from", "results"], cwd=REPO,
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-2000:]
    summary = r.stdout.strip().splitlines()[-1]
    assert "committed: " in summary and ", 0 failed" in summary, summary
    assert int(summary.split("committed: ")[1].split(" passed")[0]) > 5000