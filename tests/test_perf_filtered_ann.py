"""The filtered-ANN perf case (smartvector_bench/tools/perf/filtered_ann.py) on a few thousand vectors: the data
(version chains, the in-force share, seeded), the ground truth is the exact filtered top-10, recall and the
post-filter are computed right (by hand), FAISS post-filtered at k' = N and the IDSelector at a big efSearch
are exact, SmartVector's certified re-rank is exact, and the rows, table, perf.md section and merge are
well-formed. Timing is never asserted."""

from __future__ import annotations

import csv
import json
from types import SimpleNamespace

import numpy as np
import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.perf import filtered_ann as fa
from smartvector_bench.tools.perf import filtered_report
from smartvector_bench.tools.perf.filtered_data import (
    K, QUERY_COS, VERSION_COS, ExactFiltered, first_in_force, recall_at_k, short_of, versioned_data,
)
from smartvector_bench.tools.perf.runner import merge_results, write_results
from smartvector_bench.tools.perf.summary import summary_rows
from smartvector_bench.tools.perf.timing import rows

DIM = 384
HNSW = {"m": 16, "ef_construction": 64, "ef_search": 32}


def unit(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def d99():
    return versioned_data(unit(30), 100, 40, seed=3)  # 3,000 vectors, 99% superseded


@pytest.fixture(scope="module")
def d50():
    return versioned_data(unit(1000), 2, 40, seed=3)  # 2,000 vectors, 50% superseded


def brute_force(d, k: int = K) -> np.ndarray:
    """The exact filtered top-k by hand: every cosine, superseded rows at -inf, sorted."""
    s = (d.queries @ d.vectors.T).astype(np.float64)
    s[:, ~d.in_force()] = -np.inf
    return np.argsort(-s, axis=1, kind="stable")[:, :k]


# -- the data ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("versions", [2, 10, 100])
def test_chains_one_in_force_per_document_and_consecutive_versions_at_the_fixed_cosine(versions):
    d = versioned_data(unit(20), versions, 10, seed=1)
    mask = d.in_force()
    assert len(d) == 20 * versions and mask.sum() == 20
    assert d.superseded_share == pytest.approx(1 - 1 / versions) and 1 - mask.mean() == pytest.approx(
        d.superseded_share)
    assert (d.version[mask] == versions - 1).all() and len(set(d.doc[mask])) == 20
    prev = d.supersedes()
    later = prev >= 0
    assert later.sum() == 20 * (versions - 1) and (d.version[prev[later]] == d.version[later] - 1).all()
    cos = np.einsum("ij,ij->i", d.vectors[later], d.vectors[prev[later]])
    assert np.allclose(cos, VERSION_COS, atol=1e-5)
    assert np.allclose(np.einsum("ij,ij->i", d.queries, d.vectors[d.query_row]), QUERY_COS, atol=1e-5)
    assert np.allclose(np.linalg.norm(d.vectors, axis=1), 1.0, atol=1e-5)
    # half the queries perturb an in-force row, half a superseded one
    assert mask[d.query_row].sum() == 5
    # the as-of predicate: nothing is in force before the first version, each document's version j at time j + u
    assert not d.in_force(-1.0).any() and (d.version[d.in_force(0.9999)] == 0).all()


def test_seeded_and_deterministic():
    a, b, c = (versioned_data(unit(50), 10, 20, seed=s) for s in (7, 7, 8))
    assert np.array_equal(a.vectors, b.vectors) and np.array_equal(a.queries, b.queries)
    assert np.array_equal(a.valid_from, b.valid_from)
    assert not np.array_equal(a.vectors, c.vectors)


def test_versions_of_the_superseded_shares():
    assert [fa.versions_of(s) for s in (0.5, 0.9, 0.99)] == [2, 10, 100]
    with pytest.raises(BenchError, match="0.7"):
        fa.versions_of(0.7)


# -- ground truth, recall, post-filter -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["d99", "d50"])
def test_ground_truth_is_the_exact_filtered_top_10(name, request):
    d = request.getfixturevalue(name)
    truth = ExactFiltered(d.vectors, d.in_force()).search(d.queries)
    assert truth.shape == (len(d.queries), K) and d.in_force()[truth].all()
    assert np.array_equal(truth, brute_force(d))


def test_recall_and_post_filter_by_hand():
    truth = np.array([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]])
    found = np.array([[9, 8, 7, 100, 101, 102, 103, 104, 105, 106],  # 3 of 10, order inside does not count
                      [10, 10, 11, -1, -1, -1, -1, -1, -1, -1]])  # a repeat counts once: 2 of 10
    assert recall_at_k(found, truth).tolist() == pytest.approx([0.3, 0.2])
    assert short_of(found) == 1
    mask = np.zeros(200, dtype=bool)
    mask[[2, 5, 7, 9, 11]] = True
    ranked = np.array([[1, 2, 3, 5, -1, 7], [9, 4, 11, 6, 2, 8]])
    assert first_in_force(ranked, mask, 3).tolist() == [[2, 5, 7], [9, 11, 2]]
    assert first_in_force(ranked, mask, 4).tolist() == [[2, 5, 7, -1], [9, 11, 2, -1]]
    assert recall_at_k(first_in_force(ranked, mask, 4), np.array([[2, 7, 5, 9], [2, 9, 11, 5]]), 4).tolist() == [
        0.75, 0.75]


