"""Ground-truth judgments (smartvector_bench.core.evaluation.judgments) on hand-made arrays: timelines, window edges,
grades, stale versus rumor, and announced values."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.core.evaluation.judgments import GRADE_AUTHORITATIVE, GRADE_CORRECT, Timeline, judge_at

INF = np.inf


def _timeline(dates, values) -> Timeline:
    return Timeline(np.asarray(dates, dtype=np.float64), np.asarray(values, dtype=np.float64))


def _judge(chunks: list[dict], timeline: Timeline, as_of: float, asks: str = "policy", rows=None):
    """``chunks``: dicts with doc_type, value (None = states none), created, valid_from, valid_to."""
    n = len(chunks)
    rows = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    return judge_at(
        rows,
        np.array([c["doc_type"] for c in chunks], dtype=object),
        np.array([np.nan if c.get("value") is None else float(c["value"]) for c in chunks]),
        np.array([float(c.get("created", c["valid_from"])) for c in chunks]),
        np.array([float(c["valid_from"]) for c in chunks]),
        np.array([float(c.get("valid_to", INF)) for c in chunks]),
        timeline, as_of, asks)


def _chunk(doc_type: str, value, valid_from: float, valid_to: float = INF, created: float | None = None) -> dict:
    return {"doc_type": doc_type, "value": value, "valid_from": valid_from, "valid_to": valid_to,
            "created": valid_from if created is None else created}


def _sets(j):
    return set(j.relevant.tolist()), set(j.stale.tolist()), set(j.rumor.tolist())


# -- Timeline ---------------------------------------------------------------------------------------------------

TL = _timeline([0.0, 10.0, 20.0], [5, 7, 9])


@pytest.mark.parametrize("t, expected", [(0.0, 5), (9.999, 5), (10.0, 7), (19.5, 7), (20.0, 9), (1000.0, 9)])
def test_value_at_takes_the_last_effective_date_at_or_before_t(t, expected):
    assert TL.value_at(t) == expected


def test_value_at_before_the_first_date_is_nan():
    assert np.isnan(TL.value_at(-0.001))


def test_superseded_at_lists_old_values_only():
    assert TL.superseded_at(-1.0).tolist() == []
    assert TL.superseded_at(5.0).tolist() == []
    assert TL.superseded_at(9.999).tolist() == []
    assert TL.superseded_at(10.0).tolist() == [5]  # the change day: the old value is superseded
    assert sorted(TL.superseded_at(25.0).tolist()) == [5, 7]


def test_superseded_at_excludes_a_value_that_came_back():
    reverted = _timeline([0.0, 10.0, 20.0], [5, 7, 5])
    assert reverted.superseded_at(25.0).tolist() == [7]
    assert reverted.value_at(25.0) == 5


# -- judge_at ---------------------------------------------------------------------------------------------------

TWO = _timeline([0.0, 10.0], [5, 7])


def test_window_edges_valid_from_is_in_force_valid_to_is_not():
    chunks = [
        _chunk("policy", 5, 0.0, 10.0),   # v1, closes on the change day
        _chunk("policy", 7, 10.0),        # v2, opens on the change day
    ]
    j = _judge(chunks, TWO, as_of=10.0)
    assert j.truth == 7
    assert j.relevant.tolist() == [1]
    assert j.stale.tolist() == [0]  # the closed version states a superseded value
    # One instant earlier the old version is still in force and the new one not yet.
    j = _judge(chunks, TWO, as_of=9.999)
    assert j.truth == 5
    assert j.relevant.tolist() == [0]
    assert j.stale.tolist() == [] and j.rumor.tolist() == []


def test_a_chunk_closed_at_as_of_stating_the_truth_is_not_relevant():
    tl = _timeline([0.0], [5])
    chunks = [_chunk("runbook", 5, 0.0, 4.0), _chunk("runbook", 5, 4.0)]
    j = _judge(chunks, tl, as_of=4.0, asks="runbook")
    assert j.relevant.tolist() == [1]
    assert j.stale.tolist() == [] and j.rumor.tolist() == []  # not stale either: its value is still right


def test_a_chunk_created_after_as_of_gets_no_judgment():
    chunks = [
        _chunk("policy", 7, 10.0),                      # in force, states the truth
        _chunk("policy", 7, 10.0, created=15.0),        # would be relevant, but published later
        _chunk("message", 3, 0.0, created=15.0),        # would be a rumor
        _chunk("runbook", 5, 0.0, created=15.0),        # would be stale
    ]
    j = _judge(chunks, TWO, as_of=12.0)
    assert _sets(j) == ({0}, set(), set())
    # Once published, they are judged.
    j = _judge(chunks, TWO, as_of=16.0)
    assert _sets(j) == ({0, 1}, {3}, {2})


def test_a_chunk_published_before_its_window_exists_but_is_not_in_force():
    chunks = [_chunk("policy", 5, 0.0, 10.0), _chunk("policy", 7, 10.0, created=6.0)]
    j = _judge(chunks, TWO, as_of=8.0)
    assert _sets(j) == ({0}, set(), set())  # the announced-in-advance version is neither relevant nor stale


@pytest.mark.parametrize("asks, best", [("policy", 0), ("runbook", 1)])
def test_grade_2_only_for_the_asked_document_type(asks, best):
    chunks = [_chunk("policy", 7, 10.0), _chunk("runbook", 7, 11.0), _chunk("message", 7, 12.0)]
    j = _judge(chunks, TWO, as_of=20.0, asks=asks)
    assert set(j.relevant.tolist()) == {0, 1, 2}
    grade = dict(zip(j.relevant.tolist(), j.grades.tolist()))
    assert grade[best] == GRADE_AUTHORITATIVE
    assert [g for r, g in grade.items() if r != best] == [GRADE_CORRECT, GRADE_CORRECT]
    assert j.relevant[0] == best  # best grade first
    assert j.grades.dtype == np.int64


def test_relevant_rows_are_corpus_rows_best_grade_first_then_by_row():
    chunks = [_chunk("message", 7, 12.0), _chunk("policy", 7, 10.0), _chunk("runbook", 7, 11.0),
              _chunk("policy", 7, 10.0)]
    rows = [40, 30, 20, 35]  # the family's chunks sit at these corpus rows
    j = _judge(chunks, TWO, as_of=20.0, asks="policy", rows=rows)
    assert j.relevant.tolist() == [30, 35, 20, 40]
    assert j.grades.tolist() == [2, 2, 1, 1]


def test_a_message_with_an_old_value_is_a_rumor_not_stale():
    chunks = [_chunk("policy", 7, 10.0), _chunk("message", 5, 3.0)]
    j = _judge(chunks, TWO, as_of=20.0)
    assert _sets(j) == ({0}, set(), {1})


def test_a_message_with_a_never_used_value_is_a_rumor():
    chunks = [_chunk("policy", 7, 10.0), _chunk("message", 99, 15.0)]
    assert _sets(_judge(chunks, TWO, as_of=20.0)) == ({0}, set(), {1})


def test_a_message_that_states_no_value_gets_no_judgment():
    chunks = [_chunk("policy", 7, 10.0), _chunk("message", None, 15.0), _chunk("policy", None, 10.0)]
    assert _sets(_judge(chunks, TWO, as_of=20.0)) == ({0}, set(), set())


def test_a_document_with_an_old_value_in_an_open_window_is_stale():
    # A lagging runbook: its last revision (window still open) kept the superseded value.
    chunks = [_chunk("policy", 7, 10.0), _chunk("runbook", 5, 12.0)]
    j = _judge(chunks, TWO, as_of=20.0, asks="runbook")
    assert _sets(j) == ({0}, {1}, set())
    assert j.grades.tolist() == [GRADE_CORRECT]  # the only right chunk is not of the asked type


def test_a_document_with_a_never_used_value_is_not_stale():
    chunks = [_chunk("policy", 7, 10.0), _chunk("runbook", 99, 12.0)]
    assert _sets(_judge(chunks, TWO, as_of=20.0)) == ({0}, set(), set())


def test_an_announced_value_is_a_rumor_before_its_date_and_relevant_after():
    tl = _timeline([0.0, 30.0], [5, 7])
    chunks = [
        _chunk("policy", 5, 0.0),             # the policy document is not yet revised: its window stays open
        _chunk("message", 7, 20.0),           # the HR email announcing 7 from day 30
    ]
    before = _judge(chunks, tl, as_of=25.0)
    assert before.truth == 5
    assert _sets(before) == ({0}, set(), {1})
    on_the_day = _judge(chunks, tl, as_of=30.0)
    assert on_the_day.truth == 7
    assert _sets(on_the_day) == ({1}, {0}, set())
    assert on_the_day.grades.tolist() == [GRADE_CORRECT]
    # Before the email was sent it is not judged at all.
    assert _sets(_judge(chunks, tl, as_of=19.0)) == ({0}, set(), set())


def test_judgment_before_the_first_effective_date_has_no_truth():
    tl = _timeline([10.0], [5])
    chunks = [_chunk("policy", 5, 10.0, created=2.0), _chunk("message", 5, 4.0)]
    j = _judge(chunks, tl, as_of=5.0)
    assert np.isnan(j.truth)
    assert j.relevant.tolist() == [] and j.stale.tolist() == []
    assert j.rumor.tolist() == [1]  # nothing is true yet, so a stated value is wrong


def test_relevant_stale_and_rumor_are_disjoint_on_a_mixed_family():
    tl = _timeline([0.0, 10.0, 20.0], [5, 7, 9])
    chunks = [_chunk("policy", 5, 0.0, 10.0), _chunk("policy", 7, 10.0, 20.0), _chunk("policy", 9, 20.0),
              _chunk("runbook", 7, 21.0), _chunk("message", 9, 22.0), _chunk("message", 5, 22.0),
              _chunk("message", 7, 15.0), _chunk("runbook", 9, 23.0, created=40.0)]
    for as_of in (0.0, 5.0, 10.0, 15.0, 20.0, 21.0, 22.5, 30.0, 41.0):
        rel, stale, rumor = _sets(_judge(chunks, tl, as_of=as_of))
        assert not (rel & stale or rel & rumor or stale & rumor), as_of
    rel, stale, rumor = _sets(_judge(chunks, tl, as_of=30.0))
    assert (rel, stale, rumor) == ({2, 4}, {0, 1, 3}, {5, 6})
