"""Cluster-level bootstrap, permutation test, design effect and MDE against values computed by hand."""

import itertools
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import norm

from smartvector_bench.core.evaluation.metrics import (bootstrap_ci, bootstrap_mean_ci, cluster_bootstrap_ci,
                                       cluster_bootstrap_mean_ci, design_effect, minimum_detectable_difference,
                                       paired_cluster_permutation_test)

# ---------------------------------------------------------------- cluster bootstrap


def test_singleton_clusters_reduce_to_the_query_bootstrap():
    rng = np.random.default_rng(3)
    v = rng.random(25)
    w = rng.random(25)
    ids = np.arange(25)
    assert cluster_bootstrap_ci(np.mean, (v,), ids, n_boot=300, seed=7) == bootstrap_ci(np.mean, (v,), 300, 7)
    assert cluster_bootstrap_mean_ci(v, ids, n_boot=300, seed=7) == bootstrap_mean_ci(v, 300, 7)
    ratio = lambda x, y: x.sum() / y.sum()  # noqa: E731 - paired arrays stay paired
    assert (cluster_bootstrap_ci(ratio, (v, w), list(ids), n_boot=200, seed=1, level=0.9)
            == bootstrap_ci(ratio, (v, w), 200, 1, 0.9))


def test_cluster_bootstrap_takes_whole_clusters_with_multiplicity():
    # cluster "A" = three rows of 1, cluster "B" = one row of 0; sorted labels: A -> 0, B -> 1.
    values = np.array([1.0, 0.0, 1.0, 1.0])
    labels = ["A", "B", "A", "A"]
    draws = np.random.default_rng(5).integers(0, 2, size=(400, 2))
    k = (draws == 0).sum(axis=1)  # how many times A was drawn: 0, 1 or 2
    rows = 3 * k + (2 - k)
    expected_len = np.quantile(rows, [0.025, 0.975], method="linear")
    expected_mean = np.quantile(3 * k / rows, [0.025, 0.975], method="linear")
    # a cluster drawn twice contributes its rows twice: resample sizes 2, 4 or 6
    assert cluster_bootstrap_ci(len, (values,), labels, n_boot=400, seed=5) == tuple(expected_len)
    assert cluster_bootstrap_ci(len, (values,), labels, n_boot=400, seed=5, level=0.5) == tuple(
        np.quantile(rows, [0.25, 0.75], method="linear"))
    assert set(rows.tolist()) == {2, 4, 6}
    lo, hi = cluster_bootstrap_ci(np.mean, (values,), labels, n_boot=400, seed=5)
    assert (lo, hi) == pytest.approx(tuple(expected_mean), abs=1e-15)
    assert (lo, hi) == (0.0, 1.0)  # both extremes (BB and AA) occur among 400 draws
    assert cluster_bootstrap_mean_ci(values, labels, n_boot=400, seed=5) == pytest.approx((lo, hi), abs=1e-12)


def test_cluster_bootstrap_rows_keep_draw_order_and_pairing():
    # statistic sees the actual rows: x identifies the row, y = 10 * x must stay aligned with it
    x = np.array([0, 1, 2, 3, 4])
    clusters = np.array([2, 0, 2, 1, 0])  # clusters: 0 -> rows [1, 4], 1 -> [3], 2 -> [0, 2]
    members = {0: [1, 4], 1: [3], 2: [0, 2]}
    seen = []

    def stat(a, b):
        assert np.array_equal(b, 10 * a)
        seen.append(a.tolist())
        return float(a.sum())

    cluster_bootstrap_ci(stat, (x, 10 * x), clusters, n_boot=20, seed=11)
    draws = np.random.default_rng(11).integers(0, 3, size=(20, 3))
    assert seen == [[r for g in d for r in members[int(g)]] for d in draws]


def test_cluster_mean_ci_matches_generic_version():
    rng = np.random.default_rng(0)
    n = 120
    labels = [f"fam{int(g):02d}" for g in rng.integers(0, 17, n)]
    for values in (rng.random(n), rng.random(n) < 0.3):
        for seed in (0, 4):
            fast = cluster_bootstrap_mean_ci(values, labels, n_boot=500, seed=seed, level=0.9)
            slow = cluster_bootstrap_ci(np.mean, (values,), labels, n_boot=500, seed=seed, level=0.9)
            assert fast == pytest.approx(slow, abs=1e-12)
            assert fast[0] < np.mean(values) < fast[1]


