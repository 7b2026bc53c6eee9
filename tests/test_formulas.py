"""Every fast path of SmartVector's formulas against its specification, in one place.

The specification is ``systems/smartvector/signals/`` (temporal, confidence, relational, fusion) composed by
``SmartVector.score`` (one (Q, N) array per signal, then the status key). The fast paths:

- ``scoring.fused`` (numpy, in place, dense or gathered): bit-identical to ``score()`` in float64;
- ``bounds.confidence_bound`` (pre-scaled columns): bit-identical to ``signals.confidence.live_confidence``;
- ``fused_kernel`` (numba): the same ranking as the spec, scores within an ulp (its ``exp2`` is libm's, numpy's
  is its own SIMD routine), under every status policy;
- ``f32_kernel`` (float32 pass, float64 re-score): the spec's ranking and scores bit for bit, under every status
  policy (its certificate and edge cases: ``tests/test_f32_search.py``).

A float32 BLAS product may round a cosine differently with the call's shape (its blocking, a row's place in
it), and the kernels call it by blocks. So the bit-for-bit tests use dyadic vectors (``dyadic_unit``), whose
cosines are exact in any summation order, at the model's dimension and the kernels' own block sizes; on
random vectors the tests check the certificate instead (``certificate_violations``): the run is the exact
one up to the float32 rounding of the cosine. Both hold on every host.
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


# -- inputs and checks that hold on every host -----------------------------------------------------------------

D = 384  # the model's dimension (all-MiniLM-L6-v2)
U32 = 2.0 ** -24  # float32 unit roundoff
# above the float64 formula's own rounding on either side (a few ulps of 1) and libm's exp2 against numpy's;
# far below the cosine's share of the bound (~1e-5)
F64_SLACK = 1e-14


def dyadic_unit(rng, n: int, d: int = D) -> np.ndarray:
    """n unit float32 vectors with 4^k nonzero entries ±2^-k each (k = 2, 3 or 4 per vector). A product of two
    entries is a multiple of 2^-8, so is every partial sum of a dot product, and none exceeds 1 in size
    (Cauchy-Schwarz): float32 holds each exactly, so BLAS gives the exact cosine whatever its summation order
    or the call's shape, and equal cosines (exact ties) are common."""
    k = rng.integers(2, 5, n)
    on = rng.random((n, d)).argsort(axis=1) < (4 ** k)[:, None]  # 4^k random places per row
    sign = rng.choice(np.array([-1.0, 1.0]), (n, d))
    return np.where(on, sign * 2.0 ** -k[:, None], 0.0).astype(np.float32)


def dyadic_near(rng, rows: np.ndarray, flip: float = 0.25) -> np.ndarray:
    """Copies of dyadic vectors with a random share (up to ``flip``) of their signs flipped: still unit and
    dyadic, at cosine 1 - 2 x (the flipped share of nonzeros) from their source."""
    return np.where(rng.random(rows.shape) < rng.uniform(0, flip, (len(rows), 1)), -rows, rows)


def _unit(rng, n, d=D):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def tie_rule_ties(ranked: np.ndarray, key: np.ndarray) -> int:
    """Asserts the harness's order of ``ranked`` (Q, k) on the dense keys ``key`` (Q, N): down each list, and
    from its last hit to every live vector left out, keys never rise and an equal key comes from a higher
    corpus index (ties go to the lower index); a list is short only when it holds every live vector. Returns
    the number of exact ties met, so that a caller can assert the rule was exercised."""
    q, k = ranked.shape
    rows = np.arange(q)
    hit = ranked >= 0
    hk = np.where(hit, key[rows[:, None], np.maximum(ranked, 0)], -np.inf)
    a, b, both = hk[:, :-1], hk[:, 1:], hit[:, 1:]
    assert (~both | (a > b) | ((a == b) & (ranked[:, :-1] < ranked[:, 1:]))).all()
    ties = int((both & (a == b)).sum())
    taken = np.zeros(key.shape, dtype=bool)
    qi, si = np.nonzero(hit)
    taken[qi, ranked[qi, si]] = True
    left = np.isfinite(key) & ~taken
    m = hit.sum(axis=1)
    assert not left[m < k].any()
    last = np.maximum(m - 1, 0)
    lk, li = hk[rows, last][:, None], ranked[rows, last][:, None]
    assert (~left | (key < lk) | ((key == lk) & (np.arange(key.shape[1]) > li))).all()
    return ties + int((left & (key == lk)).sum())


