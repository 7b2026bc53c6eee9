"""Every fast path of SmartVector's formulas against its specification, in one place.

The specification is ``systems/smartvector/signals/`` (temporal, confidence, relational, fusion) composed by
``SmartVector.score`` (one (Q, N) array per signal, then the status key). The fast paths:

- ``scoring.fused`` (numpy, in place, dense or gathered): bit-identical to ``score()`` in float64;
- ``bounds.confidence_bound`` (pre-scaled columns): bit-identical to ``signals.confidence.live_confidence``;
- ``fused_kernel`` (numba): the same ranking as the spec, scores within an ulp (its ``exp2`` is libm's, numpy's
  is its own SIMD routine), under every status policy;
- ``f32_kernel`` (float32 pass, float64 re-score): the spec's ranking and scores bit for bit, under every status
  policy (its certificate and edge cases: ``tests/test_f32_search.py``).
"""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import smartvector_bench.systems.smartvector.fused_kernel as fk
from smartvector_bench.core.run import rank_by_score
from smartvector_bench.systems.smartvector.bounds import confidence_bound
from smartvector_bench.systems.smartvector.retriever import SmartVector
from smartvector_bench.systems.smartvector.scoring import Columns, columns, fused
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams, live_confidence
from smartvector_bench.systems.smartvector.signals.fusion import Weights, fuse
from smartvector_bench.systems.smartvector.signals.temporal import temporal_signal
from smartvector_bench.tools.scale import scale_dataset

from .conftest import compose_config


def _blas_is_shape_invariant() -> bool:
    """Whether this host's float32 matrix product gives one value per (query, vector) pair whatever the shape
    of the call: identical vectors the same cosine, a block of vectors the same cosines as the whole matrix.
    The bit-for-bit tests of the kernels against the spec (one full product) assume it; BLAS does not promise
    it, and some kernels (numpy's OpenBLAS on an AVX-512 host) break it by a few 1e-7."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((7, 16)).astype(np.float32)
    stored = np.tile(base / np.linalg.norm(base, axis=1, keepdims=True), (715, 1))[:5000]
    q = rng.standard_normal((50, 16)).astype(np.float32)
    full = q @ stored.T
    blocks = np.concatenate([q @ stored[i:i + 1000].T for i in range(0, 5000, 1000)], axis=1)
    return bool(np.array_equal(full, blocks) and np.array_equal(full[:, :7 * 714], np.tile(full[:, :7], 714)))


needs_shape_invariant_blas = pytest.mark.skipif(
    not _blas_is_shape_invariant(), reason="this host's float32 BLAS product depends on the call's shape, so the "
    "spec's one full product and the kernel's blocks differ in the last bits (see _blas_is_shape_invariant)")

K = 10
CP = ConfidenceParams()
W = Weights()
T_HALF, EXPIRED = 30.0, 0.05
FEW = settings(max_examples=40, deadline=None)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical, NaN equal to NaN."""
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


@pytest.fixture(scope="module")
def data():
    return scale_dataset(3000, seed=0, n_queries=300)


@pytest.fixture(scope="module")
def served(data):
    cfg = compose_config()["retrievers"]["smartvector"]
    cfg.pop("_target_")
    r = SmartVector(**cfg)
    r.index(data.corpus, data.corpus_vectors, float(np.max(data.queries.as_of)))
    return r


def replaced(r: SmartVector, **search) -> SmartVector:
    """A shallow copy of ``r`` with the given search options (the served fixture stays as it is)."""
    other = copy.copy(r)
    other.search_params = replace(r.search_params, **search)
    return other


def spec_run(r: SmartVector, qv: np.ndarray, as_of: np.ndarray, k: int):
    """The specification's run: ``score()`` (signals/ composed), ranked by ``rank_by_score``."""
    score, key, _ = r.score(r._index.dense_scores(qv), as_of)
    ranked, _ = rank_by_score(key, k)
    top = np.take_along_axis(score, np.where(ranked >= 0, ranked, 0), axis=1)
    return ranked, np.where(ranked >= 0, top, np.nan)


# -- scoring.fused (numpy) == score() ---------------------------------------------------------------------------

