"""``fused_kernel.exhaustive_top_k`` (numba) against the specification's brute force on synthetic columns: the same
ranking, scores within an ulp, on exact ties and across its query and vector blocks; within the certificate on
random vectors; and with an expired score above one."""

from __future__ import annotations

import numpy as np
import pytest

import smartvector_bench.systems.smartvector.fused_kernel as fk
from smartvector_bench.systems.smartvector.scoring import Columns

from .formula_cases import (CP, EXPIRED, F64_SLACK, K, ROWS, T_HALF, W, BlockSpy, certificate_violations, cosine_bound,
                            dyadic_near, dyadic_unit, kernel_columns, near_queries, repeated_across_blocks,
                            semantic_share, spec_brute, spec_keys)


def kernel_params(c: Columns, expired: float = EXPIRED) -> np.ndarray:
    """The kernel's ``fp`` vector for the default parameters (``expired``: T outside the validity window)."""
    return np.array([T_HALF, expired, CP.half_life_days, CP.min_confidence, CP.dormant_threshold, W.semantic,
                     W.temporal, W.confidence, W.total(), c.rel.max()])


DEPRIORITIZE = np.array([True, False, True, True, True])  # kernel flags: dormant last, the rest excluded


@pytest.mark.parametrize("deprio", [True, False])
@pytest.mark.parametrize("dup", [7, 5000])
def test_kernel_equals_the_spec_brute_force(deprio, dup):
    rng = np.random.default_rng(dup)
    n, q, k = 5000, 40, 10
    base = dyadic_unit(rng, min(n, dup))
    stored = np.tile(base, (n // len(base) + 1, 1))[:n]
    qv = dyadic_near(rng, base[rng.integers(0, len(base), q)])
    as_of = rng.uniform(-10, 260, q)
    as_of[:2] = -5.0  # before every creation: empty runs
    c, raw = kernel_columns(rng, n, dup)
    flags = np.array([deprio, False, True, True, True])
    ranked, top, conf = fk.exhaustive_top_k(stored, qv, as_of, c, kernel_params(c), flags, k)
    want, want_score, ties = spec_brute(stored, qv, as_of, c, raw, deprio, k)
    assert (want[:, 0] == -1).any() and (want[:, 0] >= 0).sum() > q // 2  # both cases occur
    assert ties > 0 or dup == n  # repeated vectors and metadata: exact ties, by the lower index
    assert np.array_equal(ranked, want)
    ok = want >= 0
    assert np.array_equal(np.isnan(top), ~ok)
    assert np.abs(top[ok] - want_score[ok]).max() <= 1e-15
    assert np.array_equal(np.isnan(conf), ~ok[:, 0])


FK_QUERY_BLOCK = 4096  # exhaustive_top_k's queries per block (a literal there; BlockSpy checks it is crossed)


def test_kernel_across_query_and_vector_blocks(monkeypatch):
    """At the kernel's own sizes (``BLOCK_ENTRIES`` cosines per block): two query blocks, the second of a few
    rows, and three vector blocks, the last ragged, with exact ties across blocks (``repeated_across_blocks``)."""
    width = fk.BLOCK_ENTRIES // FK_QUERY_BLOCK
    n, q = 2 * width + 300, FK_QUERY_BLOCK + 4
    stored, qv, as_of, c, raw = repeated_across_blocks(4, n, q)
    spy = BlockSpy(monkeypatch, fk, "scan_block")
    k = 9  # odd: hits come in tied pairs, so the k-th hit's copy is left out, a tie across the cut
    ranked, top, _ = fk.exhaustive_top_k(stored, qv, as_of, c, kernel_params(c), DEPRIORITIZE, k)
    spy.assert_crosses(n)
    want, want_score, ties = spec_brute(stored, qv, as_of, c, raw, True, k)
    assert ties > 0
    assert np.array_equal(ranked, want)
    ok = want >= 0
    assert ok[:, 0].mean() > 0.9 and np.abs(top[ok] - want_score[ok]).max() <= 1e-15


def test_kernel_on_random_vectors_is_within_the_certificate(monkeypatch):
    """Gaussian vectors at the same block-crossing shapes: the run is the exact one (float64 cosines) up to the
    cosine's float32 rounding; and the check itself fails a wrong run."""
    width = fk.BLOCK_ENTRIES // FK_QUERY_BLOCK
    n, q = 2 * width + 300, FK_QUERY_BLOCK + 4
    stored, qv, as_of, c, raw = repeated_across_blocks(6, n, q, dyadic=False)
    spy = BlockSpy(monkeypatch, fk, "scan_block")
    ranked, top, _ = fk.exhaustive_top_k(stored, qv, as_of, c, kernel_params(c), DEPRIORITIZE, K)
    spy.assert_crosses(n)
    bound = semantic_share(W) * cosine_bound(qv, stored) + F64_SLACK
    wrong = {"reversed": (ranked[:, ::-1], top[:, ::-1]), "shifted scores": (ranked, top + 10 * bound[:, None])}
    bad = dict.fromkeys(["run", *wrong], 0)
    exact = stored.T.astype(np.float64)
    for lo in range(0, q, ROWS):
        b = slice(lo, lo + ROWS)
        score, key = spec_keys(qv[b].astype(np.float64) @ exact, as_of[b], c, raw, True)
        bad["run"] += certificate_violations(ranked[b], top[b], key, score, bound[b])
        for name, (r, s) in wrong.items():
            full = (r[b] >= 0).all(axis=1)  # reversing a padded list would only break the padding rule
            bad[name] += certificate_violations(r[b][full], s[b][full], key[full], score[full], bound[b][full])
    assert bad["run"] == 0 and all(bad[name] > 0 for name in wrong), bad
    assert (ranked[:, 0] >= 0).mean() > 0.9


def test_kernel_bound_holds_when_expired_score_exceeds_one():
    """An unusual config (expired_score > 1: expired versions preferred) must not be pruned away by the
    cheapest bound, which otherwise assumes T <= 1."""
    k = 5
    stored, qv, as_of, c, raw = near_queries(5, 2000, 30)
    flags = DEPRIORITIZE
    ranked, _, _ = fk.exhaustive_top_k(stored, qv, as_of, c, kernel_params(c, expired=3.0), flags, k)
    want = spec_brute(stored, qv, as_of, c, raw, True, k, expired=3.0)[0]
    expired_top = (as_of >= c.valid_to[np.maximum(want[:, 0], 0)]) & (want[:, 0] >= 0)
    assert expired_top.any()  # the case occurs: an expired version is some query's answer
    assert np.array_equal(ranked, want)
