"""The compiled exhaustive scan (retrievers/fused_kernel.py) against a plain numpy brute force of the same
formulas: same top-k under the tie rule (lower corpus index first), exclusions dropped, short runs padded."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.systems.smartvector.fused_kernel import exhaustive_top_k
from smartvector_bench.systems.smartvector.retriever import _Columns
from smartvector_bench.core.run import rank_by_score

FP = dict(t_half=30.0, expired=0.05, c_half=30.0, cmin=0.01, dorm=0.15, ws=0.35, wt=0.25, wc=0.25, w=1.0)


def params(c: _Columns, expired: float = FP["expired"]) -> np.ndarray:
    """The kernel's ``fp`` vector for FP (``expired``: T outside the validity window)."""
    return np.array([FP["t_half"], expired, FP["c_half"], FP["cmin"], FP["dorm"], FP["ws"], FP["wt"], FP["wc"],
                     FP["w"], c.rel.max()])


def brute(stored, qv, as_of, c: _Columns, deprio: bool, k: int, expired: float = FP["expired"]):
    t = as_of[:, None]
    cos = np.clip((qv @ stored.T).astype(np.float64), 0.0, 1.0)
    temporal = np.exp2(-np.maximum(t - c.created, 0.0) / FP["t_half"])
    temporal = np.where((t >= c.valid_to) | (t < c.valid_from), expired, temporal)
    conf = np.maximum(FP["cmin"], c.base * np.exp2(-np.maximum(t - c.decay_from, 0.0) / FP["c_half"]))
    conf = np.minimum(1.0, np.clip(conf + c.fb_pos - c.fb_neg, FP["cmin"], 1.0) + c.access)
    score = (FP["ws"] * cos + FP["wt"] * temporal + FP["wc"] * conf + c.rel) / FP["w"]
    key = score - 2.0 * ((conf < FP["dorm"]) & deprio)
    key[(t >= c.succ_from) | (t >= c.archived_at) | (t < c.created) | (t < c.ingested_at)] = -np.inf
    ranked, _ = rank_by_score(key, k)
    return ranked, np.take_along_axis(score, np.maximum(ranked, 0), axis=1)


def columns(rng, n, dup: int) -> _Columns:
    """n vectors whose metadata repeats every ``dup`` rows (exact ties when the vectors repeat too)."""
    def col(x):
        return np.tile(x, n // dup + 1)[:n]
    created = col(rng.integers(0, 200, dup).astype(np.float64))
    return _Columns(created=created, valid_from=created, valid_to=col(np.where(rng.random(dup) < 0.3,
                    created[:dup] + 60, np.inf)), decay_from=created, base=col(rng.random(dup)),
                    fb_pos=col(0.03 * rng.integers(0, 3, dup)), fb_neg=col(0.08 * rng.integers(0, 3, dup)),
                    access=col(0.01 * np.log1p(rng.integers(0, 5, dup))), rel=col(0.15 * 0.1 * rng.random(dup)),
                    succ_from=col(np.where(rng.random(dup) < 0.2, created[:dup] + 90, np.inf)),
                    archived_at=col(np.where(rng.random(dup) < 0.1, created[:dup] + 150, np.inf)),
                    ingested_at=created.copy())


@pytest.mark.parametrize("deprio", [True, False])
@pytest.mark.parametrize("dup", [7, 5000])
def test_kernel_equals_brute_force(deprio, dup):
    rng = np.random.default_rng(dup)
    n, q, k = 5000, 40, 10
    base = rng.standard_normal((min(n, dup), 16)).astype(np.float32)
    stored = np.tile(base, (n // len(base) + 1, 1))[:n]
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    qv = rng.standard_normal((q, 16)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    as_of = rng.uniform(-10, 260, q)
    c = columns(rng, n, dup)
    flags = np.array([deprio, False, True, True, True])
    ranked, fused, conf = exhaustive_top_k(stored, qv, as_of, c, params(c), flags, k)
    want, want_score = brute(stored, qv, as_of, c, deprio, k)
    assert (want[:, 0] == -1).any() and (want[:, 0] >= 0).sum() > q // 2  # both cases occur
    assert np.array_equal(ranked, want)
    ok = want >= 0
    assert np.array_equal(np.isnan(fused), ~ok)
    assert np.abs(fused[ok] - want_score[ok]).max() <= 1e-15
    assert np.array_equal(np.isnan(conf), ~ok[:, 0])


def test_kernel_handles_more_queries_and_vectors_than_one_block():
    rng = np.random.default_rng(3)
    n, q, k = 3000, 1500, 5
    stored = rng.standard_normal((n, 8)).astype(np.float32)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    qv = stored[rng.integers(0, n, q)]
    as_of = rng.uniform(0, 260, q)
    c = columns(rng, n, n)
    flags = np.array([True, False, True, True, True])
    import smartvector_bench.systems.smartvector.fused_kernel as fk
    old = fk.BLOCK_ENTRIES
    fk.BLOCK_ENTRIES = 1500 * 1024  # 1,024-vector blocks: three of them, the last one ragged
    try:
        ranked, _, _ = exhaustive_top_k(stored, qv, as_of, c, params(c), flags, k)
    finally:
        fk.BLOCK_ENTRIES = old
    assert np.array_equal(ranked, brute(stored, qv, as_of, c, True, k)[0])


def test_kernel_bound_holds_when_expired_score_exceeds_one():
    """An unusual config (expired_score > 1: expired versions preferred) must not be pruned away by the
    cheapest bound, which otherwise assumes T <= 1."""
    rng = np.random.default_rng(5)
    n, q, k = 2000, 30, 5
    stored = rng.standard_normal((n, 16)).astype(np.float32)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    qv = stored[rng.integers(0, n, q)]
    as_of = rng.uniform(0, 260, q)
    c = columns(rng, n, n)
    flags = np.array([True, False, True, True, True])
    ranked, _, _ = exhaustive_top_k(stored, qv, as_of, c, params(c, expired=3.0), flags, k)
    want = brute(stored, qv, as_of, c, True, k, expired=3.0)[0]
    expired_top = (as_of >= c.valid_to[np.maximum(want[:, 0], 0)]) & (want[:, 0] >= 0)
    assert expired_top.any()  # the case occurs: an expired version is some query's answer
    assert np.array_equal(ranked, want)
