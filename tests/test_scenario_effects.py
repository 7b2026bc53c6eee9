"""core/evaluation/metrics/scenarios.py: a feature's effect on top-1 by family, and on the paired gap to a reference."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.core.evaluation.metrics.scenarios import FEATURES, difference_by_family, scenario_effects
from smartvector_bench.core.report import scenario_table


def _families(n_fam: int = 20, per: int = 5):
    fams = np.repeat([f"f{i:02d}" for i in range(n_fam)], per).astype(object)
    scen = {f"f{i:02d}": {"versions": 2 + i % 3, "runbook": i % 4 != 0, "rumors": 2 * (i % 2), "recent": i % 3 == 0,
                          "announced": i % 5 == 0, "lagging": i % 4 == 1, "confirmations": 2 * (i % 7 < 3),
                          "notes": int(i % 6 < 4)} for i in range(n_fam)}
    return fams, scen


def test_difference_by_family_is_the_pooled_difference():
    fams = np.array(["a", "a", "b", "c", "c", "c"], dtype=object)
    vals = np.array([1, 0, 1, 0, 0, 1], dtype=float)
    r = difference_by_family(vals, fams, {"a": True, "b": False, "c": False})
    assert r["with"] == pytest.approx(0.5) and r["without"] == pytest.approx(0.5) and r["effect"] == pytest.approx(0)
    assert (r["families_with"], r["families_without"], r["queries_with"], r["queries_without"]) == (1, 2, 2, 4)
    assert r["p"] is None  # one family on a side: no test


def test_a_planted_effect_is_found_and_no_effect_is_not():
    fams, scen = _families()
    rumored = np.array([scen[f]["rumors"] > 0 for f in fams])
    reference = np.ones(len(fams))
    hurt = np.where(rumored, 0.0, 1.0)  # fails exactly where rumors are
    rng = np.random.default_rng(0)
    noise = (rng.random(len(fams)) < 0.5).astype(float)
    out = scenario_effects({"ref": reference, "hurt": hurt, "noise": noise}, fams, scen, "ref", n_resamples=999)
    r = out["rumors"]["systems"]["hurt"]
    assert r["effect"] == pytest.approx(-1.0) and r["p"] < 0.01
    assert r["effect_vs_baseline"] == pytest.approx(-1.0) and r["p_vs_baseline"] < 0.01
    assert out["rumors"]["systems"]["noise"]["p"] > 0.05
    assert "effect_vs_baseline" not in out["rumors"]["systems"]["ref"]
    assert set(out) == set(FEATURES)


def test_lagging_compares_runbook_families_only():
    fams, scen = _families()
    out = scenario_effects({"s": np.ones(len(fams))}, fams, scen, None)
    r = out["lagging"]["systems"]["s"]
    eligible = [f for f, s in scen.items() if s["runbook"] and s["versions"] >= 2]
    assert r["families_with"] + r["families_without"] == len(eligible) < len(scen)


def test_the_report_renders_one_cell_per_system_and_feature():
    fams, scen = _families()
    out = scenario_effects({"valid_cosine": np.ones(len(fams)), "smartvector": np.zeros(len(fams))}, fams, scen,
                           "valid_cosine", n_resamples=99)
    table = scenario_table({"scenarios": {"reference": "valid_cosine", "features": out}})
    lines = table.splitlines()
    assert len(lines) == 4 and lines[0].count("|") == len(FEATURES) + 2
    assert "vs valid_cosine" in lines[-1] and lines[-1].startswith("| smartvector")