def cosine_bound(qv: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """Per query, a bound of |float32 BLAS cosine - exact| over the stored vectors: gamma_d |q| max|s|, with
    gamma_d = d u / (1 - d u), the error bound of a d-term dot product in any summation order, blocking or
    fused multiply-adds (Higham, Accuracy and Stability of Numerical Algorithms, 3.1; sum |q_i s_i| <= |q| |s|)."""
    d = qv.shape[1]
    gamma = d * U32 / (1.0 - d * U32)
    norm = np.linalg.norm(stored.astype(np.float64), axis=1).max(initial=0.0)
    return gamma * np.linalg.norm(qv.astype(np.float64), axis=1) * norm


def certificate_violations(ranked, scores, key, score, bound) -> int:
    """The (query, hit) entries of a run from float32 cosines that break what the exact keys ``key`` and scores
    ``score`` (Q, N, from float64 cosines) allow, each of the run's own keys and scores being within ``bound``
    (Q,) of the exact ones: a hit's score within the bound of its exact score; its exact key at least the next
    hit's, and the best left-out key, minus twice the bound; min(k, live) distinct live hits, then padding."""
    q, k = ranked.shape
    rows = np.arange(q)[:, None]
    hit = ranked >= 0
    at = np.maximum(ranked, 0)
    hk = np.where(hit, key[rows, at], np.nan)
    b = np.asarray(bound)[:, None]
    bad = hit & ~(np.abs(scores - score[rows, at]) <= b)
    bad |= np.isnan(scores) != ~hit
    bad |= hit & ~np.isfinite(hk)
    bad[:, 1:] |= hit[:, 1:] & ~(hk[:, :-1] >= hk[:, 1:] - 2 * b)
    taken = np.zeros(key.shape, dtype=bool)
    qi, si = np.nonzero(hit)
    taken[qi, ranked[qi, si]] = True
    best_left = np.where(taken, -np.inf, key).max(axis=1)[:, None]
    bad |= hit & ~(hk >= best_left - 2 * b)
    m = hit.sum(axis=1)
    bad[:, 0] |= (m != np.minimum(k, np.isfinite(key).sum(axis=1))) | (taken.sum(axis=1) != m)
    bad[:, 0] |= (hit[:, 1:] & ~hit[:, :-1]).any(axis=1)  # a hit after padding
    return int(bad.sum())


def semantic_share(w: Weights) -> float:
    """d key / d cosine: the fused score is (w_s clip(cos, 0, 1) + ...) / W."""
    return w.semantic / w.total()


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


def spec_keys(cos, as_of, c: Columns, raw: dict, deprio: bool, expired: float = EXPIRED):
    """The spec's dense (score, key) on the (Q, N) float64 cosines ``cos``: signals/ composed, then the status
    key (deprecated, archived and not-yet-created excluded; dormant ranked last if ``deprio``)."""
    t = as_of[:, None]
    temporal = temporal_signal(c.created, c.valid_from, c.valid_to, as_of, T_HALF, expired)
    conf = live_confidence(raw["base"], c.decay_from, as_of, raw["pos"], raw["neg"], raw["acc"], CP)
    score = fuse(W, cos, temporal, conf, np.broadcast_to(raw["R"], temporal.shape))
    key = score - 2.0 * ((conf < CP.dormant_threshold) & deprio)
    key[(t >= c.succ_from) | (t >= c.archived_at) | (t < c.created) | (t < c.ingested_at)] = -np.inf
    return score, key


ROWS = 256  # queries per block of a dense spec (bounds its (Q, N) arrays)


def spec_brute(stored, qv, as_of, c: Columns, raw: dict, deprio: bool, k: int, expired: float = EXPIRED):
    """The spec's top k over every vector, by blocks of queries (a dyadic cosine is exact in any product):
    (ranked, scores, the exact ties met along the tie rule, ``tie_rule_ties``)."""
    ranked, top, ties = [], [], 0
    for lo in range(0, len(qv), ROWS):
        b = slice(lo, lo + ROWS)
        score, key = spec_keys((qv[b] @ stored.T).astype(np.float64), as_of[b], c, raw, deprio, expired)
        r, _ = rank_by_score(key, k)
        ties += tie_rule_ties(r, key)
        ranked.append(r)
        top.append(np.take_along_axis(score, np.maximum(r, 0), axis=1))
    return np.concatenate(ranked), np.concatenate(top), ties


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


def near_queries(seed: int, n: int, q: int):
    """n dyadic unit vectors, q queries near them (``dyadic_near``) at random as_of in [0, 260), and their
    columns."""
    rng = np.random.default_rng(seed)
    stored = dyadic_unit(rng, n)
    qv = dyadic_near(rng, stored[rng.integers(0, n, q)])
    as_of = rng.uniform(0, 260, q)
    return (stored, qv, as_of, *kernel_columns(rng, n, n))


def repeated_across_blocks(seed: int, n: int, q: int, dyadic: bool = True):
    """n unit vectors (n even) whose second half repeats the first, vectors and metadata, so that ties straddle
    the kernels' vector blocks (exact ones if ``dyadic``; else Gaussian vectors); q queries near them at random
    as_of in [-10, 260) (some before every creation: empty runs); and their columns."""
    rng = np.random.default_rng(seed)
    half = dyadic_unit(rng, n // 2) if dyadic else _unit(rng, n // 2)
    stored = np.concatenate([half, half])
    near = stored[rng.integers(0, n, q)]
    if dyadic:
        qv = dyadic_near(rng, near)
    else:
        qv = near + 0.5 * _unit(rng, q)
        qv = (qv / np.linalg.norm(qv, axis=1, keepdims=True)).astype(np.float32)
    as_of = rng.uniform(-10, 260, q)
    return (stored, qv, as_of, *kernel_columns(rng, n, n // 2))


class BlockSpy:
    """Wraps a kernel's per-block scan functions (module attributes) to record each block's (rows, first vector,
    width), so that a test can assert the shapes it crosses."""

    def __init__(self, monkeypatch, module, *names):
        self.blocks = []
        for name in names:
            scan = getattr(module, name)
            monkeypatch.setattr(module, name, self._wrap(name, scan))

    def _wrap(self, name, scan):
        def spied(cos, j0, *rest):
            self.blocks.append((name, cos.shape[0], j0, cos.shape[1]))
            return scan(cos, j0, *rest)
        return spied

    def assert_crosses(self, n: int):
        """More than one query block and more than one vector block, the last vector block ragged."""
        rows = {b[1] for b in self.blocks}
        starts = sorted({b[2] for b in self.blocks})
        widths = {b[3] for b in self.blocks}
        assert len(rows) > 1 and len(starts) > 2 and len(widths) > 1, self.blocks
        assert starts[-1] + min(widths) == n  # the last block is the narrow one


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