def test_cluster_bootstrap_is_wider_than_query_bootstrap_for_clustered_outcomes():
    clusters = np.repeat(np.arange(10), 10)
    values = np.repeat(np.arange(10) % 2 == 0, 10)  # outcome fixed per family
    lo, hi = cluster_bootstrap_mean_ci(values, clusters, n_boot=2000, seed=0)
    qlo, qhi = bootstrap_mean_ci(values, 2000, 0)
    assert hi - lo > 2 * (qhi - qlo)


def test_cluster_bootstrap_edge_cases():
    empty = np.array([], dtype=float)
    assert all(np.isnan(cluster_bootstrap_ci(np.mean, (empty,), [], n_boot=10)))
    assert all(np.isnan(cluster_bootstrap_mean_ci(empty, [], n_boot=10)))
    # tuple labels are single labels, not 2-D arrays
    assert cluster_bootstrap_mean_ci(np.ones(3), [("a", 1), ("a", 1), ("b", 2)], n_boot=10) == (1.0, 1.0)
    with pytest.raises(ValueError, match="one label per row"):
        cluster_bootstrap_mean_ci(np.ones(3), [0, 1])
    with pytest.raises(ValueError, match="first dimension"):
        cluster_bootstrap_ci(np.mean, (np.ones(3), np.ones(2)), [0, 1, 2])
    with pytest.raises(ValueError, match="sortable"):
        cluster_bootstrap_mean_ci(np.ones(2), [1, "a"])
    with pytest.raises(ValueError, match="level"):
        cluster_bootstrap_mean_ci(np.ones(2), [0, 1], level=1.0)
    with pytest.raises(ValueError, match="n_boot"):
        cluster_bootstrap_ci(np.mean, (np.ones(2),), [0, 1], n_boot=0)
    with pytest.raises(ValueError, match="finite"):
        cluster_bootstrap_mean_ci(np.array([1.0, np.nan]), [0, 1])


# ---------------------------------------------------------------- paired cluster permutation test


def _case(d_per_cluster, sizes):
    """a = 0, b spread so that each cluster's total difference is d_g (first row of each cluster)."""
    clusters = np.repeat(np.arange(len(sizes)), sizes)
    b = np.zeros(len(clusters))
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    b[starts] = d_per_cluster
    return np.zeros(len(clusters)), b, clusters


def _enumerated_p(d):
    d = np.asarray(d, dtype=float)
    t = abs(d.sum())
    sums = [abs(np.dot(s, d)) for s in itertools.product((1, -1), repeat=len(d))]
    return sum(s >= t - 1e-12 for s in sums) / len(sums)


@pytest.mark.parametrize("d, sizes, p", [
    ([1, 2, 3], [2, 1, 3], 2 / 8),        # sums +-1+-2+-3: only all-plus / all-minus reach |6|
    ([2, -1, 1], [1, 1, 1], 6 / 8),       # |T| >= 2 for 6 of the 8 patterns
    ([2, 1, 1, 1], [3, 2, 2, 1], 2 / 16),
    ([2, 1, 1, -1], [1, 2, 3, 4], 8 / 16),
])
def test_exact_permutation_p_values_by_hand(d, sizes, p):
    a, b, clusters = _case(d, sizes)
    res = paired_cluster_permutation_test(a, b, clusters)
    assert res["p_value"] == pytest.approx(p, abs=1e-12)
    assert res["p_value"] == pytest.approx(_enumerated_p(d), abs=1e-12)
    assert res["exact"] is True
    assert res["n_clusters"] == len(sizes) and res["n"] == sum(sizes)
    assert res["statistic"] == pytest.approx(sum(d) / sum(sizes))
    assert type(res["p_value"]) is float and type(res["n"]) is int


def test_sign_of_statistic_and_symmetry():
    a, b, clusters = _case([1, 2, 3], [2, 1, 3])
    fwd = paired_cluster_permutation_test(a, b, clusters)
    rev = paired_cluster_permutation_test(b, a, clusters)
    assert fwd["statistic"] == pytest.approx(1.0) and rev["statistic"] == pytest.approx(-1.0)
    assert fwd["p_value"] == rev["p_value"]


def test_identical_outcomes_give_p_one():
    a = np.array([True, False, True, True, False])
    res = paired_cluster_permutation_test(a, a.copy(), ["x", "x", "y", "z", "z"])
    assert res == {"p_value": 1.0, "statistic": 0.0, "n_clusters": 3, "n": 5, "exact": True}
    # differences that cancel within every cluster: d_g = 0 although single queries differ
    res = paired_cluster_permutation_test(np.array([1, 0, 0, 1]), np.array([0, 1, 1, 0]), [0, 0, 1, 1])
    assert res["p_value"] == 1.0 and res["statistic"] == 0.0