def _timed(d):
    mask = d.in_force()
    truth = ExactFiltered(d.vectors, mask).search(d.queries)
    return fa.Timed(d, truth, mask, 1)


def _metric(out, system, metric):
    got = [r.value for r in out if r.system == system and r.metric == metric]
    assert len(got) == 1, (system, metric, got)
    return got[0]


def test_faiss_post_filter_at_all_rows_and_idselector_at_a_big_ef_are_exact(d99):
    timed = _timed(d99)
    n = len(d99)
    fa._hnsw(d99, {"hnsw": HNSW, "k_prime": [10, n], "idselector_ef": [n]}, timed)
    assert _metric(timed.out, f"faiss_hnsw_post_k{n}", "recall_at_10") == 1.0
    assert _metric(timed.out, f"faiss_hnsw_post_k{n}", "short_queries") == 0
    assert _metric(timed.out, f"faiss_hnsw_idselector_ef{n}", "recall_at_10") == 1.0
    # ...while the top 10 post-filtered loses most of them: the superseded versions crowd the in-force one out
    assert _metric(timed.out, "faiss_hnsw_post_k10", "recall_at_10") < 0.5
    assert _metric(timed.out, "faiss_hnsw_post_k10", "short_queries") > len(d99.queries) // 2


@pytest.mark.parametrize("name", ["d99", "d50"])
def test_smartvector_certified_rerank_with_the_in_force_mask_is_exact(name, request):
    d = request.getfixturevalue(name)
    timed = _timed(d)
    fa._smartvector(d, {"k_prime": [10, 100]}, timed)
    for kp in (10, 100):
        assert _metric(timed.out, f"smartvector_rerank_k{kp}", "recall_at_10") == 1.0
        assert _metric(timed.out, f"smartvector_rerank_k{kp}", "short_queries") == 0


def test_a_system_returning_a_superseded_row_under_its_filter_is_refused(d50):
    timed = _timed(d50)
    old = int(np.nonzero(~d50.in_force())[0][0])
    with pytest.raises(AssertionError, match="superseded"):
        timed.run("broken", lambda i: np.full(K, old))


# -- the whole case, its table, section and merge ------------------------------------------------------------

SECTION = {"superseded": [0.5, 0.99], "n_queries": 12, "reps": 1, "k_prime": [10, 100], "idselector_ef": [64],
           "hnsw": HNSW, "query_caps": {"smartvector_rerank": {2000: 5}}, "stores": {
               "lancedb": {"max_size": 10_000, "rows_per_partition": 4096, "num_sub_vectors": 48,
                           "max_iterations": 5, "refine_factor": 10},
               "milvus_lite": {"max_size": 10_000, "m": 16, "ef_construction": 64, "ef_search": 64},
               "chroma": {"max_size": 1_000, "m": 16, "ef_construction": 64, "ef_search": 64}}}


@pytest.fixture(scope="module")
def case_rows():
    fa._RATES.clear()
    data = SimpleNamespace(corpus_vectors=unit(1000, seed=5))
    out = fa.bench_filtered_ann(data, SECTION, 1000, {"seed": 0})
    out += fa.bench_filtered_ann(SimpleNamespace(corpus_vectors=unit(1000, seed=5)),
                                 {**SECTION, "superseded": [0.5]}, 2000, {"seed": 0})
    return out


def test_every_system_has_its_rows(case_rows):
    systems = {r.system for r in case_rows if r.n_vectors == 1000}
    for name in ("faiss_flat", "faiss_hnsw_post_k10", "faiss_hnsw_post_k100", "faiss_hnsw_idselector_ef64",
                 "smartvector_rerank_k10", "lancedb_prefilter", "lancedb_postfilter_k100", "milvus_lite", "chroma"):
        assert name in systems
        for label in ("synthetic:superseded=0.5", "synthetic:superseded=0.99"):
            if not [r for r in case_rows if r.system == name and r.vectors == label and r.metric == "query_ms"]:
                continue  # a store that is not installed has a skipped row instead
            assert 0.0 <= _metric([r for r in case_rows if r.vectors == label and r.n_vectors == 1000], name,
                                  "recall_at_10") <= 1.0
    for label in ("synthetic:superseded=0.5", "synthetic:superseded=0.99"):
        here = [r for r in case_rows if r.vectors == label and r.n_vectors == 1000]
        assert _metric(here, "faiss_flat", "recall_at_10") == 1.0
        assert len([r for r in here if r.system == "faiss_flat" and r.metric == "query_ms"]) == 12


def test_a_store_above_its_max_size_is_one_line_with_the_measured_rate(case_rows):
    big = [r for r in case_rows if r.n_vectors == 2000]
    skipped = [r for r in big if r.metric == "skipped"]
    assert [r.system for r in skipped] == ["chroma"] and not [r for r in big if r.system == "chroma"
                                                              and r.metric != "skipped"]
    note = skipped[0].note
    assert "not run at 2,000" in note and "built 1,000 vectors at" in note and "vectors/s" in note
    assert np.isfinite(skipped[0].value) and skipped[0].value > 0


