"""The float32 exhaustive pass (``f32_kernel``) against the specification: the same top k (ids and order) and
the same float64 scores, on exact ties, times on window edges, dormant vectors, k above the number of live
vectors, ragged blocks, several as_of groups, and queries its certificate has to widen or give back.

Bit for bit on dyadic vectors (exact cosines in any BLAS call: ``formula_cases.dyadic_unit``), at the model's
dimension and the kernel's own block sizes; on Gaussian vectors, the run is the exact one (float64 cosines) up
to the cosine's float32 rounding (``formula_cases.certificate_violations``), and every float32 key lies within
the kernel's own rounding bound of its float64 key."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numba
import numpy as np
import pytest

import smartvector_bench.systems.smartvector.f32_kernel as fk
from smartvector_bench.core.run import rank_by_score
from smartvector_bench.systems.smartvector.retriever import StatusPolicy
from smartvector_bench.systems.smartvector.scoring import Columns, fused
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams
from smartvector_bench.systems.smartvector.signals.fusion import Weights
from smartvector_bench.systems.smartvector.signals.temporal import TemporalParams

from .formula_cases import (EXPIRED, F64_SLACK, ROWS, BlockSpy, _unit, certificate_violations, cosine_bound,
                            dyadic_near, dyadic_unit, kernel_columns, near_queries, repeated_across_blocks,
                            semantic_share, spec_brute, tie_rule_ties)


@dataclass
class Scorer:
    """What ``fused`` and the kernel read of a SmartVector: weights, parameters, status policy."""

    policy: StatusPolicy = field(default_factory=StatusPolicy)
    temporal: TemporalParams = field(default_factory=TemporalParams)
    weights: Weights = field(default_factory=Weights)
    conf_params: ConfidenceParams = field(default_factory=ConfidenceParams)
    exclude: list = field(default_factory=lambda: ["DEPRECATED", "ARCHIVED"])

    def _excludes_dormant(self) -> bool:
        return self.policy.dormant == "exclude" or "DORMANT" in self.exclude


def spec(sv: Scorer, stored, qv, as_of, c: Columns, k: int):
    """The spec's run on every vector: ``fused`` on the dense cosines (bit-identical to ``score()``,
    tests/test_formulas_served.py), ranked by ``rank_by_score``, by blocks of queries (a dyadic cosine is exact
    in any product); (ranked, scores, the exact ties met along the tie rule)."""
    ranked, top, ties = [], [], 0
    for lo in range(0, len(qv), ROWS):
        b = slice(lo, lo + ROWS)
        score, key, _ = fused(sv, c, (qv[b] @ stored.T).astype(np.float64), as_of[b])
        r, _ = rank_by_score(key, k)
        ties += tie_rule_ties(r, key)
        ranked.append(r)
        top.append(np.where(r >= 0, np.take_along_axis(score, np.maximum(r, 0), axis=1), np.nan))
    return np.concatenate(ranked), np.concatenate(top), ties


def check(sv, stored, qv, as_of, c, k, **kw):
    """The kernel's run against the spec's on the queries it certified: (ranked, the spec's, the rows given
    back, the exact ties met)."""
    ranked, top, _, rest = fk.exhaustive_top_k_f32(sv, c, stored, qv, as_of, k, **kw)
    want, want_top, ties = spec(sv, stored, qv, as_of, c, k)
    done = np.setdiff1d(np.arange(len(qv)), rest)
    assert np.array_equal(ranked[done], want[done])
    assert np.array_equal(top[done], want_top[done], equal_nan=True)  # bit for bit: re-scored by fused
    return ranked, want, rest, ties


def tied_case(seed: int, n: int, q: int, dup: int):
    """n dyadic vectors whose vectors and metadata repeat every ``dup`` rows (exact ties), queries near them at
    random as_of, a third of them exactly on a vector's creation, validity end or successor's start (window
    edges)."""
    rng = np.random.default_rng(seed)
    base = dyadic_unit(rng, min(n, dup))
    stored = np.tile(base, (n // len(base) + 1, 1))[:n]
    qv = dyadic_near(rng, base[rng.integers(0, len(base), q)])
    c, _ = kernel_columns(rng, n, dup)
    edges = np.concatenate([c.created, c.valid_to[np.isfinite(c.valid_to)], c.succ_from[np.isfinite(c.succ_from)]])
    as_of = np.where(rng.random(q) < 0.35, rng.choice(edges, q), rng.uniform(-10, 260, q))
    as_of[:2] = -5.0  # before every creation: an empty run
    return stored, qv, as_of, c


@pytest.mark.parametrize("dormant", ["deprioritize", "exclude", "include"])
@pytest.mark.parametrize("dup", [7, 300, 5000])
def test_top_k_is_the_spec_on_ties_and_window_edges(dormant, dup):
    sv = Scorer(policy=StatusPolicy(dormant=dormant))
    stored, qv, as_of, c = tied_case(dup, 5000, 60, dup)
    ranked, want, rest, ties = check(sv, stored, qv, as_of, c, 10)
    assert len(rest) == 0
    assert (want[:, 0] == -1).any() and (want[:, 0] >= 0).sum() > 30  # empty and full runs both occur
    assert ties > 0 or dup == len(stored)  # repeated vectors and metadata: exact ties, by the lower index
    _, _, conf = fused(sv, c, (qv @ stored.T).astype(np.float64), as_of, need_confidence=True)
    assert (conf < sv.conf_params.dormant_threshold).any()  # dormant vectors occur


def test_agrees_with_the_signals_composed():
    """The same run as ``signals/`` composed directly (formula_cases.spec_brute), not only as ``fused``."""
    rng = np.random.default_rng(11)
    n, q, k = 4000, 50, 10
    stored = dyadic_unit(rng, n)
    qv = dyadic_near(rng, stored[rng.integers(0, n, q)])
    c, raw = kernel_columns(rng, n, n)
    as_of = rng.uniform(-10, 260, q)
    ranked, top, _, rest = fk.exhaustive_top_k_f32(Scorer(), c, stored, qv, as_of, k)
    want, want_score, _ = spec_brute(stored, qv, as_of, c, raw, True, k)
    assert len(rest) == 0 and np.array_equal(ranked, want)
    ok = want >= 0
    assert np.abs(top[ok] - want_score[ok]).max() <= 1e-15


def test_k_above_the_live_vectors_pads():
    stored, qv, as_of, c = tied_case(3, 400, 30, 400)
    as_of = np.full(30, 5.0)  # early: few vectors created yet
    ranked, want, rest, _ = check(Scorer(), stored, qv, as_of, c, 120)
    live = (want >= 0).sum(axis=1)
    assert len(rest) == 0 and (live < 120).all() and (live > 0).any()


def test_ragged_blocks_chunks_and_query_blocks(monkeypatch):
    monkeypatch.setattr(fk, "CHUNK", 96)
    monkeypatch.setattr(fk, "TILE_ROWS", 48)  # 150 rows cross row and vector tiles
    monkeypatch.setattr(fk, "TILE_WIDTH", 700)
    monkeypatch.setattr(fk, "MAX_WIDTH", 2800)
    monkeypatch.setattr(fk, "PARALLEL_FROM", 0)  # the parallel column build too
    stored, qv, as_of, c, _ = near_queries(3, 3000, 150)
    ranked, want, rest, _ = check(Scorer(), stored, qv, as_of, c, 5)
    assert len(rest) == 0 and (want[:, 0] >= 0).all()
    assert fk.tile_shape(3, 3000) == (3, 2800)
    check(Scorer(), stored, qv[:3], as_of[:3], c, 5)  # a few queries: wider tiles, the last ragged


def test_widens_on_more_ties_than_kept_and_gives_back_past_the_limit(monkeypatch):
    """With every vector repeated 40 times, 26 kept cannot certify: the query is re-run with more. Past
    MAX_KEPT it is returned for the caller's float64 path, never answered from an uncertified set."""
    stored, qv, as_of, c = tied_case(5, 4000, 20, 100)
    _, _, rest, _ = check(Scorer(), stored, qv, as_of, c, 10, extra=16)
    assert len(rest) == 0
    monkeypatch.setattr(fk, "MAX_KEPT", 64)
    _, want, rest, _ = check(Scorer(), stored, qv, as_of, c, 10, extra=16)
    assert len(rest) > 0 and (want[rest, 0] >= 0).all()


