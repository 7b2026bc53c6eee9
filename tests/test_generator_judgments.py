"""The versioned-policy generator's queries: splits by family, judgments equal to judge_at recomputed from the labels,
categories that follow them, and the scenarios (lagging sources, announcements, rumors) they exercise."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from smartvector_bench.core.evaluation.judgments import judge_at

from .generator_cases import _rows
from .generator_cases import corpus, default_files, ds, families, queries  # noqa: F401 - the default profile (fixtures)


@pytest.fixture(scope="module")
def query_labels(default_files) -> dict[str, dict]:
    return {r["_id"]: r for r in _rows(default_files["labels/queries.jsonl"])}


# -- splits -------------------------------------------------------------------------------------------------------

def test_splits_share_no_family_and_no_relevant_chunk(ds):
    q = ds.queries
    fams = {s: set(q.family[q.split == s]) for s in ("dev", "test")}
    assert fams["dev"] and fams["test"]
    assert not fams["dev"] & fams["test"]
    rel = {s: set(q.relevant.take(np.nonzero(q.split == s)[0]).indices.tolist()) for s in ("dev", "test")}
    assert rel["dev"] and rel["test"] and not rel["dev"] & rel["test"]


def test_splits_are_balanced_by_category(queries):
    per = Counter((q["metadata"]["category"], q["metadata"]["split"]) for q in queries)
    for cat in {c for c, _ in per}:
        total = per[(cat, "dev")] + per[(cat, "test")]
        assert abs(per[(cat, "test")] - total / 2) <= max(2, 0.25 * total), (cat, per)


def test_several_queries_have_more_than_one_relevant_chunk(ds):
    n = ds.queries.relevant.counts()
    assert (n >= 1).all()
    assert (n > 1).sum() >= 10


# -- judgments ----------------------------------------------------------------------------------------------------

def test_judgments_equal_judge_at_recomputed_from_labels(ds, query_labels):
    c, q, lab = ds.corpus, ds.queries, ds.labels
    assert lab is not None
    for i, qid in enumerate(q.ids):
        fam = q.family[i]
        rows = np.nonzero(lab.chunk_family == fam)[0]
        j = judge_at(rows, lab.chunk_doc_type[rows], lab.chunk_value[rows], c.created_at[rows], c.valid_from[rows],
                     c.valid_to[rows], lab.timelines[fam], float(q.as_of[i]), lab.query_asks[i])
        assert q.relevant.row(i).tolist() == j.relevant.tolist(), qid
        assert q.grades.row(i).tolist() == j.grades.tolist(), qid
        assert sorted(q.stale.row(i).tolist()) == j.stale.tolist(), qid
        assert sorted(q.rumor.row(i).tolist()) == j.rumor.tolist(), qid
        assert query_labels[qid]["answer"] == j.truth, qid


def test_relevant_stale_and_rumor_chunks_hold_at_as_of(ds, query_labels):
    c, q, lab = ds.corpus, ds.queries, ds.labels
    for i, qid in enumerate(q.ids):
        as_of, fam = float(q.as_of[i]), q.family[i]
        answer = query_labels[qid]["answer"]
        asks = lab.query_asks[i]
        assert asks in ("policy", "runbook")
        rel, grades = q.relevant.row(i), q.grades.row(i)
        stale, rumor = q.stale.row(i), q.rumor.row(i)
        assert len(rel) >= 1
        assert list(grades) == sorted(grades, reverse=True) and set(grades.tolist()) <= {1, 2}
        for r, g in zip(rel.tolist(), grades.tolist()):
            assert c.created_at[r] <= as_of, (qid, r)
            assert c.valid_from[r] <= as_of < c.valid_to[r], (qid, r)
            assert lab.chunk_family[r] == fam and lab.chunk_value[r] == answer, (qid, r)
            assert (g == 2) == (lab.chunk_doc_type[r] == asks), (qid, r)
        for r in stale.tolist():
            assert c.created_at[r] <= as_of and lab.chunk_family[r] == fam
            assert lab.chunk_doc_type[r] != "message" and lab.chunk_value[r] != answer
        for r in rumor.tolist():
            assert c.created_at[r] <= as_of and lab.chunk_family[r] == fam
            assert lab.chunk_doc_type[r] == "message" and lab.chunk_value[r] != answer
        sets = [set(rel.tolist()), set(stale.tolist()), set(rumor.tolist())]
        assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2]), qid


def test_categories_follow_the_judgments(ds):
    q, lab = ds.queries, ds.labels
    cat = q.category
    contested = cat == "contested"
    assert (q.rumor.counts()[contested] > 0).all()
    # contested = an injected rumor exists (the family's scenario); an out-of-date confirmation alone does not
    # make a fact contested, so current / recently_updated queries may still have a rumor set.
    scenario = {json.loads(x)["family"]: json.loads(x)["scenario"]
                for x in (ds.path / "labels" / "families.jsonl").read_text().splitlines()}
    injected = np.array([scenario[f]["rumors"] > 0 for f in q.family])
    assert injected[contested].all()
    assert not injected[(cat == "current") | (cat == "recently_updated")].any()
    assert (lab.query_asks[cat == "dependent"] == "runbook").all()
    assert (lab.query_asks[cat != "dependent"] == "policy").all()
    hist = cat == "historical"
    assert (q.as_of[hist] < q.query_time[hist]).all()


def test_queries_never_appear_verbatim_in_the_corpus(corpus, queries):
    texts = [r["text"].lower() for r in corpus.values()]
    for q in queries:
        needle = q["text"].lower().rstrip("?")
        assert not any(needle in t for t in texts), q["text"]
        assert not re.search(r"[0-9]", q["text"]) or q["metadata"]["category"] == "historical", q["text"]


# -- scenarios ----------------------------------------------------------------------------------------------------

def _now_queries(ds):
    q = ds.queries
    return [i for i in range(len(q)) if q.category[i] != "historical"]


def test_a_current_query_meets_a_lagging_source(ds, families):
    c, q, lab = ds.corpus, ds.queries, ds.labels
    hits = []
    for i in _now_queries(ds):
        as_of = q.as_of[i]
        for r in q.stale.row(i).tolist():
            if c.valid_from[r] <= as_of < c.valid_to[r] and lab.chunk_doc_type[r] == "runbook":
                hits.append((q.ids[i], q.family[i]))
    assert hits, "no current query has an in-force stale runbook chunk"
    lagging = {f for f, row in families.items() if row["scenario"]["lagging"]}
    assert lagging and {f for _, f in hits} <= lagging | {f for f, row in families.items()
                                                         if row["scenario"]["announced"]}


def test_a_current_query_is_answered_only_by_an_announcement(ds, families):
    c, q, lab = ds.corpus, ds.queries, ds.labels
    hits = []
    for i in _now_queries(ds):
        rel = q.relevant.row(i)
        if len(rel) and (lab.chunk_doc_type[rel] == "message").all():
            hits.append(i)
            # The policy document still states the previous value, in an open window: it is stale.
            stale = q.stale.row(i)
            assert any(lab.chunk_doc_type[r] == "policy" and np.isinf(c.valid_to[r]) for r in stale.tolist())
    assert hits, "no current query whose only relevant chunks are messages"
    announced = {f for f, row in families.items() if row["scenario"]["announced"]}
    assert {q.family[i] for i in hits} <= announced


def test_rumors_are_low_authority_messages(ds, default_files):
    c, lab = ds.corpus, ds.labels
    messages = lab.chunk_doc_type == "message"
    assert set(c.source[messages]) <= {"slack", "email", "meeting_notes"}
    assert c.authority[messages].max() < c.authority[~messages].min()
    rumored = set(ds.queries.rumor.indices.tolist())
    assert rumored and all(messages[r] for r in rumored)
