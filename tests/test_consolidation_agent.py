"""The ConsolidationAgent run over time on a VectorStore: verdicts, ripple shapes, dependency transfer on
supersession, archiving.

Corpora are built by hand; times are float days. Every expected number is computed by hand in a comment.
"""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.systems.smartvector.consolidation import (
    ConsolidationAgent, ConsolidationParams, ingest_until, consolidation_summary,
)
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.systems.smartvector.ripple import RippleParams
from smartvector_bench.systems.smartvector.store import VectorStore

from .factories import make_corpus
from .store_cases import INF, Timeline, kinds, one, statuses


# ---- consolidation agent: verdicts ----------------------------------------------------------------------

def unit(*rows) -> np.ndarray:
    v = np.array(rows, dtype=np.float64)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# 0 policy and 1 rumor state different values and embed the same way; 2 depends on the rumor (no words in
# common with anything: no detected dependency edges).
VERDICT_ROWS = [
    {"text": "policy allows 2", "doc": "policy", "authority": 0.9, "created": 0.0, "source": "policy"},
    {"text": "rumor says 4", "doc": "slack", "authority": 0.3, "created": 5.0, "source": "slack"},
    {"text": "cafeteria menu", "doc": "wiki", "authority": 0.75, "created": 1.0, "depends": [1]},
]
VERDICT_VECS = unit([1, 0, 0], [1, 0, 0], [0, 1, 0])


def test_semantic_verdict_is_applied_and_ripples_to_the_dependant():
    tl = Timeline(make_corpus(VERDICT_ROWS), ConsolidationParams(detector="semantic"), VERDICT_VECS).run(6.0)
    s = tl.store
    # rumor newer (1 vote), policy higher authority (1 vote), feedback ratios tied (abstain) -> 1-1 ->
    # tie_break authority -> policy wins
    assert tl.agent.contradictions == [(0, 1, 1)]
    assert s.negative.tolist() == [0.0, 1.0, 0.0] and s.positive.tolist() == [0.0, 0.0, 0.0]
    c = kinds(s, "contradiction")
    assert len(c) == 1
    assert {k: c[0][k] for k in ("vector", "cause", "detector", "votes_for_winner", "applied", "cosine", "values")} \
        == {"vector": 1, "cause": 0, "detector": "semantic", "votes_for_winner": 1, "applied": True,
            "cosine": 1.0, "values": [[2.0], [4.0]]}
    fb = kinds(s, "feedback", 1)
    assert [(e["accepted"], e["cause"]) for e in fb] == [(False, "verdict: contradicted by c0")]
    # rumor at 6 (age 1): 0.3 * 2^(-1/30) = 0.293131 -> - 0.08 = 0.213131
    assert (fb[0]["confidence_before"], fb[0]["confidence_after"]) == (round(0.3 * 2 ** (-1 / 30), 6),
                                                                       round(0.3 * 2 ** (-1 / 30) - 0.08, 6))
    # the loser ripples to its dependant, hop 1: 0.75 - 0.15 = 0.6
    np.testing.assert_allclose(s.base_confidence, [0.9, 0.3, 0.6], atol=1e-12)
    assert [(p["vector"], p["origin"], p["depth"]) for p in s.penalties] == [(2, 1, 1)]


def test_log_only_verdict_applies_nothing():
    tl = Timeline(make_corpus(VERDICT_ROWS), ConsolidationParams(detector="semantic", verdict="log_only"),
                  VERDICT_VECS).run(6.0)
    s = tl.store
    assert tl.agent.contradictions == [(0, 1, 1)]
    assert [e["applied"] for e in kinds(s, "contradiction")] == [False]
    assert s.negative.tolist() == [0.0, 0.0, 0.0] and kinds(s, "feedback") == []
    assert kinds(s, "ripple") == [] and s.penalties == []
    np.testing.assert_allclose(s.base_confidence, [0.9, 0.3, 0.75], atol=1e-12)


def test_a_pair_is_judged_only_once_across_runs():
    tl = Timeline(make_corpus(VERDICT_ROWS), ConsolidationParams(detector="semantic"), VERDICT_VECS).run(6.0)
    s = tl.store
    s.pending.update({0, 1})  # both changed again: the pair (0, 1) comes back as a candidate
    tl.run(7.0, 8.0)
    assert tl.agent.contradictions == [(0, 1, 1)]
    assert len(kinds(s, "contradiction")) == 1
    assert s.negative.tolist() == [0.0, 1.0, 0.0]
    assert len(s.penalties) == 1
    np.testing.assert_allclose(s.base_confidence, [0.9, 0.3, 0.6], atol=1e-12)


def test_semantic_detector_needs_vectors():
    with pytest.raises(ValueError, match="embeddings"):
        ConsolidationAgent(make_corpus(VERDICT_ROWS), ConsolidationParams(detector="semantic"))


# ---- consolidation agent: ripple shapes -----------------------------------------------------------------

