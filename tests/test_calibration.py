"""Brier, AUROC, post-hoc calibration maps (Platt, isotonic) and the calibration report."""

import itertools
import json

import numpy as np
import pytest

from smartvector_bench.core.evaluation.metrics.calibration import (
    METHODS, Calibrator, apply_isotonic, apply_platt, auroc, brier, calibration_report, ece, fit_calibration,
    fit_isotonic, fit_platt,
)


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _sigmoid(s):
    return 1.0 / (1.0 + np.exp(-s))


def _pairwise_auroc(c, y):
    pos, neg = c[y], c[~y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def _synthetic(n, seed, power=1.0, sharpen=1.0):
    """Truth p ~ U(0.02, 0.98), correct ~ Bernoulli(p), reported confidence sigmoid(sharpen * logit(p))**power."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    y = rng.random(n) < p
    return _sigmoid(sharpen * _logit(p)) ** power, y


# ---------------------------------------------------------------- Brier


def test_brier_hand_computed():
    c = np.array([0.9, 0.2, 0.6, 0.0])
    y = np.array([True, False, False, True])
    # (0.1^2 + 0.2^2 + 0.6^2 + 1^2) / 4 = (0.01 + 0.04 + 0.36 + 1) / 4
    assert brier(c, y) == pytest.approx(1.41 / 4, abs=1e-15)
    assert brier(c, y.astype(int)) == brier(c, y)
    assert brier([1.0, 0.0], [True, False]) == 0.0
    acc = 0.3
    y10 = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0], dtype=bool)
    assert brier(np.full(10, acc), y10) == pytest.approx(acc * (1 - acc))


@pytest.mark.parametrize("c, y", [
    (np.array([0.5, np.nan]), np.array([True, False])),   # NaN = missing: caller maps it to 0.0
    (np.array([0.5, 1.2]), np.array([True, False])),      # outside [0, 1]
    (np.array([0.5, 0.4]), np.array([True])),             # shape mismatch
    (np.zeros((2, 2)), np.zeros((2, 2), dtype=bool)),     # not 1-D
    (np.array([0.5, 0.4]), np.array([1, 2])),             # correct not 0/1
    (np.array([]), np.array([], dtype=bool)),             # empty
])
def test_brier_rejects_bad_inputs(c, y):
    with pytest.raises(ValueError):
        brier(c, y)


# ---------------------------------------------------------------- AUROC


def test_auroc_hand_computed_with_ties():
    c = np.array([0.9, 0.5, 0.5, 0.1])
    y = np.array([True, True, False, False])
    # pairs (pos, neg): (0.9,0.5)=1, (0.9,0.1)=1, (0.5,0.5)=1/2, (0.5,0.1)=1 -> 3.5 / 4
    assert auroc(c, y) == 0.875


def test_auroc_special_cases():
    y = np.array([True, False, True, False, False])
    assert auroc(np.full(5, 0.7), y) == 0.5
    assert auroc(np.array([0.9, 0.1, 0.8, 0.2, 0.3]), y) == 1.0
    assert auroc(np.array([0.1, 0.9, 0.2, 0.8, 0.7]), y) == 0.0
    assert auroc(np.array([0.1, 0.9]), np.array([True, True])) is None
    assert auroc(np.array([0.1, 0.9]), np.array([False, False])) is None
    assert auroc(np.array([]), np.array([], dtype=bool)) is None
    with pytest.raises(ValueError):
        auroc(np.array([0.1, np.nan]), np.array([True, False]))


@pytest.mark.parametrize("seed", range(5))
def test_auroc_matches_brute_force_pairs(seed):
    rng = np.random.default_rng(seed)
    n = 60
    c = rng.integers(0, 8, n) / 7.0            # coarse grid: many ties
    y = rng.random(n) < 0.2 + 0.6 * c
    assert auroc(c, y) == pytest.approx(_pairwise_auroc(c, y), abs=1e-12)
    c2 = rng.random(n)
    assert auroc(c2, y) == pytest.approx(_pairwise_auroc(c2, y), abs=1e-12)
    # and exactly the Mann-Whitney form on scipy's mid-ranks (the published values were computed that way)
    from scipy.stats import rankdata

    for conf in (c, c2):
        n_pos = int(y.sum())
        u = float(rankdata(conf)[y].sum()) - n_pos * (n_pos + 1) / 2.0
        assert auroc(conf, y) == u / (n_pos * (n - n_pos))


# ---------------------------------------------------------------- maps


def test_platt_recovers_known_parameters():
    rng = np.random.default_rng(11)
    a, b = 0.6, -0.4
    c = rng.uniform(0.01, 0.99, 40000)
    y = rng.random(c.size) < _sigmoid(a * _logit(c) + b)
    a_hat, b_hat = fit_platt(c, y)
    assert a_hat == pytest.approx(a, abs=0.05)
    assert b_hat == pytest.approx(b, abs=0.05)
    np.testing.assert_allclose(apply_platt(c[:5], (a_hat, b_hat)),
                               _sigmoid(a_hat * _logit(c[:5]) + b_hat), rtol=1e-12)


def test_isotonic_is_monotone_and_lowers_dev_brier():
    c, y = _synthetic(2000, 3, power=3.0)
    x, v = fit_isotonic(c, y)
    assert np.all(np.diff(x) > 0) and np.all(np.diff(v) >= 0)
    grid = np.linspace(0, 1, 501)
    assert np.all(np.diff(apply_isotonic(grid, (x, v))) >= 0)
    assert brier(apply_isotonic(c, (x, v)), y) < brier(c, y)
    # constant beyond the ends, linear between breakpoints
    assert apply_isotonic(np.array([0.0, 1.0]), ([0.2, 0.6], [0.1, 0.5])).tolist() == [0.1, 0.5]
    assert apply_isotonic(np.array([0.4]), ([0.2, 0.6], [0.1, 0.5]))[0] == pytest.approx(0.3)


def test_isotonic_pools_tied_confidences():
    c = np.array([0.3, 0.3, 0.3, 0.8])
    y = np.array([True, False, False, True])
    x, v = fit_isotonic(c, y)
    assert x.tolist() == [0.3, 0.8]
    assert v.tolist() == pytest.approx([1 / 3, 1.0])


# conf = p**3: informative but far too low (a shift); conf = sigmoid(3 logit p): over-confident.
@pytest.mark.parametrize("method, power, sharpen", [
    ("platt", 3.0, 1.0), ("isotonic", 3.0, 1.0),
    ("platt", 1.0, 3.0), ("isotonic", 1.0, 3.0),
])
def test_calibration_lowers_test_ece_for_a_monotone_miscalibration(method, power, sharpen):
    c_dev, y_dev = _synthetic(3000, 1, power, sharpen)
    c_test, y_test = _synthetic(3000, 2, power, sharpen)
    cal = fit_calibration(method, c_dev, y_dev)
    raw = ece(c_test, y_test, 10)[0]
    after = ece(cal.apply(c_test), y_test, 10)[0]
    assert raw > 0.15
    assert after < 0.05 and after < raw / 3
    assert brier(cal.apply(c_test), y_test) < brier(c_test, y_test)


@pytest.mark.parametrize("method", METHODS)
def test_degenerate_fits_do_not_crash(method):
    empty = fit_calibration(method, np.array([]), np.array([], dtype=bool))
    probe = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    # empty dev -> identity (up to the EPS clipping of the logit)
    np.testing.assert_allclose(empty.apply(probe), probe, atol=2e-6)
    # a constant confidence -> the constant map at the dev rate
    y = np.array([True, False, False, False] * 5)
    const = fit_calibration(method, np.full(20, 0.7), y).apply(probe)
    assert np.all(np.isfinite(const)) and np.all((const >= 0) & (const <= 1))
    np.testing.assert_allclose(const, 0.25, atol=0.03)
    # a single class -> finite map in [0, 1]; Platt / isotonic are constant at the (smoothed) class rate
    for cls in (True, False):
        one = fit_calibration(method, np.linspace(0.1, 0.9, 20), np.full(20, cls)).apply(probe)
        assert np.all(np.isfinite(one)) and np.all((one >= 0) & (one <= 1))
        assert np.all(one > 0.9) if cls else np.all(one < 0.1)
    # perfect separation stays finite (Platt's smoothed targets)
    sep = fit_calibration(method, np.array([0.1, 0.2, 0.8, 0.9]), np.array([False, False, True, True]))
    assert np.all(np.isfinite(sep.apply(probe)))
    json.dumps(sep.params)
    # anti-correlated confidence: no crash
    anti = fit_calibration(method, np.array([0.9, 0.8, 0.2, 0.1]), np.array([False, False, True, True]))
    assert np.all(np.isfinite(anti.apply(probe)))


def test_fit_calibration_dispatch():
    c, y = _synthetic(200, 4)
    cal = fit_calibration("platt", c, y)
    assert isinstance(cal, Calibrator) and set(cal.params) == {"a", "b"}
    assert set(fit_calibration("isotonic", c, y).params) == {"x", "y"}
    with pytest.raises(Exception):
        cal.method = "isotonic"  # frozen
    with pytest.raises(ValueError, match="platt, isotonic"):
        fit_calibration("beta", c, y)
    with pytest.raises(ValueError):
        cal.apply(np.array([0.2, np.nan]))
    json.dumps({m: fit_calibration(m, c, y).params for m in METHODS})


# ---------------------------------------------------------------- report


def _split(seed, power, n=400, fam=40):
    c, y = _synthetic(n, seed, power)
    return c, y, np.arange(n) % fam


@pytest.mark.parametrize("method", METHODS)
def test_report_keys_and_intervals(method):
    cd, yd, _ = _split(5, 3.0)
    ct, yt, fam = _split(6, 3.0)
    rep = calibration_report(cd, yd, ct, yt, fam, method=method, n_boot=200, seed=0)
    metrics = ("ece", "brier", "auroc", "ece_calibrated", "brier_calibrated", "auroc_calibrated")
    assert set(rep) == {"method", "params", "n_dev", "n_test", "n_bins", "n_boot", "seed", "bins", "bins_calibrated", *metrics,
                        *(f"{m}_ci" for m in metrics)}
    assert rep["method"] == method and rep["n_test"] == 400
    assert sum(rep["bins"]["counts"]) == sum(rep["bins_calibrated"]["counts"]) == 400
    for m in metrics:
        lo, hi = rep[f"{m}_ci"]
        assert lo <= rep[m] <= hi, m
        assert rep[m] == round(rep[m], 6)
    assert rep["ece"] == round(ece(ct, yt, 10)[0], 6)
    assert rep["ece_calibrated"] < rep["ece"]
    if method != "isotonic":  # strictly monotone map: ranks, hence AUROC, unchanged
        assert rep["auroc_calibrated"] == rep["auroc"]
    json.dumps(rep)
    # same seed -> same report
    assert calibration_report(cd, yd, ct, yt, fam, method=method, n_boot=200, seed=0) == rep


def test_report_one_class_test_gives_none_auroc():
    cd, yd, _ = _split(7, 1.0, n=50)
    rep = calibration_report(cd, yd, np.linspace(0, 1, 10), np.ones(10, dtype=bool), np.arange(10) % 3,
                             n_boot=50)
    assert rep["auroc"] is None and rep["auroc_ci"] == [None, None]
    assert rep["brier"] is not None
    with pytest.raises(ValueError):
        calibration_report(cd, yd, np.array([]), np.array([], dtype=bool), np.array([]), n_boot=10)


def test_reviewer_observation_in_miniature():
    """ECE rewards scale, not information: constant-at-accuracy wins ECE, loses AUROC; calibration fixes scale."""
    cd, yd, _ = _split(8, 3.0, n=2000, fam=100)
    ct, yt, fam = _split(9, 3.0, n=2000, fam=100)
    acc_dev = float(yd.mean())
    constant = calibration_report(np.full(cd.size, acc_dev), yd, np.full(ct.size, acc_dev), yt, fam, n_boot=100)
    informative = calibration_report(cd, yd, ct, yt, fam, n_boot=100)
    assert constant["ece"] < 0.03 and constant["auroc"] == 0.5
    assert informative["ece"] > constant["ece"] + 0.1
    assert informative["auroc"] > 0.7
    assert informative["ece_calibrated"] < informative["ece"] / 3
    assert informative["brier_calibrated"] < constant["brier"]  # after calibration, information pays off
