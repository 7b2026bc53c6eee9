"""Percentile bootstrap over queries, seeded so that every interval is reproducible.

Both functions draw the resamples as ``np.random.default_rng(seed).integers(0, n, size=(n_boot, n))``:
the same ``seed`` and ``n`` give the same resampled query sets, whatever the statistic. Intervals of several
metrics (or of several systems on the same queries) computed with one seed are therefore paired.
"""

from __future__ import annotations

from typing import Callable

import numpy as np


def check_args(n_boot: int, level: float) -> None:
    """``n_boot >= 1`` and ``0 < level < 1`` (ValueError otherwise)."""
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")


def resample_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) draws from ``0 .. n-1`` with replacement: the resamples every bootstrap here shares."""
    return np.random.default_rng(seed).integers(0, n, size=(int(n_boot), n))


def percentile_bounds(stats: np.ndarray, level: float) -> tuple[float, float]:
    """The ``(1-level)/2`` and ``1-(1-level)/2`` quantiles of the resampled statistics (method="linear")."""
    alpha = 1.0 - level
    low, high = np.quantile(stats, [alpha / 2, 1.0 - alpha / 2], method="linear")
    return float(low), float(high)


def paired_arrays(arrays: tuple, caller: str) -> tuple[tuple[np.ndarray, ...], int]:
    """``arrays`` as numpy arrays and their shared first dimension ``n`` (ValueError when there are none or the
    lengths differ)."""
    arrays = tuple(np.asarray(a) for a in arrays)
    if not arrays:
        raise ValueError(f"{caller} needs at least one array")
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError(f"arrays must share their first dimension; got {[a.shape[0] for a in arrays]}")
    return arrays, n


def bootstrap_ci(statistic: Callable[..., float], arrays: tuple[np.ndarray, ...], n_boot: int = 1000,
                 seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(*arrays)`` resampling queries with replacement.

    ``arrays`` share their first dimension ``n`` (one row per query) and are resampled jointly (the same
    rows from each), so paired per-query quantities stay paired. The bounds are the ``(1-level)/2`` and
    ``1-(1-level)/2`` quantiles (``np.quantile``, method="linear") of the ``n_boot`` resampled statistics.
    Returns ``(nan, nan)`` when ``n == 0``. A statistic that returns NaN on some resample makes the bounds NaN.
    """
    check_args(n_boot, level)
    arrays, n = paired_arrays(arrays, "bootstrap_ci")
    if n == 0:
        return float("nan"), float("nan")
    idx = resample_indices(n, n_boot, seed)
    # One Python call per resample is unavoidable for an arbitrary statistic (ECE, ratios, ...).
    stats = np.array([float(statistic(*(a[i] for a in arrays))) for i in idx], dtype=np.float64)
    return percentile_bounds(stats, level)


def bootstrap_mean_ci(values: np.ndarray, n_boot: int = 1000, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float]:
    """Vectorised ``bootstrap_ci(np.mean, (values,), n_boot, seed, level)``: same resamples, same bounds.

    ``values`` is 1-D (bools count as 0/1). Memory is ``n_boot * n`` indices plus as many values.
    """
    check_args(n_boot, level)
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {values.shape}")
    n = values.shape[0]
    if n == 0:
        return float("nan"), float("nan")
    idx = resample_indices(n, n_boot, seed)
    return percentile_bounds(values[idx].mean(axis=1), level)
