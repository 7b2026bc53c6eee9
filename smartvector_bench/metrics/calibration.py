"""Calibration of a system's top-1 confidence against top-1 correctness (Expected Calibration Error)."""

from __future__ import annotations

import numpy as np


def _edges(n_bins: int) -> np.ndarray:
    if not isinstance(n_bins, (int, np.integer)) or isinstance(n_bins, bool) or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    # i / n is the correctly rounded double of i/n, so 0.3 == 3/10 exactly; np.linspace accumulates
    # error (its 4th edge is 0.30000000000000004) and would put a confidence of 0.3 in bin 2.
    return np.arange(n_bins + 1) / n_bins


def bin_index(confidence: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Bin of each confidence among ``n_bins`` equal-width bins on [0, 1].

    Bin ``i`` is left-closed ``[i/n, (i+1)/n)``; the last bin is closed ``[(n-1)/n, 1]`` so 1.0 lands in
    bin ``n-1``. Edges are exact: with n = 10, 0.0 -> 0, 0.1 -> 1, 0.3 -> 3, 0.7 -> 7, 1.0 -> 9.
    Raises ValueError on NaN or on values outside [0, 1] (callers map missing confidences first).
    """
    edges = _edges(n_bins)
    c = np.asarray(confidence, dtype=np.float64)
    nan = np.isnan(c)
    if nan.any():
        raise ValueError(f"confidence contains NaN ({int(nan.sum())} of {c.size} values); "
                         "map missing confidences to a number before binning")
    bad = (c < 0.0) | (c > 1.0)
    if bad.any():
        raise ValueError(f"confidence must be in [0, 1]; {int(bad.sum())} value(s) outside, "
                         f"e.g. {c[bad].flat[0]!r}")
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
