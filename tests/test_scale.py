"""The scale profile: the default dataset multiplied by teams (smartvector_bench/tools/scale/).

Fast: synthetic vectors at N = 3,000 (12 blocks, the last one truncated to 162 rows); only the 258 + 138
base texts go through the real MiniLM (cached in .cache/embeddings.sqlite).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.scale import (
    DIM, REAL_LIMIT, REAL_STATS_3K, STAT_TOLERANCES, backward_order, load_base, scale_dataset, similarity_stats,
    within_tolerance,
)
from smartvector_bench.core.timeutil import from_days

N = 3000


@pytest.fixture(scope="module")
def base():
    return load_base()


@pytest.fixture(scope="module")
def data():
    return scale_dataset(N, seed=0)


def test_base_is_the_default_dataset(base):
    assert len(base.corpus) == 258 and len(base.queries) == 138
    assert len(base.labels.chunk_family) == 258 and len(base.labels.query_family) == 138


def test_base_rows_are_the_generated_rows_with_every_reference_pointing_backwards(base, default_dataset):
    c, order = base.corpus, base.order
    assert sorted(order.tolist()) == list(range(258))
    rows = np.arange(258)
    assert np.all(c.supersedes < rows) and np.all(c.depends_on.indices < c.depends_on.row_ids())
    ds = load_dataset(default_dataset)  # the same config (the default dataset), written by the generator
    g = ds.corpus
    assert c.ids == [g.ids[i] for i in order.tolist()] and c.texts == [g.texts[i] for i in order.tolist()]
    # the same references, re-indexed: a chunk supersedes / depends on the same chunk ids as generated
    for k, i in enumerate(order.tolist()):
        assert (c.supersedes[k] < 0) == (g.supersedes[i] < 0)
        if c.supersedes[k] >= 0:
            assert c.ids[c.supersedes[k]] == g.ids[g.supersedes[i]]
        assert [c.ids[j] for j in c.depends_on.row(k)] == [g.ids[j] for j in g.depends_on.row(i)]
    assert list(base.labels.chunk_family) == list(ds.labels.chunk_family[order])
    # the same judgments, best grade first then lowest row (as the loader sorts them)
    for q in range(len(ds.queries)):
        got = [(c.ids[j], gr) for j, gr in zip(base.queries.relevant.row(q), base.queries.grades.row(q))]
        want = [(g.ids[j], gr) for j, gr in zip(ds.queries.relevant.row(q), ds.queries.grades.row(q))]
        assert sorted(got) == sorted(want)
        keys = [(-gr, c.index_of[cid]) for cid, gr in got]
        assert keys == sorted(keys)
        assert sorted(c.ids[j] for j in base.queries.stale.row(q)) == sorted(g.ids[j] for j in ds.queries.stale.row(q))
        assert sorted(c.ids[j] for j in base.queries.rumor.row(q)) == sorted(g.ids[j] for j in ds.queries.rumor.row(q))
    # the generated order is kept where references allow: most rows are not moved past a later one
    assert np.mean(np.diff(order) > 0) > 0.5


@pytest.mark.parametrize("n", [1, 257, 258, 259, N])
def test_exact_row_count(n):
    d = scale_dataset(n, seed=0, n_queries=50)
    c = d.corpus
    assert len(c) == n
    lab = d.labels
    for col in (c.titles, c.texts, c.doc_id, c.version, c.source, c.authority, c.created_at, c.valid_from,
                c.valid_to, c.supersedes, c.offset_start, c.offset_end, d.block, d.base_row, lab.chunk_family,
                lab.chunk_doc_type, lab.chunk_kind, lab.chunk_value):
        assert len(col) == n
    assert c.depends_on.n_rows == n and len(c.index_of) == n
    assert d.corpus_vectors.shape == (n, DIM)
    assert d.n_blocks == -(-n // 258)
    assert np.array_equal(d.block, np.arange(n) // 258) and np.array_equal(d.base_row, np.arange(n) % 258)


def test_ids_unique_and_suffixed_per_block(data, base):
    c = data.corpus
    assert len(set(c.ids)) == N
    assert all(c.index_of[i] == r for r, i in enumerate(c.ids))
    for r in (0, 257, 258, 1000, N - 1):
        b, i = r // 258, r % 258
        assert c.ids[r] == f"{base.corpus.ids[i]}~{b}"
        assert c.doc_id[r] == f"{base.corpus.doc_id[i]}~{b}"
        assert data.labels.chunk_family[r] == f"{base.labels.chunk_family[i]}~{b}"
        assert c.texts[r] == f"{base.corpus.texts[i]} ~{b}"
    # A text belongs to exactly one block (teams never share a text).
    owner: dict[str, int] = {}
    for text, b in zip(c.texts, data.block.tolist()):
        assert owner.setdefault(text, b) == b
    # Every other column is the base column, copied.
    rows = data.base_row
    assert np.array_equal(c.version, base.corpus.version[rows])
    assert np.array_equal(c.authority, base.corpus.authority[rows])
    assert list(c.source) == list(base.corpus.source[rows])
    assert np.array_equal(c.offset_start, base.corpus.offset_start[rows])
    assert np.array_equal(c.offset_end, base.corpus.offset_end[rows])
    for col in ("chunk_doc_type", "chunk_kind"):
        assert list(getattr(data.labels, col)) == list(getattr(base.labels, col)[rows])
    assert np.array_equal(data.labels.chunk_value, base.labels.chunk_value[rows], equal_nan=True)
    # each team has its own timelines, shifted with its chunks
    for b in (0, 5):
        for key, t in base.labels.timelines.items():
            tb = data.labels.timelines[f"{key}~{b}"]
            assert np.array_equal(tb.effective_from, t.effective_from + data.offsets[b])
            assert np.array_equal(tb.values, t.values)


def test_references_stay_in_their_block_at_the_same_relative_row(data, base):
    c, bc = data.corpus, base.corpus
    sup = c.supersedes
    has = sup >= 0
    assert np.array_equal(has, bc.supersedes[data.base_row] >= 0)
    assert np.array_equal(data.block[sup[has]], data.block[has])
    assert np.array_equal(data.base_row[sup[has]], bc.supersedes[data.base_row[has]])
    assert has.sum() > 10 * 100  # the base has ~100 supersession edges per block
    deps = c.depends_on
    assert deps.indices.max() < N
    for r in range(N):
        got = deps.row(r)
        assert np.array_equal(data.block[got], np.full(len(got), data.block[r]))
        assert np.array_equal(data.base_row[got], bc.depends_on.row(int(data.base_row[r])))
    assert len(deps.indices) > 10 * 40


def test_times_shifted_per_block_and_windows_consistent(data, base):
    c, bc = data.corpus, base.corpus
    off = data.offsets
    assert off.shape == (data.n_blocks,) and np.all(off == np.floor(off)) and off.min() >= 0 and off.max() < 365
    assert len(np.unique(off)) > data.n_blocks // 2  # blocks interleave in time, not all at one date
    shift = off[data.block]
    for col in ("created_at", "valid_from", "valid_to"):
        assert np.array_equal(getattr(c, col), getattr(bc, col)[data.base_row] + shift), col
    assert np.all(c.valid_from < c.valid_to)
    sup = c.supersedes
    has = sup >= 0
    assert np.array_equal(c.valid_to[sup[has]], c.valid_from[has])  # the successor starts when it ends
    assert len(np.unique(sup[has])) == has.sum()  # superseded at most once
    succ = c.superseded_by()
    # A policy's latest version stays open: in the whole blocks, a fact without successor has no end (in the
    # truncated last block a successor can lie past row N).
    fact = (data.labels.chunk_doc_type == "policy") & (data.labels.chunk_kind == "statement")
    whole = data.block < N // 258
    last = whole & fact & (succ < 0)
    assert last.sum() == 11 * 12 and np.all(np.isinf(c.valid_to[last]))  # 12 families per block


def test_queries_reindexed_and_golds_valid_at_as_of(data, base):
    q, c, bq = data.queries, data.corpus, base.queries
    assert len(q) == 1000 and len(set(q.ids)) == len(q)
    blocks = np.unique(data.query_block)
    assert len(blocks) == 8  # seven whole blocks of 138 and a part of an eighth
    assert np.array_equal(data.block[q.gold], data.query_block)
    assert np.array_equal(data.base_row[q.gold], bq.gold[data.query_base])
    rows = q.relevant.row_ids()
    assert np.array_equal(data.block[q.relevant.indices], data.query_block[rows])
    assert np.array_equal(q.relevant.counts(), bq.relevant.counts()[data.query_base])
    assert np.array_equal(q.grades.counts(), q.relevant.counts())
    for j in range(0, len(q), 97):
        assert np.array_equal(data.base_row[q.relevant.row(j)], bq.relevant.row(int(data.query_base[j])))
        assert np.array_equal(q.grades.row(j), bq.grades.row(int(data.query_base[j])))
    assert list(q.family) == [f"{bq.family[i]}~{b}" for i, b in zip(data.query_base, data.query_block)]
    assert list(data.labels.query_family) == list(q.family)
    assert list(data.labels.query_asks) == list(base.labels.query_asks[data.query_base])
    # a relevant chunk is of the query's (team's) family and in force at as_of
    assert np.all(data.labels.chunk_family[q.relevant.indices] == q.family[rows])
    assert np.all((c.valid_from[q.relevant.indices] <= q.as_of[rows]) & (q.as_of[rows] < c.valid_to[q.relevant.indices]))
    shift = data.offsets[data.query_block]
    assert np.array_equal(q.as_of, bq.as_of[data.query_base] + shift)
    assert np.array_equal(q.query_time, bq.query_time[data.query_base] + shift)
    assert list(q.category) == list(bq.category[data.query_base])
    assert np.all((c.valid_from[q.gold] <= q.as_of) & (q.as_of < c.valid_to[q.gold]))
    for ragged in (q.stale, q.rumor):
        rows = ragged.row_ids()
        assert np.array_equal(data.block[ragged.indices], data.query_block[rows])
    # a stale chunk states a value that had been superseded by as_of: by as_of it existed, and its value is
    # not the one the (shifted) family timeline has in force then
    srows = q.stale.row_ids()
    assert np.all(c.created_at[q.stale.indices] <= q.as_of[srows])
    truth = np.array([data.labels.timelines[q.family[r]].value_at(q.as_of[r]) for r in srows])
    assert np.all(data.labels.chunk_value[q.stale.indices] != truth)
    assert len(q.rumor.indices) > 0 and len(q.stale.indices) > 0
    for j in np.nonzero(q.category == "historical")[0][:20]:
        d = from_days(q.as_of[j])
        assert f"{d.day} {d:%B %Y}" in q.texts[j]
        assert q.texts[j].endswith(f" ~{data.query_block[j]}")


def test_query_sample_only_uses_rows_that_exist():
    d = scale_dataset(300, seed=3, n_queries=10_000)  # block 1 has 42 rows: only its queries that fit
    q = d.queries
    assert np.all(q.relevant.indices < 300) and np.all(q.stale.indices < 300) and np.all(q.rumor.indices < 300)
    assert 138 < len(q) < 2 * 138
    assert len(scale_dataset(N, seed=0, n_queries=10_000).queries) > 11 * 138  # capped at what exists


def test_vectors_normalised(data):
    for v in (data.corpus_vectors, data.query_vectors):
        assert v.dtype == np.float32 and v.shape[1] == DIM and np.all(np.isfinite(v))
        assert np.abs(np.linalg.norm(v, axis=1) - 1).max() < 1e-5
    assert data.query_vectors.shape[0] == len(data.queries)


def test_same_seed_identical_different_seed_different(data):
    again = scale_dataset(N, seed=0)
    for name in ("corpus_vectors", "query_vectors", "offsets", "query_block", "query_base"):
        assert np.array_equal(getattr(again, name), getattr(data, name)), name
    assert again.corpus.ids == data.corpus.ids and again.queries.ids == data.queries.ids
    assert np.array_equal(again.corpus.valid_from, data.corpus.valid_from)
    other = scale_dataset(N, seed=1)
    assert not np.array_equal(other.offsets, data.offsets)
    assert not np.array_equal(other.corpus_vectors, data.corpus_vectors)
    assert not np.array_equal(other.query_block, data.query_block)


def test_a_smaller_build_is_a_prefix_of_a_larger_one(data):
    small = scale_dataset(1000, seed=0)
    assert np.array_equal(small.corpus_vectors, data.corpus_vectors[:1000])
    assert small.corpus.ids == data.corpus.ids[:1000]
    assert np.array_equal(small.corpus.valid_to, data.corpus.valid_to[:1000])


def test_repeated_text_in_a_block_keeps_one_vector(data, base):
    # An unchanged section of a new version has its predecessor's text, hence (as with real embeddings)
    # the same vector inside the block; another team's copy of it differs.
    c = data.corpus
    same = [r for r in range(258, 516) if c.supersedes[r] >= 0 and c.texts[r] == c.texts[c.supersedes[r]]]
    assert len(same) > 20
    v = data.corpus_vectors
    assert all(np.array_equal(v[r], v[c.supersedes[r]]) for r in same)
    assert not np.array_equal(v[same[0]], v[same[0] + 258])


def test_synthetic_similarity_within_documented_tolerance(data):
    stats = similarity_stats(data)
    checks = within_tolerance(stats, REAL_STATS_3K)
    bad = {k: v for k, v in checks.items() if not v[2]}
    assert not bad, f"outside STAT_TOLERANCES: {bad}"
    assert set(checks) == set(STAT_TOLERANCES)


@pytest.mark.parametrize("params", [{"beta": 0.3}, {"alpha": 0.3}, {"sigma": 0.4}, {"alpha": 0.2, "beta": 0.3}])
def test_tolerance_check_rejects_other_parameters(params):
    stats = similarity_stats(scale_dataset(N, seed=0, **params))
    assert not all(ok for _, _, ok in within_tolerance(stats, REAL_STATS_3K).values())


def test_similarity_stats_measure_what_they_say():
    # Without team direction or noise every copy is identical: the top-10 never prefers its own block and
    # copies in two blocks have cosine 1.
    stats = similarity_stats(scale_dataset(N, seed=0, alpha=0.0, beta=0.0, sigma=0.0))
    assert stats["copies_other_block_cos"]["mean"] == pytest.approx(1.0, abs=1e-5)
    assert stats["families_same_block_cos"]["mean"] == pytest.approx(stats["families_other_block_cos"]["mean"],
                                                                     abs=0.02)
    assert stats["topk_own_block_share"] < 0.15
    strong = similarity_stats(scale_dataset(N, seed=0, alpha=1.0, beta=0.0, sigma=0.0))
    assert strong["topk_all_own_block"] == 1.0


def test_bad_arguments_and_real_limit():
    with pytest.raises(BenchError, match="REAL_LIMIT"):
        scale_dataset(REAL_LIMIT + 1, vectors="real")
    with pytest.raises(BenchError, match="n_vectors=0"):
        scale_dataset(0)
    with pytest.raises(BenchError, match="allowed: synthetic, real"):
        scale_dataset(10, vectors="fake")
    with pytest.raises(BenchError, match="sigma=-1"):
        scale_dataset(10, sigma=-1)


def test_a_copy_stays_within_the_chunk_size_up_to_a_million_rows(base):
    # The package behind smartvector_ref splits a text of more than chunk_chars (200) characters into two
    # vectors; the longest base text with the longest team marker of a 1M-row build must still fit.
    blocks = -(-1_000_000 // 258)
    longest = max(len(t) for t in base.corpus.texts) + len(f" ~{blocks - 1}")
    assert longest <= base.config["chunk_chars"] == 200
    assert max(len(t) for t in scale_dataset(N, seed=0, n_queries=0).corpus.texts) <= 200


def test_real_vectors_embed_the_team_texts():
    d = scale_dataset(300, seed=0, vectors="real", n_queries=20)  # block 0 and 42 rows of block 1
    assert d.corpus_vectors.shape == (300, DIM)
    assert np.abs(np.linalg.norm(d.corpus_vectors, axis=1) - 1).max() < 1e-5
    # Same section, two teams: close but not equal (the marker differs).
    cos = float(d.corpus_vectors[0] @ d.corpus_vectors[258])
    assert 0.9 < cos < 1.0


def test_one_hundred_thousand_rows_build_fast():
    t = time.perf_counter()
    d = scale_dataset(100_000, seed=0, n_queries=100)
    assert time.perf_counter() - t < 20  # generous for the vectorised build; a per-row Python loop would not be
    assert len(d.corpus) == 100_000 and len(set(d.corpus.ids[-300:])) == 300


def test_backward_order_waits_for_references_and_refuses_a_cycle(base):
    # rows 0..4: 0 depends on 3, 1 supersedes 4, 3 depends on 2; 2 and 4 reference nothing
    c = base.corpus
    five = dict(depends_on=Ragged.from_lists([[3], [], [], [2], []]), supersedes=np.array([-1, 4, -1, -1, -1]))
    small = _corpus_like(c, 5, **five)
    order = backward_order(small)
    assert order.tolist() == [2, 3, 0, 4, 1]  # the lowest waiting row first
    assert backward_order(_corpus_like(c, 3, depends_on=Ragged.from_lists([[], [0], [1]]),
                                       supersedes=np.array([-1, -1, 0]))).tolist() == [0, 1, 2]  # identity
    with pytest.raises(BenchError, match="reference cycle"):
        backward_order(_corpus_like(c, 2, depends_on=Ragged.from_lists([[1], [0]]), supersedes=np.array([-1, -1])))


def _corpus_like(c, n: int, **cols):
    from dataclasses import replace

    cut = {k: getattr(c, k)[:n] for k in ("doc_id", "version", "source", "authority", "created_at", "valid_from",
                                          "valid_to", "offset_start", "offset_end")}
    return replace(c, ids=c.ids[:n], titles=c.titles[:n], texts=c.texts[:n], **cut, **cols,
                   index_of={i: k for k, i in enumerate(c.ids[:n])})
