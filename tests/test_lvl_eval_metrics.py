"""The summaries experiment=lvl_eval scores with (smartvector_bench.core.evaluation.metrics.summary), on hand-made
inputs."""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.evaluation.metrics.summary import (first_relevant_rank, latency_stats, prf, ratio, rounded,
                                                   share_stats)


def test_rounded_and_ratio_map_non_finite_and_zero_denominators_to_none():
    assert rounded(1 / 3) == 0.333333 and rounded(2 / 3, 2) == 0.67
    assert rounded(None) is None and rounded(float("nan")) is None and rounded(float("inf")) is None
    assert ratio(1, 4) == 0.25 and ratio(3, 0) is None


def test_share_stats_gives_mean_ci_and_quantiles():
    s = share_stats([0.0, 0.5, 1.0, 0.5], n_boot=200, seed=0)
    assert s["n"] == 4 and s["mean"] == 0.5 and s["median"] == 0.5 and s["zero_share"] == 0.25
    assert s["min"] == 0.0 and s["max"] == 1.0 and s["p90"] == rounded(np.quantile([0, 0.5, 1, 0.5], 0.9))
    assert s["ci"][0] <= 0.5 <= s["ci"][1]
    assert share_stats([], n_boot=200, seed=0) == {"n": 0, "mean": None, "ci": [None, None], "median": None,
                                                   "p90": None, "min": None, "max": None}


def test_latency_stats_in_milliseconds_over_every_repetition():
    m = latency_stats(np.array([[0.001, 0.002], [0.003, 0.004]]))
    assert m["n"] == 4 and m["p50"] == 2.5 and m["min"] == 1.0 and m["max"] == 4.0 and m["mean"] == 2.5
    assert m["p99"] == rounded(np.quantile([1.0, 2.0, 3.0, 4.0], 0.99), 4)
    assert latency_stats(np.zeros(0)) == {"n": 0}


def test_prf_counts_and_empty_denominators():
    assert prf(3, 4, 6) == {"tp": 3, "predicted": 4, "actual": 6, "precision": 0.75, "recall": 0.5}
    assert prf(0, 0, 0)["precision"] is None and prf(0, 0, 0)["recall"] is None


def test_first_relevant_rank_over_sets_of_rows():
    assert first_relevant_rank([[5], [], [2, 7]], {7}) == 3
    assert first_relevant_rank([[1, 4], [4]], {4}) == 1
    assert first_relevant_rank([[1], [2]], {9}) is None and first_relevant_rank([], {1}) is None
