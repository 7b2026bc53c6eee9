"""Replay over simulated time: queries_at (judgments re-derived from the labels at t), checkpoints, advance,
apply_feedback (any relevant chunk is right; a correction confirms the best relevant one)."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.systems.smartvector.consolidation import ConsolidationAgent, ConsolidationParams
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Labels, Queries
from smartvector_bench.core.evaluation.judgments import Timeline as FactTimeline
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.systems.smartvector.replay import (
    LiveSystem, ReplayParams, advance, apply_feedback, checkpoints, queries_at,
)
from smartvector_bench.systems.smartvector.store import VectorStore

from .factories import make_corpus
from .store_cases import Timeline

INF = np.inf

# Fact F: versions 0 [0, 10), 1 [10, 20), 2 [20, inf). Fact G: one version 3 from 30 (created 25).
REPLAY_ROWS = [
    {"text": "f one", "doc": "F", "version": 1, "authority": 0.9, "created": 0.0, "valid_to": 10.0},
    {"text": "f two", "doc": "F", "version": 2, "authority": 0.9, "created": 8.0, "valid_from": 10.0,
     "valid_to": 20.0, "supersedes": 0},
    {"text": "f three", "doc": "F", "version": 3, "authority": 0.9, "created": 20.0, "supersedes": 1},
    {"text": "g one", "doc": "G", "authority": 0.9, "created": 25.0, "valid_from": 30.0},
]

# The labelled corpus of queries_at. Family F: 30 from day 0, 40 from 10, 50 from 20; G: 7 from 30;
# H: 1 from 0, 2 from 40 (no chunk ever states 2).
#  row  family doc_type kind       value created valid
#  0    F      policy   statement  30    0       [0, 10)
#  1    F      policy   statement  40    8       [10, 20)   supersedes 0
#  2    F      policy   statement  50    18      [20, inf)  supersedes 1
#  3    G      policy   statement  7     25      [30, inf)
#  4    F      runbook  statement  40    9       [10, inf)  (the runbook is never updated to 50)
#  5    F      message  note       99    12      [12, inf)  (a rumor: a value never in force)
#  6    F      policy   scope      -     0       [0, inf)   (states no value: never judged)
#  7    F      message  note       50    15      [15, inf)  (announces 50 before it takes effect)
#  8    H      policy   statement  1     0       [0, 40)
LABELLED_ROWS = [
    {"text": "f 30", "doc": "F", "version": 1, "authority": 0.9, "created": 0.0, "valid_to": 10.0},
    {"text": "f 40", "doc": "F", "version": 2, "authority": 0.9, "created": 8.0, "valid_from": 10.0,
     "valid_to": 20.0, "supersedes": 0},
    {"text": "f 50", "doc": "F", "version": 3, "authority": 0.9, "created": 18.0, "valid_from": 20.0,
     "supersedes": 1},
    {"text": "g 7", "doc": "G", "authority": 0.9, "created": 25.0, "valid_from": 30.0},
    {"text": "runbook f 40", "doc": "RB", "authority": 0.8, "created": 9.0, "valid_from": 10.0},
    {"text": "heard f is 99", "doc": "M1", "authority": 0.2, "created": 12.0},
    {"text": "f scope", "doc": "FS", "authority": 0.9, "created": 0.0},
    {"text": "f goes to 50", "doc": "M2", "authority": 0.3, "created": 15.0},
    {"text": "h 1", "doc": "H", "authority": 0.9, "created": 0.0, "valid_to": 40.0},
]
NAN = np.nan


def make_labels() -> Labels:
    obj = lambda xs: np.array(xs, dtype=object)  # noqa: E731
    return Labels(
        chunk_family=obj(["F", "F", "F", "G", "F", "F", "F", "F", "H"]),
        chunk_doc_type=obj(["policy", "policy", "policy", "policy", "runbook", "message", "policy", "message",
                            "policy"]),
        chunk_kind=obj(["statement"] * 5 + ["note", "scope", "note", "statement"]),
        chunk_value=np.array([30, 40, 50, 7, 40, 99, NAN, 50, 1], dtype=np.float64),
        query_family=obj(["F", "F", "G", "F", "H"]),
        query_asks=obj(["policy", "policy", "policy", "runbook", "policy"]),
        timelines={"F": FactTimeline(np.array([0.0, 10.0, 20.0]), np.array([30.0, 40.0, 50.0])),
                   "G": FactTimeline(np.array([30.0]), np.array([7.0])),
                   "H": FactTimeline(np.array([0.0, 40.0]), np.array([1.0, 2.0]))},
    )


def make_queries() -> Queries:
    # q0 current about F; q1 historical about F as of 15 (judged then: F v2 and the runbook, the v1 statement
    # stale, both messages rumors); q2 current about G; q3 dependent about F (asks the runbook); q4 current
    # about H. The non-historical judgments below are deliberately wrong: queries_at must re-derive them.
    return Queries(
        ids=["q0", "q1", "q2", "q3", "q4"], texts=["f?", "f then?", "g?", "f dep?", "h?"],
        query_time=np.full(5, 100.0), as_of=np.array([100.0, 15.0, 100.0, 100.0, 100.0]),
        category=np.array(["current", "historical", "current", "dependent", "current"], dtype=object),
        split=np.array(["dev", "test", "dev", "test", "test"], dtype=object),
        relevant=Ragged.from_lists([[6], [1, 4], [6], [6], [6]]),
        grades=Ragged.from_lists([[2], [2, 1], [2], [2], [2]]),
        stale=Ragged.from_lists([[8], [0], [8], [8], [8]]),
        rumor=Ragged.from_lists([[8], [5, 7], [8], [8], [8]]),
        family=np.array(["F", "F", "G", "F", "H"], dtype=object),
    )


def asked(t: float) -> dict:
    q, idx = queries_at(make_queries(), make_corpus(LABELLED_ROWS), make_labels(), t)
    rows = lambda r: [r.row(i).tolist() for i in range(len(q))]  # noqa: E731
    return {"idx": idx.tolist(), "ids": q.ids, "relevant": rows(q.relevant), "grades": rows(q.grades),
            "gold": q.gold.tolist(), "stale": rows(q.stale), "rumor": rows(q.rumor), "as_of": q.as_of.tolist(),
            "query_time": q.query_time.tolist(), "category": q.category.tolist(), "split": q.split.tolist(),
            "family": q.family.tolist()}


def test_queries_at_rejudges_from_the_labels_at_t():
    # t = 5: F is 30, only chunk 0 states it (the scope chunk 6 states nothing); the historical q1 waits for
    # its as_of 15; G has no value before 30 (q2 skipped); H is 1 (chunk 8). The dependent q3 asks the
    # runbook, which does not exist yet: the policy statement is relevant with grade 1.
    a = asked(5.0)
    assert (a["idx"], a["ids"]) == ([0, 3, 4], ["q0", "q3", "q4"])
    assert a["relevant"] == [[0], [0], [8]] and a["grades"] == [[2], [1], [2]]
    assert a["stale"] == [[], [], []] and a["rumor"] == [[], [], []]
    assert a["as_of"] == a["query_time"] == [5.0] * 3
    assert (a["category"], a["split"], a["family"]) == (["current", "dependent", "current"],
                                                        ["dev", "test", "test"], ["F", "F", "H"])
    # t = 10 exactly: chunk 0's window [0, 10) is closed and 30 superseded (stale); 40 holds: the policy v2
    # (grade 2 for q0) and the runbook (grade 2 for q3) are both relevant, best grade first
    a = asked(10.0)
    assert a["idx"] == [0, 3, 4]
    assert a["relevant"] == [[1, 4], [4, 1], [8]] and a["grades"] == [[2, 1], [2, 1], [2]]
    assert a["gold"] == [1, 4, 8]
    assert a["stale"] == [[0], [0], []] and a["rumor"] == [[], [], []]
    # t = 15: the historical q1 is asked with its own as_of and judgments; the messages (99 since 12, the
    # announced 50 since 15) are rumors for the F queries asked now
    a = asked(15.0)
    assert (a["idx"], a["as_of"]) == ([0, 1, 3, 4], [15.0] * 4)
    assert a["relevant"] == [[1, 4], [1, 4], [4, 1], [8]] and a["grades"] == [[2, 1], [2, 1], [2, 1], [2]]
    assert a["rumor"] == [[5, 7], [5, 7], [5, 7], []] and a["stale"] == [[0], [0], [0], []]
    # t = 25: 50 holds: the policy v3 (grade 2 for q0, 1 for q3: no runbook states it) and the announcing
    # message, now right (grade 1); the runbook still says 40: stale although its window is open. G's chunk
    # exists but is not in force before 30: q2 still skipped. q1 keeps as_of 15 and its judgments.
    a = asked(25.0)
    assert (a["idx"], a["as_of"], a["query_time"]) == ([0, 1, 3, 4], [25.0, 15.0, 25.0, 25.0], [25.0] * 4)
    assert a["relevant"] == [[2, 7], [1, 4], [2, 7], [8]]
    assert a["grades"] == [[2, 1], [2, 1], [1, 1], [2]]
    assert a["gold"] == [2, 1, 2, 8]
    assert a["stale"] == [[0, 1, 4], [0], [0, 1, 4], []]
    assert a["rumor"] == [[5], [5, 7], [5], []]
    # t = 30: G takes effect, q2 is asked
    a = asked(30.0)
    assert (a["idx"], a["ids"]) == ([0, 1, 2, 3, 4], ["q0", "q1", "q2", "q3", "q4"])
    assert a["relevant"][2] == [3] and a["grades"][2] == [2] and a["family"][2] == "G"
    assert a["stale"][2] == [] and a["rumor"][2] == []
    # t = 45: H is 2, which no chunk states (chunk 8's 1 is superseded and out of its window): q4 skipped
    a = asked(45.0)
    assert a["ids"] == ["q0", "q1", "q2", "q3"]


def test_queries_at_before_anything_and_historical_boundary():
    # nothing is in force before day 0: every query skipped, empty but well-formed arrays
    q, idx = queries_at(make_queries(), make_corpus(LABELLED_ROWS), make_labels(), -1.0)
    assert idx.tolist() == [] and len(q) == 0 and q.relevant.n_rows == 0 and q.as_of.shape == (0,)
    assert 1 not in asked(14.999)["idx"] and 1 in asked(15.0)["idx"]


def test_queries_at_does_not_change_the_input():
    queries = make_queries()
    queries_at(queries, make_corpus(LABELLED_ROWS), make_labels(), 12.0)
    assert queries.as_of.tolist() == [100.0, 15.0, 100.0, 100.0, 100.0]
    assert queries.query_time.tolist() == [100.0] * 5
    assert [queries.relevant.row(i).tolist() for i in range(5)] == [[6], [1, 4], [6], [6], [6]]
    assert [queries.stale.row(i).tolist() for i in range(5)] == [[8], [0], [8], [8], [8]]
    assert queries.gold.tolist() == [6, 1, 6, 6, 6]


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


# q0 wrong (top 1; relevant 0 then 3), draw 0.1 < p_correct 0.5: corrected, the best relevant 0 confirmed
# q1 right (top 2, a lower-graded relevant chunk: relevant 4 then 2), draw 0.2 < p_accept 0.5: accepted
# q2 wrong (top 3, relevant 0), draw 0.9: ignored
# q3 right (top 2, relevant 2), draw 0.7: ignored
# q4 no answer (top -1), relevant 4: skipped entirely
TOP1 = np.array([1, 2, 3, 2, -1])
RELEVANT = Ragged.from_lists([[0, 3], [4, 2], [0], [2], [4]])
DRAWS = np.array([0.1, 0.2, 0.9, 0.7, 0.0])


def test_apply_feedback_corrects_accepts_and_ignores():
    s = feedback_store()
    p = ReplayParams(p_correct=0.5, p_accept=0.5)
    counts = apply_feedback(s, TOP1, RELEVANT, DRAWS, 120.0, p)
    # the confirmed best relevant chunk 0 was DORMANT and is revived by the confirmation; q1's top 2 is right
    # although it is not q1's best relevant chunk (4): accepted, and 4 gets nothing
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
    # chunk 0 after: clock restarted at 120 -> 0.9 + 0.03 = 0.93
    assert s.confidence_at(0, 120.0) == pytest.approx(0.93, abs=1e-12)


def test_apply_feedback_without_access_and_without_confirming_gold():
    s = feedback_store()
    p = ReplayParams(p_correct=0.5, p_accept=0.5, record_access=False, confirm_gold_on_correction=False)
    counts = apply_feedback(s, TOP1, RELEVANT, DRAWS, 120.0, p)
    assert counts == {"corrections": 1, "acceptances": 1, "revivals": 0}
    assert s.access.tolist() == [0, 0, 0, 0, 0]
    assert not [e for e in s.events if e["kind"] == "access"]
    assert s.negative.tolist() == [0, 1, 0, 0, 0] and s.positive.tolist() == [0, 0, 1, 0, 0]
    assert s.status[0] == Status.DORMANT  # no confirmation, no revival


@pytest.mark.parametrize("p_correct, p_accept, want", [
    (0.0, 0.0, {"corrections": 0, "acceptances": 0, "revivals": 0}),
    # p = 1: every wrong answer corrected (q0, q2: both point to their best relevant chunk 0, revived by the
    # first), every right one accepted (q1, q3, both on their top 2)
    (1.0, 1.0, {"corrections": 2, "acceptances": 2, "revivals": 1}),
])
def test_apply_feedback_probability_edges(p_correct, p_accept, want):
    s = feedback_store()
    counts = apply_feedback(s, TOP1, RELEVANT, DRAWS, 120.0, ReplayParams(p_correct=p_correct, p_accept=p_accept))
    assert counts == want
    assert s.access.tolist() == [0, 1, 2, 1, 0]  # access does not depend on the draws
    if p_correct == 1.0:
        # negatives on the wrong tops 1 and 3; confirmations only of the best relevant 0 (never of q0's
        # lower-graded 3) and of the accepted tops 2 (never of q1's best 4: q1 was right)
        assert s.negative.tolist() == [0, 1, 0, 1, 0]
        assert s.positive.tolist() == [2, 0, 2, 0, 0]
    else:
        assert s.negative.tolist() == s.positive.tolist() == [0, 0, 0, 0, 0]
