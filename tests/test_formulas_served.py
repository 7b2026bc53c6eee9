"""SmartVector's fast paths against its specification on the served scale store: ``scoring.fused``, the numpy
exhaustive search and ``bounds.confidence_bound`` bit for bit, the compiled kernels (numba within an ulp, float32
bit for bit) under every status policy, and every exhaustive path within the certificate on the model's vectors."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import smartvector_bench.systems.smartvector.fused_kernel as fk
from smartvector_bench.core.run import rank_by_score
from smartvector_bench.systems.smartvector.bounds import confidence_bound
from smartvector_bench.systems.smartvector.retriever import SmartVector
from smartvector_bench.systems.smartvector.scoring import columns, fused
from smartvector_bench.systems.smartvector.signals.confidence import live_confidence
from smartvector_bench.systems.smartvector.signals.temporal import temporal_signal
from smartvector_bench.tools.scale import scale_dataset

from .conftest import compose_config
from .formula_cases import (CP, EXPIRED, F64_SLACK, K, T_HALF, certificate_violations, cosine_bound, dyadic_near,
                            dyadic_unit, semantic_share, tie_rule_ties)

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


def spec_run(r: SmartVector, cos: np.ndarray, as_of: np.ndarray, k: int):
    """The specification's run on the (Q, N) float64 cosines ``cos``: ``score()`` (signals/ composed), ranked by
    ``rank_by_score``; (ranked, scores, the dense keys)."""
    score, key, _ = r.score(cos, as_of)
    ranked, _ = rank_by_score(key, k)
    top = np.take_along_axis(score, np.where(ranked >= 0, ranked, 0), axis=1)
    return ranked, np.where(ranked >= 0, top, np.nan), key


@pytest.fixture(scope="module")
def dyadic(data, served):
    """``served`` re-indexed on dyadic vectors (the same store, statuses and edges) and dyadic queries near
    them (``dyadic_near``): every cosine is exact in any BLAS call, so every path owes the spec's bits."""
    rng = np.random.default_rng(1)
    stored = dyadic_unit(rng, len(data.corpus))
    qv = dyadic_near(rng, stored[rng.integers(0, len(stored), len(data.query_vectors))])
    sv = copy.copy(served)
    sv.bind(served.corpus, stored, served.store, served.agent)
    return sv, qv


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


def test_numpy_exhaustive_search_is_the_spec_run(data, dyadic):
    """Query blocks of ``query_batch`` rows (300 queries: two), each its own BLAS product."""
    sv, qv = dyadic
    as_of = data.queries.as_of
    assert len(qv) > sv.exhaustive_batch()
    run = replaced(sv, kernel="numpy").search(qv, as_of, K)
    ranked, scores, key = spec_run(sv, sv._index.dense_scores(qv), as_of, K)
    assert tie_rule_ties(ranked, key) > 0  # equal cosines and metadata: exact ties, by the lower index
    assert np.array_equal(run.ranked, ranked) and same(run.scores, scores)
    assert (ranked[:, 0] >= 0).mean() > 0.9  # the comparison is not over empty runs


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
@example(t=0.43359375, start=0.0, base=0.375, fb=(0, 3, 0))  # a penalty cancels most of base * decay
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
    # exp2's last bit moves base * decay by an ulp of it; a penalty that cancels most of it leaves that absolute
    # error on a smaller result, so the bound is relative to the largest term, not to the result
    terms = (base, CP.positive_boost * pos, CP.negative_penalty * neg, CP.access_reinforcement * np.log1p(acc),
             CP.min_confidence)
    assert conf == pytest.approx(want_c, rel=4e-16, abs=4e-16 * max(terms))


@pytest.mark.parametrize("dormant", ["deprioritize", "exclude", "include"])
@pytest.mark.parametrize("reported", ["score", "live_confidence"])
@pytest.mark.parametrize("kernel", ["numba", "float32"])
def test_compiled_kernel_ranks_as_the_spec(data, dyadic, dormant, reported, kernel):
    """numba: the spec's ranks, scores within an ulp; float32: the spec's ranks and scores bit for bit (its
    candidates are re-scored by ``fused``)."""
    sv, qv = dyadic
    as_of = data.queries.as_of
    sv = replaced(sv, kernel=kernel)
    sv.policy = replace(sv.policy, dormant=dormant, reported_confidence=reported)
    run = sv.search(qv, as_of, K)
    ref = replaced(sv, kernel="numpy").search(qv, as_of, K)  # the spec's run, bit for bit (checked above)
    ranked, scores, _ = spec_run(sv, sv._index.dense_scores(qv), as_of, K)
    assert np.array_equal(run.ranked, ranked) and np.array_equal(ref.ranked, ranked)
    assert (run.ranked[:, 0] >= 0).mean() > 0.9  # the comparison is not over empty runs
    assert np.array_equal(np.isnan(run.scores), np.isnan(scores))
    assert np.nanmax(np.abs(run.scores - scores)) <= 1e-15
    assert np.array_equal(np.isnan(run.confidence), np.isnan(ref.confidence))
    assert np.nanmax(np.abs(run.confidence - ref.confidence)) <= 1e-15
    if kernel == "float32":
        assert same(run.scores, scores) and same(run.confidence, ref.confidence)


@pytest.mark.parametrize("dormant", ["deprioritize", "exclude", "include"])
@pytest.mark.parametrize("kernel", ["float32", "numba", "numpy"])
def test_search_on_model_vectors_is_within_the_certificate(data, served, dormant, kernel):
    """On the scale data's own vectors, whose float32 cosines a BLAS call's shape may change in the last bits:
    every exhaustive path's run is the exact one (the spec on float64 cosines) up to the cosine's rounding."""
    qv, as_of = np.asarray(data.query_vectors, dtype=np.float32), data.queries.as_of
    sv = replaced(served, kernel=kernel)
    sv.policy = replace(sv.policy, dormant=dormant)
    run = sv.search(qv, as_of, K)
    stored = sv._index.stored()
    score, key, _ = sv.score(qv.astype(np.float64) @ stored.astype(np.float64).T, as_of)
    bound = semantic_share(sv.weights) * cosine_bound(qv, stored) + F64_SLACK
    assert certificate_violations(run.ranked, run.scores, key, score, bound) == 0
    assert (run.ranked[:, 0] >= 0).mean() > 0.9
