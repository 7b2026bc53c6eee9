"""Consolidation in bounded chunks (issue 33): the candidate pairs oriented and gated a chunk at a time, the
distinct-text generator's pieces, the word counts and the detector's judging table in chunks give exactly the
unchunked results. Tiny chunk sizes put many chunk boundaries inside small data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from smartvector_bench.systems.smartvector import candidates as cand
from smartvector_bench.systems.smartvector import distinct as dist
from smartvector_bench.systems.smartvector.candidates import KeyUnion, orient, select_oriented, sorted_unique
from smartvector_bench.systems.smartvector.consolidation import ConsolidationParams, consolidate
from smartvector_bench.systems.smartvector.detectors import CharTable, ReferenceDetector, jaccard_of
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.systems.smartvector.store import VectorStore, ingest_until

LOOSE = {"topic_threshold": 0.25, "content_threshold": 0.5}  # contradictions in the hashed copies (test_candidates)


@pytest.fixture(scope="module")
def tiled():
    from smartvector_bench.core.embedding import HashingEmbedder
    from smartvector_bench.tools.scale import scale_dataset

    return scale_dataset(258 * 12, seed=0, n_queries=10, embedder=HashingEmbedder(384))


def _random_pairs(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    key = sorted_unique(rng.integers(0, n, m) * n + rng.integers(0, n, m))
    lo, hi = key // n, key % n
    keep = lo < hi
    return lo[keep], hi[keep]


@pytest.mark.parametrize("chunk", [1, 2, 3, 17, 10_000])
def test_select_oriented_is_orient_then_the_test_in_orients_order(chunk):
    n = 60
    lo, hi = _random_pairs(n, 900, 0)
    rng = np.random.default_rng(1)
    new, pool = rng.random(n) < 0.4, rng.random(n) < 0.7
    i, j = orient(lo, hi, new, pool, n)
    score = (i * 7 + j * 3) % 10 / 10.0

    def test(a, b):
        s = (a * 7 + b * 3) % 10 / 10.0
        return s > 0.35, s

    keep = score > 0.35
    got = select_oriented(lo, hi, np.nonzero(new)[0], pool, n, test, chunk)
    assert keep.any() and (~keep).any()
    for a, b in zip(got, (i[keep], j[keep], score[keep])):
        np.testing.assert_array_equal(a, b)
    mask_only = select_oriented(lo, hi, new, pool, n, lambda a, b: test(a, b)[0], chunk)
    assert len(mask_only) == 2 and np.array_equal(mask_only[0], i[keep]) and np.array_equal(mask_only[1], j[keep])
    # pairs oriented both ways: the new ends out of order in the candidates' order, so chunks' outputs interleave
    fwd = new[lo] & pool[hi]
    bwd = ~fwd & new[hi] & pool[lo]
    assert bwd.any() and (np.diff(np.where(fwd, lo, hi)[fwd | bwd]) < 0).any()


def test_select_oriented_with_no_pairs():
    empty = np.zeros(0, np.int64)
    i, j, v = select_oriented(empty, empty, empty, empty, 5, lambda a, b: (a >= 0, a * 1.0), 3)
    assert i.dtype == np.int64 and len(i) == len(j) == len(v) == 0


def test_key_union_merges_pieces_into_the_sorted_unique_union(monkeypatch):
    monkeypatch.setattr(KeyUnion, "PIECES_MERGED", 3)
    rng = np.random.default_rng(2)
    pieces = [sorted_unique(rng.integers(0, 50, rng.integers(0, 12))) for _ in range(40)]
    u = KeyUnion()
    for p in pieces:
        u.add(p)
    np.testing.assert_array_equal(u.result(), sorted_unique(np.concatenate(pieces)))
    assert KeyUnion().result().size == 0


def _state(res) -> tuple:
    """Everything a consolidation returns, comparable."""
    st = res.store
    cols = tuple(np.asarray(getattr(st, c)).tobytes() for c in st.COLUMNS)
    raw, deps = res.agent.raw_edges(), res.depends_on
    return (res.contradictions, sorted(res.agent.judged), raw.indptr.tobytes(), raw.indices.tobytes(),
            deps.indptr.tobytes(), deps.indices.tobytes(), list(st.events), list(st.penalties), cols,
            res.summary())


@pytest.mark.parametrize("detector", ["reference", "semantic"])
@pytest.mark.parametrize("pairs", ["knn", "distinct"])
def test_consolidate_at_tiny_chunks_is_the_unchunked_result(tiled, detector, pairs):
    c, vecs, at = tiled.corpus, tiled.corpus_vectors, float(np.max(tiled.queries.as_of))
    p = ConsolidationParams(detector=detector, candidates=20, candidate_pairs=pairs, **LOOSE)
    whole = consolidate(c, at, p, vecs, chunk=1 << 30)
    assert len(whole.contradictions) > 0 and len(whole.events) > 0
    assert whole.store.events.count("kind").get("dependency_detected", 0) > 0
    for chunk in (7, 1000):
        assert _state(consolidate(c, at, p, vecs, chunk=chunk)) == _state(whole)


@pytest.mark.parametrize("detector", ["reference", "semantic"])
def test_incremental_runs_at_tiny_chunks_are_the_unchunked_runs(tiled, detector):
    """Two runs: the second one's new vectors are often the larger end of a candidate pair, so pairs are
    oriented both ways and each chunk's pairs interleave with the others' in the order judged."""
    from smartvector_bench.systems.smartvector.consolidation import ConsolidationAgent, ConsolidationResult

    c, vecs = tiled.corpus, tiled.corpus_vectors
    t1, t2 = np.quantile(c.created_at, [0.5, 1.0])
    p = ConsolidationParams(detector=detector, candidates=20, candidate_pairs="knn", **LOOSE)

    def runs(chunk: int) -> tuple:
        store, agent = VectorStore(c), ConsolidationAgent(c, p, vecs)
        agent.chunk = chunk
        ingest_until(store, t1)
        agent.run(store, t1)
        ingest_until(store, t2, since=t1)
        agent.run(store, t2)
        return _state(ConsolidationResult(store, agent, t2))

    whole = runs(1 << 30)
    assert len(whole[0]) > 0
    assert runs(7) == whole


def test_distinct_pairs_in_tiny_pieces_are_the_whole_ones(tiled, monkeypatch):
    from smartvector_bench.systems.smartvector.consolidation import word_rule_options
    from smartvector_bench.systems.smartvector.detectors import word_sets_matrix

    c, vecs = tiled.corpus, tiled.corpus_vectors
    words = word_sets_matrix(c.texts)
    opts = word_rule_options(ConsolidationParams(**LOOSE), c.texts)
    want = dist.distinct_pairs(vecs, words, 10, index="flat", **opts)
    assert len(want[0]) > 1000
    monkeypatch.setattr(dist, "PAIR_CHUNK", 5)
    monkeypatch.setattr(dist, "ENTRY_CHUNK", 7)
    monkeypatch.setattr(dist, "DENSE_COUNTS", 0)  # the sorted counts, not the dense table
    monkeypatch.setattr(cand.KeyUnion, "PIECES_MERGED", 11)
    got = dist.distinct_pairs(vecs, words, 10, index="flat", **opts)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def _rare_whole(words, g, small) -> np.ndarray:
    """split_words' rare entries as first written: one count over every entry."""
    w = sparse.csr_matrix(words, dtype=np.float32)
    n_groups = int(g.max()) + 1
    gr = np.repeat(g, np.diff(w.indptr))
    key = w.indices.astype(np.int64) * n_groups + gr
    _, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    return (cnt[inv.ravel()] <= small) & (np.bincount(g, minlength=n_groups) > small)[gr]


