"""The store-native systems (lancedb_valid, chroma_valid, milvus_valid): the chunks in a real vector store with
their validity window as typed columns, one filtered search per query. In exact mode each ranks as valid_cosine
does up to float32 near-ties, at every kind of as_of and under the created_only regime; an open window is
returned and a closed one is not, at the exact boundary; ANN mode runs and says how; the comparison itself
catches a store given the wrong filter."""

from __future__ import annotations

import dataclasses
import gc
import sys

import numpy as np
import pytest
from omegaconf import OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.run.contract import check_search
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.dataset.regimes import apply_regime
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems import chroma_valid, lancedb_valid, milvus_valid
from smartvector_bench.systems.base import ChecksDataset, Retriever
from smartvector_bench.systems.valid_cosine import in_force

from .conftest import TINY, compose_config, run_cli, write_tiny
from .test_baselines import make_corpus

STORES = ("lancedb_valid", "chroma_valid", "milvus_valid")
TOL = 1e-5  # float32 cosines from another code path: equal to FAISS's to ~1e-7
K = 10
# store -> (module, name of its filter function); the tests swap the function for a wrong one
FILTERS = {"lancedb_valid": (lancedb_valid, "where_in_force"), "chroma_valid": (chroma_valid, "where_in_force"),
           "milvus_valid": (milvus_valid, "expr_in_force")}


def conf(name: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(f"{CONF_DIR}/retriever/{name}.yaml"), resolve=True)


def build(name: str, corpus, vectors, **overrides):
    r = build_retriever(name, {**conf(name), **overrides})
    r.index(corpus, vectors, 0.0)
    return r


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The TINY dataset embedded with the hashing embedder, and a query batch with every kind of as_of: the
    queries' own (current and historical), before anything exists (nothing in force), and each closed chunk's
    own vector at its window's first instant (in force) and at its valid_to (out of force: the boundary)."""
    ds = load_dataset(write_tiny(tmp_path_factory.mktemp("stores") / "ds"))
    emb = build_embedder(dict(compose_config(TINY + ["embedder=hashing"])["embedder"]))
    cv, qv = emb.encode(ds.corpus.texts), emb.encode(ds.queries.texts)
    c = ds.corpus
    closed = np.flatnonzero(np.isfinite(c.valid_to))[:12]
    start = np.maximum(c.created_at, c.valid_from)
    vectors = np.concatenate([qv, qv[:3], cv[closed], cv[closed], qv[:3]]).astype(np.float32)
    as_of = np.concatenate([ds.queries.as_of, np.full(3, c.created_at.min() - 1.0), start[closed], c.valid_to[closed],
                            np.full(3, start.max() + 1.0)])
    assert len(closed) >= 5 and np.isinf(c.valid_to).any()
    return ds.corpus, cv, vectors, as_of


def reference(corpus, cv, vectors, as_of):
    return build("valid_cosine", corpus, cv).search(vectors, as_of, K)


def assert_ranks_as_valid_cosine(run, ref, corpus, cv, vectors, as_of) -> None:
    """Same number of hits per query; at every rank the store's chunk is in force and has the cosine (to TOL) of
    the chunk valid_cosine put there, so the ids differ only where two chunks are tied to TOL; scores and
    confidence equal to TOL."""
    assert run.ranked.shape == ref.ranked.shape
    hits = run.ranked >= 0
    assert np.array_equal(hits, ref.ranked >= 0), "a different number of hits"
    np.testing.assert_allclose(run.scores[hits], ref.scores[hits], rtol=0, atol=TOL)
    np.testing.assert_allclose(run.confidence, ref.confidence, rtol=0, atol=TOL)
    cos = vectors.astype(np.float64) @ cv.astype(np.float64).T
    keep = in_force(corpus, as_of)
    q, r = np.nonzero(hits)
    assert keep[q, run.ranked[q, r]].all(), "a hit out of force"
    assert np.all(np.abs(cos[q, run.ranked[q, r]] - cos[q, ref.ranked[q, r]]) <= TOL), "an id differs off a tie"


@pytest.fixture(scope="module")
def exact_runs(tiny):
    corpus, cv, vectors, as_of = tiny
    out = {}
    for name in STORES:
        store = build(name, corpus, cv)
        out[name] = (store, store.search(vectors, as_of, K))
    yield out
    for store, _ in out.values():
        store.close()


# ---- exact mode: valid_cosine's rankings ---------------------------------------------------------------------

