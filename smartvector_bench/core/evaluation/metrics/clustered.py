"""Uncertainty and significance for queries that are clustered (several queries per policy family).

Queries of one family share their policy text, their chunks and usually their failure modes, so they are
not independent: a per-query bootstrap or a per-query paired test treats ``n`` correlated queries as ``n``
independent ones and is over-confident. The functions here resample, permute and count *clusters*.

Conventions shared by all functions here:

* ``clusters`` is one label per row (query), any hashable labels that sort (ints, strings, tuples of those).
  The clusters are numbered ``0 .. G-1`` in the order of their *sorted* unique labels; every random draw
  below is expressed in that numbering, so the same ``seed`` and the same cluster labels give the same
  resamples whatever the statistic or the system. Results of two systems (or of several metrics)
  computed with one seed on the same queries are therefore paired.
* Bools count as 0/1. NaN or infinite outcomes are rejected (``ValueError``).
"""

from __future__ import annotations

import inspect
from typing import Callable

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm, permutation_test

from smartvector_bench.core.evaluation.metrics.bootstrap import (check_args, paired_arrays, percentile_bounds,
                                                                 resample_indices)

# scipy >= 1.15 seeds permutation_test with `rng`; older releases (pyproject allows >= 1.11) with `random_state`.
_SEED_KW = "rng" if "rng" in inspect.signature(permutation_test).parameters else "random_state"


def _cluster_codes(clusters, n: int) -> tuple[np.ndarray, int]:
    """``(codes, G)``: ``codes[i]`` in ``0 .. G-1`` is the rank of row i's label among the sorted unique labels."""
    if isinstance(clusters, np.ndarray) and clusters.ndim == 1 and clusters.dtype.kind in "biuUSf":
        if clusters.dtype.kind == "f" and not np.all(np.isfinite(clusters)):
            raise ValueError("cluster labels must not be NaN or infinite")
        labels = clusters
        if labels.shape[0] != n:
            raise ValueError(f"clusters must have one label per row: got {labels.shape[0]} labels for {n} rows")
        uniq, codes = np.unique(labels, return_inverse=True)
        return codes.reshape(-1).astype(np.int64), int(uniq.shape[0])
    # Arbitrary hashables (tuples would turn into a 2-D array under np.asarray): map them in Python.
    labels = list(clusters)
    if len(labels) != n:
        raise ValueError(f"clusters must have one label per row: got {len(labels)} labels for {n} rows")
    try:
        uniq = sorted(set(labels))
    except TypeError as exc:
        raise ValueError(f"cluster labels must be hashable and mutually sortable: {exc}") from None
    code_of = {label: g for g, label in enumerate(uniq)}
    return np.fromiter((code_of[label] for label in labels), dtype=np.int64, count=n), len(uniq)


def _outcome(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be bool or numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN / inf)")
    return arr