@pytest.mark.parametrize("chunk", [1, 5, 64, None])
@pytest.mark.parametrize("dense", [True, False])
def test_rare_entries_counted_in_chunks_are_the_whole_count(chunk, dense, monkeypatch):
    rng = np.random.default_rng(3)
    n, vocab = 120, 30
    g = np.sort(rng.integers(0, 6, n))
    g = np.unique(g, return_inverse=True)[1].astype(np.int64)
    dense_rows = rng.random((n, vocab)) < np.where(rng.random(vocab) < 0.5, 0.05, 0.6)
    dense_rows[5] = False  # an empty row
    words = sparse.csr_matrix(dense_rows.astype(np.float32))
    if not dense:
        monkeypatch.setattr(dist, "DENSE_COUNTS", 0)
    want = _rare_whole(words, g, 8)
    got = dist.rare_entries(dist._float_words(words), g, 8, chunk)
    assert want.any() and (~want).any()
    np.testing.assert_array_equal(got, want)


def test_word_part_of_rows_is_the_part_indexed():
    rng = np.random.default_rng(4)
    w = sparse.csr_matrix((rng.random((40, 25)) < 0.3).astype(np.float32))
    keep = rng.random(w.nnz) < 0.5
    rows = np.array([3, 0, 39, 3, 17], dtype=np.int64)
    whole = dist.word_part(w, keep)
    assert whole.nnz == int(keep.sum())
    assert (dist.word_part(w, keep, rows) != whole[rows]).nnz == 0
    assert (dist.word_part(w, keep, rows).toarray() == whole.toarray()[rows]).all()


