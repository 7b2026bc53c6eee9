"""Candidate pairs from the vector index (issue 6): kNN pairs, recall counting, the candidate consolidation
path against all pairs, the exact shortcuts (difflib lower bound, vectorised ripple) and the config key."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from smartvector_bench.systems.smartvector.candidates import all_pairs, knn_pairs, orient, recall
from smartvector_bench.systems.smartvector.consolidation import ConsolidationParams, consolidate, edges_to_ragged
from smartvector_bench.systems.smartvector.ripple import apply_ripple, ripple_hits, round6
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.systems.smartvector.detectors import (
    CharTable,
    ReferenceDetector,
    content_similarity,
    jaccard_between,
    jaccard_of,
)
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.smartvector.ripple import RippleParams, ripple
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams
from smartvector_bench.systems.smartvector.store import VectorStore

from .conftest import compose_config


def _unit(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_knn_pairs_equal_brute_force():
    x, k = _unit(300, 16, 0), 5
    sims = x @ x.T
    np.fill_diagonal(sims, -np.inf)
    nn = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    want = {(min(i, j), max(i, j)) for i in range(len(x)) for j in nn[i].tolist()}
    for block_rows in (7, 8192):
        lo, hi = knn_pairs(x, k, "flat", block_rows=block_rows)
        assert lo.dtype == np.int64 and (lo < hi).all()
        assert set(zip(lo.tolist(), hi.tolist())) == want
        assert len(lo) == len(want)  # unique


def test_knn_pairs_every_pair_when_k_covers_all():
    x = _unit(40, 8, 1)
    for index in ("flat", "ivf", "hnsw"):
        lo, hi = knn_pairs(x, 39, index)
        assert np.array_equal(lo, all_pairs(40)[0]) and np.array_equal(hi, all_pairs(40)[1])
    lo, hi = knn_pairs(_unit(2000, 16, 2), 10, "ivf")  # approximate: most exact pairs found
    flo, fhi = knn_pairs(_unit(2000, 16, 2), 10, "flat")
    assert recall((flo, fhi), (lo, hi)).recall > 0.8


def test_orient_keeps_new_x_pool_once_in_scan_order():
    lo, hi = np.array([0, 0, 1, 2, 3]), np.array([1, 3, 2, 3, 4])
    new, pool = np.array([1, 3]), np.array([True, True, True, True, False])
    i, j = orient(lo, hi, new, pool, 5)
    # (0,1): 1 new, 0 pool -> (1,0); (0,3) -> (3,0); (1,2) -> (1,2); (2,3) -> (3,2); (3,4): 4 not in pool
    assert list(zip(i.tolist(), j.tolist())) == [(1, 0), (1, 2), (3, 0), (3, 2)]


def test_recall_counts_on_hand_made_sets():
    ref = (np.array([0, 2, 5, 7]), np.array([1, 3, 6, 8]))
    got = (np.array([1, 3, 9, 9]), np.array([0, 2, 10, 10]))  # (1,0)=(0,1), (3,2)=(2,3), (9,10) twice
    rc = recall(ref, got)
    assert (rc.found, rc.missed, rc.extra) == (2, 2, 1)
    assert rc.recall == 0.5
    directed = recall(ref, got, unordered=False)
    assert (directed.found, directed.missed, directed.extra) == (0, 4, 3)
    assert recall((np.zeros(0), np.zeros(0)), got).recall == 1.0


@pytest.fixture(scope="module")
def default_corpus_vectors(tmp_path_factory):
    from data_gen.params import params_from_config
    from data_gen.writer import write_dataset

    path = tmp_path_factory.mktemp("cand") / "ds"
    cfg = compose_config()
    write_dataset(params_from_config(cfg["dataset"]), path)
    ds = load_dataset(path)
    corpus = ds.corpus
    emb = build_embedder({"kind": "hashing"})
    return corpus, np.asarray(emb.encode(corpus.texts), dtype=np.float32), float(np.max(ds.queries.as_of))


def _event_multiset(events):
    return Counter(repr(sorted(e.items())) for e in events)


def _pairs(res):
    return {(min(w, l), max(w, l)) for w, l, _ in res.contradictions}


@pytest.mark.parametrize("detector, loose", [("reference", True), ("semantic", False)])
def test_candidates_covering_all_pairs_find_the_same_contradictions(default_corpus_vectors, detector, loose):
    corpus, vecs, at = default_corpus_vectors
    # Loose thresholds so the 258 chunks have contradictions to find (benchmark v3's shared furniture keeps the
    # semantic detector's default 0.6 from finding any with the hashing embedder).
    base = ConsolidationParams(detector=detector, **({"topic_threshold": 0.2, "content_threshold": 0.6} if loose
                                                     else {"similarity_threshold": 0.45}))
    full = consolidate(corpus, at, base, vecs)
    cand = consolidate(corpus, at, dataclasses.replace(base, candidates=len(corpus) - 1), vecs)
    # The same pairs judged and found contradicting. Verdicts can differ: the all-pairs path judges in scipy's
    # (unsorted) column order inside a row of the sparse product, the candidate path in sorted (i, j) order,
    # and each verdict moves the loser's feedback ratio, one of the next votes' criteria.
    assert full.agent.judged == cand.agent.judged
    assert _pairs(full) == _pairs(cand) and len(full.contradictions) >= (20 if loose else 1)
    assert np.array_equal(full.agent.raw_edges().indices, cand.agent.raw_edges().indices)


def test_candidates_covering_all_pairs_give_the_default_all_pairs_result(default_corpus_vectors):
    corpus, vecs, at = default_corpus_vectors
    full = consolidate(corpus, at, ConsolidationParams(), vecs)
    cand = consolidate(corpus, at, ConsolidationParams(candidates=len(corpus) - 1), vecs)
    assert full.contradictions == cand.contradictions
    assert np.array_equal(full.depends_on.indptr, cand.depends_on.indptr)
    assert np.array_equal(full.depends_on.indices, cand.depends_on.indices)
    assert full.depends_on.indices.size > 30
    for name in ("penalty", "negative", "status", "archived_at", "deprecated_at"):
        assert np.array_equal(getattr(full.store, name), getattr(cand.store, name)), name
    assert (full.store.penalty > 0).any()
    # Same events; only the order of dependency_detected events inside one run may differ.
    assert _event_multiset(full.store.events) == _event_multiset(cand.store.events)


def test_small_k_finds_a_subset(default_corpus_vectors):
    corpus, vecs, at = default_corpus_vectors
    full = consolidate(corpus, at, ConsolidationParams(), vecs)
    # k = 1 (each vector's nearest neighbour only): on the default dataset k = 3 already reaches every
    # detected dependency, so a smaller k is needed for some edge to lie outside the candidates.
    cand = consolidate(corpus, at, ConsolidationParams(candidates=1, candidate_index="flat"), vecs)
    full_edges = set(zip(full.agent.raw_edges().row_ids().tolist(), full.agent.raw_edges().indices.tolist()))
    cand_edges = set(zip(cand.agent.raw_edges().row_ids().tolist(), cand.agent.raw_edges().indices.tolist()))
    assert cand_edges < full_edges  # a strict subset: fewer pairs judged, nothing invented


def test_candidates_need_vectors(default_corpus_vectors):
    corpus, _, _ = default_corpus_vectors
    with pytest.raises(ValueError, match="consolidation.candidates needs the corpus embeddings"):
        consolidate(corpus, 1e9, ConsolidationParams(candidates=5), None)


def test_lower_bound_and_row_wise_jaccard_are_exact(default_corpus_vectors):
    corpus, _, _ = default_corpus_vectors
    det = ReferenceDetector(corpus)
    i, j = all_pairs(len(corpus))
    lb = CharTable(corpus.texts).ratio_lower_bound(i, j)
    sample = np.random.default_rng(0).choice(len(i), 3000, replace=False)
    ratio = np.array([content_similarity(corpus.texts[a], corpus.texts[b]) for a, b in zip(i[sample], j[sample])])
    assert (lb[sample] <= ratio).all() and (lb > 0).mean() > 0.5
    jac = jaccard_of(det.words, i, j)
    bi, bj, bjac = jaccard_between(det.words, np.arange(len(corpus)), np.arange(len(corpus)), 0.1)
    keep = bi < bj
    lookup = dict(zip(zip(bi[keep].tolist(), bj[keep].tolist()), bjac[keep].tolist()))
    m = jac > 0.1  # float32 against the threshold, as jaccard_between compares
    got = dict(zip(zip(i[m].tolist(), j[m].tolist()), jac[m].tolist()))
    assert got == lookup
    every = np.arange(len(corpus))
    assert {(a, b) for a, b, _ in det.pairs_from(i, j)} == {(a, b) for a, b, _ in det.pairs(every, every)}


def test_ripple_hits_and_apply_match_the_sequential_loop(default_corpus_vectors):
    corpus, _, _ = default_corpus_vectors
    rng = np.random.default_rng(3)
    n = len(corpus)
    src, dst = rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n)
    depended_by = edges_to_ragged(src, dst, n)
    skip = rng.random(n) < 0.1
    origins = np.sort(rng.choice(n, 40, replace=False))
    p = RippleParams(penalty=0.3, max_depth=3, floor=0.05)
    want = [(int(o), v, d, pen) for o in origins for v, d, pen in ripple(depended_by, int(o), p, skip=skip)]
    hits = ripple_hits(depended_by, origins, p, skip)
    got = list(zip(hits.origin.tolist(), hits.vector.tolist(), hits.depth.tolist(), hits.penalty.tolist()))
    assert got == want and len(got) > 100
    a, b = VectorStore(corpus, ConfidenceParams()), VectorStore(corpus, ConfidenceParams())
    for o, v, d, pen in want:
        a.penalize(v, pen, o, d, 5.0, p.floor)
    apply_ripple(b, hits, 5.0, p.floor)
    assert a.events == b.events and a.penalties == b.penalties and np.array_equal(a.penalty, b.penalty)


def test_round6_is_pythons_round():
    x = np.concatenate([np.random.default_rng(0).random(20000), [0.0, -0.0, 1.0, 0.1234565, 0.0000005, 2.5e-7]])
    got = round6(x)
    assert [repr(v) for v in got] == [repr(round(v, 6)) for v in x.tolist()]


def test_config_candidates_null_and_int_and_bad_values():
    from smartvector_bench.systems import build_retriever
    from smartvector_bench.systems.smartvector.retriever import SmartVector

    key = "retrievers.smartvector.consolidation.candidates"
    cfg = compose_config()["retrievers"]["smartvector"]
    assert cfg.pop("_target_").endswith(".SmartVector")
    assert "candidates" in cfg["consolidation"] and SmartVector(**cfg).cons_params.candidates is None
    cfg = compose_config([f"{key}=20"])["retrievers"]["smartvector"]
    assert build_retriever("smartvector", cfg).cons_params.candidates == 20
    for bad in ("0", "-3", "true", "2.5", "many"):
        cfg = compose_config([f"{key}={bad}"])["retrievers"]["smartvector"]
        with pytest.raises(BenchError, match=r"consolidation\.candidates=.*: must be null or an integer >= 1"):
            build_retriever("smartvector", cfg)


def test_all_pairs_up_to_all_pairs_max_then_auto_candidates(default_corpus_vectors):
    corpus, vecs, at = default_corpus_vectors
    n = len(corpus)
    assert ConsolidationParams().candidates_for(n) is None  # the default dataset stays all pairs
    assert ConsolidationParams().candidates_for(5000) is None and ConsolidationParams().candidates_for(5001) == 100
    assert ConsolidationParams(all_pairs_max=None).candidates_for(10**6) is None
    assert ConsolidationParams(candidates=7).candidates_for(3) == 7  # an explicit k wins at any size
    full = consolidate(corpus, at, ConsolidationParams(), vecs)
    assert "auto_candidates" not in full.summary()
    # Above the threshold (lowered here) the auto k is used: the same result as candidates = that k.
    auto = consolidate(corpus, at, ConsolidationParams(all_pairs_max=n - 1, auto_candidates=n - 1), vecs)
    cand = consolidate(corpus, at, ConsolidationParams(candidates=n - 1), vecs)
    assert auto.agent.k == n - 1 and auto.contradictions == cand.contradictions == full.contradictions
    assert np.array_equal(auto.depends_on.indices, cand.depends_on.indices)
    assert auto.summary()["auto_candidates"] == {"k": n - 1, "n_vectors": n, "all_pairs_max": n - 1}
    with pytest.raises(ValueError, match="needs the corpus embeddings"):
        consolidate(corpus, at, ConsolidationParams(all_pairs_max=10), None)
    for bad in ({"all_pairs_max": 0}, {"auto_candidates": 0}, {"all_pairs_max": True}):
        with pytest.raises(BenchError, match=f"consolidation.{next(iter(bad))}="):
            ConsolidationParams(**bad)


# -- candidates among distinct texts (near-duplicates collapsed) --------------------------------------------------

def _teams(n_teams: int, seed: int = 3):
    """Six base texts copied into ``n_teams`` teams (a team name word each), vectors = base + small noise:
    texts 0 and 1 overlap in words, and every team's copies are near-duplicates of the other teams'."""
    from smartvector_bench.systems.smartvector.detectors import word_sets_matrix

    rng = np.random.default_rng(seed)
    base = ["alpha beta gamma delta", "alpha beta epsilon zeta", "eta theta iota kappa", "lambda mu nu xi",
            "omicron pi rho sigma", "tau upsilon phi chi"]
    e = _unit(len(base), 32, seed)
    e[1] = e[0] + 0.9 * e[1]  # text 1 is text 0's nearest other text
    texts, rows = [], []
    for b in range(n_teams):
        for i, t in enumerate(base):
            texts.append(f"{t} team{b}")
            rows.append(e[i] / np.linalg.norm(e[i]) + 0.01 * rng.standard_normal(32))
    x = np.asarray(rows, dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, word_sets_matrix(texts), np.repeat(np.arange(n_teams), len(base)), np.tile(np.arange(len(base)), n_teams)


def test_duplicate_groups_collapse_copies_and_stop_at_max_leaders():
    from smartvector_bench.systems.smartvector.distinct import duplicate_groups

    x, _, team, text = _teams(20)
    g = duplicate_groups(x, 0.95, block_rows=7)  # blocks smaller than a team: leaders found across blocks
    assert g.max() + 1 == 6 and g[0] == 0
    for t in range(6):  # one group per base text, whatever the team
        assert len(set(g[text == t].tolist())) == 1
    capped = duplicate_groups(x, 0.95, max_leaders=2)
    assert (capped[text < 2] < 2).all()  # the first two texts lead; later texts stay alone
    assert len(set(capped[text >= 2].tolist())) == int((text >= 2).sum())
    distinct = _unit(50, 16, 4)  # no near-duplicates: every row its own group
    assert np.array_equal(duplicate_groups(distinct, 0.95), np.arange(50))


def test_distinct_pairs_without_duplicates_are_the_knn_pairs():
    from smartvector_bench.systems.smartvector.detectors import word_sets_matrix
    from smartvector_bench.systems.smartvector.distinct import distinct_pairs

    x = _unit(300, 16, 0)
    words = word_sets_matrix([f"w{i}" for i in range(300)])
    for k in (1, 5):
        got, want = distinct_pairs(x, words, k, index="flat"), knn_pairs(x, k, "flat")
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    lo, hi = distinct_pairs(x, words, 299)
    assert np.array_equal(lo, all_pairs(300)[0]) and np.array_equal(hi, all_pairs(300)[1])


def test_distinct_pairs_find_the_same_team_pair_that_copies_crowd_out_of_knn():
    from smartvector_bench.systems.smartvector.distinct import distinct_pairs

    x, words, team, text = _teams(20)
    want = {(int(a), int(b)) for a, b in zip(np.nonzero(text == 0)[0], np.nonzero(text == 1)[0])}  # same team
    lo, hi = knn_pairs(x, 5, "flat")
    assert not want & set(zip(lo.tolist(), hi.tolist()))  # each text's 5 nearest are copies of itself
    lo, hi = distinct_pairs(x, words, 1, index="flat")
    got = set(zip(lo.tolist(), hi.tolist()))
    assert want <= got
    same_team = team[lo] == team[hi]
    cross = ~same_team
    # across teams only the medoid pair of each group pair; within a team the pairs of neighbouring texts
    assert int(cross.sum()) <= 6 and (text[lo][same_team] != text[hi][same_team]).all()
    small = distinct_pairs(x, words, 1, index="flat", small=20)  # groups of 20: small, every member pair
    assert len(small[0]) > len(lo) and want <= set(zip(small[0].tolist(), small[1].tolist()))


@pytest.mark.parametrize("detector", ["reference", "semantic"])
def test_distinct_candidates_covering_all_pairs_give_the_all_pairs_result(default_corpus_vectors, detector):
    corpus, vecs, at = default_corpus_vectors
    base = ConsolidationParams(detector=detector)
    full = consolidate(corpus, at, base, vecs)
    cand = consolidate(corpus, at, dataclasses.replace(base, candidates=len(corpus) - 1, candidate_pairs="distinct"),
                       vecs)
    assert full.agent.judged == cand.agent.judged and _pairs(full) == _pairs(cand)
    assert np.array_equal(full.agent.raw_edges().indices, cand.agent.raw_edges().indices)


@pytest.fixture(scope="module")
def tiled():
    from smartvector_bench.tools.scale import scale_dataset

    from smartvector_bench.core.embedding import HashingEmbedder

    return scale_dataset(258 * 12, seed=0, n_queries=10, embedder=HashingEmbedder(384))


def test_distinct_candidates_find_the_contradictions_copies_hide_from_knn(tiled):
    """Twelve teams' copies of the default dataset: all pairs finds contradictions in every team; each vector's
    20 nearest are crowded with copies of its own text and miss most of them, the 20 nearest distinct groups
    find every one."""
    c, vecs, at = tiled.corpus, tiled.corpus_vectors, float(np.max(tiled.queries.as_of))
    # looser reference thresholds: benchmark v3's sections share furniture (reference lines, caveats), which
    # lifts the detector's difflib ratios; at its defaults it finds no contradiction in the hashed copies
    loose = {"topic_threshold": 0.25, "content_threshold": 0.5}
    full = consolidate(c, at, ConsolidationParams(all_pairs_max=None, **loose), vecs)
    knn = consolidate(c, at, ConsolidationParams(candidates=20, candidate_pairs="knn", **loose), vecs)
    distinct = consolidate(c, at, ConsolidationParams(candidates=20, candidate_pairs="distinct", **loose), vecs)
    want = _pairs(full)
    assert len(want) >= 10 and len(want - _pairs(knn)) > len(want) / 2
    assert _pairs(distinct) == want
    got = recall(tuple(np.array(sorted(want)).T), tuple(np.array(sorted(_pairs(distinct))).T))
    assert got.recall == 1.0 and got.extra == 0

def test_split_words_leaves_the_matrix_and_splits_by_group_counts():
    from smartvector_bench.systems.smartvector.distinct import split_words

    x, words, team, text = _teams(12)
    before = (words.indptr.copy(), words.indices.copy(), words.data.copy())
    g = text.copy()  # one group per base text: 12 rows each
    core, rare = split_words(words, g, small=8)
    assert all(np.array_equal(a, b) for a, b in zip(before, (words.indptr, words.indices, words.data)))
    assert (core + rare != words).nnz == 0 and core.multiply(rare).nnz == 0
    assert (np.diff(rare.indptr) == 1).all()  # each row's team name is its only rare word
    core, rare = split_words(words, g, small=12)  # groups of 12 rows are small: every word core
    assert rare.nnz == 0 and core.nnz == words.nnz


def test_jaccard_floor_adds_far_groups_whose_words_pass_it():
    from smartvector_bench.systems.smartvector.detectors import word_sets_matrix
    from smartvector_bench.systems.smartvector.distinct import distinct_pairs

    x, _, team, text = _teams(10)
    # text 5 shares most words with text 2 but its vector is the farthest from text 2's
    texts = [("eta theta iota kappa" if t == 2 else "eta theta iota nu" if t == 5 else f"w{t} v{t} u{t}") +
             f" team{b}" for b, t in zip(team, text)]
    words = word_sets_matrix(texts)
    want = {(int(a), int(b)) for a, b in zip(np.nonzero(text == 2)[0], np.nonzero(text == 5)[0])}
    far = x[text == 2][0] @ x[text == 5][0]
    assert far < np.sort(x[text == 2][0] @ x[(text != 2) & (team == 0)].T)[-1]
    plain = distinct_pairs(x, words, 1, index="flat")
    assert not want <= set(zip(plain[0].tolist(), plain[1].tolist()))
    lexical = distinct_pairs(x, words, 1, index="flat", jaccard_floor=0.3)
    got = set(zip(lexical[0].tolist(), lexical[1].tolist()))
    assert want <= got  # the same team's pair, by its shared team name
    # core words alone ("eta theta iota": 3 of 5) pass 0.3: every row pair of the two groups, within the budget
    cross = {(min(a, b), max(a, b)) for a in np.nonzero(text == 2)[0].tolist()
             for b in np.nonzero(text == 5)[0].tolist()}
    assert cross <= got
    capped = distinct_pairs(x, words, 1, index="flat", jaccard_floor=0.3, every_budget=0.5)
    assert want <= set(zip(capped[0].tolist(), capped[1].tolist())) and not cross <= set(zip(*map(list, capped)))


def test_word_rule_options_follow_the_consolidation_rules():
    from smartvector_bench.systems.smartvector.distinct import RATIO_MARGIN, word_rule_options

    texts = ["the quota is 10 units per team", "the quota is 12 units per team", "entirely unrelated words here"]
    ref = word_rule_options(ConsolidationParams(topic_threshold=0.3, dependency_threshold=0.35), texts)
    assert ref["jaccard_floor"] == 0.3
    a, b = np.array([0, 0]), np.array([1, 2])
    want = [content_similarity(texts[0], texts[j]) < 0.4 + RATIO_MARGIN for j in (1, 2)]
    assert ref["every_gate"](a, b).tolist() == want == [False, True]
    sem = word_rule_options(ConsolidationParams(detector="semantic", dependency_threshold=0.35), texts)
    assert sem["jaccard_floor"] == 0.35 and not sem["every_gate"](a, b).any()
    none = word_rule_options(ConsolidationParams(detector="semantic", detect_dependencies=False), texts)
    assert none["jaccard_floor"] is None
