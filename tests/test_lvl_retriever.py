"""LiveVectorLake as a benchmark system: corpus versions (snapshots and chunk windows), the retriever's as-of
search and checks, and the main experiment end to end with zero temporal leakage."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from deltalake import DeltaTable

from experiments.main import run
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus, load_dataset
from smartvector_bench.core.embedding import HashingEmbedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.livevectorlake.retriever import corpus_versions, settings
from smartvector_bench.systems.updates import chunk_hash

from .conftest import TINY, compose_config
from .lvl_cases import EMB

LVL_TARGET = "smartvector_bench.systems.livevectorlake.retriever.LiveVectorLakeRetriever"


# ---- the benchmark system ------------------------------------------------------------------------------------

def _corpus(rows_: list[dict]) -> Corpus:
    """The chunks of one document version in row order (offsets as if joined by a newline), unless a row
    gives its ``start`` offset."""
    n = len(rows_)
    start, at = [], {}
    for r in rows_:
        s = r.get("start", at.get((r["doc"], r["version"]), 0))
        start.append(s)
        at[(r["doc"], r["version"])] = s + len(r["text"]) + 1
    return Corpus(
        ids=[f"c{i}" for i in range(n)], titles=[""] * n, texts=[r["text"] for r in rows_],
        doc_id=np.array([r["doc"] for r in rows_], dtype=object),
        offset_start=np.array(start, dtype=np.int64),
        offset_end=np.array([s + len(r["text"]) for s, r in zip(start, rows_)], dtype=np.int64),
        version=np.array([r["version"] for r in rows_], dtype=np.int64), source=np.array(["wiki"] * n, dtype=object),
        authority=np.full(n, 0.9), created_at=np.array([r["created"] for r in rows_], dtype=np.float64),
        valid_from=np.array([r["vf"] for r in rows_], dtype=np.float64),
        valid_to=np.array([r.get("vt", np.inf) for r in rows_], dtype=np.float64),
        depends_on=Ragged.from_lists([[] for _ in rows_]), supersedes=np.full(n, -1, dtype=np.int64),
        index_of={f"c{i}": i for i in range(n)},
    )


POLICY = [  # v1 written at day 5, in force from 10; v2 written at 18, in force from 20; a chat message at 12
    {"text": "Scope: all staff.", "doc": "pol", "version": 1, "created": 5.0, "vf": 10.0, "vt": 20.0},
    {"text": "The limit is 50 dollars.", "doc": "pol", "version": 1, "created": 5.0, "vf": 10.0, "vt": 20.0},
    {"text": "Scope: all staff.", "doc": "pol", "version": 2, "created": 18.0, "vf": 20.0},
    {"text": "The limit is 75 dollars.", "doc": "pol", "version": 2, "created": 18.0, "vf": 20.0},
    {"text": "What is the limit now?", "doc": "chat", "version": 1, "created": 12.0, "vf": 12.0},
]


def _retriever(tmp_path, **over):
    return build_retriever("livevectorlake", {"_target_": LVL_TARGET, "lake_path": str(tmp_path / "lake"), **over})


def _indexed(tmp_path, rows_: list[dict], serve_time: float):
    """The corpus of ``rows_``, a LiveVectorLake indexed on it (MiniLM vectors), and its ingest summary."""
    corpus = _corpus(rows_)
    r = _retriever(tmp_path)
    r.index(corpus, EMB.encode(corpus.texts), serve_time=serve_time)
    return corpus, r, r.describe()["ingest"]


def test_corpus_versions_take_effect_at_valid_from_and_closed_documents_are_retired():
    rows_ = POLICY + [{"text": "Old runbook.", "doc": "rb", "version": 1, "created": 1.0, "vf": 1.0, "vt": 8.0}]
    vs = corpus_versions(_corpus(rows_))
    order = [(v.doc_id, v.version, v.effective_at, v.text == "") for v in vs]
    assert order == [("rb", 1, 1.0, False), ("pol", 1, 10.0, False), ("rb", 1, 8.0, True),
                     ("chat", 1, 12.0, False), ("pol", 2, 20.0, False)]  # ingest order: created_at
    assert vs[1].text == "Scope: all staff.\n\nThe limit is 50 dollars." and vs[1].end == 20.0


def test_corpus_versions_join_the_chunks_in_offset_order_whatever_the_row_order():
    # Shuffled rows (as the generator writes them): the fact row before the scope row of each version. The
    # offsets say the scope comes first; the text and its paragraph -> chunk map follow them.
    rows_ = [dict(POLICY[1], start=18), dict(POLICY[0], start=0), dict(POLICY[3], start=18), dict(POLICY[2], start=0)]
    vs = corpus_versions(_corpus(rows_))
    pol = [v for v in vs if v.doc_id == "pol"]
    assert [v.text for v in pol] == ["Scope: all staff.\n\nThe limit is 50 dollars.",
                                     "Scope: all staff.\n\nThe limit is 75 dollars."]
    assert [v.para_chunk for v in pol] == [[1, 0], [3, 2]]


def test_an_unchanged_paragraph_maps_to_the_chunk_of_the_version_in_force(tmp_path):
    corpus, r, info = _indexed(tmp_path, POLICY, serve_time=30.0)
    assert info["classes"]["unchanged"] == 1 and info["embeddings_needed"] == 4  # scope embedded once
    assert info["reembed_share_by_step"]["v1->v2"]["shares"] == [0.5]
    q = EMB.encode(["Scope: all staff."])
    for as_of, expected in ((15.0, 0), (19.0, 0), (25.0, 2), (30.0, 2)):
        run_ = r.search(q, np.array([as_of]), k=10)
        assert run_.ranked[0, 0] == expected, as_of  # one cold row, the corpus chunk of the version in force
    assert r.search(q, np.array([9.0]), k=10).ranked[0, 0] == -1  # nothing was in force yet
    hist = r.search(EMB.encode(["limit dollars"]), np.array([15.0]), k=10).ranked[0]
    assert 1 in hist and 3 not in hist and 4 in hist and 2 not in hist  # v1 and the chat message, no v2
    d = r.describe()
    assert d["routing"] == {"hot": 1, "cold_historical": 5, "cold_current_before_horizon": 0}  # 30 >= 30 - 1
    assert d["leakage_check"]["outside_window"] == 0


# The windows layout (dataset=git_history): an unchanged paragraph is ONE chunk whose window spans several
# document versions; a changed one is a new chunk; ``version`` is where a chunk started and its offsets are its
# span in that version. pol v1 at 10 = [scope, limit 50]; v2 at 20 = [scope, limit 75]; v3 at 30 = [scope,
# limit 100, approval]. The runbook is withdrawn at 8.
WINDOWS = [
    {"text": "Scope: all staff.", "doc": "pol", "version": 1, "created": 5.0, "vf": 10.0, "start": 0},
    {"text": "The limit is 50 dollars.", "doc": "pol", "version": 1, "created": 5.0, "vf": 10.0, "vt": 20.0,
     "start": 18},
    {"text": "What is the limit now?", "doc": "chat", "version": 1, "created": 12.0, "vf": 12.0},
    {"text": "The limit is 75 dollars.", "doc": "pol", "version": 2, "created": 18.0, "vf": 20.0, "vt": 30.0,
     "start": 18},
    {"text": "Approval by a manager.", "doc": "pol", "version": 3, "created": 28.0, "vf": 30.0, "start": 44},
    {"text": "The limit is 100 dollars.", "doc": "pol", "version": 3, "created": 28.0, "vf": 30.0, "start": 18},
    {"text": "Old runbook step.", "doc": "rb", "version": 1, "created": 1.0, "vf": 1.0, "vt": 8.0},
]


def test_corpus_versions_derive_snapshots_from_chunk_windows():
    corpus = _corpus(WINDOWS)
    pol = [v for v in corpus_versions(corpus) if v.doc_id == "pol"]
    assert [(v.version, v.effective_at, v.end, v.created_at) for v in pol] == [
        (1, 10.0, 20.0, 5.0), (2, 20.0, 30.0, 18.0), (3, 30.0, np.inf, 28.0)]
    assert [v.para_chunk for v in pol] == [[0, 1], [0, 3], [0, 5, 4]]  # the scope chunk in every snapshot
    assert pol[2].text == "Scope: all staff.\n\nThe limit is 100 dollars.\n\nApproval by a manager."
    rb = [(v.effective_at, v.text) for v in corpus_versions(corpus) if v.doc_id == "rb"]
    assert rb == [(1.0, "Old runbook step."), (8.0, "")]  # withdrawn when its only chunk ends


def test_windows_layout_hot_tier_and_as_of(tmp_path):
    corpus, r, info = _indexed(tmp_path, WINDOWS, serve_time=35.0)
    # pol's scope embedded once (unchanged at v2 and v3), v2: the limit modified, v3: modified + appended (5);
    # chat and the runbook: 1 each
    assert info["embeddings_needed"] == 7 and info["classes"]["unchanged"] == 2 and info["versions"] == 5
    in_force = [i for i in range(len(corpus)) if corpus.valid_from[i] <= 35.0 < corpus.valid_to[i]]
    assert in_force == [0, 2, 4, 5]
    hot = sorted((key[0], key[1]) for key in r.lake.hot.keys())  # (doc_id, chunk_id)
    assert hot == sorted((str(corpus.doc_id[i]), chunk_hash(corpus.texts[i])) for i in in_force)
    assert r.lake.check()["consistent"]
    q = EMB.encode(["The limit is dollars"])
    for as_of, want in ((15.0, {0, 1, 2}), (25.0, {0, 2, 3}), (35.0, {0, 2, 4, 5}), (5.0, {6})):
        got = {int(i) for i in r.search(q, np.array([as_of]), k=10).ranked[0] if i >= 0}
        assert got == want, as_of  # exactly the chunks in force at as_of, each mapped to its own corpus row
    d = r.describe()
    assert d["leakage_check"]["outside_window"] == 0 and d["leakage_check"]["unmapped_hits"] == 0
    assert d["routing"]["hot"] == 1


def test_check_dataset_names_the_missing_field(tmp_path):
    r = _retriever(tmp_path)
    corpus = _corpus(WINDOWS)
    r.check_dataset(corpus)  # every field given
    with pytest.raises(BenchError, match=r"^livevectorlake needs metadata\.doc_id, metadata\.valid_from on every "
                                         r"chunk \([^\n]*\); the dataset lacks them$"):
        r.check_dataset(dataclasses.replace(corpus, present=frozenset()))
    with pytest.raises(BenchError, match=r"needs metadata\.valid_from on every chunk"):
        r.check_dataset(dataclasses.replace(corpus, present=frozenset({"doc_id", "version"})))


def test_settings_are_validated():
    assert settings({}).current_tolerance_days == 1.0
    for bad, msg in (({"hot_index": "ivf"}, "hot_index=ivf: unknown; allowed: milvus, flat, hnsw, milvus_hnsw"),
                     ({"current_tolerance_days": -1}, "current_tolerance_days=-1: must be a finite number >= 0"),
                     ({"nope": 1}, "nope: unknown key"), ({"lake_path": ""}, "lake_path=''"),
                     ({"hnsw_m": 0}, "hnsw_m=0: must be an integer > 0")):
        with pytest.raises(BenchError, match=msg):
            build_retriever("livevectorlake", {"_target_": LVL_TARGET, **bad})


def test_lake_path_must_be_empty(tmp_path):
    (tmp_path / "lake").mkdir()
    (tmp_path / "lake" / "x").write_text("x")
    corpus = _corpus(POLICY)
    with pytest.raises(BenchError, match="must be an empty or missing folder"):
        _retriever(tmp_path).index(corpus, EMB.encode(corpus.texts), 30.0)


def _leaks(run_, corpus, queries) -> tuple[int, int, int]:
    outside = future = returned = 0
    for q in range(len(queries)):
        t = queries.as_of[q]
        for idx in run_.ranked[q]:
            if idx < 0:
                continue
            returned += 1
            outside += not (corpus.valid_from[idx] <= t < corpus.valid_to[idx])
            future += corpus.created_at[idx] > t
    return outside, future, returned


def test_main_experiment_on_tiny_dataset(tmp_path):
    cfg = compose_config(TINY + ["embedder=hashing", "+retriever@retrievers.livevectorlake=livevectorlake",
                                 "systems=[plain_cosine,livevectorlake]",
                                 f"retrievers.livevectorlake.lake_path={tmp_path / 'lake'}"])
    metrics = run(cfg, tmp_path / "out")
    assert list(metrics["systems"]) == ["plain_cosine", "livevectorlake"]
    info = metrics["system_info"]["livevectorlake"]
    n_q = metrics["dataset"]["n_queries"]
    assert sum(info["routing"].values()) == n_q and info["routing"]["hot"] > 0 and info["routing"]["cold_historical"] > 0
    assert info["leakage_check"]["outside_window"] == 0 and info["leakage_check"]["created_after_as_of"] == 0
    assert info["leakage_check"]["unmapped_hits"] == 0
    ing = info["ingest"]
    assert ing["embeddings_needed"] < ing["paragraphs"] and ing["classes"]["unchanged"] > 0
    assert info["lake"]["hot_rows"] < info["lake"]["cold_rows"]
    dt = DeltaTable(str(tmp_path / "lake" / "cold"))
    assert dt.version() == info["lake"]["cold_table_version"] == ing["commits"]
    for split in ("dev", "test"):
        m = metrics["systems"]["livevectorlake"][split]
        # superseded versions are never in force at as_of (leakage_check above); a stale top-1 can only be a
        # lagging runbook, in force and out of date, so stale_rate may be above 0
        assert m["stale_rate"] <= metrics["systems"]["plain_cosine"][split]["stale_rate"] + 0.5
        if "leakage_at_10" in m:
            assert m["leakage_at_10"] == 0.0
    ds = load_dataset(tmp_path / "out" / "dataset")
    lines = (tmp_path / "out" / "run_livevectorlake.jsonl").read_text().splitlines()[1:]
    ranked = np.full((len(ds.queries), 10), -1)
    for i, line in enumerate(lines):
        rec = json.loads(line)
        assert rec["query_id"] == ds.queries.ids[i]
        for j, cid in enumerate(rec["ranked"]):
            ranked[i, j] = ds.corpus.index_of[cid]

    class R:  # the saved run, re-checked against the dataset's own windows
        pass

    R.ranked = ranked
    outside, future, returned = _leaks(R, ds.corpus, ds.queries)
    assert returned > 0 and outside == 0 and future == 0


@pytest.mark.slow
def test_no_temporal_leakage_on_the_default_dataset(default_dataset, tmp_path):
    ds = load_dataset(default_dataset)
    corpus, queries = ds.corpus, ds.queries
    emb = HashingEmbedder(256)
    r = _retriever(tmp_path)
    r.index(corpus, emb.encode(corpus.texts), float(queries.query_time.min()))
    run_ = r.search(emb.encode(queries.texts), queries.as_of, k=10)
    outside, future, returned = _leaks(run_, corpus, queries)
    assert returned >= 10 * len(queries) - 50 and outside == 0 and future == 0
    info = r.describe()
    hist = queries.category == "historical"
    assert info["routing"]["cold_historical"] == int(hist.sum()) and info["routing"]["hot"] == int((~hist).sum())
    assert info["leakage_check"]["unmapped_hits"] == 0 and r.lake.check()["consistent"]
    # the plain cosine baseline on the same vectors does leak: the check can fail
    plain = build_retriever("plain_cosine", {"_target_": "smartvector_bench.systems.plain_cosine.PlainCosine"})
    plain.index(corpus, emb.encode(corpus.texts), 0.0)
    assert _leaks(plain.search(emb.encode(queries.texts), queries.as_of, 10), corpus, queries)[0] > 0
