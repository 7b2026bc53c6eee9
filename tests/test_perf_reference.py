"""smartvector_bench.tools.perf.reference: smartvector-rag 0.1.1 at scale, side by side with our smartvector."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from smartvector_bench.core.embedding import HashingEmbedder
from smartvector_bench.tools.perf import reference as ref
from smartvector_bench.tools.scale import scale_dataset

N, NQ, REPS, CONS = 300, 10, 2, 150


EMBEDDER = HashingEmbedder(384)  # base vectors only; the structure is the real one, and the package ignores vectors


@pytest.fixture(scope="module")
def data():
    return scale_dataset(N, n_queries=NQ, embedder=EMBEDDER)


@pytest.fixture(scope="module")
def out(data):
    return ref.bench_reference(data, n_queries=NQ, reps=REPS, consolidation_max=CONS)


def _find(out, case, system, metric):
    return [r for r in out if (r.case, r.system, r.metric) == (case, system, metric)]


def test_rows_well_formed(out, data):
    assert out
    for r in out:
        assert r.vectors == data.info["vectors"] == "synthetic"
        assert isinstance(r.value, float) and math.isfinite(r.value), r
        assert r.value >= 0, r
        assert r.system in (ref.SYSTEM, ref.OURS, ref.OURS_RERANK), r
    keys = {(r.case, r.system) for r in out}
    assert keys == {("ingest", "smartvector_ref"), ("consolidation", "smartvector_ref"),
                    ("search_latency", "smartvector_ref"), ("search_batch", "smartvector_ref"),
                    ("ingest", "smartvector"), ("search_latency", "smartvector"), ("search_batch", "smartvector"),
                    ("search_batch", ref.OURS_RERANK), ("quality", ref.OURS_RERANK)}
    for r in out:
        assert r.n_vectors == (CONS if r.case == "consolidation" else N), r


def test_timings_positive_and_counted(out):
    for system in (ref.SYSTEM, ref.OURS):
        lat = _find(out, "search_latency", system, "query_ms")
        assert len(lat) == NQ and sorted(r.rep for r in lat) == list(range(NQ))
        assert all(r.value > 0 and r.unit == "ms" for r in lat)
        secs, qps = _find(out, "search_batch", system, "batch_s"), _find(out, "search_batch", system, "qps")
        want = REPS if system == ref.SYSTEM else max(REPS, ref.SV_MIN_REPS)
        assert len(secs) == len(qps) == want
        for s, q in zip(sorted(secs, key=lambda r: r.rep), sorted(qps, key=lambda r: r.rep)):
            assert s.value > 0 and q.value == pytest.approx(NQ / s.value)
        (ing,) = _find(out, "ingest", system, "seconds")
        assert ing.value > 0 and ing.rep == -1
    (cons,) = _find(out, "consolidation", ref.SYSTEM, "seconds")
    parts = _find(out, "consolidation", ref.SYSTEM, "conflicts_s") + _find(out, "consolidation", ref.SYSTEM,
                                                                           "relationships_s")
    assert cons.value > 0 and len(parts) == 2 and all(p.value > 0 for p in parts)
    assert sum(p.value for p in parts) <= cons.value * 1.01 + 1e-3


def test_same_queries_for_both_systems(out):
    counts = Counter((r.case, r.system) for r in out if r.metric in ("query_ms", "batch_s"))
    assert counts[("search_latency", ref.SYSTEM)] == counts[("search_latency", ref.OURS)] == NQ
    notes = {r.system: r.note for r in out if (r.case, r.metric) == ("search_batch", "qps")}
    assert notes[ref.SYSTEM].startswith(f"{NQ} queries") and notes[ref.OURS].startswith(f"{NQ} queries")


def test_certified_rerank_measured_on_the_same_queries_and_agrees(out):
    """The re-ranking mode side by side (T6 takes the faster exact mode): same queries, same answers."""
    secs = _find(out, "search_batch", ref.OURS_RERANK, "batch_s")
    assert len(secs) == max(REPS, ref.SV_MIN_REPS) and all(r.value > 0 for r in secs)
    assert all(r.note.startswith(f"{NQ} queries; certified re-rank C=") for r in secs)
    (agree,) = _find(out, "quality", ref.OURS_RERANK, "top1_agreement")
    assert agree.value == 1.0


def test_store_counts_consistent(out, data):
    one = {r.metric: r.value for r in out if (r.case, r.system) == ("ingest", ref.SYSTEM)}
    created = int(np.sum(data.corpus.created_at <= float(np.max(data.queries.as_of))))
    assert one["ingested"] == created > 0
    assert one["status_active"] + one["status_dormant"] + one["status_deprecated"] == created
    assert one["status_active"] > 0 and one["consolidation_runs"] >= 1


def test_patches_restored(out):
    from smartvector.consolidation import ConflictDetector, RelationshipBuilder

    from smartvector_bench.systems import smartvector_ref as module

    assert ConflictDetector.detect_conflicts.__qualname__ == "ConflictDetector.detect_conflicts"
    assert RelationshipBuilder.build_relationships.__qualname__ == "RelationshipBuilder.build_relationships"
    assert module._fingerprint.__name__ == "_fingerprint"


def test_linear_consolidation_only_skips_all_pairs(data):
    """The bounded ingest finds no conflicts or relationships but still promotes and dormants as shipped."""
    r, secs, acc = ref.reference_index(data)
    assert secs > 0 and acc["runs"] == r.runs >= 1
    assert r.totals["conflicts_found"] == r.totals["relationships_built"] == 0
    assert r.totals["vectors_consolidated"] == r.n_ingested
    assert "UNCONSOLIDATED" not in r.status_counts


def test_bad_query_count(data):
    with pytest.raises(ValueError):
        ref.bench_reference(data, n_queries=0, reps=1, consolidation_max=0)


def test_corpus_prefix_equals_smaller_build(data):
    small = scale_dataset(CONS, n_queries=1, embedder=EMBEDDER).corpus
    part = ref.corpus_prefix(data.corpus, CONS)
    assert len(part) == CONS and ref.corpus_prefix(data.corpus, N) is data.corpus
    assert list(part.ids) == list(small.ids) and list(part.texts) == list(small.texts)
    for key in ("doc_id", "version", "created_at", "valid_from", "valid_to", "supersedes", "authority"):
        np.testing.assert_array_equal(getattr(part, key), getattr(small, key), err_msg=key)
    np.testing.assert_array_equal(part.depends_on.indptr, small.depends_on.indptr)
    np.testing.assert_array_equal(part.depends_on.indices, small.depends_on.indices)
