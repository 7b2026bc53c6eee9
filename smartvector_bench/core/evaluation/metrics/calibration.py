"""Calibration of a system's top-1 confidence against top-1 correctness.

ECE (:func:`ece`, binned on :func:`bin_index`), the Brier score (:func:`brier`), discrimination
(:func:`auroc`), post-hoc calibration maps fitted on one split and applied to another (Platt,
isotonic; :func:`fit_calibration`) and :func:`calibration_report`, which combines them with cluster-bootstrap
intervals. ECE alone rewards the score *scale*: a constant confidence equal to the accuracy has ECE ~0 and
no discrimination (AUROC 0.5); report ECE with Brier and AUROC, raw and after a map fitted on dev.

Conventions of the functions added next to ``ece``: ``confidence`` is a 1-D float array in [0, 1] with no
NaN (callers map a missing confidence to 0.0 first, as the evaluator does; NaN raises ValueError) and
``correct`` a same-length array of bools (or 0/1 numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import isotonic_regression, minimize

from smartvector_bench.core.evaluation.metrics.clustered import cluster_bootstrap_ci


def _edges(n_bins: int) -> np.ndarray:
    if not isinstance(n_bins, (int, np.integer)) or isinstance(n_bins, bool) or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    # i / n is the correctly rounded double of i/n, so 0.3 == 3/10 exactly; np.linspace accumulates
    # error (its 4th edge is 0.30000000000000004) and would put a confidence of 0.3 in bin 2.
    return np.arange(n_bins + 1) / n_bins


def _confidences(confidence) -> np.ndarray:
    """``confidence`` as float64, or ValueError on NaN or values outside [0, 1] (callers map missing ones to
    0.0 first, as the evaluator does)."""
    c = np.asarray(confidence, dtype=np.float64)
    nan = np.isnan(c)
    if nan.any():
        raise ValueError(f"confidence contains NaN ({int(nan.sum())} of {c.size} values); "
                         "map missing confidences to 0.0 first")
    bad = (c < 0.0) | (c > 1.0)
    if bad.any():
        raise ValueError(f"confidence must be in [0, 1]; {int(bad.sum())} value(s) outside, "
                         f"e.g. {c[bad].flat[0]!r}")
    return c


def bin_index(confidence: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Bin of each confidence among ``n_bins`` equal-width bins on [0, 1].

    Bin ``i`` is left-closed ``[i/n, (i+1)/n)``; the last bin is closed ``[(n-1)/n, 1]`` so 1.0 lands in
    bin ``n-1``. Edges are exact: with n = 10, 0.0 -> 0, 0.1 -> 1, 0.3 -> 3, 0.7 -> 7, 1.0 -> 9.
    Raises ValueError on NaN or on values outside [0, 1] (callers map missing confidences first).
    """
    edges = _edges(n_bins)
    c = _confidences(confidence)
    idx = np.searchsorted(edges, c, side="right") - 1
    return np.minimum(idx, n_bins - 1)


def ece(confidence: np.ndarray, correct: np.ndarray, n_bins: int = 10) -> tuple[float, dict]:
    """Expected Calibration Error: ``sum_b (n_b / N) * |acc_b - conf_b|`` over the bins of :func:`bin_index`.

    ``acc_b`` is the share of correct top-1 answers in bin ``b`` and ``conf_b`` the mean confidence there;
    empty bins contribute nothing. Returns ``(ece, bins)`` where ``bins`` holds ``n_bins``, ``edges``
    (n_bins + 1 floats), ``counts`` (ints), and ``accuracy`` / ``mean_confidence`` (floats, None for empty
    bins). Raises ValueError when there are no queries (N = 0) or the shapes differ.
    """
    c = np.asarray(confidence, dtype=np.float64)
    ok = np.asarray(correct, dtype=bool)
    if c.ndim != 1 or c.shape != ok.shape:
        raise ValueError(f"confidence and correct must be 1-D of the same length; got {c.shape} and {ok.shape}")
    n = c.shape[0]
    if n == 0:
        raise ValueError("ECE of zero queries is undefined")
    idx = bin_index(c, n_bins)
    counts = np.bincount(idx, minlength=n_bins)
    sum_conf = np.bincount(idx, weights=c, minlength=n_bins)
    sum_acc = np.bincount(idx, weights=ok.astype(np.float64), minlength=n_bins)
    # n_b * |acc_b - conf_b| == |sum_acc_b - sum_conf_b|, so no division by empty bins is needed.
    value = float(np.abs(sum_acc - sum_conf).sum() / n)
    nonempty = counts > 0
    safe = np.where(nonempty, counts, 1)
    acc = sum_acc / safe
    mean_conf = sum_conf / safe
    bins = {
        "n_bins": int(n_bins),
        "edges": [float(e) for e in _edges(n_bins)],
        "counts": [int(x) for x in counts],
        "accuracy": [float(a) if m else None for a, m in zip(acc, nonempty)],
        "mean_confidence": [float(a) if m else None for a, m in zip(mean_conf, nonempty)],
    }
    return value, bins


