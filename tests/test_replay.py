"""Replay over simulated time: queries_at (gold in force at t), checkpoints, advance, apply_feedback."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.consolidation import ConsolidationAgent, ConsolidationParams
from smartvector_bench.csr import Ragged
from smartvector_bench.dataset import Queries
from smartvector_bench.lifecycle import Status
from smartvector_bench.replay import LiveSystem, ReplayParams, advance, apply_feedback, checkpoints, queries_at
from smartvector_bench.store import VectorStore

from .test_store import Timeline, make_corpus

INF = np.inf

# Fact F: versions 0 [0, 10), 1 [10, 20), 2 [20, inf). Fact G: one version 3 from 30 (created 25).
REPLAY_ROWS = [
    {"text": "f one", "doc": "F", "version": 1, "authority": 0.9, "created": 0.0, "valid_to": 10.0},
    {"text": "f two", "doc": "F", "version": 2, "authority": 0.9, "created": 8.0, "valid_from": 10.0,
     "valid_to": 20.0, "supersedes": 0},
    {"text": "f three", "doc": "F", "version": 3, "authority": 0.9, "created": 20.0, "supersedes": 1},
    {"text": "g one", "doc": "G", "authority": 0.9, "created": 25.0, "valid_from": 30.0},
]


def make_queries() -> Queries:
    # q0 current about F (gold the last version; stale listed out of order on purpose);
    # q1 historical about F as of 15 (gold F v2); q2 current about G; q3 dependent about F
    return Queries(
        ids=["q0", "q1", "q2", "q3"], texts=["f?", "f then?", "g?", "f dep?"],
        query_time=np.full(4, 100.0), as_of=np.array([100.0, 15.0, 100.0, 100.0]),
        category=np.array(["current", "historical", "current", "dependent"], dtype=object),
        split=np.array(["dev", "test", "dev", "test"], dtype=object),
        gold=np.array([2, 1, 3, 2], dtype=np.int64),
        stale=Ragged.from_lists([[1, 0], [0], [], [0, 1]]),
        rumor=Ragged.from_lists([[], [], [], []]),
    )


def asked(t: float):
    q, idx = queries_at(make_queries(), make_corpus(REPLAY_ROWS), t)
    return (idx.tolist(), q.ids, q.gold.tolist(), [q.stale.row(i).tolist() for i in range(len(q))],
            q.as_of.tolist(), q.query_time.tolist(), q.category.tolist(), q.split.tolist())


def test_queries_at_gold_follows_the_version_in_force():
    # t = 5: F v1 in force; q1 not yet (5 < 15); q2 skipped (G's first version takes effect at 30)
    idx, ids, gold, stale, as_of, qt, cat, split = asked(5.0)
    assert (idx, ids, gold, stale, as_of, qt) == ([0, 3], ["q0", "q3"], [0, 0], [[], []], [5.0, 5.0], [5.0, 5.0])
    assert (cat, split) == (["current", "dependent"], ["dev", "test"])
    # t = 10 exactly: F v1's window [0, 10) is closed, F v2 in force; v1 stale
    assert asked(10.0)[2:4] == ([1, 1], [[0], [0]])
    # t = 15: the historical query is asked, with its own as_of and gold
    idx, ids, gold, stale, as_of, qt, _, _ = asked(15.0)
    assert (idx, gold, stale, as_of, qt) == ([0, 1, 3], [1, 1, 1], [[0], [0], [0]], [15.0, 15.0, 15.0],
                                             [15.0] * 3)
    # t = 25: F v3 in force, stale grows (in valid_from order); q1 keeps gold F v2 and as_of 15
    idx, ids, gold, stale, as_of, _, _, _ = asked(25.0)
    assert (idx, gold, stale, as_of) == ([0, 1, 3], [2, 1, 2], [[0, 1], [0], [0, 1]], [25.0, 15.0, 25.0])
    # t = 30: G's first version takes effect, q2 is asked
    idx, ids, gold, stale, as_of, _, _, _ = asked(30.0)
    assert (idx, ids, gold, stale, as_of) == ([0, 1, 2, 3], ["q0", "q1", "q2", "q3"], [2, 1, 3, 2],
                                              [[0, 1], [0], [], [0, 1]], [30.0, 15.0, 30.0, 30.0])


def test_queries_at_before_anything_and_historical_boundary():
    assert asked(-1.0)[0] == []
    assert 1 not in asked(14.999)[0] and 1 in asked(15.0)[0]


def test_queries_at_does_not_change_the_input():
    queries = make_queries()
    queries_at(queries, make_corpus(REPLAY_ROWS), 12.0)
    assert queries.gold.tolist() == [2, 1, 3, 2] and queries.as_of.tolist() == [100.0, 15.0, 100.0, 100.0]


# ---- checkpoints ------------------------------------------------------------------------------------------

def test_checkpoints_rounds_after_runs_at_equal_times():
    p = ReplayParams(start_days_before_now=14.0, end_days_after_now=7.0, step_days=7.0,
                     consolidation_interval_days=7.0)
    # rounds at 14 - 14 = 0, 7, 14, 21; runs from first event 0 + 7 to the last round: 7, 14, 21
    assert checkpoints(0.0, 14.0, p) == [(0.0, "round"), (7.0, "consolidate"), (7.0, "round"),
                                         (14.0, "consolidate"), (14.0, "round"), (21.0, "consolidate"),
                                         (21.0, "round")]


def test_checkpoints_sorted_with_runs_between_rounds():
    p = ReplayParams(start_days_before_now=4.0, end_days_after_now=2.0, step_days=3.0,
                     consolidation_interval_days=2.0)
    # rounds at 10 - 4 = 6, 9, 12; runs from 1 + 2 = 3 every 2 days up to 12: 3, 5, 7, 9, 11
    marks = checkpoints(1.0, 10.0, p)
    assert marks == [(3.0, "consolidate"), (5.0, "consolidate"), (6.0, "round"), (7.0, "consolidate"),
                     (9.0, "consolidate"), (9.0, "round"), (11.0, "consolidate"), (12.0, "round")]
    assert [t for t, _ in marks] == sorted(t for t, _ in marks)


# ---- advance ----------------------------------------------------------------------------------------------

def test_advance_ingests_supersedes_and_runs_when_asked():
    corpus = make_corpus(REPLAY_ROWS)
    store = VectorStore(corpus)
    system = LiveSystem("live", None, store, ConsolidationAgent(corpus, ConsolidationParams()), True)
    advance(system, -INF, 9.0, consolidate=False)
    # created by 9: F v1 (0) and F v2 (8; in force only from 10); nothing consolidated yet
    assert store.status.tolist() == [Status.UNCONSOLIDATED, Status.UNCONSOLIDATED, -1, -1]
    assert system.agent.last_run is None
    advance(system, 9.0, 12.0, consolidate=True)
    # F v2 takes effect at 10: F v1 deprecated at 10; the run at 12 activates F v2
    assert store.status.tolist() == [Status.DEPRECATED, Status.ACTIVE, -1, -1]
    assert store.deprecated_at[0] == 10.0 and system.agent.last_run == 12.0
    advance(system, 12.0, 12.0, consolidate=False)  # an empty interval changes nothing
    assert store.status.tolist() == [Status.DEPRECATED, Status.ACTIVE, -1, -1]


# ---- apply_feedback ---------------------------------------------------------------------------------------

def feedback_store():
    """Five unrelated vectors; at 120 vector 0 (created at 0) is DORMANT: 0.9 * 2^(-120/30) = 0.05625 < 0.15;
    the others (created at 100) are ACTIVE: 0.9 * 2^(-20/30) = 0.567."""
    corpus = make_corpus([{"text": f"w{i}a w{i}b", "doc": f"d{i}", "authority": 0.9,
                           "created": 0.0 if i == 0 else 100.0} for i in range(5)])
    tl = Timeline(corpus).run(1.0, 101.0, 120.0)
    assert tl.store.status.tolist() == [Status.DORMANT] + [Status.ACTIVE] * 4
    return tl.store


# q0 wrong (top 1, gold 0), draw 0.1 < p_correct 0.5: corrected
# q1 right (top 2), draw 0.2 < p_accept 0.5: accepted
# q2 wrong (top 3, gold 0), draw 0.9: ignored
# q3 right (top 2), draw 0.7: ignored
# q4 no answer (top -1): skipped entirely
TOP1 = np.array([1, 2, 3, 2, -1])
GOLD = np.array([0, 2, 0, 2, 4])
DRAWS = np.array([0.1, 0.2, 0.9, 0.7, 0.0])


def test_apply_feedback_corrects_accepts_and_ignores():
    s = feedback_store()
    p = ReplayParams(p_correct=0.5, p_accept=0.5)
    counts = apply_feedback(s, TOP1, GOLD, DRAWS, 120.0, p)
    # the confirmed gold 0 was DORMANT and is revived by the confirmation
    assert counts == {"corrections": 1, "acceptances": 1, "revivals": 1}
    assert s.negative.tolist() == [0, 1, 0, 0, 0]
    assert s.positive.tolist() == [1, 0, 1, 0, 0]
    assert s.last_validated.tolist() == [120.0, -INF, 120.0, -INF, -INF]
    # every answered query is an access of its top hit (2 answered twice); the unanswered one is not
    assert s.access.tolist() == [0, 1, 2, 1, 0]
    assert s.status[0] == Status.ACTIVE
    fb = [(e["vector"], e["accepted"], e["cause"]) for e in s.events if e["kind"] == "feedback"]
    assert fb == [(1, False, "user correction"), (0, True, "user pointed to the right answer"),
                  (2, True, "user accepted")]
    val = [(e["vector"], e["cause"]) for e in s.events if e["kind"] == "validation"]
    assert val == [(0, "user pointed to the right answer"), (2, "user accepted")]
    revived = [e for e in s.events if e["kind"] == "status" and e["vector"] == 0][-1]
    assert (revived["time"], revived["new"], revived["cause"]) == (120.0, "ACTIVE", "revived: confirmed")
    # gold 0 after: clock restarted at 120 -> 0.9 + 0.03 = 0.93
    assert s.confidence_at(0, 120.0) == pytest.approx(0.93, abs=1e-12)


def test_apply_feedback_without_access_and_without_confirming_gold():
    s = feedback_store()
    p = ReplayParams(p_correct=0.5, p_accept=0.5, record_access=False, confirm_gold_on_correction=False)
    counts = apply_feedback(s, TOP1, GOLD, DRAWS, 120.0, p)
    assert counts == {"corrections": 1, "acceptances": 1, "revivals": 0}
    assert s.access.tolist() == [0, 0, 0, 0, 0]
    assert not [e for e in s.events if e["kind"] == "access"]
    assert s.negative.tolist() == [0, 1, 0, 0, 0] and s.positive.tolist() == [0, 0, 1, 0, 0]
    assert s.status[0] == Status.DORMANT  # no confirmation, no revival


@pytest.mark.parametrize("p_correct, p_accept, want", [
    (0.0, 0.0, {"corrections": 0, "acceptances": 0, "revivals": 0}),
    # p = 1: every wrong answer corrected (q0, q2: both point to gold 0, revived by the first), every right
    # one accepted (q1, q3)
    (1.0, 1.0, {"corrections": 2, "acceptances": 2, "revivals": 1}),
])
def test_apply_feedback_probability_edges(p_correct, p_accept, want):
    s = feedback_store()
    counts = apply_feedback(s, TOP1, GOLD, DRAWS, 120.0, ReplayParams(p_correct=p_correct, p_accept=p_accept))
    assert counts == want
    assert s.access.tolist() == [0, 1, 2, 1, 0]  # access does not depend on the draws