def test_top_k_across_blocks_at_the_kernels_sizes(monkeypatch):
    """Two ``TILE_ROWS`` of queries and a few more (a ragged row tile), vectors over eight ``TILE_WIDTH``s twice
    and a last tile narrower than a ``CHUNK`` (a ragged vector tile), every vector repeated half the corpus later
    (exact ties across tiles, and across the workers' shares, merged); then a few queries (wider tiles)."""
    n, q = 2 * (8 * fk.TILE_WIDTH + fk.CHUNK // 3), 2 * fk.TILE_ROWS + fk.SERIAL_BELOW // 2
    stored, qv, as_of, c, _ = repeated_across_blocks(8, n, q)
    spy = BlockSpy(monkeypatch, fk, "scan_block", "scan_block_serial")
    ranked, want, rest, ties = check(Scorer(), stored, qv, as_of, c, 9)  # odd: a tied pair across the cut
    spy.assert_crosses(n)
    assert {b[0] for b in spy.blocks} == {"scan_block"}  # on one thread per worker
    assert max(b[1] for b in spy.blocks) == fk.TILE_ROWS and max(b[3] for b in spy.blocks) == fk.TILE_WIDTH
    assert sorted({b[2] for b in spy.blocks}) == list(range(0, n, fk.TILE_WIDTH))  # the grid, whatever the threads
    assert len(rest) == 0 and ties > 0 and (want[:, 0] >= 0).mean() > 0.9
    spy.blocks.clear()
    few = fk.SERIAL_BELOW * 2 + fk.SERIAL_BELOW // 2
    _, want, rest, ties = check(Scorer(), stored, qv[:few], as_of[:few], c, 9)
    width = fk.tile_shape(few, n)[1]
    assert fk.TILE_WIDTH < width <= fk.MAX_WIDTH
    assert {b[1] for b in spy.blocks} == {few} and max(b[3] for b in spy.blocks) == width
    assert sorted({b[2] for b in spy.blocks}) == list(range(0, n, width))
    assert len(rest) == 0 and ties > 0


@pytest.mark.parametrize("n, q", [(3 * fk.TILE_WIDTH + 77, 261), (2 * fk.MAX_WIDTH + 77, 5)])
def test_scan_does_not_depend_on_the_thread_count(n, q):
    """numba on one thread or two, BLAS on two or one: the same run, bit for bit (every cosine from a tile of the
    same shape, the workers' best keys merged), on a host whose sgemm gives a row other bits in a product of
    another row count too; the caller's thread count is left as it was. 261 queries: four tiles over two
    workers; 5 queries: wide tiles."""
    from threadpoolctl import threadpool_limits

    stored, qv, as_of, c, _ = repeated_across_blocks(11, n, q, dyadic=False)
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            with threadpool_limits(3 - threads, user_api="blas"):
                runs.append(fk.exhaustive_top_k_f32(Scorer(), c, stored, qv, as_of, 10))
            assert numba.get_num_threads() == threads
    finally:
        numba.set_num_threads(before)
    if len(runs) < 2:
        pytest.skip("one core: no second thread count to compare")
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(*runs))
    assert (runs[0][0][:, 0] >= 0).mean() > 0.5