# ---------------------------------------------------------------- Brier score and AUROC

EPS = 1e-6  # confidences are clipped to [EPS, 1 - EPS] before the logit of the Platt map
METHODS = ("platt", "isotonic")
DECIMALS = 6  # as the evaluator: JSON floats rounded to 6 decimals, NaN -> None


def _inputs(confidence, correct) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(c float64, y bool)``: 1-D, same length, c in [0, 1] without NaN, y bool or 0/1."""
    c = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(correct)
    if c.ndim != 1 or c.shape != y.shape:
        raise ValueError(f"confidence and correct must be 1-D of the same length; got {c.shape} and {y.shape}")
    c = _confidences(c)
    if y.dtype != bool:
        if y.dtype.kind not in "biuf" or not np.all((y == 0) | (y == 1)):
            raise ValueError("correct must be bools or 0/1 numbers")
        y = y.astype(bool)
    return c, y


def brier(confidence, correct) -> float:
    """Brier score (Brier 1950, binary form): ``BS = (1/N) sum_i (c_i - o_i)^2`` with ``o_i = 1`` if correct.

    Lower is better; 0 for a perfect forecaster, ``acc (1 - acc)`` for the constant forecast ``c = acc``.
    Raises ValueError when N = 0 and on the inputs rejected by the module conventions (NaN included).
    """
    c, y = _inputs(confidence, correct)
    if c.size == 0:
        raise ValueError("Brier score of zero queries is undefined")
    return float(np.mean((c - y) ** 2))


def auroc(confidence, correct) -> float | None:
    """Area under the ROC curve of ``confidence`` as a score for ``correct`` (discrimination, scale-free).

    ``AUC = U / (n_pos n_neg)`` with the Mann-Whitney statistic ``U = R_pos - n_pos (n_pos + 1) / 2``, where
    ``R_pos`` is the sum of the mid-ranks of the correct rows; equivalently ``U = sum over correct rows of
    (#wrong below + 1/2 #wrong tied)``, i.e. ``P(c_pos > c_neg) + 1/2 P(c_pos == c_neg)`` over all (correct,
    wrong) pairs: ties count 1/2, so a constant confidence gets 0.5. Computed in that second form (two
    ``searchsorted`` on the sorted wrong rows: U is a sum of halves, exact in float64, and it is called once per
    bootstrap resample); ``tests/test_calibration.py`` checks it against ``scipy.stats.rankdata``'s mid-ranks.
    Returns None when only one class (or no row) is present.
    """
    c, y = _inputs(confidence, correct)
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return None
    neg = np.sort(c[~y])
    pos = c[y]
    below = np.searchsorted(neg, pos, side="left")
    tied = np.searchsorted(neg, pos, side="right") - below
    u = float(below.sum()) + 0.5 * float(tied.sum())
    return float(u / (n_pos * n_neg))


# ---------------------------------------------------------------- calibration maps (fit on dev, apply on test)


def _logit(c: np.ndarray) -> np.ndarray:
    c = np.clip(np.asarray(c, dtype=np.float64), EPS, 1.0 - EPS)
    return np.log(c) - np.log1p(-c)


def _sigmoid(s: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -s))


def _platt_targets(y: np.ndarray) -> np.ndarray:
    """Platt's (1999, sec. 2.2) smoothed targets ``t+ = (N+ + 1)/(N+ + 2)``, ``t- = 1/(N- + 2)``.

    They keep the maximum-likelihood fit finite under perfect separation or a single class; with N rows
    they move the targets by at most ``1/(N+2)`` from 0/1.
    """
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    return np.where(y, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def _nll(s: np.ndarray, t: np.ndarray) -> float:
    """Mean cross-entropy of ``sigmoid(s)`` against targets ``t``: ``t log(1 + e^-s) + (1-t) log(1 + e^s)``."""
    return float(np.mean(t * np.logaddexp(0.0, -s) + (1.0 - t) * np.logaddexp(0.0, s)))


def fit_platt(confidence, correct) -> tuple[float, float]:
    """Platt scaling (Platt 1999): ``P(correct | c) = sigmoid(a * logit(c) + b)``, returns ``(a, b)``.

    ``logit(c) = log(c / (1 - c))`` on ``c`` clipped to ``[EPS, 1 - EPS]``. ``(a, b)`` minimise the mean
    cross-entropy against Platt's smoothed targets (:func:`_platt_targets`) with ``scipy.optimize.minimize``
    (BFGS, analytic gradient ``mean((p - t) * [z, 1])``, start at the identity ``(1, 0)``).
    Fallbacks: no rows -> identity ``(1.0, 0.0)``; constant ``logit(c)`` (a constant confidence, or a
    single class, where the slope is not identified or is 0) -> ``(0.0, logit(mean target))``, the
    constant map at the smoothed dev rate (the maximum-likelihood fit in both cases).
    """
    c, y = _inputs(confidence, correct)
    if c.size == 0:
        return 1.0, 0.0
    z = _logit(c)
    t = _platt_targets(y)
    if np.ptp(z) == 0.0 or y.all() or not y.any():
        tbar = float(t.mean())
        return 0.0, float(math.log(tbar / (1.0 - tbar)))

    def fun(ab):
        s = ab[0] * z + ab[1]
        g = _sigmoid(s) - t
        return _nll(s, t), np.array([np.mean(g * z), np.mean(g)])

    res = minimize(fun, x0=np.array([1.0, 0.0]), jac=True, method="BFGS", options={"gtol": 1e-9})
    return float(res.x[0]), float(res.x[1])


def apply_platt(confidence, params) -> np.ndarray:
    """``sigmoid(a * logit(c) + b)`` with ``params = (a, b)`` (or ``{"a": a, "b": b}``)."""
    a, b = (params["a"], params["b"]) if isinstance(params, dict) else params
    return _sigmoid(float(a) * _logit(confidence) + float(b))


def fit_isotonic(confidence, correct) -> tuple[np.ndarray, np.ndarray]:
    """Isotonic regression (Zadrozny & Elkan 2002): the non-decreasing ``f`` minimising ``sum_i (f(c_i) - o_i)^2``.

    Rows with equal confidence are pooled first (their mean correctness, weighted by their count), then
    ``scipy.optimize.isotonic_regression`` (pool adjacent violators) runs on the sorted unique confidences.
    Returns the breakpoints ``(x, y)``: ``x`` the sorted unique dev confidences, ``y`` the fitted
    non-decreasing values in [0, 1]. :func:`apply_isotonic` interpolates *linearly* between breakpoints
    (``np.interp``) and is constant beyond the ends (``y[0]`` below ``x[0]``, ``y[-1]`` above ``x[-1]``).
    Fallbacks: no rows -> identity breakpoints ``([0, 1], [0, 1])``; a constant confidence -> one
    breakpoint, i.e. the constant map at the dev accuracy; a single class -> the constant 0 or 1 (the
    least-squares fit; no smoothing is applied here).
    """
    c, y = _inputs(confidence, correct)
    if c.size == 0:
        return np.array([0.0, 1.0]), np.array([0.0, 1.0])
    x, inv = np.unique(c, return_inverse=True)
    w = np.bincount(inv).astype(np.float64)
    mean_y = np.bincount(inv, weights=y.astype(np.float64)) / w
    fitted = isotonic_regression(mean_y, weights=w, increasing=True).x
    return x, np.clip(np.asarray(fitted, dtype=np.float64), 0.0, 1.0)


def apply_isotonic(confidence, params) -> np.ndarray:
    """``np.interp(c, x, y)`` on the breakpoints of :func:`fit_isotonic` (``(x, y)`` or ``{"x": .., "y": ..}``)."""
    x, y = (params["x"], params["y"]) if isinstance(params, dict) else params
    return np.interp(np.asarray(confidence, dtype=np.float64), np.asarray(x, dtype=np.float64),
                     np.asarray(y, dtype=np.float64))


@dataclass(frozen=True)
class Calibrator:
    """A fitted calibration map: ``method`` in :data:`METHODS` and its JSON-serialisable ``params``.

    ``params``: platt ``{"a", "b"}``, isotonic ``{"x": [...], "y": [...]}`` (full
    precision; round only for display). ``apply(confidence)`` validates like :func:`brier` (no NaN, [0, 1])
    and returns a float64 array in [0, 1].
    """
    method: str
    params: dict = field(default_factory=dict)

    def apply(self, confidence) -> np.ndarray:
        c = np.asarray(confidence, dtype=np.float64)
        _inputs(c, np.zeros(c.shape, dtype=bool))
        if self.method == "platt":
            out = apply_platt(c, self.params)
        elif self.method == "isotonic":
            out = apply_isotonic(c, self.params)
        else:
            raise ValueError(f"unknown calibration method {self.method!r}; allowed: {', '.join(METHODS)}")
        return np.clip(out, 0.0, 1.0)


def fit_calibration(method: str, confidence, correct) -> Calibrator:
    """Fit the calibration map ``method`` ("platt" or "isotonic") on (dev) confidences."""
    if method == "platt":
        a, b = fit_platt(confidence, correct)
        return Calibrator("platt", {"a": a, "b": b})
    if method == "isotonic":
        x, y = fit_isotonic(confidence, correct)
        return Calibrator("isotonic", {"x": [float(v) for v in x], "y": [float(v) for v in y]})
    raise ValueError(f"unknown calibration method {method!r}; allowed: {', '.join(METHODS)}")


# ---------------------------------------------------------------- report


def _r(x) -> float | None:
    """The evaluator's rounding (replicated, the evaluator imports this package): 6 decimals, NaN -> None."""
    if x is None or math.isnan(x):
        return None
    return round(float(x), DECIMALS)