def test_judge_in_chunks_and_the_char_table_in_blocks_are_the_whole(tiled):
    det = ReferenceDetector(tiled.corpus, **LOOSE)
    i, j = _random_pairs(len(tiled.corpus), 40_000, 5)
    keep, jac = det.gate(i, j)
    i, j, jac = i[keep], j[keep], jac[keep]
    want = det._judge(i, j, jac, chunk=1 << 30)
    assert len(want) > 0 and len(i) > 50
    assert det._judge(i, j, jac, chunk=3) == want == det.judge(i, j, jac)
    texts = [tiled.corpus.texts[r] for r in range(300)]
    a, b = CharTable(texts), CharTable(texts, block=7)
    assert a.width == b.width and np.array_equal(a.head, b.head) and np.array_equal(a.tail, b.tail)
    np.testing.assert_array_equal(jaccard_of(det.words, i, j, block=5), jaccard_of(det.words, i, j))
    np.testing.assert_array_equal(jaccard_of(det.words, i, j, sizes=det.sizes), jaccard_of(det.words, i, j))


def test_doc_version_code_is_the_code_of_the_pair_in_order_of_first_row(tiled):
    c = tiled.corpus
    det = ReferenceDetector(c)
    keys = np.array([f"{d}\0{v}" for d, v in zip(c.doc_id, c.version)], dtype=object)
    np.testing.assert_array_equal(det.doc_version_code, pd.factorize(keys)[0])


def _awake_store(c, at: float) -> VectorStore:
    """A store after ingest, its vectors ACTIVE, some of the first 50 DORMANT (to revive or not)."""
    store = VectorStore(c)
    ingest_until(store, at)
    store.status[store.status == Status.UNCONSOLIDATED] = Status.ACTIVE
    first = store.status[:50]
    first[first == Status.ACTIVE] = Status.DORMANT
    return store


def test_dormancy_batches_are_the_row_by_row_records(tiled):
    from smartvector_bench.systems.smartvector.consolidation import ConsolidationAgent

    c, at = tiled.corpus, float(np.max(tiled.queries.as_of))
    store, other = _awake_store(c, at), _awake_store(c, at)
    before, in_force = len(store.events), store.in_force()
    ConsolidationAgent(c, ConsolidationParams())._dormancy(store, at, in_force)
    # the per-row loop the batches replace
    conf = other.live_confidence(np.array([at]))[0]
    low = conf < other.conf.dormant_threshold
    awake = (other.status == Status.ACTIVE) | (other.status == Status.UNCONSOLIDATED)
    for i in np.nonzero(in_force & awake & low)[0]:
        other.set_status(int(i), Status.DORMANT, at, f"decay: confidence {conf[i]:.3f} below threshold")
    for i in np.nonzero((other.status == Status.DORMANT) & ~low)[0]:
        other.set_status(int(i), Status.ACTIVE, at, f"revived: confidence {conf[i]:.3f}")
    got, want = list(store.events)[before:], list(other.events)[before:]
    assert {e["new"] for e in want} == {"DORMANT", "ACTIVE"}
    assert got == want and [list(e) for e in got] == [list(e) for e in want]
    assert [tuple(map(type, e.values())) for e in got] == [tuple(map(type, e.values())) for e in want]
    np.testing.assert_array_equal(store.status, other.status)


def test_probe_sees_each_phase_in_order_and_changes_nothing(tiled):
    c, vecs, at = tiled.corpus, tiled.corpus_vectors, float(np.max(tiled.queries.as_of))
    p = ConsolidationParams(candidates=10, candidate_pairs="distinct", **LOOSE)
    seen = []
    res = consolidate(c, at, p, vecs, probe=seen.append)
    assert seen == ["ingest", "setup", "candidates", "contradictions", "edges", "ripple", "statuses"]
    assert res.agent.probe is None
    assert _state(res) == _state(consolidate(c, at, p, vecs))
    assert res.agent.candidate_pairs()[0].dtype == np.int32


def test_perf_case_reports_the_peak_of_each_phase(tiled):
    from smartvector_bench.tools.perf.consolidation import PHASE_PEAK, bench_consolidation

    out = {r.metric: r.value for r in bench_consolidation(tiled, reps=1, k=10)}
    phases = {m.split(".", 1)[1]: v for m, v in out.items() if m.startswith(PHASE_PEAK + ".")}
    if "rss_before_mb" not in out or not phases:
        pytest.skip("no /proc/self/clear_refs here: no peak per phase")
    assert set(phases) == {"ingest", "setup", "candidates", "contradictions", "edges", "ripple", "statuses"}
    assert out["peak_rss_mb"] == pytest.approx(out["rss_before_mb"] + max(phases.values()))