def _as_of_strategy(data):
    c = data.corpus
    edges = np.concatenate([c.created_at[:50], c.valid_from[:50], c.valid_to[np.isfinite(c.valid_to)][:50]])
    lo, hi = float(c.created_at.min()) - 30.0, float(c.created_at.max()) + 400.0
    one = st.one_of(st.floats(lo, hi, allow_nan=False), st.sampled_from(edges.tolist()))
    return st.lists(one, min_size=1, max_size=6)


@pytest.mark.parametrize("dormant", ["deprioritize", "exclude", "include"])
def test_fused_is_bit_identical_to_the_spec_score(data, served, dormant):
    """On the served store with random feedback, accesses and penalties added (the floor, the clip and the cap
    all bind somewhere), under each dormancy policy."""
    rng = np.random.default_rng(7)
    n = len(data.corpus)
    store = copy.copy(served.store)
    store.positive, store.negative = rng.integers(0, 4, n) * 1.0, rng.integers(0, 8, n) * 1.0
    store.access, store.penalty = rng.integers(0, 30, n) * 1.0, rng.choice([0.0, 0.15, 0.5, 0.9], n)
    sv = copy.copy(served)
    sv.store, sv.policy, sv._relational_key = store, replace(served.policy, dormant=dormant), None
    conf_all = store.live_confidence(np.array([float(np.median(data.queries.as_of))]))
    assert (conf_all <= CP.min_confidence).any() and (conf_all >= 1.0).any()  # the edges occur
    @FEW
    @given(as_of=_as_of_strategy(data), seed=st.integers(0, 2**31), gathered=st.booleans())
    def check(as_of, seed, gathered):
        rng = np.random.default_rng(seed)
        t = np.array(as_of)
        semantic = rng.uniform(-0.5, 1.5, (len(t), len(data.corpus)))  # clipping is part of the spec
        score, key, _ = sv.score(semantic, t)
        cols = columns(sv)
        if gathered:
            ids = rng.integers(0, len(data.corpus), (len(t), 64))
            f_score, f_key, f_conf = fused(sv, cols, np.take_along_axis(semantic, ids, axis=1), t, ids,
                                           need_confidence=True)
            score, key = np.take_along_axis(score, ids, axis=1), np.take_along_axis(key, ids, axis=1)
            conf = np.take_along_axis(sv.store.live_confidence(t), ids, axis=1)
        else:
            f_score, f_key, f_conf = fused(sv, cols, semantic.copy(), t, need_confidence=True)
            conf = sv.store.live_confidence(t)
        assert same(f_score, score) and same(f_key, key) and same(f_conf, conf)

    check()


@needs_shape_invariant_blas
def test_numpy_exhaustive_search_is_the_spec_run(data, served):
    qv, as_of = data.query_vectors, data.queries.as_of
    run = replaced(served, kernel="numpy").search(qv, as_of, K)
    ranked, scores = spec_run(served, qv, as_of, K)
    assert np.array_equal(run.ranked, ranked) and same(run.scores, scores)


# -- bounds.confidence_bound == live_confidence ---------------------------------------------------------------

@FEW
@given(seed=st.integers(0, 2**31), n=st.integers(1, 200), t=st.floats(-100.0, 1000.0, allow_nan=False))
def test_confidence_bound_is_bit_identical_to_the_spec_live_confidence(seed, n, t):
    rng = np.random.default_rng(seed)
    base = rng.choice([0.0, 0.01, 0.3, 0.95, 1.0], n) * rng.uniform(0.5, 1.0, n)
    decay_from = rng.uniform(-50.0, 900.0, n)
    pos, neg, acc = rng.integers(0, 12, n), rng.integers(0, 12, n), rng.integers(-1, 40, n)
    got = confidence_bound(base, decay_from, CP.positive_boost * pos, CP.negative_penalty * neg,
                           CP.access_reinforcement * np.log1p(np.maximum(acc, 0)), t, CP)
    want = live_confidence(base, decay_from, np.array([t]), pos, neg, acc, CP)[0]
    assert same(got, want)


# -- fused_kernel (numba) ~ the spec --------------------------------------------------------------------------

@FEW
@given(t=st.floats(-1e3, 1e4, allow_nan=False), start=st.floats(-1e3, 1e4, allow_nan=False),
       base=st.floats(0.0, 1.0), fb=st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 50)))
