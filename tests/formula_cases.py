"""Inputs and checks shared by the tests of SmartVector's fast paths against its specification
(tests/test_formulas_served.py, tests/test_formulas_kernel.py, tests/test_f32_search.py).

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
one up to the float32 rounding of the cosine. Both hold on every host."""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.run import rank_by_score
from smartvector_bench.systems.smartvector.scoring import Columns
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams, live_confidence
from smartvector_bench.systems.smartvector.signals.fusion import Weights, fuse
from smartvector_bench.systems.smartvector.signals.temporal import temporal_signal

K = 10
CP = ConfidenceParams()
W = Weights()
T_HALF, EXPIRED = 30.0, 0.05


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