@pytest.mark.parametrize("name", STORES)
def test_exact_mode_ranks_as_valid_cosine(tiny, exact_runs, name):
    corpus, cv, vectors, as_of = tiny
    store, run = exact_runs[name]
    ref = reference(*tiny)
    assert_ranks_as_valid_cosine(run, ref, *tiny)
    checked = check_search(name, run, [f"q{i}" for i in range(len(vectors))], K, len(corpus))
    assert np.array_equal(checked.ranked, run.ranked)
    empty = ~(ref.ranked >= 0).any(axis=1)
    assert empty.any() and np.isnan(run.confidence[empty]).all()  # nothing in force before the corpus exists
    assert (run.ranked[~empty] >= 0).any(axis=1).all()
    assert (run.ranked != ref.ranked).any(axis=1).mean() < 0.2  # differences are rare near-ties, not the rule
    info = store.describe()
    assert info["mode"] == "exact" and info["checks"] == {"short_queries": 0, "returned_outside_window": 0}
    assert info["query_latency_ms"]["n"] == len(vectors) and info["index_s"] > 0 and info["import_s"] >= 0
    assert {"median", "p95"} <= set(info["query_latency_ms"]) and "open_window" in info and "columns" in info


@pytest.mark.parametrize("name", STORES)
def test_exact_mode_is_repeatable(tiny, exact_runs, name):
    corpus, cv, vectors, as_of = tiny
    again = build(name, corpus, cv)
    try:
        run = again.search(vectors, as_of, K)
    finally:
        again.close()
    first = exact_runs[name][1]
    assert np.array_equal(run.ranked, first.ranked)
    assert np.array_equal(run.scores, first.scores, equal_nan=True)


@pytest.mark.parametrize("name", STORES)
def test_created_only_regime_ranks_as_valid_cosine(tiny, name):
    corpus, cv, vectors, as_of = tiny
    served = apply_regime(corpus, "created_only")
    store = build_retriever(name, conf(name))
    assert isinstance(store, ChecksDataset) and isinstance(store, Retriever)
    store.check_dataset(served)  # created_at alone suffices: valid_cosine's degraded mode
    store.index(served, cv, 0.0)
    try:
        run = store.search(vectors, as_of, K)
    finally:
        store.close()
    ref = reference(served, cv, vectors, as_of)
    assert_ranks_as_valid_cosine(run, ref, served, cv, vectors, as_of)
    # the window really was dropped: some closed chunk is returned after its true valid_to
    assert (~in_force(corpus, as_of)[np.nonzero(run.ranked >= 0)[0], run.ranked[run.ranked >= 0]]).any()
    bare = apply_regime(corpus, "created_only")
    bare.present = frozenset()
    with pytest.raises(BenchError, match=rf"{name} needs metadata.created_at, metadata.valid_from"):
        store.check_dataset(bare)


# ---- windows: open, closed, boundaries, infinities ------------------------------------------------------------

@pytest.mark.parametrize("name", STORES)
def test_open_window_is_returned_and_closed_one_is_not(name):
    inf = np.inf
    corpus = make_corpus([{"created": 0.0, "valid_to": inf},            # 0: open
                          {"created": 0.0, "valid_to": 10.0},           # 1: closed at 10
                          {"created": 50.0, "valid_to": inf},           # 2: created later
                          {"created": -inf, "valid_from": -inf, "valid_to": inf}])  # 3: "for all time"
    vectors = np.array([[1, 0, 0], [0.8, 0.6, 0], [0.6, 0.8, 0], [0, 1, 0]], dtype=np.float32)
    query = np.array([[1, 0, 0]], dtype=np.float32)
    store = build(name, corpus, vectors)
    try:
        def hits(t):
            run = store.search(query, np.array([t]), 4)
            return [int(i) for i in run.ranked[0] if i >= 0]
        assert hits(5.0) == [0, 1, 3]
        assert hits(10.0) == [0, 3]  # valid_to is exclusive: closed at its boundary
        assert hits(np.nextafter(10.0, 0)) == [0, 1, 3]
        assert hits(1e9) == [0, 2, 3]  # an open window stays open at any finite time
        assert hits(-1e300) == [3]
        assert hits(np.inf) == [] and hits(np.nan) == []  # nothing is in force (as valid_cosine)
        run = store.search(query, np.array([5.0]), 4)
        np.testing.assert_allclose(run.scores[0, :3], [1.0, 0.8, 0.0], atol=TOL)
        assert run.confidence[0] == pytest.approx(1.0, abs=TOL)
    finally:
        store.close()


# ---- the comparison can fail ----------------------------------------------------------------------------------

def _wrong(name: str, how: str):
    module, attr = FILTERS[name]
    right = getattr(module, attr)

    def wrong(as_of):
        f = right(as_of)
        if isinstance(f, dict):  # chroma's where
            clauses = [c for c in f["$and"] if "valid_to" not in c]
            if how == "boundary":
                clauses.append({"valid_to": {"$gte": float(as_of)}})
            return {"$and": clauses}
        if how == "boundary":
            return f.replace("valid_to >", "valid_to >=")
        return f.split(" and valid_to")[0].split(" AND valid_to")[0]

    return wrong


@pytest.mark.parametrize("how", ["no_valid_to", "boundary"])
@pytest.mark.parametrize("name", STORES)
def test_a_store_with_the_wrong_filter_fails_the_comparison(tiny, monkeypatch, name, how):
    corpus, cv, vectors, as_of = tiny
    module, attr = FILTERS[name]
    monkeypatch.setattr(module, attr, _wrong(name, how))
    store = build(name, corpus, cv)
    try:
        run = store.search(vectors, as_of, K)
        outside = store.describe()["checks"]["returned_outside_window"]
    finally:
        store.close()
    assert outside > 0
    with pytest.raises(AssertionError):
        assert_ranks_as_valid_cosine(run, reference(*tiny), *tiny)


