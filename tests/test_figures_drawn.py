"""paper_figures/, the figures as drawn: the systems appear in the main table's order, captions say families
(the resampling unit), baselines and the oracle are drawn, and the main_large, ablation and shortcut audit
figures show what they should (the feedback loop's series: tests/test_figures_output.py; the results tree:
tests/figure_fixtures.py)."""

from __future__ import annotations

import shutil

import pytest

from .figure_fixtures import (AUDIT_RULES, INPUTS, MODULES, SWEEPS, SYSTEMS, _drawn, audit_rows, committed, common,
                              tidy_rows, write_csv)
from .figure_fixtures import results  # noqa: F401 - the module's results tree (a fixture)


# -- v2: systems, captions, the new figures ------------------------------------------------------------------

def _texts(fig) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def _ticks_top_down(ax) -> list[str]:
    pairs = sorted(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels())), reverse=True)
    return [label for _, label in pairs]


def test_system_order_is_the_main_table_order():
    shuffled = sorted(SYSTEMS, key=lambda s: s[::-1])
    assert common.system_order(shuffled) == list(SYSTEMS)
    assert common.system_order(["zzz", "oracle", "aaa", "plain_cosine"]) == ["plain_cosine", "oracle", "aaa", "zzz"]
    assert "metadata_filter" in common.SYSTEM_ORDER and "valid_cosine" in common.BASELINES
    assert common.CEILINGS == ("oracle",)
    col = common.colours(SYSTEMS)
    assert set(col) == set(SYSTEMS) and all(s in common.PALETTE for s in SYSTEMS)
    assert len(set(col.values())) == len(SYSTEMS)  # every system of the main table has its own colour
    assert common.PAPER_COLOUR not in col.values()  # red stays for the paper's claims


@pytest.mark.parametrize("name", ["fig_main", "fig_main_large"])
def test_main_figures_show_every_system_in_table_order(name, results, tmp_path, monkeypatch):
    fig = _drawn(name, results, tmp_path, monkeypatch)
    systems = committed(INPUTS[name])["systems"]
    order = [s for s in common.SYSTEM_ORDER if s in systems]
    assert len(order) == len(systems)  # every system of the committed run has its place in the table's order
    assert _ticks_top_down(fig.axes[0]) == order
    text = " ".join(_texts(fig))
    assert "cluster bootstrap" in text and "over families" in text and "over queries" not in text
    n = "574 queries in 50 families" if name == "fig_main_large" else "70 queries in 6 families"
    assert n in text
    assert ("versioned_policies_large" in text) == (name == "fig_main_large")
    assert "reads the labels" in text  # the oracle is told apart as a ceiling


@pytest.mark.parametrize("name", ["fig_main", "fig_main_large", "fig_reliability", "fig_leakage", "fig_feedback_loop",
                                  "fig_reembed_cost"])
def test_interval_captions_name_their_resampling_unit(name, results, tmp_path, monkeypatch):
    text = " ".join(_texts(_drawn(name, results, tmp_path, monkeypatch))).replace("\n", " ")
    assert "over queries" not in text
    assert ("over edits" if name == "fig_reembed_cost" else "over families") in text


@pytest.mark.parametrize("name", ["fig_reliability", "fig_leakage", "fig_seeds", "fig_contradiction_sweep"])
def test_baselines_and_oracle_are_drawn(name, results, tmp_path, monkeypatch):
    text = " ".join(_texts(_drawn(name, results, tmp_path, monkeypatch)))
    assert "valid_cosine" in text and "oracle" in text
    if name != "fig_contradiction_sweep":
        assert "bm25_valid" in text and "metadata_filter" in text


