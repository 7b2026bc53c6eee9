"""Audit: lineage() of one vector through its whole life, explain() on a bound SmartVector retriever,
detection_quality() on hand-made cases."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
from omegaconf import OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.systems.smartvector.audit import detection_quality, explain, lineage
from smartvector_bench.systems.smartvector.consolidation import ConsolidationAgent, ConsolidationParams, ingest_until
from smartvector_bench.core.csr import Ragged
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.smartvector.store import VectorStore

from .factories import make_corpus
from .store_cases import Timeline
from .test_consolidation_agent import VERDICT_ROWS, VERDICT_VECS

# ---- lineage ----------------------------------------------------------------------------------------------

# X = row 1 (document A, version 2). Its words are shared with no other row (no detected dependencies);
# X, the rumor (5) and the official figure (6) embed the same way and state different values.
LINEAGE_ROWS = [
    {"text": "alpha first", "doc": "A", "version": 1, "authority": 0.9, "created": 0.0, "valid_to": 10.0,
     "source": "policy"},
    {"text": "remote allowance 2", "doc": "A", "version": 2, "authority": 0.9, "created": 10.0, "valid_to": 40.0,
     "supersedes": 0, "depends": [3], "source": "policy"},
    {"text": "alpha third", "doc": "A", "version": 3, "authority": 0.9, "created": 40.0, "supersedes": 1,
     "source": "policy"},
    {"text": "bravo base", "doc": "B", "authority": 0.85, "created": 0.0, "valid_to": 20.0, "source": "tech"},
    {"text": "bravo update", "doc": "B", "version": 2, "authority": 0.85, "created": 20.0, "supersedes": 3,
     "source": "tech"},
    {"text": "heard it was 5", "doc": "S", "authority": 0.3, "created": 12.0, "source": "slack"},
    {"text": "official figure 3", "doc": "O", "authority": 0.95, "created": 15.0, "source": "official"},
]
E = np.eye(5)
LINEAGE_VECS = np.stack([E[1], E[0], E[2], E[3], E[4], E[0], E[0]])

# Days since the epoch as ISO: day 10 = Jan 11; day 40 = Feb 10 (31 days in Jan); day 70 = Mar 12 (59 = Mar 1)
ISO = {0: "1970-01-01T00:00:00Z", 10: "1970-01-11T00:00:00Z", 12: "1970-01-13T00:00:00Z",
       16: "1970-01-17T00:00:00Z", 21: "1970-01-22T00:00:00Z", 25: "1970-01-26T00:00:00Z",
       40: "1970-02-10T00:00:00Z", 70: "1970-03-12T00:00:00Z"}


@pytest.fixture
def life():
    tl = Timeline(make_corpus(LINEAGE_ROWS), ConsolidationParams(detector="semantic"), LINEAGE_VECS)
    # 1: A v1 and B v1 arrive at 0. 12: X arrives and supersedes A v1 at 10, the rumor arrives at 12: X wins
    # (rumor newer 1 vote, X higher authority 1 vote, ratio tied -> authority tie-break).
    # 16: the official figure arrives at 15: it beats X (newer, higher authority: 2 votes) and the rumor.
    # 21: B v2 supersedes B v1 at 20: X depends on B v1 -> ripple 0.15 at hop 1.
    tl.run(1.0, 12.0, 16.0, 21.0)
    tl.store.feedback(1, True, 25.0)
    tl.store.validate(1, 25.0)
    tl.store.record_access(1, 26.0)
    # 41: A v3 supersedes X at 40. 70: 40 <= 70 - 30 -> X archived.
    tl.run(41.0, 70.0)
    return tl


def test_lineage_of_a_vector_through_its_life(life):
    rec = lineage(life.store, 1)
    assert {k: rec[k] for k in ("id", "doc_id", "version", "source", "authority", "created_at", "valid_from",
                                "valid_to", "depends_on", "accesses")} == {
        "id": "c1", "doc_id": "A", "version": 2, "source": "policy", "authority": 0.9, "created_at": ISO[10],
        "valid_from": ISO[10], "valid_to": ISO[40], "depends_on": ["c3"], "accesses": 1}
    assert rec["supersedes"] == [{"id": "c0", "version": 1, "valid_from": ISO[0]}]
    assert rec["superseded_by"] == [{"id": "c2", "version": 3, "valid_from": ISO[40]}]
    assert rec["status_history"] == [
        {"time": ISO[10], "from": None, "to": "UNCONSOLIDATED", "cause": "ingested"},
        {"time": ISO[12], "from": "UNCONSOLIDATED", "to": "ACTIVE", "cause": "consolidated"},
        {"time": ISO[40], "from": "ACTIVE", "to": "DEPRECATED", "cause": "superseded by c2"},
        {"time": ISO[70], "from": "DEPRECATED", "to": "ARCHIVED", "cause": "deprecated for archive_after_days"},
    ]
    assert rec["ripples_received"] == [{"time": ISO[21], "origin": "c3", "depth": 1, "applied": 0.15,
                                        "lifted_at": None}]
    # verdict at 16 (age 6): 0.9 * 2^(-6/30) = 0.783496 -> - 0.08 = 0.703496
    # user acceptance at 25 (base 0.9 - 0.15 = 0.75, age 15): 0.75 * 2^(-1/2) - 0.08 = 0.450330 -> + 0.03
    assert rec["feedback"] == [
        {"time": ISO[16], "accepted": False, "cause": "verdict: contradicted by c6",
         "confidence_before": round(0.9 * 2 ** (-0.2), 6), "confidence_after": round(0.9 * 2 ** (-0.2) - 0.08, 6)},
        {"time": ISO[25], "accepted": True, "cause": "user",
         "confidence_before": round(0.75 * 2 ** -0.5 - 0.08, 6),
         "confidence_after": round(0.75 * 2 ** -0.5 - 0.05, 6)},
    ]
    assert rec["feedback"][0]["confidence_before"] == 0.783496
    assert rec["feedback"][1]["confidence_after"] == 0.48033
    assert rec["validations"] == [{"time": ISO[25], "cause": "user confirmed"}]
    assert rec["contradictions"] == [
        {"time": ISO[12], "role": "winner", "other": "c5", "detector": "semantic", "applied": True},
        {"time": ISO[16], "role": "loser", "other": "c6", "detector": "semantic", "applied": True},
    ]
    assert rec["state"] == {"status": "ARCHIVED", "base_confidence": 0.75, "positive": 1, "negative": 1,
                            "last_validated": ISO[25], "deprecated_at": ISO[40], "archived_at": ISO[70]}
    assert json.loads(json.dumps(rec)) == rec


def test_lineage_chains_winner_side_and_never_ingested(life):
    s = life.store
    # the supersession chain is followed to its end, in order, from either side
    assert [x["id"] for x in lineage(s, 0)["superseded_by"]] == ["c1", "c2"]
    assert [(x["id"], x["valid_from"]) for x in lineage(s, 2)["supersedes"]] == [("c1", ISO[10]), ("c0", ISO[0])]
    assert lineage(s, 2)["superseded_by"] == []
    # the official figure won both of its verdicts at 16 (X, then the rumor)
    assert [(c["role"], c["other"]) for c in lineage(s, 6)["contradictions"]] == [("winner", "c1"),
                                                                                  ("winner", "c5")]
    rumor = lineage(s, 5)
    assert [(c["time"], c["role"], c["other"]) for c in rumor["contradictions"]] == [
        (ISO[12], "loser", "c1"), (ISO[16], "loser", "c6")]
    assert rumor["state"]["negative"] == 2
    # a vector that never reached the store has no status and empty histories
    corpus = make_corpus(LINEAGE_ROWS)
    fresh = lineage(VectorStore(corpus), 4)
    assert fresh["state"]["status"] is None and fresh["status_history"] == [] and fresh["feedback"] == []
    assert fresh["state"]["last_validated"] is None and fresh["valid_to"] is None
    for i in range(len(corpus)):
        json.dumps(lineage(s, i))  # every record serialises


def test_lineage_marks_lifted_penalties():
    rows = [{"text": "a1 a2", "doc": "A", "authority": 0.9, "created": 0.0, "valid_to": 10.0},
            {"text": "b1 b2", "doc": "B", "authority": 0.8, "created": 0.0, "depends": [0]},
            {"text": "c1 c2", "doc": "A", "version": 2, "authority": 0.9, "created": 10.0, "supersedes": 0}]
    tl = Timeline(make_corpus(rows), lift_penalties_on_validation=True).run(1.0, 11.0)
    tl.store.validate(1, 12.0)
    rec = lineage(tl.store, 1)
    assert rec["ripples_received"] == [{"time": "1970-01-12T00:00:00Z", "origin": "c0", "depth": 1,
                                        "applied": 0.15, "lifted_at": "1970-01-13T00:00:00Z"}]
    assert rec["state"]["base_confidence"] == 0.8


# ---- explain ----------------------------------------------------------------------------------------------

def default_sv_cfg() -> dict:
    cfg = OmegaConf.load(f"{CONF_DIR}/retriever/smartvector.yaml")
    cfg = OmegaConf.merge(cfg, {"weights": OmegaConf.load(f"{CONF_DIR}/weights/paper.yaml")})
    return OmegaConf.to_container(cfg, resolve=True)


EXPLAIN_ROWS = [
    {"text": "target words", "doc": "T", "authority": 0.9, "created": 0.0, "depends": [2]},
    {"text": "runner words", "doc": "R", "authority": 0.9, "created": 0.0},
    {"text": "base first", "doc": "A", "authority": 0.9, "created": 0.0, "valid_to": 6.0},
    {"text": "base second", "doc": "A", "version": 2, "authority": 0.9, "created": 6.0, "supersedes": 2},
]
EXPLAIN_VECS = np.array([[1, 0, 0, 0], [0.8, 0.6, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=np.float32)


def bound_retriever():
    corpus = make_corpus(EXPLAIN_ROWS)
    r = build_retriever("smartvector", default_sv_cfg())
    store = VectorStore(corpus, r.conf_params, r.store_params)
    agent = ConsolidationAgent(corpus, r.cons_params, EXPLAIN_VECS)
    r.bind(corpus, EXPLAIN_VECS, store, agent)
    ingest_until(store, 1.0)
    agent.run(store, 1.0)
    store.feedback(0, True, 5.0)
    ingest_until(store, 7.0, since=1.0)  # A v2 arrives at 6 and supersedes A v1
    agent.run(store, 7.0)                # ripple 0.15 to the target (depends on A v1)
    store.record_access(0, 8.0)
    store.feedback(0, False, 12.0)       # after as_of = 10: not listed
    store.record_access(0, 12.0)
    return r, store


def test_explain_top_hit_contributions_runner_up_and_changed_by():
    r, store = bound_retriever()
    out = explain(r, np.array([1, 0, 0, 0], dtype=np.float32), 10.0)
    top, runner = out["top"], out["runner_ups"][0]
    assert out["as_of"] == "1970-01-11T00:00:00Z"
    assert top["id"] == "c0" and runner["id"] == "c1" and len(out["runner_ups"]) == 1
    assert top["status_at_as_of"] == "ACTIVE"
    sig = top["signals"]
    # semantic: cos 1; temporal: 2^(-10/30) = 0.793701; relational: one edge (c0 -> c2, transferred to c3)
    # -> 0.1 * ln 2 = 0.069315
    assert sig["semantic"] == 1.0
    assert sig["temporal"] == round(2 ** (-1 / 3), 6) == 0.793701
    assert sig["relational"] == round(0.1 * math.log(2), 6) == 0.069315
    assert sig["confidence"] == round(store.confidence_at(0, 10.0), 6)
    # contributions are weight * signal / weight sum (paper weights sum to 1)
    assert top["contributions"]["semantic"] == 0.35
    assert top["contributions"]["temporal"] == round(0.25 * 2 ** (-1 / 3), 6)
    # each contribution and the score are rounded to 6 decimals: the sum can differ by up to 4 * 5e-7 + 5e-7
    assert sum(top["contributions"].values()) == pytest.approx(top["score"], abs=2.5e-6)
    assert sum(runner["contributions"].values()) == pytest.approx(runner["score"], abs=2.5e-6)
    # runner-up: cos 0.8 -> 0.35 * 0.8 = 0.28; same age; confidence 0.9 * 0.793701 = 0.714330; no edges
    assert runner["signals"] == {"semantic": 0.8, "temporal": 0.793701, "confidence": round(0.9 * 2 ** (-1 / 3), 6),
                                 "relational": 0.0}
    assert runner["score"] == pytest.approx(0.28 + 0.25 * 0.793701 + 0.25 * 0.714330, abs=2e-6)
    assert runner["score"] < top["score"]
    # the events that changed the top hit's confidence up to as_of, in order; nothing after as_of
    changed = [(c["time"], c["kind"], c["cause"]) for c in out["changed_by"]]
    assert changed == [("1970-01-06T00:00:00Z", "feedback", "user"), ("1970-01-08T00:00:00Z", "ripple", "c2"),
                       ("1970-01-09T00:00:00Z", "access", "retrieved")]
    assert out["changed_by"][0]["confidence_after"] > out["changed_by"][0]["confidence_before"]
    assert out["changed_by"][1]["confidence_after"] < out["changed_by"][1]["confidence_before"]
    assert json.loads(json.dumps(out)) == out
    # asked later, the events at 12 are listed too
    later = [(c["time"], c["kind"]) for c in explain(r, np.array([1, 0, 0, 0], dtype=np.float32), 12.0)["changed_by"]]
    assert later[3:] == [("1970-01-13T00:00:00Z", "feedback"), ("1970-01-13T00:00:00Z", "access")]


def test_explain_matches_search_and_excludes_superseded():
    r, _ = bound_retriever()
    q = np.array([0, 0, 1, 0], dtype=np.float32)  # closest to A v1, superseded at 6
    run = r.search(q[None, :], np.array([10.0]), 4)
    out = explain(r, q, 10.0, runner_ups=3)
    assert [out["top"]["id"]] + [x["id"] for x in out["runner_ups"]] == [f"c{j}" for j in run.ranked[0] if j >= 0]
    assert "c2" not in [out["top"]["id"]] + [x["id"] for x in out["runner_ups"]]
    assert out["top"]["score"] == pytest.approx(run.scores[0, 0], abs=1e-6)
    # before the store holds anything there is no top hit
    empty = explain(r, q, -5.0)
    assert empty["top"] is None and empty["runner_ups"] == [] and empty["changed_by"] == []


# ---- detection_quality ------------------------------------------------------------------------------------

def test_detection_quality_hand_made():
    corpus = make_corpus([{"text": f"t{i}", "doc": f"d{i}", "authority": 0.5, "created": 0.0} for i in range(5)])
    store = VectorStore(corpus)
    for i in (0, 1, 3, 4):
        store.ingest(i, 0.0)  # rumor 2 never arrives
    rumor = Ragged.from_lists([[1], [2], [1, 2]])  # rumors {1, 2}
    agent = SimpleNamespace(contradictions=[(0, 1, 1), (0, 4, 2), (3, 1, 1)])
    # losers 1, 4, 1: rumors ingested {1}, demoted {1} -> recall 1/1; 2 of the 3 verdict losers are rumors
    assert detection_quality(store, agent, rumor) == {"rumors_ingested": 1, "verdicts": 3, "rumors_demoted": 1,
                                                      "rumor_recall": 1.0, "loser_precision": 0.666667}
    none = SimpleNamespace(contradictions=[])
    assert detection_quality(store, none, rumor) == {"rumors_ingested": 1, "verdicts": 0, "rumors_demoted": 0,
                                                     "rumor_recall": 0.0, "loser_precision": None}
    assert detection_quality(VectorStore(corpus), none, rumor)["rumor_recall"] is None  # nothing ingested


def test_detection_quality_from_a_real_agent_run():
    tl = Timeline(make_corpus(VERDICT_ROWS), ConsolidationParams(detector="semantic"), VERDICT_VECS).run(6.0)
    # the rumor (row 1) lost the one verdict
    assert detection_quality(tl.store, tl.agent, Ragged.from_lists([[1]])) == {
        "rumors_ingested": 1, "verdicts": 1, "rumors_demoted": 1, "rumor_recall": 1.0, "loser_precision": 1.0}
    # had the policy (row 0) been the injected rumor, the verdict would have missed it
    assert detection_quality(tl.store, tl.agent, Ragged.from_lists([[0]])) == {
        "rumors_ingested": 1, "verdicts": 1, "rumors_demoted": 0, "rumor_recall": 0.0, "loser_precision": 0.0}
