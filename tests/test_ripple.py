"""Bounded BFS ripple along depended_by, and penalty application with a floor."""

import numpy as np
import pytest

from smartvector_bench.core.csr import Ragged
from smartvector_bench.systems.smartvector.ripple import RippleParams, apply_penalties, ripple

P = RippleParams()


def test_defaults_match_reference():
    assert (P.penalty, P.max_depth, P.floor) == (0.15, 2, 0.05)


def test_chain_penalties_by_depth_and_nothing_at_depth_3():
    # depended_by: 0 <- 1 <- 2 <- 3 (1 depends on 0, 2 on 1, 3 on 2)
    dby = Ragged.from_lists([[1], [2], [3], []])
    hits = ripple(dby, 0, P)
    # hop 1: 0.15 / 1 = 0.15; hop 2: 0.15 / 2 = 0.075; hop 3 is beyond max_depth 2
    assert [(v, d) for v, d, _ in hits] == [(1, 1), (2, 2)]
    assert [pen for _, _, pen in hits] == pytest.approx([0.15, 0.075], abs=1e-15)


def test_custom_penalty_and_depth():
    dby = Ragged.from_lists([[1], [2], [3], []])
    hits = ripple(dby, 0, RippleParams(penalty=0.2, max_depth=3))
    # 0.2/1, 0.2/2, 0.2/3
    assert [(v, d) for v, d, _ in hits] == [(1, 1), (2, 2), (3, 3)]
    assert [pen for _, _, pen in hits] == pytest.approx([0.2, 0.1, 0.0666666666666667], abs=1e-12)
    assert ripple(dby, 0, RippleParams(max_depth=1)) == [(1, 1, 0.15)]


def test_cycle_terminates_and_visits_each_node_once():
    dby = Ragged.from_lists([[1], [2], [0]])  # 0 -> 1 -> 2 -> 0
    hits = ripple(dby, 0, RippleParams(max_depth=50))
    assert [(v, d) for v, d, _ in hits] == [(1, 1), (2, 2)]  # origin never penalised, 2 only once
    hits = ripple(Ragged.from_lists([[1], [0]]), 1, RippleParams(max_depth=50))
    assert [(v, d) for v, d, _ in hits] == [(0, 1)]


def test_diamond_and_smallest_depth():
    # 0 <- {1, 2}; 1 <- 3; 2 <- 3 and 2 <- 1: 3 once at depth 2, 1 and 2 at depth 1
    dby = Ragged.from_lists([[1, 2], [3, 2], [3, 1], []])
    hits = ripple(dby, 0, P)
    assert sorted((v, d) for v, d, _ in hits) == [(1, 1), (2, 1), (3, 2)]
    assert len(hits) == 3


def test_skip_nodes_are_neither_penalised_nor_traversed():
    dby = Ragged.from_lists([[1, 2], [3], [], []])  # 3 reachable only through 1
    skip = np.array([False, True, False, False])
    assert ripple(dby, 0, P, skip=skip) == [(2, 1, 0.15)]
    # when 3 is also reachable through a non-skipped node it is reached there
    dby2 = Ragged.from_lists([[1, 2], [3], [3], []])
    assert [(v, d) for v, d, _ in ripple(dby2, 0, P, skip=skip)] == [(2, 1), (3, 2)]


def test_no_dependants():
    assert ripple(Ragged.from_lists([[], []]), 0, P) == []


def test_apply_penalties_with_floor():
    base = np.array([0.9, 0.9, 0.9, 0.2, 0.2])
    hits = [(1, 1, 0.15), (2, 2, 0.075), (3, 1, 0.15), (4, 1, 0.15), (4, 1, 0.15)]
    out = apply_penalties(base, hits, 0.05)
    # 0.9; 0.9-0.15=0.75; 0.9-0.075=0.825; 0.2-0.15=0.05; 0.2-0.15=0.05 then 0.05-0.15 -> floor 0.05
    np.testing.assert_allclose(out, [0.9, 0.75, 0.825, 0.05, 0.05], rtol=0, atol=1e-12)
    assert base.tolist() == [0.9, 0.9, 0.9, 0.2, 0.2]  # input not modified
    assert out.dtype == np.float64


def test_apply_penalties_accumulate_from_several_origins():
    base = np.array([0.8, 0.8])
    out = apply_penalties(base, [(1, 1, 0.15), (1, 2, 0.075)], 0.05)
    assert out[1] == pytest.approx(0.575, abs=1e-12)  # 0.8 - 0.15 - 0.075
    assert out[0] == 0.8