def cluster_bootstrap_ci(statistic: Callable[..., float], arrays: tuple[np.ndarray, ...], clusters,
                         n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile cluster bootstrap interval of ``statistic(*arrays)``.

    ``arrays`` share their first dimension ``n`` with ``clusters`` (one row and one label per query). Each
    resample draws ``G`` clusters with replacement (``G`` = number of distinct labels), as
    ``np.random.default_rng(seed).integers(0, G, size=(n_boot, G))`` over the sorted unique labels, and
    takes *all* rows of every drawn cluster, jointly from every array (paired quantities stay paired). A
    cluster drawn twice contributes its rows twice, so a resample has a random number of rows. Rows are
    ordered by draw, and within a cluster in their original order. With singleton clusters labelled
    ``0 .. n-1`` this is exactly ``bootstrap_ci``.

    The bounds are the ``(1-level)/2`` and ``1-(1-level)/2`` quantiles (``np.quantile``, method="linear") of
    the ``n_boot`` resampled statistics. Returns ``(nan, nan)`` when ``n == 0``. A statistic that returns NaN
    on some resample makes the bounds NaN.
    """
    check_args(n_boot, level)
    arrays, n = paired_arrays(arrays, "cluster_bootstrap_ci")
    codes, G = _cluster_codes(clusters, n)
    if n == 0:
        return float("nan"), float("nan")
    order = np.argsort(codes, kind="stable")          # rows grouped by cluster, original order within
    counts = np.bincount(codes, minlength=G)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    stats = np.empty(int(n_boot), dtype=np.float64)
    for b, drawn in enumerate(resample_indices(G, n_boot, seed)):
        cnt = counts[drawn]
        # positions in `order`: starts[g] + 0..cnt[g]-1 for each drawn g, concatenated in draw order
        pos = np.repeat(starts[drawn] - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))
        rows = order[pos]
        stats[b] = float(statistic(*(a[rows] for a in arrays)))
    return percentile_bounds(stats, level)


def cluster_bootstrap_mean_ci(values: np.ndarray, clusters, n_boot: int = 1000, seed: int = 0,
                              level: float = 0.95) -> tuple[float, float]:
    """Vectorised ``cluster_bootstrap_ci(np.mean, (values,), clusters, n_boot, seed, level)``.

    Same resamples, same bounds (up to floating-point summation order, ~1e-15). The statistic of a resample
    is the pooled per-query mean ``sum_g S[g] / sum_g N[g]`` over the drawn clusters ``g`` (``S`` = sum of
    ``values`` in the cluster, ``N`` = its number of rows), i.e. big clusters weigh more, exactly as the
    mean over the resampled rows. ``values`` is 1-D; bools count as 0/1. Memory is ``n_boot * G``.
    """
    check_args(n_boot, level)
    values = _outcome(values, "values")
    n = values.shape[0]
    codes, G = _cluster_codes(clusters, n)
    if n == 0:
        return float("nan"), float("nan")
    sums = np.bincount(codes, weights=values, minlength=G)
    counts = np.bincount(codes, minlength=G).astype(np.float64)
    idx = resample_indices(G, n_boot, seed)
    return percentile_bounds(sums[idx].sum(axis=1) / counts[idx].sum(axis=1), level)


def cluster_bootstrap_ratio_ci(numerator: np.ndarray, denominator: np.ndarray, clusters, n_boot: int = 1000,
                               seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Vectorised ``cluster_bootstrap_ci(lambda a, b: a.sum() / b.sum(), (numerator, denominator), clusters, ...)``:
    the same resamples, the pooled ratio ``sum_g A[g] / sum_g B[g]`` over the drawn clusters (a ratio estimator,
    e.g. version accuracy given the right family). A resample whose denominator is 0 gives NaN, and then the
    bounds are NaN, as the generic bootstrap's. Equal to it exactly for integer-valued inputs (sums are exact)."""
    check_args(n_boot, level)
    num, den = _outcome(numerator, "numerator"), _outcome(denominator, "denominator")
    if num.shape != den.shape:
        raise ValueError(f"numerator and denominator differ in shape: {num.shape} vs {den.shape}")
    codes, G = _cluster_codes(clusters, num.shape[0])
    if num.shape[0] == 0:
        return float("nan"), float("nan")
    idx = resample_indices(G, n_boot, seed)
    a = np.bincount(codes, weights=num, minlength=G)[idx].sum(axis=1)
    b = np.bincount(codes, weights=den, minlength=G)[idx].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return percentile_bounds(np.where(b > 0, a / np.where(b > 0, b, 1.0), np.nan), level)


def paired_cluster_permutation_test(a: np.ndarray, b: np.ndarray, clusters, n_resamples: int = 10000,
                                    seed: int = 0) -> dict:
    """Paired sign-flip permutation test of H0 "A and B do equally well", with clusters as the unit.

    ``a`` and ``b`` are per-query outcomes of two systems on the same queries (bool or float, e.g.
    correct@1 or reciprocal rank). Under H0 the labels A/B of each cluster are exchangeable, so the null
    distribution flips the sign of each cluster's total difference ``d_g = sum_{i in g} (b_i - a_i)``
    independently. Statistic: the mean per-query difference ``T = sum_g d_g / n = mean(b - a)`` (positive
    = B better). Two-sided.

    Computed with ``scipy.stats.permutation_test(permutation_type="samples")`` on the per-cluster totals of
    ``a`` and ``b`` (swapping the two totals of a cluster = flipping the sign of ``d_g``):

    * exact when ``2**G <= n_resamples``: all ``2**G`` sign patterns are enumerated (the observed one
      included) and ``p = 2 * min(P(T* <= T), P(T* >= T))``, clipped to 1. The null is symmetric, so this
      equals ``P(|T*| >= |T|)``.
    * otherwise Monte Carlo with ``n_resamples`` random sign patterns seeded with ``seed`` (the draws are
      scipy's, so they may change between scipy releases), and each tail
      is ``(count + 1) / (n_resamples + 1)`` (scipy's convention: the observed pattern counts as one draw,
      so ``p >= 2 / (n_resamples + 1)``), then doubled and clipped as above.

    Ties are detected with scipy's relative tolerance (``100 * eps * |T|``). ``p = 1.0`` without calling
    scipy when every ``d_g`` is 0 (including ``n == 0``, where the statistic is NaN) or when there is a single
    cluster (both of its sign patterns are as extreme as the observed one). Returns plain Python
    ``{"p_value": float, "statistic": float, "n_clusters": int, "n": int, "exact": bool}``.
    """
    a_ = _outcome(a, "a")
    b_ = _outcome(b, "b")
    if a_.shape != b_.shape:
        raise ValueError(f"a and b must have the same length; got {a_.shape[0]} and {b_.shape[0]}")
    if int(n_resamples) < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    n = a_.shape[0]
    codes, G = _cluster_codes(clusters, n)
    exact = bool(2 ** G <= int(n_resamples))
    if n == 0:
        return {"p_value": 1.0, "statistic": float("nan"), "n_clusters": 0, "n": 0, "exact": exact}
    sa = np.bincount(codes, weights=a_, minlength=G)
    sb = np.bincount(codes, weights=b_, minlength=G)
    d = sb - sa
    stat = float(d.sum() / n)
    if G == 1 or not np.any(d != 0):
        # G == 1: both sign patterns have |T*| = |T|. scipy refuses samples of one observation anyway.
        return {"p_value": 1.0, "statistic": stat, "n_clusters": G, "n": n, "exact": exact}

    def statistic(x, y, axis=-1):
        return np.sum(y - x, axis=axis) / n

    res = permutation_test((sa, sb), statistic, permutation_type="samples", vectorized=True,
                           n_resamples=int(n_resamples), alternative="two-sided", **{_SEED_KW: seed})
    return {"p_value": float(res.pvalue), "statistic": stat, "n_clusters": G, "n": n, "exact": exact}


def design_effect(outcome: np.ndarray, clusters) -> dict:
    """Intra-cluster correlation (one-way ANOVA estimator) and the design effect it implies.

    With ``G`` clusters of sizes ``n_g`` (``N = sum n_g``), cluster means ``ybar_g`` and grand mean ``ybar``::

        MSB  = sum_g n_g (ybar_g - ybar)^2 / (G - 1)
        MSW  = sum_g sum_{i in g} (y_i - ybar_g)^2 / (N - G)
        m0   = (N - sum_g n_g^2 / N) / (G - 1)          # ANOVA "n0"; = n_g when all sizes are equal
        icc  = (MSB - MSW) / (MSB + (m0 - 1) * MSW)      # clamped to [0, 1]
        design_effect = 1 + (m0 - 1) * icc
        n_effective   = N / design_effect

    ``icc`` is set to 0 when it is undefined: fewer than 2 clusters, no within-cluster degrees of freedom
    (all clusters singletons, ``N == G``), or a zero denominator (a constant outcome). Zero within-cluster
    variance with a non-zero between-cluster variance is *not* undefined: it gives ``icc = 1``
    (perfectly clustered outcomes). Negative estimates (clusters more mixed than chance) are clamped to 0,
    so ``design_effect >= 1``. ``mean_cluster_size`` is ``N / G`` (``m0 <= N / G``). ``outcome`` is 1-D,
    0/1 (bools) or numeric. Returns plain Python ``{"icc", "mean_cluster_size", "design_effect", "n",
    "n_clusters", "n_effective"}``; for ``N == 0`` the mean cluster size is NaN, icc 0 and design effect 1.
    """
    y = _outcome(outcome, "outcome")
    N = y.shape[0]
    codes, G = _cluster_codes(clusters, N)
    if N == 0:
        return {"icc": 0.0, "mean_cluster_size": float("nan"), "design_effect": 1.0, "n": 0, "n_clusters": 0,
                "n_effective": 0.0}
    sizes = np.bincount(codes, minlength=G).astype(np.float64)
    icc = 0.0
    m0 = float("nan")
    if G >= 2 and N > G:
        means = np.bincount(codes, weights=y, minlength=G) / sizes
        grand = y.mean()
        msb = float(np.sum(sizes * (means - grand) ** 2) / (G - 1))
        msw = float(np.sum((y - means[codes]) ** 2) / (N - G))
        m0 = float((N - np.sum(sizes ** 2) / N) / (G - 1))
        denom = msb + (m0 - 1.0) * msw
        # A constant outcome is tested exactly: its msb / msw are rounding noise, not a zero denominator.
        # Otherwise m0 > 1 (some cluster has 2+ rows) and denom > 0.
        if not np.all(y == y[0]) and denom > 0.0:
            icc = float(min(1.0, max(0.0, (msb - msw) / denom)))
    deff = 1.0 if icc == 0.0 else 1.0 + (m0 - 1.0) * icc
    return {"icc": icc, "mean_cluster_size": float(N / G), "design_effect": float(deff), "n": int(N),
            "n_clusters": int(G), "n_effective": float(N / deff)}


def _power_two_proportions(p0: float, delta: float, n: float, z: float, alpha: float) -> float:
    """Two-sided power of the pooled z-test of p0 vs p0 + delta, n per arm (normal approximation)."""
    p1, p2 = p0, p0 + delta
    pbar = (p1 + p2) / 2.0
    se0 = np.sqrt(2.0 * pbar * (1.0 - pbar) / n)               # under H0 (pooled)
    se1 = np.sqrt((p1 * (1.0 - p1) + p2 * (1.0 - p2)) / n)     # under H1 (unpooled)
    if se1 == 0.0:  # both proportions in {0, 1}: the difference is deterministic
        if delta == 0.0:
            return alpha
        return 1.0 if abs(delta) > z * se0 else 0.0
    return float(norm.cdf((delta - z * se0) / se1) + norm.cdf((-delta - z * se0) / se1))


def minimum_detectable_difference(p0: float, n_effective: float, alpha: float = 0.05,
                                  power: float = 0.8) -> float:
    """Smallest increase ``delta > 0`` over a baseline rate ``p0`` detectable with the given power.

    Test: two-sided two-sample z-test of proportions, ``n_effective`` independent observations per arm
    (pass ``design_effect(...)["n_effective"]`` for clustered queries), rejecting when
    ``|phat2 - phat1| > z_{1-alpha/2} * SE0``. With ``p1 = p0``, ``p2 = p0 + delta``, ``pbar = (p1+p2)/2``::

        SE0 = sqrt(2 * pbar * (1 - pbar) / n)              # pooled, under H0
        SE1 = sqrt((p1 (1 - p1) + p2 (1 - p2)) / n)        # unpooled, under H1
        power(delta) = Phi((delta - z SE0) / SE1) + Phi((-delta - z SE0) / SE1)

    (both rejection tails; the second is negligible except for tiny ``delta``). ``delta`` solves
    ``power(delta) = power`` with ``scipy.optimize.brentq`` on ``(0, 1 - p0]``; the textbook closed form
    ``delta ~= (z_{1-alpha/2} sqrt(2 pbar qbar) + z_power sqrt(p1 q1 + p2 q2)) / sqrt(n)`` agrees to the
    neglected tail. Returns NaN when even ``p0 + delta = 1`` does not reach the power (no detectable
    increase). Requires ``0 <= p0 <= 1``, ``n_effective > 0``, ``0 < alpha < 1`` and ``alpha < power < 1``.
    """
    p0 = float(p0)
    n = float(n_effective)
    if not 0.0 <= p0 <= 1.0:
        raise ValueError(f"p0 must be in [0, 1], got {p0}")
    if not n > 0.0 or not np.isfinite(n):
        raise ValueError(f"n_effective must be positive and finite, got {n_effective}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not alpha < power < 1.0:
        raise ValueError(f"power must be in (alpha, 1) = ({alpha}, 1), got {power}")
    hi = 1.0 - p0
    if hi <= 0.0:
        return float("nan")
    z = float(norm.ppf(1.0 - alpha / 2.0))

    def gap(delta: float) -> float:
        return _power_two_proportions(p0, delta, n, z, alpha) - power

    if gap(hi) < 0.0:
        return float("nan")
    if gap(hi) == 0.0:
        return hi
    # gap(0) = alpha - power < 0: a root lies in (0, hi]
    return float(brentq(gap, 0.0, hi, xtol=1e-12, rtol=4 * np.finfo(float).eps, maxiter=200))