def test_kernel_scalar_steps_are_the_spec_within_an_ulp(t, start, base, fb):
    pos, neg, acc = fb
    decay = fk._decayed(t, start, T_HALF)
    want_t = temporal_signal(np.array([start]), np.array([-np.inf]), np.array([np.inf]), np.array([t]),
                             T_HALF, EXPIRED)[0, 0]
    assert decay == pytest.approx(want_t, rel=4e-16, abs=1e-300)
    conf = fk._live(base * fk._decayed(t, start, CP.half_life_days), CP.positive_boost * pos,
                    CP.negative_penalty * neg, CP.access_reinforcement * np.log1p(acc), CP.min_confidence)
    want_c = live_confidence(np.array([base]), np.array([start]), np.array([t]), np.array([pos]),
                             np.array([neg]), np.array([acc]), CP)[0, 0]
    assert conf == pytest.approx(want_c, rel=4e-16, abs=1e-300)


@needs_shape_invariant_blas
@pytest.mark.parametrize("dormant", ["deprioritize", "exclude", "include"])
@pytest.mark.parametrize("reported", ["score", "live_confidence"])
@pytest.mark.parametrize("kernel", ["numba", "float32"])
def test_compiled_kernel_ranks_as_the_spec(data, served, dormant, reported, kernel):
    """numba: the spec's ranks, scores within an ulp; float32: the spec's ranks and scores bit for bit (its
    candidates are re-scored by ``fused``)."""
    qv, as_of = data.query_vectors, data.queries.as_of
    base, policy = served.search_params, served.policy
    served.policy = replace(policy, dormant=dormant, reported_confidence=reported)
    try:
        served.search_params = replace(base, kernel=kernel)
        run = served.search(qv, as_of, K)
        served.search_params = replace(base, kernel="numpy")  # the spec's run, bit for bit (checked above)
        ref = served.search(qv, as_of, K)
        ranked, scores = spec_run(served, qv, as_of, K)
    finally:
        served.search_params, served.policy = base, policy
    assert np.array_equal(run.ranked, ranked) and np.array_equal(ref.ranked, ranked)
    assert (run.ranked[:, 0] >= 0).mean() > 0.9  # the comparison is not over empty runs
    assert np.array_equal(np.isnan(run.scores), np.isnan(scores))
    assert np.nanmax(np.abs(run.scores - scores)) <= 1e-15
    assert np.array_equal(np.isnan(run.confidence), np.isnan(ref.confidence))
    assert np.nanmax(np.abs(run.confidence - ref.confidence)) <= 1e-15
    if kernel == "float32":
        assert same(run.scores, scores) and same(run.confidence, ref.confidence)


def kernel_params(c: Columns, expired: float = EXPIRED) -> np.ndarray:
    """The kernel's ``fp`` vector for the default parameters (``expired``: T outside the validity window)."""
    return np.array([T_HALF, expired, CP.half_life_days, CP.min_confidence, CP.dormant_threshold, W.semantic,
                     W.temporal, W.confidence, W.total(), c.rel.max()])