def test_a_query_cap_limits_that_system_at_that_size_only(case_rows):
    def answered(system, n):
        return _metric([r for r in case_rows if r.n_vectors == n and r.vectors == "synthetic:superseded=0.5"],
                       system, "n_queries")

    assert answered("smartvector_rerank_k10", 2000) == 5 and answered("smartvector_rerank_k10", 1000) == 12
    assert answered("faiss_hnsw_post_k10", 2000) == 12
    assert len([r for r in case_rows if r.n_vectors == 2000 and r.system == "smartvector_rerank_k100"
                and r.metric == "query_ms"]) == 5


def test_table_section_and_files(case_rows, tmp_path):
    write_results(tmp_path, {"profile": "test", "seed": 0, "filtered_ann": SECTION}, case_rows, 1.0)
    with (tmp_path / "filtered_ann.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        table = list(reader)
    assert tuple(reader.fieldnames) == filtered_report.FIELDS
    flat = [r for r in table if r["system"] == "faiss_flat"]
    assert len(flat) == 3 and all(float(r["ratio_vs_flat"]) == pytest.approx(1.0) for r in flat)
    post = next(r for r in table if r["system"] == "faiss_hnsw_post" and r["k_prime"] == "100"
                and r["superseded_share"] == "0.99" and r["n_vectors"] == "1000")
    assert 0 <= float(post["recall_at_10"]) <= 1 and float(post["ratio_vs_flat"]) > 0
    assert next(r for r in table if r["system"] == "chroma" and r["n_vectors"] == "2000")["note"].startswith(
        "skipped: not run at 2,000")
    md = (tmp_path / "perf.md").read_text()
    assert "## Filtered ANN" in md and "| faiss_hnsw_post | 1,000 | 0.99 | 100 |" in md
    assert "| filtered_ann |" not in md  # not repeated in "Everything else"
    prov = json.loads((tmp_path / "PROVENANCE.json").read_text())
    assert "filtered_ann.csv" in prov["files"]


def test_merge_replaces_the_measured_groups_and_keeps_the_rest(case_rows, tmp_path):
    old = rows("search_batch", "faiss_flat", 10_000, "synthetic", "batch_s", [1.0, 2.0], "s")
    old += rows(fa.CASE, "faiss_flat", 1000, "synthetic:superseded=0.5", "recall_at_10", 0.5, "share")
    old += rows(fa.CASE, "gone", 1000, "synthetic:superseded=0.5", "recall_at_10", 0.5, "share")
    write_results(tmp_path, {"profile": "full", "seed": 0}, old, 5.0)
    merge_results(tmp_path, {"profile": "full", "seed": 0, "filtered_ann": SECTION}, case_rows, 2.0, [],
                  ["filtered_ann"])
    with (tmp_path / "runs.csv").open(newline="") as fh:
        runs = list(csv.DictReader(fh))
    assert len(runs) == 2 + 1 + len(case_rows)  # the stored search rows and "gone" kept, faiss_flat replaced
    flat = [r for r in runs if r["case"] == fa.CASE and r["system"] == "faiss_flat"
            and r["vectors"] == "synthetic:superseded=0.5" and r["n_vectors"] == "1000"
            and r["metric"] == "recall_at_10"]
    assert [float(r["value"]) for r in flat] == [1.0]
    prov = json.loads((tmp_path / "PROVENANCE.json").read_text())
    assert prov["wall_seconds"] == 5.0 and prov["config"]["filtered_ann"]["n_queries"] == 12
    assert [m["sections"] for m in prov["merged"]] == [["filtered_ann"]] and prov["merged"][0]["git"]["sha"]
    assert set(prov["files"]) == {"perf.md", "runs.csv", "summary.csv", "targets.csv", "filtered_ann.csv"}


def test_merge_needs_a_stored_run(tmp_path):
    with pytest.raises(BenchError, match="no stored run"):
        merge_results(tmp_path, {}, [], 1.0, [], ["filtered_ann"])


def test_table_names_knobs_and_shares():
    assert filtered_report.split_system("faiss_hnsw_post_k1000") == ("faiss_hnsw_post", "1000")
    assert filtered_report.split_system("faiss_hnsw_idselector_ef128") == ("faiss_hnsw_idselector", "ef=128")
    assert filtered_report.split_system("milvus_lite") == ("milvus_lite", "")
    assert filtered_report.share_of("synthetic:superseded=0.99") == "0.99" and filtered_report.share_of(
        "synthetic") == ""
    summary = summary_rows(rows(fa.CASE, "faiss_flat", 10, "synthetic:superseded=0.9", "query_ms", [1.0, 3.0], "ms")
                           + rows(fa.CASE, "chroma", 10, "synthetic:superseded=0.9", "query_ms", [4.0, 8.0], "ms"))
    got = {r["system"]: r for r in filtered_report.table(summary)}
    assert got["chroma"]["ratio_vs_flat"] == pytest.approx(3.0) and got["chroma"]["latency_ms_median"] == 6.0