# ---- ANN mode -------------------------------------------------------------------------------------------------

ANN = {"lancedb_valid": [{"mode": "ann"}, {"mode": "ann", "index_type": "ivf_pq", "num_partitions": 2,
                                           "num_sub_vectors": 4, "nprobes": 1, "refine_factor": 2, "ef": 8}],
       "chroma_valid": [{"mode": "ann", "ef_search": 10, "max_neighbors": 4, "ef_construction": 8}],
       "milvus_valid": [{"mode": "ann", "hnsw_m": 4, "hnsw_ef": 8}]}


@pytest.mark.parametrize("name, overrides", [(n, o) for n, os in ANN.items() for o in os])
def test_ann_mode_runs_in_force_and_reports_its_parameters(tiny, name, overrides):
    corpus, cv, vectors, as_of = tiny
    store = build(name, corpus, cv, **overrides)
    try:
        run = store.search(vectors, as_of, K)
        info = store.describe()
    finally:
        store.close()
    check_search(name, run, [f"q{i}" for i in range(len(vectors))], K, len(corpus))
    hits = run.ranked >= 0
    assert hits.any() and in_force(corpus, as_of)[np.nonzero(hits)[0], run.ranked[hits]].all()
    assert info["mode"] == "ann" and info["checks"]["returned_outside_window"] == 0
    search = info["search"]
    assert search["index"] in ("ivf_hnsw_sq", "ivf_pq", "hnsw", "HNSW")
    for key, value in overrides.items():
        if key in ("mode", "ef", "hnsw_ef"):
            continue
        shown = {"hnsw_m": "M", "index_type": "index"}.get(key, key)
        assert search[shown] == value, (key, search)
    if name == "lancedb_valid":
        assert info["ann_index_s"] > 0
    if name == "milvus_valid":
        assert search["described"]["index_type"] == "HNSW" and search["described"]["indexed_rows"] == len(corpus)


# ---- settings, cleanup, imports -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", STORES)
def test_yaml_and_settings(name):
    text = open(f"{CONF_DIR}/retriever/{name}.yaml", encoding="utf-8").read()
    assert text.splitlines()[0] == f"# @package retrievers.{name}"
    cfg = conf(name)
    module = FILTERS[name][0]
    params = build_retriever(name, cfg).PARAMS
    assert cfg["_target_"].startswith(f"{module.__name__}.") and set(cfg) - {"_target_"} == \
        {f.name for f in dataclasses.fields(params)}
    for line in text.splitlines():  # every setting has its comment
        if line and not line.startswith(("#", "_target_")):
            assert "#" in line, line
    with pytest.raises(BenchError, match=rf"^retrievers\.{name}\.nope: unknown key"):
        build_retriever(name, {**cfg, "nope": 1})
    with pytest.raises(BenchError, match=rf"^retrievers\.{name}\.mode=fast: unknown; allowed: exact, ann"):
        build_retriever(name, {**cfg, "mode": "fast"})


def test_milvus_uri_must_be_null_or_a_uri():
    for bad in ("", "  ", 5, ["x"]):
        with pytest.raises(BenchError, match=r"^retrievers\.milvus_valid\.uri="):
            build_retriever("milvus_valid", {**conf("milvus_valid"), "uri": bad})


@pytest.mark.parametrize("name", STORES)
def test_the_temporary_store_is_removed(tiny, name):
    corpus, cv, _, _ = tiny
    store = build(name, corpus, cv)
    folder = store.store_folder
    assert folder is not None and folder.is_dir() and any(folder.iterdir())
    store.index(corpus, cv, 0.0)  # a second index(): the first store is gone
    assert not folder.exists() and store.store_folder.is_dir()
    folder = store.store_folder
    store.close()
    assert not folder.exists()
    store = build(name, corpus, cv)
    folder = store.store_folder
    del store
    gc.collect()
    assert not folder.exists()  # on garbage collection
    with pytest.raises(BenchError, match="search\\(\\) before index\\(\\)"):
        build_retriever(name, conf(name)).search(np.zeros((1, cv.shape[1]), np.float32), np.zeros(1), K)


def test_building_a_store_system_imports_no_store_library():
    code = ("import sys; from smartvector_bench.systems import build_retriever; from omegaconf import OmegaConf; "
            "from smartvector_bench.core import CONF_DIR\n"
            "for n in ('lancedb_valid', 'chroma_valid', 'milvus_valid'):\n"
            "    r = build_retriever(n, OmegaConf.to_container(OmegaConf.load(f'{CONF_DIR}/retriever/{n}.yaml')))\n"
            "    r.describe()\n"
            "print(sorted(m for m in ('lancedb', 'chromadb', 'pymilvus', 'milvus_lite') if m in sys.modules))")
    r = run_cli(sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "[]"