def test_random_vectors_are_within_the_certificate(monkeypatch):
    """Gaussian vectors at the same shapes: the run is the exact one (the spec on float64 cosines) up to the
    cosine's float32 rounding, whatever this host's BLAS does with the blocks."""
    n, q = 2 * (8 * fk.TILE_WIDTH + fk.CHUNK // 3), 2 * fk.TILE_ROWS + fk.SERIAL_BELOW // 2
    stored, qv, as_of, c, _ = repeated_across_blocks(10, n, q, dyadic=False)
    spy = BlockSpy(monkeypatch, fk, "scan_block", "scan_block_serial")
    sv = Scorer()
    ranked, top, _, rest = fk.exhaustive_top_k_f32(sv, c, stored, qv, as_of, 10)
    spy.assert_crosses(n)
    assert len(rest) == 0 and (ranked[:, 0] >= 0).mean() > 0.9
    bound = semantic_share(sv.weights) * cosine_bound(qv, stored) + F64_SLACK
    exact, bad = stored.T.astype(np.float64), 0
    for lo in range(0, q, ROWS):
        b = slice(lo, lo + ROWS)
        score, key, _ = fused(sv, c, qv[b].astype(np.float64) @ exact, as_of[b])
        bad += certificate_violations(ranked[b], top[b], key, score, bound[b])
    assert bad == 0


def test_query_groups_over_a_long_span():
    """as_of spread over far more than SPAN half-lives: several time origins, each exact."""
    rng = np.random.default_rng(2)
    n, q = 3000, 40
    stored = dyadic_unit(rng, n)
    qv = dyadic_near(rng, stored[rng.integers(0, n, q)])
    c, _ = kernel_columns(rng, n, n)
    span = 3 * fk.SPAN * 30.0
    c = replace(c, created=c.created * span / 200, valid_from=c.valid_from * span / 200,
                decay_from=c.decay_from * span / 200, ingested_at=c.ingested_at * span / 200)
    as_of = rng.uniform(0, span, q)
    assert len(fk.query_groups(as_of, 30.0)) >= 3
    check(Scorer(), stored, qv, as_of, c, 10)


def test_expired_score_above_one():
    sv = Scorer(temporal=TemporalParams(expired_score=3.0))
    stored, qv, as_of, c, _ = near_queries(5, 2000, 30)
    ranked, want, rest, _ = check(sv, stored, qv, as_of, c, 5)
    assert len(rest) == 0
    assert ((as_of >= c.valid_to[np.maximum(want[:, 0], 0)]) & (want[:, 0] >= 0)).any()  # an expired top hit


@pytest.mark.parametrize("deprio", [True, False])
def test_rounding_bound_holds_and_is_tight(deprio):
    """Every float32 key (all vectors kept) lies within the bound E below its float64 key, and E is no more
    than ~100x the largest error seen (the certificate is not vacuous)."""
    sv = Scorer(policy=StatusPolicy(dormant="deprioritize" if deprio else "include"))
    rng = np.random.default_rng(9)
    n, q = 3000, 40
    stored, qv = _unit(rng, n), _unit(rng, q)  # Gaussian: the bound does not rest on exact cosines
    c, _ = kernel_columns(rng, n, n)
    as_of = rng.uniform(-10, 260, q)
    w, tp, cp = sv.weights, sv.temporal, sv.conf_params
    fb = c.fb_pos - c.fb_neg
    e_key, e_conf = fk.rounding_bound(w, tp.expired_score, cp.min_confidence, float(np.abs(c.base).max()),
                                      float(np.abs(fb).max()), float(np.abs(c.access).max()),
                                      float(np.abs(c.rel).max()), deprio)
    prep = fk.Prepared(c, as_of, {"t_half": tp.half_life_days, "c_half": cp.half_life_days,
                                  "w_total": w.total()}, {"exclude_created_after": True,
                                                          "exclude_deprecated": True, "exclude_archived": True})
    wts = np.array([w.semantic, w.temporal, w.confidence], dtype=np.float32) / np.float32(w.total())
    consts = np.array([tp.expired_score, cp.min_confidence, fk._f32_below(cp.dormant_threshold - e_conf)],
                      dtype=np.float32)
    hk, hi, hc = fk.scan(stored, qv, prep, np.arange(q), wts, consts, np.array([deprio, False]), n)
    kept = hi >= 0  # every vector whose float32 key is finite
    _, key64, _ = fused(sv, c, hc.astype(np.float64), as_of, np.where(kept, hi, 0))
    _, dense, _ = fused(sv, c, (qv @ stored.T).astype(np.float64), as_of)
    assert np.array_equal(kept.sum(axis=1), np.isfinite(dense).sum(axis=1))  # exclusions decided exactly
    key32 = hk.astype(np.float64)
    assert np.isfinite(key64[kept]).all()
    fin = kept
    diff = np.where(fin, key64, 0.0) - np.where(fin, key32, 0.0)
    dorm_diff = np.abs(diff) > 1.0  # dormancy within C's bound of the threshold: key32 is 2 above
    err = diff[fin & ~dorm_diff]
    assert err.max() <= e_key
    assert e_key < 100 * max(np.abs(err).max(), 1e-9) and e_key < 1e-5
    assert (diff[fin & dorm_diff] < 0).all()  # only ever in the direction that keeps a candidate


def test_serial_and_parallel_scans_have_their_own_cache_entries():
    """numba's cache keys a function by name, not by options (``jit.variant``): the serial scan must not load the
    parallel one's machine code or the reverse."""
    assert fk.scan_block_serial.py_func.__qualname__ == "scan_block_serial"
    assert fk.scan_block.py_func.__qualname__ == "scan_block"
    assert fk.scan_block.targetoptions.get("parallel") and not fk.scan_block_serial.targetoptions.get("parallel")
    assert fk._vector_columns_serial.py_func.__qualname__ != fk._vector_columns.py_func.__qualname__
    for d in (fk.scan_block, fk.scan_block_serial, fk._vector_columns, fk._vector_columns_serial):
        assert d._cache._cache_path and d._cache._impl._filename_base.split("-")[0].endswith(d.py_func.__qualname__)


def test_no_vectors_or_no_tiles_keep_nothing():
    """An empty store: the scan's grid has no tile; nothing is kept and the products alone run nothing."""
    assert fk.tiles(3, 0) == [] and fk.shares([], 2) == []
    fk.tile_products(np.zeros((0, 8), dtype=np.float32), np.ones((3, 8), dtype=np.float32))
    ranked, top, _, rest = fk.exhaustive_top_k_f32(Scorer(), kernel_columns(np.random.default_rng(0), 0, 1)[0],
                                                   np.zeros((0, 8), dtype=np.float32), np.ones((3, 8), np.float32),
                                                   np.zeros(3), 5)
    assert (ranked == -1).all() and np.isnan(top).all() and len(rest) == 0
