"""The scale profile: the default dataset multiplied by teams (smartvector_bench/scale.py).

Fast: synthetic vectors at N = 3,000 (12 blocks, the last one truncated to 162 rows); only the 258 + 138
base texts go through the real MiniLM (cached in .cache/embeddings.sqlite).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from smartvector_bench.errors import BenchError
from smartvector_bench.scale import (
    DIM, REAL_LIMIT, REAL_STATS_3K, STAT_TOLERANCES, load_base, scale_dataset, similarity_stats, within_tolerance,
)
from smartvector_bench.timeutil import from_days

N = 3000


@pytest.fixture(scope="module")
def base():
    return load_base()


@pytest.fixture(scope="module")
def data():
    return scale_dataset(N, seed=0)


def test_base_is_the_default_dataset(base):
    assert len(base.corpus) == 258 and len(base.queries) == 138


@pytest.mark.parametrize("n", [1, 257, 258, 259, N])
def test_exact_row_count(n):
    d = scale_dataset(n, seed=0, n_queries=50)
    c = d.corpus
    assert len(c) == n
    for col in (c.titles, c.texts, c.doc_id, c.family, c.version, c.source, c.authority, c.created_at,
                c.valid_from, c.valid_to, c.supersedes, d.block, d.base_row, d.kind):
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
        assert c.family[r] == f"{base.corpus.family[i]}~{b}"
        assert c.texts[r] == f"{base.corpus.texts[i]} (team {b})"
    # A text belongs to exactly one block (teams never share a text).
    owner: dict[str, int] = {}
    for text, b in zip(c.texts, data.block.tolist()):
        assert owner.setdefault(text, b) == b
    # Every other column is the base column, copied.
    rows = data.base_row
    assert np.array_equal(c.version, base.corpus.version[rows])
    assert np.array_equal(c.authority, base.corpus.authority[rows])
    assert list(c.source) == list(base.corpus.source[rows]) and list(data.kind) == list(base.kind[rows])


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
    assert np.all(np.isinf(c.valid_to[succ < 0]) | (data.kind[succ < 0] != "fact"))


def test_queries_reindexed_and_golds_valid_at_as_of(data, base):
    q, c, bq = data.queries, data.corpus, base.queries
    assert len(q) == 1000 and len(set(q.ids)) == len(q)
    blocks = np.unique(data.query_block)
    assert len(blocks) == 8  # seven whole blocks of 138 and a part of an eighth
    assert np.array_equal(data.block[q.gold], data.query_block)
    assert np.array_equal(data.base_row[q.gold], bq.gold[data.query_base])
    shift = data.offsets[data.query_block]
    assert np.array_equal(q.as_of, bq.as_of[data.query_base] + shift)
    assert np.array_equal(q.query_time, bq.query_time[data.query_base] + shift)
    assert list(q.category) == list(bq.category[data.query_base])
    assert np.all((c.valid_from[q.gold] <= q.as_of) & (q.as_of < c.valid_to[q.gold]))
    for ragged in (q.stale, q.rumor):
        rows = ragged.row_ids()
        assert np.array_equal(data.block[ragged.indices], data.query_block[rows])
    assert np.all(c.valid_to[q.stale.indices] <= q.as_of[q.stale.row_ids()])  # stale versions had ended
    assert len(q.rumor.indices) > 0 and len(q.stale.indices) > 0
    for j in np.nonzero(q.category == "historical")[0][:20]:
        d = from_days(q.as_of[j])
        assert f"{d.day} {d:%B %Y}" in q.texts[j]
        assert q.texts[j].endswith(f" (team {data.query_block[j]})")


def test_query_sample_only_uses_rows_that_exist():
    d = scale_dataset(300, seed=3, n_queries=10_000)  # block 1 has 42 rows: only its queries that fit
    q = d.queries
    assert np.all(q.gold < 300) and np.all(q.stale.indices < 300) and np.all(q.rumor.indices < 300)
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


@pytest.mark.parametrize("params", [{"beta": 0.0}, {"alpha": 0.3}, {"sigma": 0.4}, {"alpha": 0.0, "beta": 0.0}])
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
    assert time.perf_counter() - t < 20  # about 1.2 s here; a per-row Python loop would not be
    assert len(d.corpus) == 100_000 and len(set(d.corpus.ids[-300:])) == 300