def test_fig_main_large_reads_only_the_large_folder(results, tmp_path, capsys):
    part = tmp_path / "results"
    shutil.copytree(results / "main", part / "main")
    o = MODULES["fig_main_large"].make(part, tmp_path / "figures")
    assert o.skipped is not None and "main_large/metrics.json" in capsys.readouterr().out
    shutil.rmtree(part / "main")
    shutil.copytree(results / "main_large", part / "main_large")
    o = MODULES["fig_main_large"].make(part, tmp_path / "figures")
    assert o.skipped is None and (tmp_path / "figures" / "fig_main_large.png").is_file()
    assert not (tmp_path / "figures" / "fig_main.png").exists()


def test_ablation_draws_weight_free_baselines_as_reference_lines(results, tmp_path, monkeypatch):
    fig = _drawn("fig_ablation", results, tmp_path, monkeypatch)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert titles == ["smartvector"]  # plain_cosine and valid_cosine ignore the weights: lines, not panels
    legend = " ".join(_texts(fig))
    assert "valid_cosine" in legend and "plain_cosine" in legend
    # With only the weight-free baselines, they become panels (nothing else to draw them in).
    path = tmp_path / "only" / "ablation" / "tidy.csv"
    write_csv(path, *tidy_rows("ablation", SWEEPS["ablation"], systems=("plain_cosine", "valid_cosine")))
    monkeypatch.undo()
    fig = _drawn("fig_ablation", tmp_path / "only", tmp_path, monkeypatch)
    assert [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()] == ["plain_cosine",
                                                                                         "valid_cosine"]


def test_shortcut_audit_groups_cues_and_draws_valid_cosine(results, tmp_path, monkeypatch):
    fig = _drawn("fig_shortcut_audit", results, tmp_path, monkeypatch)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split("\n")[0] for ax in panels] == ["versioned_policies", "versioned_policies_large"]
    assert "6 families" in panels[0].get_title() and "574-575 test queries in 50 families" in panels[1].get_title()
    rules = [r for r, _ in AUDIT_RULES if r != "valid_cosine"]
    assert _ticks_top_down(panels[0]) == rules  # surface cues first (audit order), then trust signals
    text = " ".join(_texts(fig))
    assert "surface cue" in text and "trust signal" in text and "valid_cosine" in text and "min-max" in text
    # bar colours: one for the surface cues, another for the trust signals
    import matplotlib.colors as mcolors

    bars = sorted((p.get_y(), mcolors.to_hex(p.get_facecolor())) for p in panels[0].patches
                  if p.get_width() > 0 and p.get_height() == pytest.approx(0.65))  # the bars, not the band
    by_rule = dict(zip(reversed(rules), (c for _, c in bars)))
    assert len({by_rule[r] for r in rules[:6]}) == 1 and len({by_rule[r] for r in rules[6:]}) == 1
    assert by_rule["kind"] != by_rule["source"]
    # the reference line is valid_cosine's mean test top-1 over seeds (0.32 = mean of 0.31, 0.32, 0.33)
    vlines = [line for line in panels[0].get_lines() if line.get_linestyle() == ":"]
    assert len(vlines) == 1 and float(vlines[0].get_xdata()[0]) == pytest.approx(0.32)


def test_shortcut_audit_whiskers_are_min_max_over_seeds(results, tmp_path, monkeypatch):
    fig = _drawn("fig_shortcut_audit", results, tmp_path, monkeypatch)
    ax = [a for a in fig.axes if a.get_visible()][0]
    kind = [r for r in audit_rows() if r["profile"] == "versioned_policies" and r["rule"] == "kind"]
    lo, hi = min(r["test_top1"] for r in kind), max(r["test_top1"] for r in kind)
    import numpy as np

    segments = [seg for coll in ax.collections if hasattr(coll, "get_segments") for seg in coll.get_segments()]
    spans = {(round(float(np.min(seg[:, 0])), 6), round(float(np.max(seg[:, 0])), 6)) for seg in segments
             if seg[0, 1] == seg[-1, 1]}  # horizontal whiskers
    assert (round(lo, 6), round(hi, 6)) in spans