def origin_rows(dependants: list[dict]) -> list[dict]:
    """Row 0: A v1 (superseded at 10 by the last row, A v2); the dependants in between."""
    rows = [{"text": "zz0 yy0", "doc": "A", "authority": 0.9, "created": 0.0, "valid_to": 10.0}]
    rows += [{"text": f"zz{i} yy{i}", "doc": f"D{i}", "created": 0.0, **d} for i, d in enumerate(dependants, 1)]
    rows.append({"text": "zzA2 yyA2", "doc": "A", "version": 2, "authority": 0.9, "created": 10.0,
                 "supersedes": 0})
    return rows


def ledger(s: VectorStore) -> list[tuple[int, int, int, float]]:
    return [(p["vector"], p["origin"], p["depth"], round(p["applied"], 6)) for p in s.penalties]


def test_ripple_chain_by_agent_runs():
    # 1 depends on A v1, 2 on 1, 3 on 2
    rows = origin_rows([{"authority": 0.8, "depends": [0]}, {"authority": 0.8, "depends": [1]},
                        {"authority": 0.8, "depends": [2]}])
    tl = Timeline(make_corpus(rows)).run(1.0, 9.0)
    assert tl.store.penalties == []  # nothing superseded yet
    tl.run(11.0)
    # hop 1: 0.8 - 0.15 = 0.65; hop 2: 0.8 - 0.075 = 0.725; hop 3 beyond max_depth 2: 0.8
    np.testing.assert_allclose(tl.store.base_confidence, [0.9, 0.65, 0.725, 0.8, 0.9], atol=1e-12)
    assert ledger(tl.store) == [(1, 0, 1, 0.15), (2, 0, 2, 0.075)]
    assert all(e["time"] == 11.0 for e in kinds(tl.store, "ripple"))
    tl.run(12.0)  # the supersession ripples once, not at every run
    assert len(tl.store.penalties) == 2


def test_ripple_fan():
    rows = origin_rows([{"authority": 0.8, "depends": [0]}] * 3)
    tl = Timeline(make_corpus(rows)).run(1.0, 11.0)
    # three dependants at hop 1: 0.8 - 0.15 = 0.65 each
    np.testing.assert_allclose(tl.store.base_confidence, [0.9, 0.65, 0.65, 0.65, 0.9], atol=1e-12)
    assert ledger(tl.store) == [(1, 0, 1, 0.15), (2, 0, 1, 0.15), (3, 0, 1, 0.15)]


def test_ripple_cycle_terminates_each_vector_penalised_once():
    # 1 depends on A v1 and on 3; 2 on 1; 3 on 2: the cycle 1 -> 2 -> 3 -> 1 in depended_by
    rows = origin_rows([{"authority": 0.8, "depends": [0, 3]}, {"authority": 0.8, "depends": [1]},
                        {"authority": 0.8, "depends": [2]}])
    params = ConsolidationParams(ripple=RippleParams(max_depth=10))
    tl = Timeline(make_corpus(rows), params).run(1.0, 11.0)
    # hop 1: 0.15 / 1; hop 2: 0.15 / 2 = 0.075; hop 3: 0.15 / 3 = 0.05; then 1 is already visited
    np.testing.assert_allclose(tl.store.base_confidence, [0.9, 0.65, 0.725, 0.75, 0.9], atol=1e-12)
    assert ledger(tl.store) == [(1, 0, 1, 0.15), (2, 0, 2, 0.075), (3, 0, 3, 0.05)]


def test_ripple_respects_floor_through_the_agent():
    rows = origin_rows([{"authority": 0.12, "depends": [0]}, {"authority": 0.03, "depends": [0]}])
    tl = Timeline(make_corpus(rows)).run(1.0, 11.0)
    # 0.12 - 0.15 -> floor 0.05 (applied 0.07); 0.03 below the floor: unchanged (applied 0)
    np.testing.assert_allclose(tl.store.base_confidence, [0.9, 0.05, 0.03, 0.9], atol=1e-12)
    assert ledger(tl.store) == [(1, 0, 1, 0.07), (2, 0, 1, 0.0)]


# ---- dependency transfer on supersession ----------------------------------------------------------------

def transfer_rows() -> list[dict]:
    # 0 A v1 [0, 10); 1 B depends on A v1; 2 A v2 [10, 20); 3 A v3 from 20
    return [
        {"text": "alpha bravo", "doc": "A", "version": 1, "authority": 0.9, "created": 0.0, "valid_to": 10.0},
        {"text": "charlie delta", "doc": "B", "authority": 0.8, "created": 0.0, "depends": [0]},
        {"text": "echo foxtrot", "doc": "A", "version": 2, "authority": 0.9, "created": 10.0, "valid_to": 20.0,
         "supersedes": 0},
        {"text": "golf hotel", "doc": "A", "version": 3, "authority": 0.9, "created": 20.0, "supersedes": 2},
    ]