def test_clusters_not_queries_are_the_unit():
    a = np.zeros(5, dtype=bool)
    b = np.ones(5, dtype=bool)
    # five independent queries all improved: 2 of 32 sign patterns reach |T| = 1
    assert paired_cluster_permutation_test(a, b, np.arange(5))["p_value"] == pytest.approx(2 / 32)
    # the same five queries from one family are one observation: nothing can be concluded
    assert paired_cluster_permutation_test(a, b, np.zeros(5))["p_value"] == 1.0
    # two families: cluster totals d = [2, 1] -> sums +-2+-1, |T| >= 3 for 2 of 4 patterns
    # (flipping the 3 improved queries one by one would give 2 / 8)
    res = paired_cluster_permutation_test(np.zeros(4), np.array([1.0, 1.0, 1.0, 0.0]), ["f", "f", "g", "g"])
    assert res["p_value"] == pytest.approx(2 / 4) and res["statistic"] == pytest.approx(3 / 4)


def test_monte_carlo_branch():
    rng = np.random.default_rng(1)
    G = 12
    clusters = np.repeat(np.arange(G), 3)
    a = rng.random(3 * G) < 0.4
    b = rng.random(3 * G) < 0.6
    exact = paired_cluster_permutation_test(a, b, clusters, n_resamples=2 ** G)
    mc = paired_cluster_permutation_test(a, b, clusters, n_resamples=3000, seed=2)
    assert exact["exact"] is True and mc["exact"] is False
    assert mc["p_value"] == pytest.approx(exact["p_value"], abs=0.04)
    assert mc == paired_cluster_permutation_test(a, b, clusters, n_resamples=3000, seed=2)  # seeded
    # every cluster improves by the same amount: no random pattern ties the observed one except by
    # chance (2 / 2**20), so p = 2 * (0 + 1) / (n_resamples + 1)
    big = paired_cluster_permutation_test(np.zeros(40), np.ones(40), np.arange(40) // 2, n_resamples=999)
    assert big["exact"] is False and big["p_value"] == pytest.approx(2 / 1000)


def test_permutation_input_checks():
    with pytest.raises(ValueError, match="same length"):
        paired_cluster_permutation_test(np.ones(3), np.ones(2), [0, 1, 2])
    with pytest.raises(ValueError, match="one label per row"):
        paired_cluster_permutation_test(np.ones(3), np.ones(3), [0, 1])
    res = paired_cluster_permutation_test(np.array([]), np.array([]), [])
    assert res["p_value"] == 1.0 and res["n"] == 0 and np.isnan(res["statistic"])


# ---------------------------------------------------------------- design effect


def test_icc_of_perfectly_clustered_outcome_is_one():
    y = np.array([1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0], dtype=bool)
    res = design_effect(y, np.repeat(["a", "b", "c", "d"], 3))
    assert res == {"icc": 1.0, "mean_cluster_size": 3.0, "design_effect": 3.0, "n": 12, "n_clusters": 4,
                   "n_effective": 4.0}


def test_icc_of_alternating_within_cluster_outcome_is_zero():
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    res = design_effect(y, [0, 0, 1, 1, 2, 2, 3, 3])  # raw ANOVA estimate -1/(m0-1) = -1, clamped
    assert res["icc"] == 0.0 and res["design_effect"] == 1.0 and res["n_effective"] == 8.0


def test_icc_unequal_sizes_by_hand():
    # clusters of sizes 3, 2, 1: y = [1,1,0 | 0,0 | 1]; N = 6, G = 3
    msb = Fraction(5, 12)   # (3 (2/3-1/2)^2 + 2 (0-1/2)^2 + 1 (1-1/2)^2) / 2
    msw = Fraction(2, 9)    # (2 (1/3)^2 + (2/3)^2) / 3
    m0 = Fraction(11, 6)    # (6 - 14/6) / 2
    icc = (msb - msw) / (msb + (m0 - 1) * msw)
    assert icc == Fraction(21, 65)
    deff = 1 + (m0 - 1) * icc
    res = design_effect(np.array([1, 1, 0, 0, 0, 1.0]), [7, 7, 7, 3, 3, 9])
    assert res["icc"] == pytest.approx(float(icc), abs=1e-12)
    assert res["design_effect"] == pytest.approx(float(deff), abs=1e-12)
    assert res["n_effective"] == pytest.approx(6 / float(deff), abs=1e-12)
    assert res["mean_cluster_size"] == 2.0 and res["n_clusters"] == 3 and res["n"] == 6


def test_icc_undefined_cases_are_zero():
    for y, cl in [(np.ones(6), [0, 0, 1, 1, 2, 2]),              # constant outcome
                  (np.full(6, 0.1), [0, 0, 0, 1, 1, 1]),         # constant, with rounding in the means
                  (np.array([0, 1, 1, 0.0]), [0, 1, 2, 3]),      # singletons: no within-cluster df
                  (np.array([0, 1, 1, 0.0]), ["x"] * 4)]:        # one cluster: no between-cluster df
        res = design_effect(y, cl)
        assert res["icc"] == 0.0 and res["design_effect"] == 1.0 and res["n_effective"] == len(y)
    res = design_effect(np.array([]), [])
    assert res["n"] == 0 and res["design_effect"] == 1.0 and np.isnan(res["mean_cluster_size"])


# ---------------------------------------------------------------- minimum detectable difference


def _one_tail_power(p0, delta, n, alpha):
    p1, p2 = p0, p0 + delta
    pbar = (p1 + p2) / 2
    z = norm.ppf(1 - alpha / 2)
    return norm.cdf((delta - z * np.sqrt(2 * pbar * (1 - pbar) / n)) / np.sqrt((p1 * (1 - p1) + p2 * (1 - p2)) / n))


def test_mde_classic_case_by_formula():
    delta = minimum_detectable_difference(0.5, 100, alpha=0.05, power=0.8)
    assert 0.19 <= delta <= 0.20
    # textbook fixed point delta = (z_a sqrt(2 pbar qbar) + z_b sqrt(p1 q1 + p2 q2)) / sqrt(n)
    za, zb, d = 1.959963984540054, 0.8416212335729143, 0.2
    for _ in range(50):
        pbar = 0.5 + d / 2
        d = (za * np.sqrt(2 * pbar * (1 - pbar)) + zb * np.sqrt(0.25 + (0.5 + d) * (0.5 - d))) / 10
    assert delta == pytest.approx(d, abs=1e-6)  # the neglected lower tail is ~1e-9 here
    assert _one_tail_power(0.5, delta, 100, 0.05) == pytest.approx(0.8, abs=1e-6)


def test_mde_monte_carlo():
    delta = minimum_detectable_difference(0.5, 100)
    rng = np.random.default_rng(0)
    reps, n = 4000, 100
    x1 = rng.binomial(n, 0.5, reps) / n
    x2 = rng.binomial(n, 0.5 + delta, reps) / n
    pbar = (x1 + x2) / 2
    z = np.abs(x2 - x1) / np.sqrt(2 * pbar * (1 - pbar) / n)
    assert np.mean(z > norm.ppf(0.975)) == pytest.approx(0.8, abs=0.04)


def test_mde_shape_and_edges():
    assert minimum_detectable_difference(0.5, 400) < minimum_detectable_difference(0.5, 100)
    assert minimum_detectable_difference(0.5, 100, power=0.9) > minimum_detectable_difference(0.5, 100)
    assert np.isnan(minimum_detectable_difference(0.95, 10))   # even 0.95 -> 1.0 is not detectable
    assert np.isnan(minimum_detectable_difference(1.0, 1000))
    d0 = minimum_detectable_difference(0.0, 50)
    assert 0 < d0 < 1 and _one_tail_power(0.0, d0, 50, 0.05) == pytest.approx(0.8, abs=1e-6)
    for kwargs in ({"p0": 1.5, "n_effective": 10}, {"p0": 0.5, "n_effective": 0},
                   {"p0": 0.5, "n_effective": 10, "alpha": 0.0}, {"p0": 0.5, "n_effective": 10, "power": 0.01}):
        with pytest.raises(ValueError):
            minimum_detectable_difference(**kwargs)


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_the_ratio_fast_path_is_the_generic_cluster_bootstrap_exactly(seed):
    from smartvector_bench.core.evaluation.metrics.clustered import cluster_bootstrap_ratio_ci

    rng = np.random.default_rng(seed)
    clusters = rng.integers(0, 9, size=120)
    den = rng.random(120) < 0.7
    num = den & (rng.random(120) < 0.6)
    generic = cluster_bootstrap_ci(lambda a, b: a.sum() / b.sum(), (num, den), clusters, n_boot=300, seed=seed)
    assert cluster_bootstrap_ratio_ci(num, den, clusters, n_boot=300, seed=seed) == generic
    # a resample with no denominator at all makes the bounds NaN, as the generic bootstrap's NaN statistic does
    sparse = np.zeros(120, dtype=bool)
    sparse[clusters == 0] = True
    lo, hi = cluster_bootstrap_ratio_ci(sparse, sparse, clusters, n_boot=300, seed=seed)
    assert np.isnan(lo) and np.isnan(hi)
