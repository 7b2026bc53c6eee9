"""Baselines and ceilings (valid_cosine, bm25, bm25_valid, recent_cosine, metadata_filter, oracle) on tiny
hand-made corpora with hand-made unit vectors (no model)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from omegaconf import OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.base import ReadsLabels, Retriever
from smartvector_bench.systems.bm25 import margin_confidence
from smartvector_bench.systems.cosine_baseline import rank_head_by

from . import factories

make_corpus = functools.partial(factories.make_corpus, authority=0.5, created=0.0)

INF = np.inf
NEW = ["valid_cosine", "bm25", "bm25_valid", "recent_cosine", "metadata_filter", "oracle"]
Q = np.array([[1.0, 0.0, 0.0]], dtype=np.float32)  # the query vector; a chunk's cosine is its first coordinate


def cos_vecs(cosines: list[float]) -> np.ndarray:
    """Unit vectors whose cosine with ``Q`` is the given value (equal values give identical vectors)."""
    c = np.asarray(cosines, dtype=np.float64)
    return np.stack([c, np.sqrt(1.0 - c**2), np.zeros_like(c)], axis=1).astype(np.float32)


def conf(name: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(f"{CONF_DIR}/retriever/{name}.yaml"), resolve=True)


def build(name: str, corpus: Corpus, vectors: np.ndarray, **overrides):
    r = build_retriever(name, {**conf(name), **overrides})
    r.index(corpus, vectors, 100.0)
    return r


def in_force(c: Corpus, t: float) -> np.ndarray:
    return (c.created_at <= t) & (c.valid_from <= t) & (t < c.valid_to)


# ---- config ----------------------------------------------------------------------------------------------

def test_yaml_names_its_class():
    for name in NEW:
        text = open(f"{CONF_DIR}/retriever/{name}.yaml", encoding="utf-8").read()
        assert text.splitlines()[0] == f"# @package retrievers.{name}"
        assert conf(name)["_target_"].startswith("smartvector_bench.systems.") and "kind" not in conf(name)
        assert isinstance(build_retriever(name, conf(name)), Retriever)  # the shipped config validates
        with pytest.raises(BenchError, match=rf"^retrievers\.{name}\.nope: unknown key"):
            build_retriever(name, {**conf(name), "nope": 1})


def test_config_defaults_list():
    """Every retriever yaml on the search path, none listed by hand (smartvector_bench/systems/discovery.py)."""
    line = next(x for x in open(f"{CONF_DIR}/config.yaml", encoding="utf-8") if x.startswith("  - retriever:"))
    assert line.split("#")[0].strip() == "- retriever: all"


def test_bm25_params_validated():
    for bad in ({"k1": -1.0}, {"b": -0.1}, {"k1": "x"}):
        with pytest.raises(BenchError, match=r"^retrievers\.bm25\."):
            build_retriever("bm25", {**conf("bm25"), **bad})
    with pytest.raises(BenchError, match=r"^retrievers\.bm25_valid\.b=2\.0: must be in \[0, 1\]"):
        build_retriever("bm25_valid", {**conf("bm25_valid"), "b": 2.0})
    with pytest.raises(BenchError, match=r"^retrievers\.recent_cosine\.candidates=0: must be an integer > 0"):
        build_retriever("recent_cosine", {**conf("recent_cosine"), "candidates": 0})


def test_only_the_oracle_reads_labels():
    for name in NEW + ["plain_cosine"]:
        r = build_retriever(name, conf(name))
        assert isinstance(r, ReadsLabels) == (name == "oracle"), name


# ---- valid_cosine ----------------------------------------------------------------------------------------

EDGE_ROWS = [
    {"valid_from": 10, "valid_to": 20, "created": 10},  # 0: in force on [10, 20): not at 20
    {"valid_from": 20, "created": 5},                   # 1: in force from 20 on (created earlier)
    {"valid_from": 0, "created": 25},                   # 2: valid window open, but created after 20
    {"valid_from": 0, "created": 0},                    # 3: always
    {"valid_from": 0, "valid_to": 15, "created": 0},    # 4: expired at 15
]
EDGE_COS = [0.9, 0.8, 0.99, 0.5, 0.95]


def test_valid_cosine_window_edges():
    c = make_corpus(EDGE_ROWS)
    r = build("valid_cosine", c, cos_vecs(EDGE_COS))
    run = r.search(np.repeat(Q, 4, axis=0), np.array([20.0, 10.0, -1.0, 14.999]), 5)
    assert run.system == "valid_cosine"
    assert run.ranked.tolist() == [[1, 3, -1, -1, -1], [4, 0, 3, -1, -1], [-1] * 5, [4, 0, 3, -1, -1]]
    np.testing.assert_allclose(run.scores[0, :2], [0.8, 0.5], atol=1e-6)
    assert np.isnan(run.scores[0, 2:]).all() and np.isnan(run.scores[2]).all()
    np.testing.assert_allclose(run.confidence[[0, 1, 3]], [0.8, 0.95, 0.95], atol=1e-6)
    assert np.isnan(run.confidence[2])


def test_valid_cosine_never_leaks_random():
    rng = np.random.default_rng(0)
    n = 60
    created = rng.integers(0, 50, n).astype(float)
    vf = created + rng.integers(-5, 10, n)
    rows = [{"created": float(created[i]), "valid_from": float(vf[i]),
             "valid_to": float(vf[i] + rng.integers(1, 20)) if rng.random() < 0.6 else INF} for i in range(n)]
    c = make_corpus(rows)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    qv = rng.normal(size=(40, 8)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    as_of = rng.integers(-2, 70, 40).astype(float)
    as_of[:5] = vf[:5]  # exactly at some windows' starts ...
    as_of[5:10] = [rows[i]["valid_to"] if np.isfinite(rows[i]["valid_to"]) else 0.0 for i in range(5, 10)]  # ... ends
    run = build("valid_cosine", c, vecs).search(qv, as_of, 10)
    cos = qv.astype(np.float64) @ vecs.T.astype(np.float64)
    for q in range(40):
        ok = in_force(c, as_of[q])
        got = run.ranked[q][run.ranked[q] >= 0]
        assert ok[got].all()
        expect = [i for i in np.argsort(-cos[q], kind="stable") if ok[i]][:10]
        assert got.tolist() == expect
        assert len(got) == min(10, ok.sum())
        if ok.any():
            assert run.confidence[q] == pytest.approx(np.clip(cos[q, expect[0]], 0, 1), abs=1e-5)
        else:
            assert np.isnan(run.confidence[q])


def test_cosine_confidence_clipped():
    c = make_corpus([{}, {}])
    for name in ("valid_cosine", "recent_cosine", "metadata_filter"):
        run = build(name, c, cos_vecs([-0.5, -0.7])).search(Q, np.array([1.0]), 2)
        assert run.ranked[0].tolist() == [0, 1] and run.confidence[0] == 0.0, name


# ---- bm25 / bm25_valid -----------------------------------------------------------------------------------

BM_ROWS = [
    {"text": "refund window is thirty days for every order", "valid_to": 50},   # 0: expired at 50
    {"text": "shipping policy standard delivery", "valid_from": 0},           # 1: no shared term
    {"text": "the refund is processed by finance"},                            # 2: one shared term
    {"text": "office hours and holidays"},                                     # 3: no shared term
    {"text": "refund window extended to sixty days", "created": 80},           # 4: created at 80
]


def test_bm25_ranks_term_match_first_and_ranks_zero_scores():
    c = make_corpus(BM_ROWS)
    r = build("bm25", c, cos_vecs([0.1] * 5))
    run = r.search(np.repeat(Q, 2, axis=0), np.array([60.0, 10.0]), 5,
                   texts=["What is the refund window?", "What is the refund window?"])
    # bm25 ignores time: the two refund-window chunks first, then the one-term chunk, then the zero scores
    assert run.ranked[0, 2] == 2 and set(run.ranked[0, :2]) == {0, 4}
    assert run.ranked[0, 3:].tolist() == [1, 3]  # zero-score ties: lower index first
    assert run.scores[0, 3:].tolist() == [0.0, 0.0] and (run.scores[0, :3] > 0).all()
    assert (np.diff(run.scores[0]) <= 0).all()
    assert run.ranked[1].tolist() == run.ranked[0].tolist()
    s1, s2 = run.scores[0, :2]
    assert run.confidence[0] == pytest.approx(s1 / (s1 + s2))


def test_bm25_valid_drops_expired_and_future():
    c = make_corpus(BM_ROWS)
    r = build("bm25_valid", c, cos_vecs([0.1] * 5))
    texts = ["refund window"] * 3
    run = r.search(np.repeat(Q, 3, axis=0), np.array([50.0, 49.0, 90.0]), 5, texts=texts)
    # at 50: chunk 0 expired (valid_to == as_of), chunk 4 not created yet -> chunk 2 first, zeros after
    assert run.ranked[0].tolist() == [2, 1, 3, -1, -1]
    assert np.isnan(run.scores[0, 3:]).all()
    assert run.confidence[0] == 1.0  # s2 = 0
    assert run.ranked[1].tolist() == [0, 2, 1, 3, -1]  # chunk 0 still in force at 49
    assert run.ranked[2].tolist() == [4, 2, 1, 3, -1]  # chunk 4 created at 80, chunk 0 gone
    s1, s2 = run.scores[1, :2]
    assert run.confidence[1] == pytest.approx(s1 / (s1 + s2)) and 0.5 < run.confidence[1] < 1.0
    # nothing in force -> NaN; a query sharing no term -> every eligible chunk, confidence 0
    run = r.search(np.repeat(Q, 2, axis=0), np.array([-1.0, 10.0]), 3, texts=["refund", "zebra crossing"])
    assert run.ranked[0].tolist() == [-1, -1, -1] and np.isnan(run.confidence[0])
    assert run.ranked[1].tolist() == [0, 1, 2] and run.confidence[1] == 0.0


def test_bm25_one_result_and_params_used():
    c = make_corpus([{"text": "refund policy"},
                     {"text": "refund refund alpha beta gamma delta epsilon zeta theta iota kappa lambda"}])
    run = build("bm25_valid", make_corpus([{"text": "refund"}, {"text": "x", "created": 9}]),
                cos_vecs([0.1, 0.1])).search(Q, np.array([1.0]), 2, texts=["refund"])
    assert run.ranked[0].tolist() == [0, -1] and run.confidence[0] == 1.0
    a = build("bm25", c, cos_vecs([0.1, 0.1])).search(Q, np.array([1.0]), 2, texts=["refund"])
    b = build("bm25", c, cos_vecs([0.1, 0.1]), b=0.0).search(Q, np.array([1.0]), 2, texts=["refund"])
    assert a.ranked[0].tolist() == [0, 1] and b.ranked[0].tolist() == [1, 0]  # no length normalisation
    with pytest.raises(BenchError, match="query texts"):
        build("bm25", c, cos_vecs([0.1, 0.1])).search(Q, np.array([1.0]), 2)


def test_margin_confidence_formula():
    top = np.array([[3.0, 1.0], [2.0, 0.0], [1.0, np.nan], [np.nan, np.nan], [0.0, 0.0]])
    out = margin_confidence(top)
    np.testing.assert_allclose(out[[0, 1, 2, 4]], [0.75, 1.0, 1.0, 0.0])
    assert np.isnan(out[3])


# ---- recent_cosine ---------------------------------------------------------------------------------------

def test_recent_cosine_newest_of_candidates():
    rows = [{"created": 1}, {"created": 5, "valid_to": 6}, {"created": 3}, {"created": 9}, {"created": 30}]
    cosines = [0.99, 0.98, 0.97, 0.50, 0.96]
    c = make_corpus(rows)
    r = build("recent_cosine", c, cos_vecs(cosines), candidates=3)
    run = r.search(np.repeat(Q, 2, axis=0), np.array([10.0, 2.0]), 5)
    # at 10: chunk 4 (created 30) does not exist; top-3 by cosine = 0,1,2 -> newest first 1,2,0; then 3 by
    # cosine even though it is the newest (outside the candidates); chunk 1 is expired but no validity filter
    assert run.ranked[0].tolist() == [1, 2, 0, 3, -1]
    np.testing.assert_allclose(run.scores[0, :4], [0.98, 0.97, 0.99, 0.5], atol=1e-6)
    assert run.confidence[0] == pytest.approx(0.98, abs=1e-6)
    assert run.ranked[1].tolist() == [0, -1, -1, -1, -1]  # at 2 only chunk 0 exists
    assert r.search(Q, np.array([10.0]), 1).ranked.tolist() == [[1]]
    # the default candidates (10) take all existing chunks: the newest existing one first
    run = build("recent_cosine", c, cos_vecs(cosines)).search(Q, np.array([10.0]), 5)
    assert run.ranked[0].tolist() == [3, 1, 2, 0, -1]


def test_recent_cosine_ties():
    # equal created_at: cosine breaks the tie; equal created_at and cosine: the lower index
    c = make_corpus([{"created": 2}, {"created": 4}, {"created": 4}, {"created": 4}])
    run = build("recent_cosine", c, cos_vecs([0.9, 0.5, 0.8, 0.5])).search(Q, np.array([10.0]), 4)
    assert run.ranked[0].tolist() == [2, 1, 3, 0]


@pytest.mark.parametrize("n_head,k", [(3, 5), (5, 2), (0, 4), (8, 8)])
def test_rank_head_by_matches_a_per_row_reference(n_head, k):
    # few distinct scores and keys, so that ties (equal cosine, equal key) and -inf (excluded) rows are common
    rng = np.random.default_rng(n_head * 10 + k)
    scores = rng.integers(0, 3, size=(40, 7)).astype(np.float64)
    scores[rng.random(scores.shape) < 0.3] = -np.inf
    key = rng.integers(0, 3, size=7).astype(np.float64)
    ranked, top = rank_head_by(scores, key, n_head, k)
    for q in range(len(scores)):
        kept = sorted((i for i in range(7) if np.isfinite(scores[q, i])), key=lambda i: (-scores[q, i], i))
        head = sorted(kept[:n_head], key=lambda i: -key[i])  # stable: cosine order within equal keys
        want = (head + kept[n_head:])[:k]
        want += [-1] * (k - len(want))
        assert ranked[q].tolist() == want, q
        assert [s for s, i in zip(top[q], want) if i >= 0] == [scores[q, i] for i in want if i >= 0]
        assert np.isnan(top[q][[i < 0 for i in want]]).all()

# ---- metadata_filter (the former oracle) -----------------------------------------------------------------

def test_metadata_filter_old_oracle_rule():
    rows = [{"authority": 0.5}, {"authority": 0.9}, {"authority": 1.0}, {"authority": 1.0, "valid_to": 5},
            {"authority": 1.0, "created": 20}]
    c = make_corpus(rows)
    vec = cos_vecs([0.9, 0.8, 0.7, 0.99, 0.98])
    run = build("metadata_filter", c, vec, candidates=2).search(Q, np.array([10.0]), 4)
    # valid at 10: 0, 1, 2 by cosine; the 2 most similar re-ranked by authority -> 1, 0; then 2
    assert run.system == "metadata_filter"
    assert run.ranked[0].tolist() == [1, 0, 2, -1]
    np.testing.assert_allclose(run.scores[0, :3], [0.8, 0.9, 0.7], atol=1e-6)
    assert run.confidence[0] == pytest.approx(0.8, abs=1e-6)
    run = build("metadata_filter", c, vec).search(Q, np.array([10.0, 3.0]), 4)  # candidates = 10
    assert run.ranked.tolist() == [[2, 1, 0, -1], [3, 2, 1, 0]]


# ---- oracle ----------------------------------------------------------------------------------------------

ORACLE_ROWS = [
    {"authority": 0.5},                   # 0: A
    {"authority": 0.9},                   # 1: A
    {"authority": 0.9},                   # 2: A (same authority as 1, higher cosine)
    {"authority": 1.0},                   # 3: B, higher cosine and authority than any A
    {"authority": 1.0, "valid_to": 5},    # 4: A, expired
    {"authority": 0.2},                   # 5: no family
    {"authority": 1.0, "created": 50},    # 6: A, created after as_of
]
ORACLE_FAM = np.array(["A", "A", "A", "B", "A", "", "A"], dtype=object)
ORACLE_COS = [0.6, 0.3, 0.5, 0.95, 0.99, 0.7, 0.98]


def oracle():
    r = build("oracle", make_corpus(ORACLE_ROWS), cos_vecs(ORACLE_COS))
    r.index_labels(ORACLE_FAM)
    return r


def test_oracle_rule():
    r = oracle()
    assert isinstance(r, ReadsLabels) and r.describe()["reads_labels"] is True
    fam = np.array(["A", "B", "", "C"], dtype=object)
    run = r.search(np.repeat(Q, 4, axis=0), np.full(4, 10.0), 7, query_family=fam)
    assert run.system == "oracle"
    # A: most authoritative A first (2 before 1 on cosine), then 0; then the rest in force by cosine
    assert run.ranked[0].tolist() == [2, 1, 0, 3, 5, -1, -1]
    np.testing.assert_allclose(run.scores[0, :5], [0.5, 0.3, 0.6, 0.95, 0.7], atol=1e-6)
    assert np.isnan(run.scores[0, 5:]).all()
    assert run.confidence[0] == pytest.approx(0.5, abs=1e-6)
    assert run.ranked[1].tolist() == [3, 5, 0, 2, 1, -1, -1]
    # "" is no family: a chunk without a family is not the query's family; an unknown family: cosine only
    assert run.ranked[2].tolist() == [3, 5, 0, 2, 1, -1, -1]
    assert run.ranked[3].tolist() == [3, 5, 0, 2, 1, -1, -1]
    # at 60 chunk 6 exists and is the most authoritative A (same authority as 4, which expired at 5)
    run = r.search(Q, np.array([60.0]), 3, query_family=np.array(["A"], dtype=object))
    assert run.ranked[0].tolist() == [6, 2, 1]
    run = r.search(Q, np.array([1.0]), 2, query_family=np.array(["A"], dtype=object))
    assert run.ranked[0].tolist() == [4, 2]  # before 5, chunk 4 is in force and the most authoritative


def test_oracle_needs_labels():
    r = oracle()
    with pytest.raises(BenchError, match="oracle: needs the ground-truth labels"):
        r.search(Q, np.array([10.0]), 3)
    with pytest.raises(BenchError, match="1 query families for 2 queries"):
        r.search(np.repeat(Q, 2, axis=0), np.full(2, 10.0), 3, query_family=np.array(["A"], dtype=object))
    with pytest.raises(BenchError, match="chunk families"):
        r.index_labels(ORACLE_FAM[:3])
    r = build("oracle", make_corpus(ORACLE_ROWS), cos_vecs(ORACLE_COS))  # index() without index_labels()
    with pytest.raises(BenchError, match="needs the ground-truth labels"):
        r.search(Q, np.array([10.0]), 3, query_family=np.array(["A"], dtype=object))


# ---- all systems: keyword arguments, ties, describe ------------------------------------------------------

def test_every_system_accepts_unknown_kwargs_and_describes():
    c = make_corpus([{"text": "refund window"}, {"text": "refund"}, {"text": "other"}])
    vec = cos_vecs([0.9, 0.8, 0.1])
    fam = np.array(["A"], dtype=object)
    for name in NEW:
        r = build(name, c, vec)
        if name == "oracle":
            r.index_labels(np.array(["A", "A", "B"], dtype=object))
        run = r.search(Q, np.array([1.0]), 2, texts=["refund window"], query_family=fam, chunk_value=1.0,
                       whatever="x")
        assert run.ranked.shape == (1, 2) and run.ranked[0, 0] == 0, name
        d = r.describe()
        assert isinstance(d, dict) and {"confidence", "rule"} <= set(d), name


def test_ties_go_to_the_lower_index():
    # chunks 1 and 3 identical (vector and text), chunk 0 and 2 weaker
    c = make_corpus([{"text": "other words"}, {"text": "refund window"}, {"text": "misc"},
                     {"text": "refund window"}])
    vec = cos_vecs([0.2, 0.9, 0.1, 0.9])
    for name in NEW:
        r = build(name, c, vec)
        kw = {}
        if name == "oracle":
            r.index_labels(np.array(["A", "B", "A", "B"], dtype=object))
            kw["query_family"] = np.array(["B"], dtype=object)
        run = r.search(Q, np.array([1.0]), 4, texts=["refund window"], **kw)
        assert run.ranked[0, :2].tolist() == [1, 3], name
        if name not in ("bm25", "bm25_valid"):
            assert run.ranked[0].tolist() == [1, 3, 0, 2], name
        else:
            assert run.ranked[0, 2:].tolist() == [0, 2], name  # zero scores: lower index first