def kernel_columns(rng, n, dup: int) -> tuple[Columns, dict]:
    """n vectors whose metadata repeats every ``dup`` rows (exact ties when the vectors repeat too): the
    kernel's pre-scaled columns, and the raw feedback, accesses and R the spec takes."""
    def col(x):
        return np.tile(x, n // dup + 1)[:n]
    created = col(rng.integers(0, 200, dup).astype(np.float64))
    raw = {"base": col(rng.random(dup)), "pos": col(rng.integers(0, 3, dup)), "neg": col(rng.integers(0, 3, dup)),
           "acc": col(rng.integers(0, 5, dup)), "R": col(0.1 * rng.random(dup))}
    c = Columns(created=created, valid_from=created,
                valid_to=col(np.where(rng.random(dup) < 0.3, created[:dup] + 60, np.inf)), decay_from=created,
                base=raw["base"], fb_pos=CP.positive_boost * raw["pos"], fb_neg=CP.negative_penalty * raw["neg"],
                access=CP.access_reinforcement * np.log1p(raw["acc"]), rel=W.relational * raw["R"],
                succ_from=col(np.where(rng.random(dup) < 0.2, created[:dup] + 90, np.inf)),
                archived_at=col(np.where(rng.random(dup) < 0.1, created[:dup] + 150, np.inf)),
                ingested_at=created.copy())
    return c, raw


def spec_brute(stored, qv, as_of, c: Columns, raw: dict, deprio: bool, k: int, expired: float = EXPIRED):
    """The spec's top-k over every vector: signals/ composed, then the status key (deprecated, archived and
    not-yet-created excluded; dormant ranked last if ``deprio``)."""
    t = as_of[:, None]
    temporal = temporal_signal(c.created, c.valid_from, c.valid_to, as_of, T_HALF, expired)
    conf = live_confidence(raw["base"], c.decay_from, as_of, raw["pos"], raw["neg"], raw["acc"], CP)
    score = fuse(W, (qv @ stored.T).astype(np.float64), temporal, conf, np.broadcast_to(raw["R"], temporal.shape))
    key = score - 2.0 * ((conf < CP.dormant_threshold) & deprio)
    key[(t >= c.succ_from) | (t >= c.archived_at) | (t < c.created) | (t < c.ingested_at)] = -np.inf
    ranked, _ = rank_by_score(key, k)
    return ranked, np.take_along_axis(score, np.maximum(ranked, 0), axis=1)


def _unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("deprio", [True, False])
@pytest.mark.parametrize("dup", [7, 5000])
def test_kernel_equals_the_spec_brute_force(deprio, dup):
    rng = np.random.default_rng(dup)
    n, q, k = 5000, 40, 10
    base = _unit(rng, min(n, dup), 16)
    stored = np.tile(base, (n // len(base) + 1, 1))[:n]
    qv = _unit(rng, q, 16)
    as_of = rng.uniform(-10, 260, q)
    c, raw = kernel_columns(rng, n, dup)
    flags = np.array([deprio, False, True, True, True])
    ranked, top, conf = fk.exhaustive_top_k(stored, qv, as_of, c, kernel_params(c), flags, k)
    want, want_score = spec_brute(stored, qv, as_of, c, raw, deprio, k)
    assert (want[:, 0] == -1).any() and (want[:, 0] >= 0).sum() > q // 2  # both cases occur
    assert np.array_equal(ranked, want)
    ok = want >= 0
    assert np.array_equal(np.isnan(top), ~ok)
    assert np.abs(top[ok] - want_score[ok]).max() <= 1e-15
    assert np.array_equal(np.isnan(conf), ~ok[:, 0])


def near_queries(seed: int, n: int, q: int, d: int):
    """n unit vectors, q queries that are copies of them at random as_of in [0, 260), and their columns."""
    rng = np.random.default_rng(seed)
    stored = _unit(rng, n, d)
    qv = stored[rng.integers(0, n, q)]
    as_of = rng.uniform(0, 260, q)
    return (stored, qv, as_of, *kernel_columns(rng, n, n))


DEPRIORITIZE = np.array([True, False, True, True, True])  # kernel flags: dormant last, the rest excluded


def test_kernel_handles_more_queries_and_vectors_than_one_block(monkeypatch):
    k = 5
    stored, qv, as_of, c, raw = near_queries(3, 3000, 1500, 8)
    flags = DEPRIORITIZE
    monkeypatch.setattr(fk, "BLOCK_ENTRIES", 1500 * 1024)  # 1,024-vector blocks: three, the last one ragged
    ranked, _, _ = fk.exhaustive_top_k(stored, qv, as_of, c, kernel_params(c), flags, k)
    assert np.array_equal(ranked, spec_brute(stored, qv, as_of, c, raw, True, k)[0])


def test_kernel_bound_holds_when_expired_score_exceeds_one():
    """An unusual config (expired_score > 1: expired versions preferred) must not be pruned away by the
    cheapest bound, which otherwise assumes T <= 1."""
    k = 5
    stored, qv, as_of, c, raw = near_queries(5, 2000, 30, 16)
    flags = DEPRIORITIZE
    ranked, _, _ = fk.exhaustive_top_k(stored, qv, as_of, c, kernel_params(c, expired=3.0), flags, k)
    want = spec_brute(stored, qv, as_of, c, raw, True, k, expired=3.0)[0]
    expired_top = (as_of >= c.valid_to[np.maximum(want[:, 0], 0)]) & (want[:, 0] >= 0)
    assert expired_top.any()  # the case occurs: an expired version is some query's answer
    assert np.array_equal(ranked, want)