def test_dependency_transfer_follows_the_version_in_force():
    tl = Timeline(make_corpus(transfer_rows())).run(1.0)
    a = tl.agent

    def rows_at(t):
        d = a.depends_on(t)
        return [d.row(i).tolist() for i in range(d.n_rows)]

    assert rows_at(1.0) == [[], [0], [], []]
    assert a.edge_count(1.0).tolist() == [1, 1, 0, 0]
    tl.run(11.0, 21.0)
    # the raw edge B -> A v1 counts for the version in force at the time asked
    assert rows_at(5.0) == [[], [0], [], []]
    assert rows_at(15.0) == [[], [2], [], []]
    assert a.edge_count(15.0).tolist() == [0, 1, 1, 0]
    assert rows_at(25.0) == [[], [3], [], []]
    assert a.edge_count(25.0).tolist() == [0, 1, 0, 1]
    # without transfer the edge stays on A v1
    off = Timeline(make_corpus(transfer_rows()), ConsolidationParams(transfer_dependencies=False)).run(1.0, 21.0)
    assert off.agent.edge_count(25.0).tolist() == [1, 1, 0, 0]


def test_dependant_of_the_version_in_force_gets_a_ripple_when_that_version_is_superseded():
    """B depends on document A (raw edge to A v1). While A v2 is in force the edge counts for A v2 (transfer,
    checked above); when A v2 is superseded by A v3, B depends on a vector that just changed and must get a
    hop-1 ripple, as it did when A v1 was superseded."""
    tl = Timeline(make_corpus(transfer_rows())).run(1.0, 11.0)
    # first supersession (A v1 -> A v2 at 10): B 0.8 - 0.15 = 0.65
    assert ledger(tl.store) == [(1, 0, 1, 0.15)]
    tl.run(21.0)
    # second supersession (A v2 -> A v3 at 20): B 0.65 - 0.15 = 0.5, origin A v2
    assert ledger(tl.store) == [(1, 0, 1, 0.15), (1, 2, 1, 0.15)]
    assert tl.store.base_confidence[1] == pytest.approx(0.5, abs=1e-12)


def test_a_detected_dependency_is_logged_once_across_runs():
    """c1 (wiki, 0.75) shares 6 of its 8 words with c0 (policy, 0.9): Jaccard 6/8 = 0.75 > 0.35, so c1 depends on
    c0 (detected at the first run). When c1 is later superseded it is pending again, but the pair (c1, c0) was
    already found: it must not be detected and logged a second time."""
    rows = [
        {"text": "remote work allowed two days weekly", "doc": "P", "authority": 0.9, "created": 0.0},
        {"text": "remote work allowed two days weekly for staff", "doc": "W", "authority": 0.75, "created": 0.0,
         "valid_to": 10.0},
        {"text": "cafeteria opens at eight", "doc": "W", "version": 2, "authority": 0.75, "created": 10.0,
         "supersedes": 1},
    ]
    tl = Timeline(make_corpus(rows)).run(1.0)
    detected = [(e["time"], e["vector"], e["cause"]) for e in kinds(tl.store, "dependency_detected")]
    assert detected == [(1.0, 1, 0)]
    tl.run(11.0)
    detected = [(e["time"], e["vector"], e["cause"]) for e in kinds(tl.store, "dependency_detected")]
    assert detected == [(1.0, 1, 0)]
    assert consolidation_summary(tl.store, tl.agent)["events"] == {"dependency_detected": 1}


# ---- DEPRECATED -> ARCHIVED ------------------------------------------------------------------------------

@pytest.mark.parametrize("days", [30.0, 5.0])
def test_deprecated_is_archived_only_after_archive_after_days(days):
    rows = [{"text": "a1 a2", "doc": "A", "authority": 0.9, "created": 0.0, "valid_to": 10.0},
            {"text": "b1 b2", "doc": "A", "version": 2, "authority": 0.9, "created": 10.0, "supersedes": 0}]
    tl = Timeline(make_corpus(rows), archive_after_days=days).run(1.0, 11.0)
    s = tl.store
    assert s.status[0] == Status.DEPRECATED and s.deprecated_at[0] == 10.0
    tl.run(10.0 + days - 0.5)  # half a day before the grace period ends
    assert s.status[0] == Status.DEPRECATED and s.archived_at[0] == INF
    tl.run(10.0 + days)  # deprecated_at 10 <= t - days
    assert s.status[0] == Status.ARCHIVED and s.archived_at[0] == 10.0 + days
    assert statuses(s, 0)[-1] == (10.0 + days, "DEPRECATED", "ARCHIVED", "deprecated for archive_after_days")
    assert not s.in_force()[0] and s.in_force()[1]
    tl.run(10.0 + days + 50)
    assert statuses(s, 0)[-1][2] == "ARCHIVED" and len(statuses(s, 0)) == 4  # archived once
    assert "ARCHIVED" not in [x[2] for x in statuses(s, 1)]  # the version in force is never archived


def test_unconsolidated_becomes_active_at_the_next_run():
    tl = Timeline(one(0.9, 0.0, n=2)).run(1.0)
    assert tl.store.status.tolist() == [Status.ACTIVE, Status.ACTIVE]
    s = VectorStore(one(0.9, 0.0, n=2))
    ingest_until(s, 0.0)
    assert s.status.tolist() == [Status.UNCONSOLIDATED] * 2 and s.pending == {0, 1}
