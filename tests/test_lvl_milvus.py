"""LiveVectorLake's Milvus hot tier (``hot_index: milvus``, :mod:`~smartvector_bench.systems.livevectorlake.
hot_milvus`): the same answers as the FAISS flat tier (keys, order, scores), ties broken by the row key,
recovery from a writer cut off between the tiers (injected and in a killed subprocess) and from a collection
that no longer matches its state file, orphan collections dropped, and the tier served by a Milvus server at a
URI (milvus-lite's own server in a subprocess) with the same answers as the default local file."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.livevectorlake import LiveVectorLake
from smartvector_bench.systems.livevectorlake import milvus_conn
from smartvector_bench.systems.livevectorlake.hot import read_state
from smartvector_bench.systems.livevectorlake.hot_milvus import MilvusHotTier

DIM = 32
LVL_TARGET = "smartvector_bench.systems.livevectorlake.retriever.LiveVectorLakeRetriever"


def vec(text: str) -> np.ndarray:
    """A hand-made unit vector per text (seeded by its SHA-256): distinct texts get distinct cosines."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def vectors_for(texts):
    return np.stack([vec(t) for t in texts]) if texts else np.zeros((0, DIM), dtype=np.float32)


def P(*paragraphs: str) -> str:
    return "\n\n".join(paragraphs)


# Several documents and versions (modified, moved, deleted, retired); doc ids with quotes and a backslash
# never reach a Milvus filter (deletes and reads go by primary key).
HISTORY = [
    ('he said "hi"', 1, P("Alpha one.", "Alpha two.", "Alpha three."), 1.0),
    ("it's", 1, P("Beta one.", "Alpha two."), 1.5),
    ('he said "hi"', 2, P("Alpha one.", "Alpha two, changed.", "Alpha three.", "Alpha four."), 2.0),
    ("back\\slash", 1, P("Gamma one.", "Gamma two."), 2.5),
    ("it's", 2, P("Alpha two."), 3.0),
    ('he said "hi"', 3, P("Alpha three.", "Alpha one."), 4.0),
    ("back\\slash", 2, "", 5.0),
    ("plain", 1, P("Delta one.", "Delta two.", "Delta three."), 6.0),
]
QUERIES = ["Alpha one.", "Alpha two, changed.", "Gamma two.", "Delta three.", "Beta one.", "nothing like it"]
AS_OF = [None, 1.2, 2.2, 3.5, 4.5, 5.5, 7.0]


def build(path, history=HISTORY, **kw) -> LiveVectorLake:
    lake = LiveVectorLake.open(path, dim=DIM, **kw)
    for doc, version, text, at in history:
        lake.ingest_document(doc, version, text, at, vectors_for)
    return lake


def answers(lake, tiers=("auto", "hot", "cold")) -> list:
    out = []
    for text in QUERIES:
        for as_of in AS_OF:
            for tier in tiers:
                if tier == "hot" and not lake.hot_is_exact(as_of):
                    continue
                res = lake.query(vec(text), as_of, k=5, tier=tier)
                out.append((text, as_of, tier, res.tier,
                            [(h.doc_id, h.chunk_id, h.position, h.valid_from, round(h.score, 6)) for h in res.hits]))
    return out


def same_answers(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x[:4] == y[:4] and [h[:4] for h in x[4]] == [h[:4] for h in y[4]], (x, y)
        assert np.allclose([h[4] for h in x[4]], [h[4] for h in y[4]], atol=1e-6)


def collections(lake) -> list[str]:
    return sorted(lake.hot._client.list_collections())


# ---- the same answers as FAISS flat ----------------------------------------------------------------------------

def test_milvus_tier_answers_as_the_faiss_flat_tier(tmp_path):
    m = build(tmp_path / "m")
    f = build(tmp_path / "f", hot_index="flat")
    assert m.hot.kind == "milvus" and isinstance(m.hot, MilvusHotTier) and f.hot.kind == "flat"
    assert m.hot.keys() == f.hot.keys() and len(m.hot) == len(f.hot) == 6
    assert m.check()["consistent"] and f.check()["consistent"]  # vectors round-trip through Milvus exactly
    same_answers(answers(m), answers(f))
    for text in QUERIES:  # the whole ranking of the hot tier, not only the top 5
        a, b = m.hot.search(vec(text), 100), f.hot.search(vec(text), 100)
        assert [k for k, _ in a] == [k for k, _ in b]
        assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-6)
    state = read_state(tmp_path / "m" / "hot")
    assert state["applied_seq"] == m.cold.seq() and state["n"] == 6 and state["kind"] == "milvus"
    assert collections(m) == [state["collection"]]  # each rebuild's predecessor is dropped
    d = m.describe()
    assert d["hot_index"] == "milvus" and d["hot_milvus"]["collection"] == state["collection"]
    assert d["hot_milvus"]["server"] == "milvus-lite milvus.db" and "hot_milvus" not in f.describe()
    reopened = LiveVectorLake.open(tmp_path / "m")  # the committed collection is loaded as it is
    assert not reopened.recoveries[-1]["rebuilt"] and reopened.hot.keys() == f.hot.keys()
    same_answers(answers(reopened), answers(f))


