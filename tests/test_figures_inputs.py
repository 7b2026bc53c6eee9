"""paper_figures/: a missing input skips the figure with a message; a malformed input (a missing key or column,
a value of the wrong type, invalid JSON, a non-numeric cell, a duplicate row) raises a one-line error naming the
file and the column or key; unusable rows are ignored (the results tree: tests/figure_fixtures.py)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from smartvector_bench.core.results import ResultError

from .figure_fixtures import (AUDIT_FIELDS, FIGURES, INPUTS, MALFORMED, MODULES, REPO, _drop_column, audit_rows,
                              committed, common, make_all, tidy_rows, write_csv, write_json)
from .figure_fixtures import results  # noqa: F401 - the module's results tree (a fixture)


def _drop_key(obj: dict, dotted: str) -> None:
    *head, last = dotted.split(".")
    for k in head:
        obj = obj[k]
    del obj[last]



# -- tests -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FIGURES)
def test_missing_input_skips_with_a_message(name, tmp_path, capsys):
    out = tmp_path / "figures"
    o = MODULES[name].make(tmp_path / "results", out)
    assert o.skipped is not None and o.files == ()
    line = capsys.readouterr().out
    assert name in line and "missing input" in line and INPUTS[name] in line
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("name", FIGURES)
def test_malformed_input_names_file_and_column(name, results, tmp_path):
    broken = tmp_path / "results"
    shutil.copytree(results, broken)
    kind, what, must_name = MALFORMED[name]
    path = broken / INPUTS[name]
    if kind == "key":
        obj = json.loads(path.read_text())
        _drop_key(obj, what)
        write_json(path, obj)
    else:
        _drop_column(path, what)
    with pytest.raises(ResultError) as e:  # the result class's validation or the figure's own check
        MODULES[name].make(broken, tmp_path / "figures")
    msg = str(e.value)
    assert str(path) in msg and must_name in msg and "\n" not in msg
    assert not (tmp_path / "figures" / f"{name}.png").exists()


# figure -> (dotted key of its JSON input, a value of the wrong type, the key the message must name)
WRONG_TYPE = {
    "fig_main": ("systems.smartvector.test.top1", "high", "systems.smartvector.test.top1"),
    "fig_main_large": ("systems.oracle.test.n_queries", 5.5, "systems.oracle.test.n_queries"),
    "fig_reliability": ("systems.bm25.test.ece_bins.edges", [0.5, 0.1], "systems.bm25.test.ece_bins.edges"),
    "fig_leakage": ("systems.bm25.test.by_category.historical.leakage_at_10", "0",
                    "systems.bm25.test.by_category.historical.leakage_at_10"),
    "fig_reembed_cost": ("strategies.full.equivalent_to_rebuild.equivalent", "yes",
                         "strategies.full.equivalent_to_rebuild.equivalent"),
    "fig_lvl_eval": ("reembedding.by_step", [], "reembedding.by_step"),
}


def _set_key(obj: dict, dotted: str, value) -> None:
    *head, last = dotted.split(".")
    for k in head:
        obj = obj[k]
    obj[last] = value


@pytest.mark.parametrize("name", sorted(WRONG_TYPE))
def test_wrong_type_or_missing_top_level_key_names_file_and_key(name, results, tmp_path, capsys):
    """A JSON input of the wrong shape fails its figure alone, in one line naming the file and the key;
    make_all goes on with the others and exits 1."""
    key, value, must_name = WRONG_TYPE[name]
    broken = tmp_path / "results"
    path = broken / INPUTS[name]
    path.parent.mkdir(parents=True)
    obj = committed(INPUTS[name])
    _set_key(obj, key, value)
    write_json(path, obj)
    with pytest.raises(ResultError, match=rf"^{path}: {re.escape(must_name)}: "):
        MODULES[name].make(broken, tmp_path / "figures")
    del obj["provenance"]  # every result file has it
    write_json(path, obj)
    with pytest.raises(ResultError, match=rf"^{path}: provenance: missing"):
        MODULES[name].make(broken, tmp_path / "figures")
    assert make_all.main(["--results", str(broken), "--out", str(tmp_path / "figures")]) == 1
    err = capsys.readouterr().err
    assert f"{name}: ERROR, malformed input: {path}: provenance: missing" in err and "Traceback" not in err
    # a figure script alone: exit 2, one line on stderr
    cmd = [sys.executable, str(REPO / "paper_figures" / f"{name}.py"), "--results", str(broken), "--out",
           str(tmp_path / "figures")]
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg"),
                       cwd=tmp_path, timeout=300)
    assert p.returncode == 2 and p.stderr.startswith(f"error: {path}: provenance: missing")
    assert p.stderr.count("\n") == 1, p.stderr


def test_non_numeric_value_names_file_line_and_column(results, tmp_path):
    broken = tmp_path / "results"
    shutil.copytree(results, broken)
    path = broken / "seeds" / "tidy.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    i = next(k for k, r in enumerate(rows) if r["split"] == "test")
    rows[i]["top1"] = "n/a"
    write_csv(path, list(rows[0]), rows)
    with pytest.raises(common.FigureInputError, match=rf"tidy\.csv:{i + 2}: column top1: expected a number"):
        MODULES["fig_seeds"].make(broken, tmp_path / "figures")


def test_csv_line_numbers_count_blank_lines_and_extra_fields_are_malformed(results, tmp_path):
    path = tmp_path / "results" / "seeds" / "tidy.csv"
    shutil.copytree(results / "seeds", path.parent)
    lines = path.read_text(encoding="utf-8").splitlines()
    i = next(k for k, line in enumerate(lines) if ",test," in line)
    cells = lines[i].split(",")
    cells[cells.index("test") + 2] = "n/a"  # top1, after split and n_queries
    path.write_text("\n".join(lines[:i] + ["", ",".join(cells)] + lines[i + 1:]) + "\n", encoding="utf-8")
    with pytest.raises(common.FigureInputError, match=rf"tidy\.csv:{i + 2}: column top1: expected a number"):
        MODULES["fig_seeds"].make(tmp_path / "results", tmp_path / "figures")
    path.write_text("\n".join(lines[:i] + [lines[i] + ",extra"] + lines[i + 1:]) + "\n", encoding="utf-8")
    with pytest.raises(common.FigureInputError, match=rf"{path}: .*line {i + 1}"):
        MODULES["fig_seeds"].make(tmp_path / "results", tmp_path / "figures")


def test_invalid_json_is_malformed(tmp_path):
    path = tmp_path / "results" / "main" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"systems": ', encoding="utf-8")
    with pytest.raises(ResultError, match="metrics.json: not readable as JSON"):
        MODULES["fig_main"].make(tmp_path / "results", tmp_path / "figures")


def test_unusable_rows_are_ignored(results, tmp_path, capsys):
    """Only complete/skipped rows count: a tidy file whose rows all failed skips the figure."""
    path = tmp_path / "results" / "seeds" / "tidy.csv"
    cols, rows = tidy_rows("seeds", {})
    write_csv(path, cols, [dict(r, status="failed") for r in rows])
    o = MODULES["fig_seeds"].make(tmp_path / "results", tmp_path / "figures")
    assert o.skipped is not None and "no usable rows" in capsys.readouterr().out


def test_shortcut_audit_malformed_and_empty_inputs(results, tmp_path, capsys):
    path = tmp_path / "results" / "shortcut_audit" / "shortcut_audit.csv"
    rows = audit_rows()
    bad = [dict(r) for r in rows]
    bad[5]["test_top1"] = "n/a"
    write_csv(path, AUDIT_FIELDS, bad)
    with pytest.raises(common.FigureInputError, match=r"shortcut_audit\.csv:7: column test_top1: expected a number"):
        MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    bad = [dict(r) for r in rows]
    bad[12]["kind"] = "trust" if bad[12]["kind"] == "surface" else "surface"
    write_csv(path, AUDIT_FIELDS, bad)
    with pytest.raises(common.FigureInputError, match=r"shortcut_audit\.csv:14: column kind"):
        MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    write_csv(path, AUDIT_FIELDS, rows + [rows[3]])
    with pytest.raises(common.FigureInputError, match="duplicate row"):
        MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    write_csv(path, AUDIT_FIELDS, [r for r in rows if r["rule"] == "valid_cosine"])
    o = MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    assert o.skipped is not None and "no cue rules" in capsys.readouterr().out
    # Without valid_cosine's rows the rules are still drawn, with no reference line.
    write_csv(path, AUDIT_FIELDS, [r for r in rows if r["rule"] != "valid_cosine"])
    o = MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    assert o.skipped is None