def _round_bins(bins: dict) -> dict:
    return {**bins, "edges": [_r(e) for e in bins["edges"]],
            "accuracy": [None if a is None else _r(a) for a in bins["accuracy"]],
            "mean_confidence": [None if m is None else _r(m) for m in bins["mean_confidence"]]}


def _round_params(params: dict) -> dict:
    return {k: [_r(v) for v in val] if isinstance(val, list) else _r(val) for k, val in params.items()}


def calibration_report(conf_dev, correct_dev, conf_test, correct_test, clusters_test, method: str = "platt",
                       n_bins: int = 10, n_boot: int = 1000, seed: int = 0) -> dict:
    """Fit ``method`` on dev, apply it to test, and score raw and calibrated test confidences.

    Keys: ``method``, ``params`` (rounded), ``n_dev``, ``n_test``, ``n_bins``, ``n_boot``, ``seed``, ``bins`` and
    ``bins_calibrated`` (the test ECE bins of :func:`ece`, for reliability diagrams), and for
    each of ``ece``, ``brier``, ``auroc``, ``ece_calibrated``, ``brier_calibrated``, ``auroc_calibrated`` the
    point estimate and ``<key>_ci``, a 95% percentile cluster bootstrap over ``clusters_test``
    (:func:`cluster_bootstrap_ci`, same ``seed`` hence the same resamples for every metric, so raw and
    calibrated are paired). The map is fitted once on dev and held fixed: the intervals cover test
    sampling, not the uncertainty of the fit. AUROC is None (and its interval [None, None] as soon as one
    resample holds a single class) when test has one class. A monotone map leaves AUROC unchanged except
    where isotonic steps (or saturation at float precision) create ties. Floats are rounded to 6 decimals,
    NaN -> None. Inputs follow the module conventions (missing confidence already 0.0); raises ValueError
    on an empty test split (ECE undefined).
    """
    cd, yd = _inputs(conf_dev, correct_dev)
    ct, yt = _inputs(conf_test, correct_test)
    if ct.size == 0:
        raise ValueError("calibration_report needs at least one test query")
    cal = fit_calibration(method, cd, yd)
    ct_cal = cal.apply(ct)

    def _auc(c, k):
        v = auroc(c, k)
        return float("nan") if v is None else v

    stats = {"ece": lambda c, k: ece(c, k, n_bins)[0], "brier": brier, "auroc": _auc}
    out: dict = {"method": cal.method, "params": _round_params(cal.params), "n_dev": int(cd.size),
                 "n_test": int(ct.size), "n_bins": int(n_bins), "n_boot": int(n_boot), "seed": int(seed)}
    for suffix, conf in (("", ct), ("_calibrated", ct_cal)):
        out[f"bins{suffix}"] = _round_bins(ece(conf, yt, n_bins)[1])
        for name, fn in stats.items():
            out[f"{name}{suffix}"] = _r(fn(conf, yt))
            lo, hi = cluster_bootstrap_ci(fn, (conf, yt), clusters_test, n_boot=n_boot, seed=seed)
            out[f"{name}{suffix}_ci"] = [_r(lo), _r(hi)]
    return out
