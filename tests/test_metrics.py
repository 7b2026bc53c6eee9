"""Each metric formula against values computed by hand."""

import numpy as np
import pytest

from smartvector_bench.core.evaluation.metrics import bin_index, bootstrap_ci, bootstrap_mean_ci, ece, mcnemar_exact

# ---------------------------------------------------------------- calibration

def test_bin_index_edges_are_exact():
    edges = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    assert bin_index(edges).tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9]
    # just below an edge stays in the lower bin
    assert bin_index(np.array([0.3 - 1e-12, 0.7 - 1e-12, np.nextafter(1.0, 0)])).tolist() == [2, 6, 9]
    # np.linspace's edge would be 0.30000000000000004 (the trap this guards against)
    assert np.linspace(0, 1, 11)[3] > 0.3


def test_bin_index_other_bin_counts():
    assert bin_index(np.array([0.0, 0.2, 0.6, 0.99, 1.0]), n_bins=5).tolist() == [0, 1, 3, 4, 4]
    assert bin_index(np.array([0.0, 0.5, 1.0]), n_bins=1).tolist() == [0, 0, 0]


@pytest.mark.parametrize("bad, msg", [(np.nan, "NaN"), (1.2, r"\[0, 1\]"), (-0.1, r"\[0, 1\]")])
def test_bin_index_rejects(bad, msg):
    with pytest.raises(ValueError, match=msg):
        bin_index(np.array([0.5, bad]))


def test_bin_index_rejects_bad_n_bins():
    with pytest.raises(ValueError, match="n_bins"):
        bin_index(np.array([0.5]), n_bins=0)


