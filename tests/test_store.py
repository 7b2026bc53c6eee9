"""VectorStore (live confidence, feedback, validation, dormancy, ripple ledger, event log) and the
ConsolidationAgent run over time (verdicts, ripple shapes, dependency transfer, archiving).

Corpora are built by hand; times are float days. Every expected number is computed by hand in a comment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from smartvector_bench.systems.smartvector.consolidation import (
    ConsolidationAgent, ConsolidationParams, ingest_until, summarize,
)
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.systems.smartvector.ripple import RippleParams
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams
from smartvector_bench.systems.smartvector.store import StoreParams, VectorStore

from .factories import make_corpus

INF = np.inf


def one(authority: float = 0.9, created: float = 0.0, n: int = 1) -> Corpus:
    """n unrelated vectors (no shared words: no detected dependencies, no contradictions)."""
    return make_corpus([{"text": f"w{i}a w{i}b", "doc": f"d{i}", "authority": authority, "created": created}
                        for i in range(n)])


def store_of(corpus: Corpus, at: float = 0.0, **params) -> VectorStore:
    s = VectorStore(corpus, ConfidenceParams(), StoreParams(**params))
    ingest_until(s, at)
    return s


def kinds(store: VectorStore, kind: str, vector: int | None = None) -> list[dict]:
    return [e for e in store.events if e["kind"] == kind and (vector is None or e["vector"] == vector)]


def statuses(store: VectorStore, vector: int) -> list[tuple[float, str | None, str, str]]:
    return [(e["time"], e["old"], e["new"], e["cause"]) for e in kinds(store, "status", vector)]


class Timeline:
    """A store + agent advanced by ingest_until and agent runs at given times (as the replay does)."""

    def __init__(self, corpus: Corpus, params: ConsolidationParams | None = None, vectors=None, **store_params):
        self.store = VectorStore(corpus, ConfidenceParams(), StoreParams(**store_params))
        self.agent = ConsolidationAgent(corpus, params or ConsolidationParams(), vectors)
        self.since = -INF

    def run(self, *times: float) -> Timeline:
        for t in times:
            ingest_until(self.store, t, since=self.since)
            self.since = t
            self.agent.run(self.store, t)
        return self


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


# ---- consolidation agent: verdicts ----------------------------------------------------------------------

def unit(*rows) -> np.ndarray:
    v = np.array(rows, dtype=np.float64)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# 0 policy and 1 rumour state different values and embed the same way; 2 depends on the rumour (no words in
# common with anything: no detected dependency edges).
VERDICT_ROWS = [
    {"text": "policy allows 2", "doc": "policy", "authority": 0.9, "created": 0.0, "source": "policy"},
    {"text": "rumour says 4", "doc": "slack", "authority": 0.3, "created": 5.0, "source": "slack"},
    {"text": "cafeteria menu", "doc": "wiki", "authority": 0.75, "created": 1.0, "depends": [1]},
]
VERDICT_VECS = unit([1, 0, 0], [1, 0, 0], [0, 1, 0])


def test_semantic_verdict_is_applied_and_ripples_to_the_dependant():
    tl = Timeline(make_corpus(VERDICT_ROWS), ConsolidationParams(detector="semantic"), VERDICT_VECS).run(6.0)
    s = tl.store
    # rumour newer (1 vote), policy higher authority (1 vote), feedback ratios tied (abstain) -> 1-1 ->
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
    # rumour at 6 (age 1): 0.3 * 2^(-1/30) = 0.293131 -> - 0.08 = 0.213131
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
    assert summarize(tl.store, tl.agent)["events"] == {"dependency_detected": 1}


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
