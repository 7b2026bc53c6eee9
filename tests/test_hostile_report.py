"""Hostile inputs (issue 28), the report's and the validator's side: a stored value no result can hold (NaN, a
rate outside [0, 1], a negative ECE) is refused in one line naming the file and key, exit 2, and no page is
written; null keeps rendering as "not measured". A symlink loop, a dangling symlink or a symlink to a folder in a
dataset folder is one line naming the file in smartvector-validate and in the loader, never a traceback; nothing
is written into the folder."""

from __future__ import annotations

import json
import shutil

import pytest

from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results import MainMetrics, ResultError
from smartvector_bench.core.schema.check import main as validate_main
from smartvector_bench.tools.report import cli

from .conftest import REPO, run_cli, write_tiny
from .report_dom import parse

RESULTS = REPO / "results"


def _run_copy(tmp_path, edit) -> tuple:
    run = tmp_path / "main"
    shutil.copytree(RESULTS / "main", run)
    doc = json.loads((run / "metrics.json").read_text())
    edit(doc)
    (run / "metrics.json").write_text(json.dumps(doc))  # json writes NaN as NaN, as a hand edit would
    return run, sorted(p.name for p in run.iterdir())


@pytest.mark.parametrize("key, value, says", [
    ("top1", float("nan"), "systems.smartvector.test.top1: expected a finite number, got NaN (not measured is null)"),
    ("ece", -7.5, "systems.smartvector.test.ece: -7.5 is outside [0, 1]"),
    ("stale_rate", 3.2, "systems.smartvector.test.stale_rate: 3.2 is outside [0, 1]"),
    ("top1_ci", [0.1, float("inf")],
     "systems.smartvector.test.top1_ci[1]: expected a finite number, got Infinity (not measured is null)"),
])
def test_an_impossible_metric_is_refused_naming_file_and_key(tmp_path, capsys, key, value, says):
    run, before = _run_copy(tmp_path, lambda d: d["systems"]["smartvector"]["test"].update({key: value}))
    assert cli.run([str(run)]) == 2
    assert capsys.readouterr().err == f"smartvector-report: error: {run / 'metrics.json'}: {says}\n"
    assert sorted(p.name for p in run.iterdir()) == before  # no report.html, no temp file


def test_an_impossible_figure_in_a_category_or_a_calibration_is_refused_too(tmp_path):
    run, _ = _run_copy(tmp_path, lambda d: d["calibration"]["bm25"]["platt"].update(ece_calibrated=1.5))
    with pytest.raises(ResultError, match=r"calibration\.bm25\.platt\.ece_calibrated: 1\.5 is outside \[0, 1\]"):
        MainMetrics.load(run)
    run, _ = _run_copy(tmp_path / "b", lambda d: d["systems"]["bm25"]["test"]["by_category"]["contested"].update(
        top1=-0.1))
    with pytest.raises(ResultError, match=r"systems\.bm25\.test\.by_category\.contested\.top1: -0\.1 is outside"):
        MainMetrics.load(run)


def test_null_not_measured_still_renders_as_not_measured(tmp_path):
    def unmeasured(d):
        t = d["systems"]["bm25"]["test"]
        t.update(stale_rate=None, stale_rate_ci=[None, None], not_measured={"stale_rate": "the dataset has no labels"})
    run, _ = _run_copy(tmp_path, unmeasured)
    assert cli.run([str(run), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    row = parse(html).one("table", cls="main-table").one("tr", data_system="bm25")
    cell = row.one("td", data_key="stale_rate")
    assert cell.text.startswith("not measured") and cell.attrs["data-value"] == "null", (cell.text, cell.attrs)
    assert "nan%" not in html


def test_an_impossible_tidy_csv_cell_is_refused_naming_file_line_and_column(tmp_path, capsys):
    sweep = tmp_path / "seeds"
    sweep.mkdir()
    for name in ("tidy.csv", "summary.json", "tidy.provenance.json"):
        shutil.copy(RESULTS / "seeds" / name, sweep / name)
    lines = (sweep / "tidy.csv").read_text().splitlines()
    col = lines[0].split(",").index("stale_rate")
    cells = lines[3].split(",")
    cells[col] = "3.2"
    lines[3] = ",".join(cells)
    (sweep / "tidy.csv").write_text("\n".join(lines) + "\n")
    assert cli.run([str(sweep)]) == 2
    err = capsys.readouterr().err
    assert err == (f"smartvector-report: error: {sweep / 'tidy.csv'}:4: stale_rate: 3.2 is not a number in [0, 1] "
                   "(an empty cell: not measured)\n")
    assert sorted(p.name for p in sweep.iterdir()) == ["summary.json", "tidy.csv", "tidy.provenance.json"]


# -- symlinks in a dataset folder --------------------------------------------------------------------------

def _link(folder, how: str) -> None:
    target = folder / "corpus.jsonl"
    target.unlink()
    if how == "loop":
        target.symlink_to("corpus.jsonl")  # to itself
    elif how == "dangling":
        target.symlink_to(folder / "nowhere" / "corpus.jsonl")
    else:
        (folder.parent / "a_folder").mkdir()
        target.symlink_to(folder.parent / "a_folder")


@pytest.mark.parametrize("how, says", [
    ("loop", "corpus.jsonl: is a symbolic link loop (it, or a folder on its path, leads back to itself); point it "
             "at a file or remove it"),
    ("dangling", "corpus.jsonl: is a broken symbolic link"),
    ("folder", "corpus.jsonl: is a folder, not a file"),
])
def test_a_bad_symlink_is_one_line_in_the_validator_and_the_loader(tmp_path, capsys, how, says):
    folder = write_tiny(tmp_path / "ds")
    _link(folder, how)
    before = sorted(p.name for p in folder.rglob("*"))
    assert validate_main([str(folder)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [out.strip()] and out.startswith(says), out  # one line: no "unknown id" cascade
    assert err == f"{folder}: 1 problem\n"
    with pytest.raises(BenchError) as info:
        load_dataset(folder)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{folder / 'corpus.jsonl'}: {says.split(': ', 1)[1]}"), msg
    assert sorted(p.name for p in folder.rglob("*")) == before


def test_a_symlink_loop_through_the_cli_and_as_the_folder_itself(tmp_path):
    folder = write_tiny(tmp_path / "ds")
    _link(folder, "loop")
    proc = run_cli("smartvector-validate", str(folder), timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.startswith("corpus.jsonl: is a symbolic link loop") and proc.stdout.count("\n") == 1
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert validate_main([str(tmp_path / "loop")]) == 1
    with pytest.raises(BenchError, match=r"^dataset\.path=.*loop: is a symbolic link loop"):
        load_dataset(tmp_path / "loop")
