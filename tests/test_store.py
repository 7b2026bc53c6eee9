"""VectorStore: live confidence, feedback, validation, dormancy and revival, the ripple ledger and the event
log (the ConsolidationAgent over time: tests/test_consolidation_agent.py).

Corpora are built by hand; times are float days. Every expected number is computed by hand in a comment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from smartvector_bench.systems.smartvector.consolidation import ingest_until
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams
from smartvector_bench.systems.smartvector.store import StoreParams, VectorStore

from .factories import make_corpus
from .store_cases import Timeline, kinds, one, statuses


def store_of(corpus: Corpus, at: float = 0.0, **params) -> VectorStore:
    s = VectorStore(corpus, ConfidenceParams(), StoreParams(**params))
    ingest_until(s, at)
    return s


# ---- live confidence ------------------------------------------------------------------------------------

def test_decay_half_life():
    s = store_of(one(0.9, 0.0))
    # 0.9 * 2^(-30/30) = 0.45
    assert s.confidence_at(0, 30.0) == pytest.approx(0.45, abs=1e-12)
    # 0.9 * 2^(-60/30) = 0.225; at creation no decay; before creation the age is clamped at 0
    assert s.confidence_at(0, 60.0) == pytest.approx(0.225, abs=1e-12)
    assert s.confidence_at(0, 0.0) == pytest.approx(0.9, abs=1e-12)
    assert s.confidence_at(0, -5.0) == pytest.approx(0.9, abs=1e-12)
    # the per-store half-life is used, not a hard-coded 30: 0.9 * 2^(-30/60) = 0.6363961
    s60 = VectorStore(one(0.9, 0.0), ConfidenceParams(half_life_days=60.0))
    assert s60.confidence_at(0, 30.0) == pytest.approx(0.9 * 2 ** -0.5, abs=1e-12)
    # the vectorised form agrees: (Q, N) = (2, 1)
    np.testing.assert_allclose(s.live_confidence(np.array([30.0, 60.0])), [[0.45], [0.225]], atol=1e-12)


def test_decay_floor_is_min_confidence():
    s = store_of(one(0.9, 0.0))
    # 0.9 * 2^(-300/30) = 0.00088 < 0.01 -> 0.01
    assert s.confidence_at(0, 300.0) == pytest.approx(0.01, abs=1e-12)


def test_access_reinforcement_is_logarithmic_and_capped_at_one():
    s = store_of(one(0.5, 0.0, n=2))
    for _ in range(3):
        s.record_access(0, 0.0)
    # 0.5 + 0.01 * ln(1 + 3) = 0.5 + 0.0138629 = 0.5138629
    assert s.access.tolist() == [3.0, 0.0]
    assert s.confidence_at(0, 0.0) == pytest.approx(0.5 + 0.01 * math.log(4), abs=1e-12)
    assert s.confidence_at(1, 0.0) == pytest.approx(0.5, abs=1e-12)

    high = store_of(one(0.995, 0.0))
    high.record_access(0, 0.0)
    # 0.995 + 0.01 * ln 2 = 1.00193 -> capped at 1
    assert high.confidence_at(0, 0.0) == 1.0
    for _ in range(1000):
        high.record_access(0, 0.0)
    assert high.confidence_at(0, 0.0) == 1.0  # never above 1, however many accesses
    ev = kinds(high, "access")[0]
    assert (ev["confidence_before"], ev["confidence_after"]) == (0.995, 1.0)


def test_feedback_correction_weighs_more_than_acceptance_and_is_clamped():
    s = store_of(one(0.5, 0.0, n=3))
    s.feedback(0, True, 0.0)   # 0.5 + 0.03 = 0.53
    s.feedback(1, False, 0.0)  # 0.5 - 0.08 = 0.42
    s.feedback(2, True, 0.0)
    s.feedback(2, False, 0.0)  # 0.5 + 0.03 - 0.08 = 0.45: one of each is a net loss
    np.testing.assert_allclose(s.live_confidence(np.array([0.0]))[0], [0.53, 0.42, 0.45], atol=1e-12)
    assert s.positive.tolist() == [1, 0, 1] and s.negative.tolist() == [0, 1, 1]
    assert (0.53 - 0.5) < (0.5 - 0.42)

    low = store_of(one(0.05, 0.0))
    low.feedback(0, False, 0.0)  # 0.05 - 0.08 = -0.03 -> clamped to 0.01
    assert low.confidence_at(0, 0.0) == pytest.approx(0.01, abs=1e-12)
    high = store_of(one(0.99, 0.0))
    high.feedback(0, True, 0.0)
    high.feedback(0, True, 0.0)  # 0.99 + 0.06 = 1.05 -> clamped to 1
    assert high.confidence_at(0, 0.0) == 1.0
    # feedback applies after decay: 0.99 * 2^(-1) + 0.06 = 0.555
    assert high.confidence_at(0, 30.0) == pytest.approx(0.555, abs=1e-12)


def test_feedback_ratio():
    s = store_of(one(0.5, 0.0, n=2))
    s.feedback(0, True, 0.0)
    s.feedback(0, True, 0.0)
    s.feedback(0, False, 0.0)
    # 2 / 3; no feedback at all -> 0.5 (neutral)
    np.testing.assert_allclose(s.feedback_ratio(), [2 / 3, 0.5], atol=1e-12)


# ---- validation -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("resets", [True, False])
def test_validation_restarts_the_decay_clock_only_when_configured(resets):
    s = store_of(one(0.9, 0.0), validation_resets_decay=resets)
    s.validate(0, 30.0)
    ev = kinds(s, "validation")[0]
    assert ev["time"] == 30.0 and ev["cause"] == "user confirmed" and s.last_validated[0] == 30.0
    if resets:
        # the clock restarts at 30: C(30) = 0.9, C(60) = 0.9 * 2^(-30/30) = 0.45
        assert (ev["confidence_before"], ev["confidence_after"]) == (0.45, 0.9)
        assert s.confidence_at(0, 60.0) == pytest.approx(0.45, abs=1e-12)
    else:
        # unchanged: C(30) = 0.45, C(60) = 0.9 * 2^(-2) = 0.225
        assert (ev["confidence_before"], ev["confidence_after"]) == (0.45, 0.45)
        assert s.confidence_at(0, 60.0) == pytest.approx(0.225, abs=1e-12)


def test_validation_before_creation_never_moves_the_clock_back():
    s = store_of(one(0.9, 10.0), at=10.0)
    s.validate(0, 5.0)  # max(created 10, validated 5) = 10
    assert s.confidence_at(0, 40.0) == pytest.approx(0.45, abs=1e-12)


# ---- dormancy and revival -------------------------------------------------------------------------------

def test_decay_below_threshold_makes_dormant_and_validation_revives():
    tl = Timeline(one(0.9, 0.0)).run(1.0, 77.0)
    s = tl.store
    # 0.9 * 2^(-77/30) = 0.15191 >= 0.15: still ACTIVE
    assert s.status[0] == Status.ACTIVE
    tl.run(78.0)
    # 0.9 * 2^(-78/30) = 0.14844 < 0.15: DORMANT at the agent run (simulated time, not the wall clock)
    assert s.status[0] == Status.DORMANT
    assert statuses(s, 0)[-1] == (78.0, "ACTIVE", "DORMANT", "decay: confidence 0.148 below threshold")
    tl.run(90.0)
    assert s.status[0] == Status.DORMANT and len(statuses(s, 0)) == 3  # no repeated status change

    s.validate(0, 100.0)
    # clock restarted at 100: C = 0.9 >= 0.15 -> ACTIVE at once, logged as confirmed
    assert s.status[0] == Status.ACTIVE
    assert statuses(s, 0)[-1] == (100.0, "DORMANT", "ACTIVE", "revived: confirmed")
    v = kinds(s, "validation", 0)[0]
    # before: 0.9 * 2^(-100/30) = 0.0892913
    assert (v["confidence_before"], v["confidence_after"]) == (0.089291, 0.9)
    assert s.events.index(v) < s.events.index(kinds(s, "status", 0)[-1])  # validation logged before the revival
    tl.run(101.0)  # 0.9 * 2^(-1/30) = 0.879: stays ACTIVE
    assert s.status[0] == Status.ACTIVE


def test_validation_without_clock_reset_does_not_revive():
    tl = Timeline(one(0.9, 0.0), validation_resets_decay=False).run(1.0, 78.0)
    s = tl.store
    assert s.status[0] == Status.DORMANT
    s.validate(0, 100.0)
    # no reset: 0.9 * 2^(-100/30) = 0.0893 < 0.15 -> stays DORMANT, no status event
    assert s.status[0] == Status.DORMANT
    assert statuses(s, 0)[-1][2] == "DORMANT"


def test_revival_by_confidence_recovery_at_an_agent_run():
    tl = Timeline(one(0.9, 0.0)).run(1.0, 90.0)
    s = tl.store
    # 0.9 * 2^(-90/30) = 0.1125 < 0.15
    assert s.status[0] == Status.DORMANT
    s.feedback(0, True, 91.0)
    s.feedback(0, True, 91.0)
    # feedback alone does not change the status: the agent decides at its next run
    assert s.status[0] == Status.DORMANT
    tl.run(91.0)
    # 0.9 * 2^(-91/30) + 2 * 0.03 = 0.10993 + 0.06 = 0.16993 >= 0.15 -> ACTIVE
    assert s.status[0] == Status.ACTIVE
    assert statuses(s, 0)[-1] == (91.0, "DORMANT", "ACTIVE", "revived: confidence 0.170")


def test_deprecated_vector_never_becomes_dormant():
    rows = [{"text": "a1 a2", "doc": "A", "authority": 0.9, "created": 0.0, "valid_to": 10.0},
            {"text": "b1 b2", "doc": "A", "version": 2, "authority": 0.9, "created": 10.0, "supersedes": 0}]
    tl = Timeline(make_corpus(rows), archive_after_days=1000.0).run(1.0, 11.0, 200.0)
    # v1: 0.9 * 2^(-200/30) = 0.0089 but DEPRECATED since 10: never DORMANT
    assert tl.store.status[0] == Status.DEPRECATED
    assert "DORMANT" not in [x[2] for x in statuses(tl.store, 0)]


# ---- penalize: floor, ledger, lifting -------------------------------------------------------------------

def test_penalize_floor_never_raises_and_ledger():
    s = store_of(one(0.9, 0.0, n=4))
    s.authority[2] = 0.12  # the store's own (compact) copy of the corpus column is what it reads
    s.authority[3] = 0.03
    s.penalize(0, 0.15, origin=9, depth=1, t=5.0, floor=0.05)   # 0.9 - 0.15 = 0.75
    s.penalize(0, 0.075, origin=8, depth=2, t=6.0, floor=0.05)  # 0.75 - 0.075 = 0.675
    s.penalize(2, 0.15, origin=9, depth=1, t=5.0, floor=0.05)   # 0.12 - 0.15 < 0.05 -> 0.05 (applied 0.07)
    s.penalize(3, 0.15, origin=9, depth=1, t=5.0, floor=0.05)   # 0.03 already below 0.05 -> unchanged
    np.testing.assert_allclose(s.base_confidence, [0.675, 0.9, 0.05, 0.03], atol=1e-12)
    assert [(p["vector"], p["origin"], p["depth"], round(p["applied"], 6), p["time"], p["lifted_at"])
            for p in s.penalties] == [(0, 9, 1, 0.15, 5.0, None), (0, 8, 2, 0.075, 6.0, None),
                                      (2, 9, 1, 0.07, 5.0, None), (3, 9, 1, 0.0, 5.0, None)]
    ev = kinds(s, "ripple")
    assert [(e["vector"], e["cause"], e["depth"], e["penalty"], e["applied"]) for e in ev] == [
        (0, 9, 1, 0.15, 0.15), (0, 8, 2, 0.075, 0.075), (2, 9, 1, 0.15, 0.07), (3, 9, 1, 0.15, 0.0)]
    # confidence at t: vector 0 at 5: before 0.9 * 2^(-5/30) = 0.801816, after 0.75 * 2^(-1/6) = 0.668180
    assert (ev[0]["confidence_before"], ev[0]["confidence_after"]) == \
        (round(0.9 * 2 ** (-1 / 6), 6), round(0.75 * 2 ** (-1 / 6), 6))
    assert ev[3]["confidence_before"] == ev[3]["confidence_after"]  # nothing changed, still logged


def test_penalize_never_raises_with_a_huge_floor_or_negative_room():
    s = store_of(one(0.3, 0.0))
    s.penalize(0, 0.15, origin=5, depth=1, t=0.0, floor=0.5)  # base 0.3 below the floor: not raised to 0.5
    assert s.base_confidence[0] == pytest.approx(0.3, abs=1e-12)


@pytest.mark.parametrize("lift", [True, False])
def test_lift_penalties_on_validation(lift):
    s = store_of(one(0.9, 0.0, n=2), lift_penalties_on_validation=lift)
    s.penalize(0, 0.15, origin=1, depth=1, t=2.0, floor=0.05)
    s.penalize(0, 0.075, origin=1, depth=2, t=3.0, floor=0.05)
    assert s.base_confidence[0] == pytest.approx(0.675, abs=1e-12)  # 0.9 - 0.15 - 0.075
    s.validate(0, 10.0)
    v = kinds(s, "validation", 0)[0]
    if lift:
        # base back to the authority 0.9, every ledger entry marked lifted at 10
        assert s.base_confidence[0] == pytest.approx(0.9, abs=1e-12)
        assert [p["lifted_at"] for p in s.penalties] == [10.0, 10.0]
        # before: 0.675 * 2^(-10/30) = 0.535744; after (clock reset, penalties lifted): 0.9
        assert (v["confidence_before"], v["confidence_after"]) == (round(0.675 * 2 ** (-1 / 3), 6), 0.9)
        s.validate(0, 11.0)  # lifting twice does not give the penalty back twice
        assert s.base_confidence[0] == pytest.approx(0.9, abs=1e-12)
    else:
        assert s.base_confidence[0] == pytest.approx(0.675, abs=1e-12)
        assert [p["lifted_at"] for p in s.penalties] == [None, None]
        assert (v["confidence_before"], v["confidence_after"]) == (round(0.675 * 2 ** (-1 / 3), 6), 0.675)
    assert s.base_confidence[1] == pytest.approx(0.9, abs=1e-12)  # the other vector is untouched


# ---- the event log --------------------------------------------------------------------------------------

def test_every_state_change_is_logged_with_time_kind_vector_cause_and_confidence():
    rows = [{"text": "a1 a2", "doc": "A", "authority": 0.9, "created": 0.0, "valid_to": 20.0},
            {"text": "b1 b2", "doc": "B", "authority": 0.8, "created": 0.0, "depends": [0]},
            {"text": "c1 c2", "doc": "A", "version": 2, "authority": 0.9, "created": 20.0, "supersedes": 0}]
    tl = Timeline(make_corpus(rows)).run(1.0)
    s = tl.store
    s.record_access(1, 3.0)
    s.feedback(1, True, 3.0)
    s.feedback(1, False, 3.0, cause="user correction")
    s.validate(1, 6.0)
    tl.run(21.0)  # A v2 supersedes A v1 at 20: ripple to B (depends on A) at 21
    for e in s.events:
        assert {"time", "kind", "vector", "cause"} <= set(e)
        assert isinstance(e["time"], float) and isinstance(e["vector"], int)
    mine = [(e["time"], e["kind"], e["cause"]) for e in s.events if e["vector"] == 1]
    assert mine == [(0.0, "status", "ingested"), (1.0, "status", "consolidated"), (3.0, "access", "retrieved"),
                    (3.0, "feedback", "user"), (3.0, "feedback", "user correction"),
                    (6.0, "validation", "user confirmed"), (21.0, "ripple", 0)]
    ev = [e for e in s.events if e["vector"] == 1]
    assert (ev[0]["old"], ev[0]["new"]) == (None, "UNCONSOLIDATED")
    assert (ev[1]["old"], ev[1]["new"]) == ("UNCONSOLIDATED", "ACTIVE")
    d3 = 0.8 * 2 ** (-3 / 30)  # decayed at 3: 0.746426
    ln2 = 0.01 * math.log(2)   # one access: + 0.0069315
    # access: 0.746426 -> 0.753358
    assert (ev[2]["confidence_before"], ev[2]["confidence_after"]) == (round(d3, 6), round(d3 + ln2, 6))
    # acceptance: + 0.03 -> 0.783358; correction: - 0.08 -> 0.703358
    assert (ev[3]["confidence_before"], ev[3]["confidence_after"]) == (round(d3 + ln2, 6),
                                                                       round(d3 + 0.03 + ln2, 6))
    assert ev[3]["accepted"] is True and ev[4]["accepted"] is False
    assert (ev[4]["confidence_before"], ev[4]["confidence_after"]) == (round(d3 + 0.03 + ln2, 6),
                                                                       round(d3 - 0.05 + ln2, 6))
    # validation at 6: 0.8 * 2^(-6/30) - 0.05 + ln2 = 0.653397 -> clock reset: 0.8 - 0.05 + ln2 = 0.756931
    assert (ev[5]["confidence_before"], ev[5]["confidence_after"]) == (
        round(0.8 * 2 ** (-6 / 30) - 0.05 + ln2, 6), round(0.75 + ln2, 6))
    # ripple at 21 (decay from the validation at 6, age 15): 0.8 * 2^(-1/2) - 0.05 + ln2 = 0.522618 ->
    # (0.8 - 0.15) * 2^(-1/2) - 0.05 + ln2 = 0.416552
    assert ev[6]["depth"] == 1 and ev[6]["applied"] == 0.15
    assert (ev[6]["confidence_before"], ev[6]["confidence_after"]) == (
        round(0.8 * 2 ** -0.5 - 0.05 + ln2, 6), round(0.65 * 2 ** -0.5 - 0.05 + ln2, 6))
    # supersession and ingest of A are status events too
    assert statuses(s, 0) == [(0.0, None, "UNCONSOLIDATED", "ingested"), (1.0, "UNCONSOLIDATED", "ACTIVE",
                                                                           "consolidated"),
                              (20.0, "ACTIVE", "DEPRECATED", "superseded by c2")]
    assert statuses(s, 2) == [(20.0, None, "UNCONSOLIDATED", "ingested"),
                              (21.0, "UNCONSOLIDATED", "ACTIVE", "consolidated")]
    # the log is in time order
    times = [e["time"] for e in s.events]
    assert times == sorted(times)