def test_ece_hand_example():
    # conf   correct  bin
    # 0.95   1        9
    # 0.95   0        9   -> bin 9: n=2, acc 0.5, conf 0.95, |0.5-0.95| = 0.45, weight 2/5 -> 0.18
    # 0.65   1        6
    # 0.62   1        6   -> bin 6: n=2, acc 1.0, conf 0.635, |1-0.635| = 0.365, weight 2/5 -> 0.146
    # 0.25   0        2   -> bin 2: n=1, acc 0.0, conf 0.25, 0.25, weight 1/5 -> 0.05
    # ECE = 0.18 + 0.146 + 0.05 = 0.376
    conf = np.array([0.95, 0.95, 0.65, 0.62, 0.25])
    correct = np.array([True, False, True, True, False])
    value, bins = ece(conf, correct)
    assert value == pytest.approx(0.376, abs=1e-12)
    assert bins["n_bins"] == 10
    assert bins["edges"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert bins["counts"] == [0, 0, 1, 0, 0, 0, 2, 0, 0, 2]
    assert bins["accuracy"] == [None, None, 0.0, None, None, None, 1.0, None, None, 0.5]
    assert bins["mean_confidence"][:6] == [None, None, 0.25, None, None, None]
    assert bins["mean_confidence"][6] == pytest.approx(0.635)
    assert bins["mean_confidence"][9] == pytest.approx(0.95)


def test_ece_confidence_zero_and_one():
    assert ece(np.array([0.0, 0.0]), np.array([False, False]))[0] == 0.0
    assert ece(np.array([1.0, 1.0]), np.array([True, True]))[0] == 0.0
    assert ece(np.array([1.0, 1.0]), np.array([False, False]))[0] == 1.0
    assert ece(np.array([0.0]), np.array([True]))[0] == 1.0
    _, bins = ece(np.array([0.0, 1.0]), np.array([False, True]))
    assert bins["counts"] == [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]


def test_ece_every_bin_edge():
    # 0.1 ... 0.9 each land alone in bins 1 ... 9; all correct -> ECE = mean(1 - c) = mean(0.9 ... 0.1) = 0.5.
    conf = np.arange(1, 10) / 10
    value, bins = ece(conf, np.ones(9, dtype=bool))
    assert bins["counts"] == [0, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    assert value == pytest.approx(0.5, abs=1e-12)
    # only the 0.9 query correct: (0.1 + 0.2 + ... + 0.8 + |1 - 0.9|) / 9 = (3.6 + 0.1) / 9
    correct = np.zeros(9, dtype=bool)
    correct[-1] = True
    assert ece(conf, correct)[0] == pytest.approx(3.7 / 9, abs=1e-12)


def test_ece_all_in_one_bin():
    # all in bin 4: mean conf (0.41+0.45+0.49+0.43)/4 = 0.445, acc 1/4 -> |0.25 - 0.445| = 0.195
    value, bins = ece(np.array([0.41, 0.45, 0.49, 0.43]), np.array([True, False, False, False]))
    assert value == pytest.approx(0.195, abs=1e-12)
    assert bins["counts"] == [0, 0, 0, 0, 4, 0, 0, 0, 0, 0]


def test_ece_perfectly_calibrated_is_zero():
    # dyadic values: sums are exact, so exactly 0
    conf = np.array([0.75] * 4 + [0.25] * 4)
    correct = np.array([1, 1, 1, 0, 1, 0, 0, 0], dtype=bool)
    assert ece(conf, correct)[0] == 0.0
    # non-dyadic: 0 up to rounding
    conf = np.full(10, 0.8)
    correct = np.array([1] * 8 + [0] * 2, dtype=bool)
    assert ece(conf, correct)[0] == pytest.approx(0.0, abs=1e-12)


def test_ece_errors():
    with pytest.raises(ValueError, match="zero queries"):
        ece(np.array([]), np.array([], dtype=bool))
    with pytest.raises(ValueError, match="same length"):
        ece(np.array([0.5, 0.5]), np.array([True]))
    with pytest.raises(ValueError, match="NaN"):
        ece(np.array([np.nan]), np.array([False]))


# ---------------------------------------------------------------- significance

def test_mcnemar_no_discordant_pairs():
    a = np.array([True, False, True])
    assert mcnemar_exact(a, a) == {"p_value": 1.0, "b": 0, "c": 0, "n": 3}


def test_mcnemar_hand_checked():
    # b = 0, c = 6: p = 2 * P(X <= 0 | Bin(6, 1/2)) = 2 * 0.5**6 = 0.03125
    res = mcnemar_exact(np.zeros(6, dtype=bool), np.ones(6, dtype=bool))
    assert (res["b"], res["c"], res["n"]) == (0, 6, 6)
    assert res["p_value"] == pytest.approx(0.03125, rel=1e-12)
    # b = 3, c = 1 plus two concordant pairs: p = 2 * (1 + 4) / 16 = 0.625
    a = np.array([1, 1, 1, 0, 1, 0], dtype=bool)
    b = np.array([0, 0, 0, 1, 1, 0], dtype=bool)
    res = mcnemar_exact(a, b)
    assert (res["b"], res["c"], res["n"]) == (3, 1, 6)
    assert res["p_value"] == pytest.approx(0.625, rel=1e-12)
    # b = c = 2: 2 * P(X <= 2 | Bin(4, 1/2)) = 2 * 11/16 > 1 -> capped at 1
    res = mcnemar_exact(np.array([1, 1, 0, 0], bool), np.array([0, 0, 1, 1], bool))
    assert res["p_value"] == 1.0


def test_mcnemar_symmetric():
    rng = np.random.default_rng(3)
    a, b = rng.random(40) < 0.6, rng.random(40) < 0.4
    ab, ba = mcnemar_exact(a, b), mcnemar_exact(b, a)
    assert ab["p_value"] == ba["p_value"]
    assert (ab["b"], ab["c"]) == (ba["c"], ba["b"])


def test_mcnemar_shape_mismatch():
    with pytest.raises(ValueError):
        mcnemar_exact(np.array([True]), np.array([True, False]))


# ---------------------------------------------------------------- bootstrap

def test_bootstrap_deterministic_per_seed():
    x = np.random.default_rng(1).random(50)
    assert bootstrap_ci(np.median, (x,), n_boot=200, seed=7) == bootstrap_ci(np.median, (x,), n_boot=200, seed=7)
    assert bootstrap_ci(np.median, (x,), n_boot=200, seed=7) != bootstrap_ci(np.median, (x,), n_boot=200, seed=8)
    assert bootstrap_mean_ci(x, 200, 7) == bootstrap_mean_ci(x, 200, 7)
    assert bootstrap_mean_ci(x, 200, 7) != bootstrap_mean_ci(x, 200, 8)


def test_bootstrap_interval_contains_point_estimate():
    x = np.arange(100, dtype=np.float64)
    low, high = bootstrap_ci(np.mean, (x,), n_boot=500, seed=0)
    assert low < 49.5 < high
    # and is of a plausible width: SE of the mean is ~2.9, so the 95% interval is ~ +-5.7
    assert 3 < 49.5 - low < 9 and 3 < high - 49.5 < 9


def test_bootstrap_mean_ci_equals_generic():
    x = np.random.default_rng(2).normal(size=37)
    assert bootstrap_mean_ci(x, n_boot=300, seed=5) == bootstrap_ci(np.mean, (x,), n_boot=300, seed=5)
    flags = np.random.default_rng(4).random(23) < 0.3
    assert bootstrap_mean_ci(flags, 100, 9, 0.9) == bootstrap_ci(np.mean, (flags,), 100, 9, 0.9)


def test_bootstrap_level_and_degenerate_cases():
    x = np.random.default_rng(6).random(60)
    lo95, hi95 = bootstrap_mean_ci(x, 400, 0, 0.95)
    lo50, hi50 = bootstrap_mean_ci(x, 400, 0, 0.50)
    assert lo95 <= lo50 <= hi50 <= hi95 and hi50 - lo50 < hi95 - lo95
    assert bootstrap_mean_ci(np.full(10, 0.25)) == (0.25, 0.25)
    assert all(np.isnan(bootstrap_ci(np.mean, (np.array([]),))))
    assert all(np.isnan(bootstrap_mean_ci(np.array([]))))


def test_bootstrap_resamples_arrays_jointly():
    # a == b row by row: a joint resample gives mean(a - b) == 0 on every resample.
    a = np.random.default_rng(0).random(30)
    assert bootstrap_ci(lambda x, y: np.mean(x - y), (a, a.copy()), n_boot=100) == (0.0, 0.0)


def test_bootstrap_rejects_misaligned_arrays():
    with pytest.raises(ValueError, match="first dimension"):
        bootstrap_ci(lambda x, y: 0.0, (np.zeros(3), np.zeros(4)))