def test_milvus_hnsw_kind_builds_an_hnsw_index(tmp_path):
    lake = build(tmp_path / "l", hot_index="milvus_hnsw", hnsw_m=8, hnsw_ef_construction=40, hnsw_ef_search=4)
    hot = lake.hot
    assert hot._client.describe_index(hot.collection, "vector")["index_type"] == "HNSW"
    # describe_index does not echo the build parameters; milvus-lite's manifest shows what it builds with
    manifest = json.loads((tmp_path / "l" / "hot" / "milvus.db" / "collections" / hot.collection /
                           "manifest.json").read_text())
    assert manifest["index_specs"]["vector"]["build_params"] == {"M": 8, "efConstruction": 40}
    f = build(tmp_path / "f", hot_index="flat")
    assert lake.check()["consistent"]
    same_answers(answers(lake, ("hot",)), answers(f, ("hot",)))  # 5 rows: HNSW finds them all (ef raised to k)


def test_ties_are_broken_by_the_row_key(tmp_path):
    hot = MilvusHotTier(tmp_path / "hot", DIM)
    hot.load()
    v = vec("same")
    keys = [(f"d{i:02d}", "c", 0, 1) for i in range(40)][::-1]  # inserted in reverse key order
    hot.rebuild(keys[:20], np.tile(v, (20, 1)), 1)
    hot.apply([], keys[20:] + [("z", "other", 0, 1)], np.vstack([np.tile(v, (20, 1)), vec("other")]), 2)
    # 40 equal scores, k=5: more than k + 16 are fetched until the tie group ends
    assert [k for k, _ in hot.search(v, 5)] == sorted(keys)[:5]
    assert [k for k, _ in hot.search(v, 41)][:40] == sorted(keys)
    hot.close()


def test_apply_refuses_a_bad_update_before_touching_milvus(tmp_path):
    hot = MilvusHotTier(tmp_path / "hot", DIM)
    hot.rebuild([("a", "x", 0, 1)], vec("a")[None], 1)
    with pytest.raises(RuntimeError, match="not indexed"):
        hot.apply([("b", "x", 0, 1)], [], np.zeros((0, DIM)), 2)
    with pytest.raises(RuntimeError, match="indexed twice"):
        hot.apply([], [("a", "x", 0, 1)], vec("a")[None], 2)
    assert hot.load() is None and hot.applied_seq == 1 and hot.keys() == [("a", "x", 0, 1)]
    hot.close()


# ---- crash recovery --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", ["after_cold_commit", "before_hot_state"])
def test_injected_crash_between_tiers_recovers_the_same_rows(tmp_path, stage):
    path = tmp_path / "l"
    lake = build(path, HISTORY[:4])

    def hook(at, seq):
        if at == stage and seq == 5:
            raise RuntimeError("writer died")

    lake.fault_hook = hook
    with pytest.raises(RuntimeError, match="writer died"):
        lake.ingest_document(*HISTORY[4][:4], vectors_for)
    lake.fault_hook = None
    assert LiveVectorLake.status(path) == {"cold_seq": 5, "hot_seq": 4}
    before = read_state(path / "hot")["collection"]
    reopened = LiveVectorLake.open(path)
    rec = reopened.recoveries[-1]
    assert rec["rebuilt"] and rec["hot_seq_before"] == 4 and rec["cold_seq"] == 5
    if stage == "before_hot_state":  # Milvus was changed in place: its rows no longer match the state
        assert rec["reason"].startswith(f"Milvus collection {before} has ")
    for doc, version, text, at in HISTORY[5:]:
        reopened.ingest_document(doc, version, text, at, vectors_for)
    reference = build(tmp_path / "ref", hot_index="flat")
    assert reopened.check()["consistent"] and reopened.hot.keys() == reference.hot.keys()
    same_answers(answers(reopened), answers(reference))
    assert before not in collections(reopened) and len(collections(reopened)) == 1
    assert lake.check()["consistent"]  # the writer that failed recovers by itself on its next call


CHILD = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from test_lvl_milvus import HISTORY, vectors_for
from smartvector_bench.systems.livevectorlake import LiveVectorLake
lake = LiveVectorLake.open(sys.argv[1], dim=32, hot_index="milvus")
for doc, version, text, at in HISTORY:
    lake.ingest_document(doc, version, text, at, vectors_for)
