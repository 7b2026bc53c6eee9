"""paper_figures/, the figures as made (each once, by the ``made`` fixture): every figure script writes its PNG
and PDF, with bytes identical on reruns and in a fresh process; the feedback loop figure draws its test rows
solid and its dev rows dashed; the paper's claims come from paper_claims; make_all registers every figure and
sums up with its exit codes (the results tree: tests/figure_fixtures.py)."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys

import pytest

from .figure_fixtures import (FEEDBACK_FIELDS, FIGURES, INPUTS, MALFORMED, MODULES, REPO, _bytes, _drawn, _drop_column,
                              feedback_rows, make_all, write_csv)
from .figure_fixtures import made, results  # noqa: F401 - the module's results tree and figures (fixtures)


# -- tests -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FIGURES)
def test_figure_written_as_png_and_pdf(made, name):
    out, outcomes = made
    o = outcomes[name]
    assert o.skipped is None, o.skipped
    assert sorted(p.name for p in o.files) == [f"{name}.pdf", f"{name}.png"]
    data = _bytes(out, name)
    assert data["png"].startswith(b"\x89PNG\r\n\x1a\n") and len(data["png"]) > 5000
    assert data["pdf"].startswith(b"%PDF-") and len(data["pdf"]) > 2000
    assert b"Software" not in data["png"] and b"CreationDate" not in data["pdf"]
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # no temp files left behind


@pytest.mark.parametrize("name", FIGURES)
def test_rerun_and_restore_are_byte_identical(made, results, name):
    out, _ = made
    before = _bytes(out, name)
    (out / f"{name}.png").unlink()  # a deleted figure comes back identical; the other is rewritten identical
    MODULES[name].make(results, out)
    assert _bytes(out, name) == before


@pytest.mark.parametrize("name", ["fig_main", "fig_main_large", "fig_shortcut_audit"])
def test_script_alone_in_a_fresh_process_gives_identical_bytes(made, results, tmp_path, name):
    """A figure script run on its own, in another process with another hash seed, writes the same bytes."""
    out, _ = made
    out2 = tmp_path / "figures"
    env = dict(os.environ, PYTHONHASHSEED="12345", MPLBACKEND="Agg")
    cmd = [sys.executable, str(REPO / "paper_figures" / f"{name}.py"), "--results", str(results), "--out", str(out2)]
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    assert f"{name}.png" in p.stdout and f"{name}.pdf" in p.stdout
    assert _bytes(out2, name) == _bytes(out, name)


def test_feedback_loop_draws_test_solid_and_dev_dashed(results, made, tmp_path, monkeypatch):
    fig = _drawn("fig_feedback_loop", results, tmp_path, monkeypatch)
    ax = fig.axes[0]
    styles = {}
    for line in ax.get_lines():
        if len(line.get_xdata()) == 6:  # a series (not the day-0 marker)
            styles.setdefault(line.get_linestyle(), []).append(line)
    assert len(styles["-"]) == 3 and len(styles["--"]) == 3
    solid_tops = sorted(float(max(line.get_ydata())) for line in styles["-"])
    dashed_tops = sorted(float(max(line.get_ydata())) for line in styles["--"])
    assert all(d > s for s, d in zip(solid_tops, dashed_tops))  # the fixture's dev rows are higher
    # Test rows alone: still made (no dashed lines); dev rows alone: skipped, the test split is the main series.
    monkeypatch.undo()  # save for real again
    out, _ = made
    for split, made_it in (("test", True), ("dev", False)):
        root = tmp_path / split
        write_csv(root / "feedback_loop" / "feedback_loop.csv", FEEDBACK_FIELDS,
                  [r for r in feedback_rows() if r["split"] == split])
        o = MODULES["fig_feedback_loop"].make(root, tmp_path / f"f_{split}")
        assert (o.skipped is None) is made_it
        if made_it:
            assert _bytes(tmp_path / f"f_{split}", "fig_feedback_loop") != _bytes(out, "fig_feedback_loop")


def test_paper_claims_come_from_paper_claims_module(made, results, tmp_path, monkeypatch):
    from smartvector_bench.core.evaluation import paper_claims

    out, _ = made
    changed = copy.deepcopy(paper_claims.PAPER_MAIN_TABLE)
    changed["smartvector"]["top1"] = 0.9
    monkeypatch.setattr(paper_claims, "PAPER_MAIN_TABLE", changed)
    MODULES["fig_main"].make(results, tmp_path)
    assert (tmp_path / "fig_main.png").read_bytes() != (out / "fig_main.png").read_bytes()


def test_make_all_summary_and_exit_codes(results, tmp_path, capsys):
    # Nothing present: every figure skipped, exit 0.
    assert make_all.main(["--results", str(tmp_path / "none"), "--out", str(tmp_path / "f0")]) == 0
    text = capsys.readouterr().out
    assert "made 0 figure(s)" in text and f"skipped {len(FIGURES)} figure(s)" in text
    # One present input malformed, one valid, the rest missing: the valid one is made, exit 1.
    part = tmp_path / "part"
    shutil.copytree(results / "seeds", part / "seeds")
    shutil.copytree(results / "feedback_loop", part / "feedback_loop")
    _drop_column(part / "feedback_loop" / "feedback_loop.csv", "days_from_now")
    assert make_all.main(["--results", str(part), "--out", str(tmp_path / "f1")]) == 1
    cap = capsys.readouterr()
    assert "made 1 figure(s)" in cap.out and "fig_seeds" in cap.out
    assert "fig_feedback_loop" in cap.err and "days_from_now" in cap.err
    assert sorted(p.name for p in (tmp_path / "f1").iterdir()) == ["fig_seeds.pdf", "fig_seeds.png"]


def test_make_all_registers_the_new_figures():
    assert {"fig_main_large", "fig_shortcut_audit"} <= set(FIGURES)
    assert FIGURES.index("fig_main") < FIGURES.index("fig_main_large")
    assert set(FIGURES) == set(INPUTS) == set(MALFORMED)