print("DONE", flush=True)
"""


# Killed with Milvus untouched and with Milvus changed in place (its WAL never closed either way; os._exit at
# before_hot_state, as test_lvl_recovery.py runs it on the default tier, leaves Milvus as the kill does).
@pytest.mark.parametrize("fault", ["after_cold_commit:3:pause", "before_hot_state:3:pause"])
def test_writer_killed_between_tiers_recovers_on_open(tmp_path, fault):
    path = tmp_path / "l"
    env = dict(os.environ, SMARTVECTOR_LVL_FAULT=fault, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), os.path.dirname(__file__)],
                            stdout=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        for line in proc.stdout:
            if line.startswith("LVL_FAULT_PAUSED"):
                os.kill(proc.pid, signal.SIGKILL)  # a real kill -9 (Milvus Lite's WAL never closed)
                break
        rc = proc.wait()
    finally:
        watchdog.cancel()
        proc.stdout.close()
    assert rc == -signal.SIGKILL
    assert LiveVectorLake.status(path) == {"cold_seq": 3, "hot_seq": 2}
    lake = LiveVectorLake.open(path)
    assert lake.recoveries[-1]["rebuilt"] and lake.check()["consistent"]
    for doc, version, text, at in HISTORY[3:]:
        lake.ingest_document(doc, version, text, at, vectors_for)
    reference = build(tmp_path / "ref", hot_index="flat")
    assert lake.hot.keys() == reference.hot.keys()
    same_answers(answers(lake), answers(reference))


def test_a_collection_that_no_longer_matches_its_state_is_rebuilt(tmp_path):
    path = tmp_path / "l"
    lake = build(path)
    keys = lake.hot.keys()
    hot = lake.hot
    hot._client.delete(hot.collection, ids=[hot._id_of[keys[0]]])  # a row lost behind the state's back
    rec = LiveVectorLake.open(path).recoveries[-1]
    assert rec["rebuilt"] and f"has {len(keys) - 1} rows, the hot-tier state says {len(keys)}" in rec["reason"]
    lake = LiveVectorLake.open(path)
    hot = lake.hot
    hot._client.delete(hot.collection, ids=[hot._id_of[keys[0]]])  # same count, another id: the digest sees it
    hot._client.insert(hot.collection, [{"id": 10**6, "doc_id": keys[0][0], "chunk_id": keys[0][1],
                                         "position": keys[0][2], "valid_from_us": keys[0][3],
                                         "vector": vec("x").tolist()}])
    rec = LiveVectorLake.open(path).recoveries[-1]
    assert rec["rebuilt"] and "rows differ from the hot-tier state" in rec["reason"]
    lake = LiveVectorLake.open(path)
    lake.hot._client.drop_collection(lake.hot.collection)
    rec = LiveVectorLake.open(path).recoveries[-1]
    assert rec["rebuilt"] and "is missing" in rec["reason"]
    lake = LiveVectorLake.open(path)
    assert not lake.recoveries[-1]["rebuilt"] and lake.check()["consistent"] and lake.hot.keys() == keys


def test_a_rebuild_cut_off_leaves_an_orphan_the_next_commit_drops(tmp_path):
    path = tmp_path / "l"
    lake = build(path, HISTORY[:3])
    committed = read_state(path / "hot")["collection"]
    (path / "hot" / "state.json").write_text("{not json", encoding="utf-8")

    def hook(at, seq):
        raise RuntimeError("died mid-rebuild")

    lake.fault_hook = hook
    with pytest.raises(RuntimeError, match="mid-rebuild"):
        lake.recover()  # the new collection is filled, its state never written
    lake.fault_hook = None
    assert len(collections(lake)) == 2
    reopened = build(path, HISTORY[3:])
    assert reopened.check()["consistent"] and collections(reopened) == [read_state(path / "hot")["collection"]]
    assert committed not in collections(reopened)


def test_switching_the_hot_index_kind_rebuilds(tmp_path):
    path = tmp_path / "l"
    build(path, HISTORY[:3], hot_index="flat")
    assert any(p.name.endswith(".faiss") for p in (path / "hot").iterdir())
    lake = LiveVectorLake.open(path, hot_index="milvus")
    assert lake.recoveries[-1]["rebuilt"] and "kind=flat" in lake.recoveries[-1]["reason"]
    assert lake.check()["consistent"] and not any(p.name.endswith(".faiss") for p in (path / "hot").iterdir())
    back = LiveVectorLake.open(path, hot_index="flat")
    assert back.recoveries[-1]["rebuilt"] and back.check()["consistent"]


# ---- the retriever: settings and the temporary lake ------------------------------------------------------------

def test_milvus_settings_are_validated():
    for bad, msg in (({"milvus_uri": ""}, "milvus_uri=''"), ({"milvus_token": 5}, "milvus_token: must be"),
                     ({"milvus_collection": "1abc"}, "milvus_collection='1abc'"),
                     ({"milvus_collection": "a-b"}, "milvus_collection='a-b'"),
                     ({"hot_index": "ivf"}, "allowed: milvus, flat, hnsw, milvus_hnsw")):
        with pytest.raises(BenchError, match=msg):
            build_retriever("livevectorlake", {"_target_": LVL_TARGET, **bad})


def _corpus_and_vectors():
    from .test_lvl_retriever import POLICY, _corpus

    corpus = _corpus(POLICY)
    return corpus, np.stack([vec(t) for t in corpus.texts])


def _lite_servers_under(path) -> list[str]:
    from milvus_lite.server_manager import server_manager_instance

    root = os.path.realpath(path)
    return [p for p in server_manager_instance._servers if p.startswith(root)]  # private: no public listing


def test_a_temporary_lake_stops_its_milvus_lite_server_before_its_folder_goes(tmp_path):
    corpus, vectors = _corpus_and_vectors()
    r = build_retriever("livevectorlake", {"_target_": LVL_TARGET})
    r.index(corpus, vectors, 30.0)
    folder = r.lake.path
    assert (folder / "hot" / "milvus.db").is_dir() and _lite_servers_under(folder)
    r.close()
    gc.collect()
    milvus_conn.reap()
    assert not folder.exists() and not _lite_servers_under(folder)  # a server stopped later would re-create it


# ---- a Milvus server at a URI ----------------------------------------------------------------------------------

@pytest.fixture
def milvus_server(tmp_path):
    """milvus-lite's own gRPC server (``python -m milvus_lite server``) in a subprocess on a free localhost port;
    stopped (and killed if need be) whatever the test does."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "server.log", "w")  # its log, not a pipe nobody reads once it runs
    proc = subprocess.Popen([sys.executable, "-u", "-m", "milvus_lite", "server", "--data-dir",
                             str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=log, text=True)
    watchdog = threading.Timer(120, proc.kill)  # a server that never says it listens ends the wait below
    watchdog.start()
    try:
        for line in proc.stdout:  # "MilvusLite gRPC server listening on ..." once it accepts connections
            if "listening" in line:
                break
        watchdog.cancel()
        assert proc.poll() is None, f"the milvus-lite server did not start: {(tmp_path / 'server.log').read_text()}"
        yield f"http://127.0.0.1:{port}"
    finally:
        watchdog.cancel()
        milvus_conn.reap()  # our idle clients of it first
        proc.send_signal(signal.SIGINT)  # run_server stops (and closes its folder) on KeyboardInterrupt
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        log.close()


def test_the_hot_tier_through_a_milvus_server_uri(tmp_path, milvus_server):
    local = build(tmp_path / "local")
    a = build(tmp_path / "a", milvus_uri=milvus_server, milvus_collection="lake_x")
    b = build(tmp_path / "b", HISTORY[:3], milvus_uri=milvus_server, milvus_collection="lake_x")  # same prefix
    assert not (tmp_path / "a" / "hot" / "milvus.db").exists()
    assert a.describe()["hot_milvus"]["server"] == milvus_server
    names = sorted(a.hot._client.list_collections())
    assert len(names) == 2 and all(n.startswith("lake_x_") for n in names)  # one per lake, kept apart
    assert a.check()["consistent"] and b.check()["consistent"] and a.hot.keys() == local.hot.keys()
    same_answers(answers(a), answers(local))
    reopened = LiveVectorLake.open(tmp_path / "a", milvus_uri=milvus_server, milvus_collection="lake_x")
    assert not reopened.recoveries[-1]["rebuilt"]
    same_answers(answers(reopened), answers(local))
    # a temporary lake of the retriever drops its collections from the server when it goes
    corpus, vectors = _corpus_and_vectors()
    r = build_retriever("livevectorlake", {"_target_": LVL_TARGET, "milvus_uri": milvus_server,
                                           "milvus_collection": "tmp_lake"})
    r.index(corpus, vectors, 30.0)
    mine = [n for n in a.hot._client.list_collections() if n.startswith("tmp_lake_")]
    assert len(mine) == 1 and r.search(vectors[:1], np.array([30.0]), 2).ranked[0, 0] >= 0
    r.close()
    assert not [n for n in a.hot._client.list_collections() if n.startswith("tmp_lake_")]
    assert len(a.hot._client.list_collections()) == 2
