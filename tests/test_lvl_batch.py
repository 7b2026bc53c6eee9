"""LiveVectorLake's batched ingest (``LiveVectorLake.ingest_batch``, the retriever's ``ingest_batch``) equals
ingesting the same versions one by one: the whole cold table row for row (every column), the hot tier's rows
and vectors, every query's answer and every version's change detection, on a hand-made history (moves,
reverts, deletions, retirements, a document several times in one batch, rows opened and closed within one
batch) and on a generated dataset, for batches of 1, 7 and all the versions. Also: one sequence number per
batch, a batch cut off between the tiers is recovered whole, a batch that fails before its commit writes
nothing, and the comparison catches a wrong close."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
from deltalake import DeltaTable

from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import HashingEmbedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.livevectorlake import BatchItem, LiveVectorLake, batch
from smartvector_bench.systems.livevectorlake.cold import KEY, to_us
from smartvector_bench.systems.livevectorlake.retriever import corpus_versions

from .conftest import write_tiny

DIM = 32
EMB = HashingEmbedder(DIM)
ALL = 10**6  # a batch size above any history here: the whole history in one batch
LVL_TARGET = "smartvector_bench.systems.livevectorlake.retriever.LiveVectorLakeRetriever"


def P(*paragraphs: str) -> str:
    return "\n\n".join(paragraphs)


A, B, B2, C, X, Y, Q, R, E, F = ("Alpha para.", "Beta para.", "Beta para, edited.", "Gamma para.", "Xi para.",
                                 "Ypsilon para.", "Qoppa para.", "Rho para.", "Epsilon para.", "Phi para.")
HISTORY = [  # (doc_id, version, text, effective_at), in ingest order
    ("a", 1, P(A, B, C), 1.0),
    ("e", 1, "", 1.1),  # an empty first version: nothing written, nothing remembered
    ("b", 1, P(A, Y), 1.5),  # the same paragraph in another document: a row of its own
    ("a", 2, P(A, B2, C), 2.0),  # modified in place
    ("c", 1, P(Q), 2.1),
    ("c", 2, "", 2.2),  # retired at once: in a batch of 7 its row is opened and closed in the same batch
    ("c", 3, P(Q, R), 2.3),  # back after the retirement
    ("b", 2, P(Y), 2.5),  # A deleted from b, Y moved up
    ("a", 3, P(A, B, C), 3.0),  # reverts to v1's text: modified, embedded again
    ("b", 3, P("  ypsilon   PARA. "), 3.5),  # only case and whitespace: a no-op inside a batch
    ("e", 2, P(E), 3.6),
    ("a", 4, P(B, C, A), 4.0),  # every paragraph moved: every row closed and reopened
    ("b", 4, P(Y, Y), 4.5),  # the same paragraph twice in one document: two rows
    ("a", 5, P(B, C), 5.0),  # A deleted (closes rows a4 opened, in the same batch of 7)
    ("b", 5, P(Y), 5.5),
    ("a", 6, "", 6.0),  # retirement
    ("e", 3, P(E, F), 6.5),
    ("a", 7, P(A, X), 7.0),  # back again
]
TIMES = sorted({at for *_, at in HISTORY} | {at + 0.05 for *_, at in HISTORY} | {0.5})


def closed_within_a_batch(rows: list[dict], size: int) -> list[int]:
    """Per batch of ``size`` consecutive versions of HISTORY: how many rows one of its versions opens and a later
    one closes (the rows the batch must insert already closed)."""
    batch_at = {(d, to_us(at)): i // size for i, (d, _, _, at) in enumerate(HISTORY)}
    out = [0] * -(-len(HISTORY) // size)
    for r in rows:
        if r["valid_to"] is not None:
            opened, closed = (batch_at[(r["doc_id"], to_us(r[k]))] for k in ("valid_from", "valid_to"))
            out[opened] += opened == closed
    return out


def _items(history) -> list[BatchItem]:
    return [BatchItem(d, v, text, at, EMB.encode) for d, v, text, at in history]


def ingest(path, history, size: int | None, **open_kw):
    """A new lake at ``path`` fed ``history``: one ``ingest_document`` call per version (``size`` None) or
    ``ingest_batch`` on consecutive slices of ``size`` versions. Returns (lake, per-version results, batches)."""
    lake = LiveVectorLake.open(path, dim=DIM, **open_kw)
    if size is None:
        return lake, [lake.ingest_document(*item) for item in _items(history)], []
    outs = [lake.ingest_batch(_items(history[i:i + size])) for i in range(0, len(history), size)]
    return lake, [r for o in outs for r in o.results], outs


def cold_table(lake) -> list[dict]:
    """The whole cold table, every column, sorted by the row key (read from disk, not from the lake's cache)."""
    rows = DeltaTable(str(lake.cold.path)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: tuple(r[k] for k in KEY))


def hot_tier(lake) -> list[tuple]:
    return [(k, lake.hot.vector(k).tolist()) for k in lake.hot.keys()]


def answers(lake, tiers=("auto", "cold")) -> list:
    queries = EMB.encode([A, B, B2, C, X, Y, Q, R, E, F, "para", "Alpha Beta"])
    out = []
    for tier in tiers:
        for t in [None, *TIMES]:
            if tier == "hot" and not lake.hot_is_exact(t):
                continue
            for q in queries:
                res = lake.query(q, t, k=4, tier=tier)
                out.append((tier, t, res.tier, [dataclasses.astuple(h) for h in res.hits]))
    return out


def detection(results) -> list[dict]:
    """What each version's ingest found and did, without what differs by design between batch sizes (the
    sequence number, the table version, the timings): whether it wrote, not under which number."""
    out = []
    for r in results:
        d = dataclasses.asdict(r)
        for k in ("seq", "cold_version", "timings_s"):
            del d[k]
        out.append({**d, "wrote": r.seq is not None})
    return out


def assert_same_lake(got, want, hot_answers: bool = True) -> None:
    assert cold_table(got) == cold_table(want)
    assert hot_tier(got) == hot_tier(want)
    assert answers(got, ("auto", "cold", "hot") if hot_answers else ("cold",)) == \
        answers(want, ("auto", "cold", "hot") if hot_answers else ("cold",))
    assert got.horizon == want.horizon and got.documents == want.documents
    assert got.check()["consistent"] and want.check()["consistent"]


@pytest.fixture(scope="module")
def one_by_one(tmp_path_factory):
    """The reference: the hand-made history through ingest_document, one version per call."""
    return ingest(tmp_path_factory.mktemp("ref") / "lake", HISTORY, None)


# ---- the hand-made history -----------------------------------------------------------------------------------

def test_the_history_exercises_what_batching_must_get_right(one_by_one):
    lake, results, _ = one_by_one
    rows = cold_table(lake)
    assert {r["status"] for r in rows} == {"current", "superseded", "deleted"}
    assert {r["change_type"] for r in rows} == {"new", "modified", "moved", "deleted"}
    classes = {c for r in results for c in r.position_classes}
    assert classes == {"unchanged", "moved", "modified", "new"}
    assert sum(r.seq is None for r in results) == 2  # e v1 (empty first version) and b v3 (whitespace only)
    # rows that batches of 7 open and close again (c v1's row, closed by c v2; a v3's and a v4's rows; ...)
    assert all(closed_within_a_batch(rows, 7)[:2]) and sum(closed_within_a_batch(rows, ALL)) > 5


@pytest.mark.parametrize("size", [1, 7, ALL])
def test_batches_equal_one_by_one_on_a_hand_made_history(tmp_path, one_by_one, size):
    want, want_results, _ = one_by_one
    got, got_results, outs = ingest(tmp_path / "lake", HISTORY, size)
    assert detection(got_results) == detection(want_results)
    assert_same_lake(got, want)
    # and again after reopening: the state recovery reads back from the cold tier is the same too
    reopened = LiveVectorLake.open(tmp_path / "lake")
    assert not reopened.recoveries[-1]["rebuilt"]
    assert_same_lake(reopened, want)
    assert len(outs) == -(-len(HISTORY) // size)


def test_with_an_hnsw_hot_tier_the_rows_and_the_cold_answers_are_the_same(tmp_path, one_by_one):
    want = one_by_one[0]
    got, _, _ = ingest(tmp_path / "lake", HISTORY, ALL, hot_index="hnsw")
    assert_same_lake(got, want, hot_answers=False)  # HNSW is approximate and built in another order


@pytest.mark.parametrize("wrong", ["left_open", "wrong_valid_to", "wrong_status"])
def test_the_comparison_catches_a_wrong_close_of_a_row_opened_in_the_same_batch(tmp_path, one_by_one,
                                                                               monkeypatch, wrong):
    def bad_close(row, close):
        if wrong == "wrong_valid_to":
            row.valid_to, row.status, row.change_type = close.valid_to + 1, close.status, close.change_type
        elif wrong == "wrong_status":
            row.valid_to, row.status, row.change_type = close.valid_to, "superseded", row.change_type

    monkeypatch.setattr(batch, "close_opened", bad_close)
    got, got_results, _ = ingest(tmp_path / "lake", HISTORY, 7)
    assert detection(got_results) == detection(one_by_one[1])  # the per-version results cannot see it
    if wrong == "wrong_status":
        assert got.check()["consistent"]  # nor can the lake's own check
    with pytest.raises(AssertionError):
        assert_same_lake(got, one_by_one[0])


# ---- sequence numbers, compaction, failures ------------------------------------------------------------------

def test_one_sequence_number_and_one_commit_per_batch(tmp_path, one_by_one):
    lake, results, outs = ingest(tmp_path / "lake", HISTORY, 7)
    assert [o.seq for o in outs] == [1, 2, 3] and lake.seq == lake.cold.seq() == 3
    assert LiveVectorLake.status(tmp_path / "lake") == {"cold_seq": 3, "hot_seq": 3}
    d = lake.describe()
    assert d["seq"] == d["hot_applied_seq"] == 3 and d["cold_table_version"] == 3  # create + 3 merges
    for b, o in enumerate(outs):
        for r in o.results:
            assert r.seq == (None if not (r.rows_added or r.rows_closed) else b + 1)
            assert r.cold_version == o.cold_version == b + 1
        assert o.rows_closed + o.closed_in_batch == sum(r.rows_closed for r in o.results)
        assert o.rows_added == sum(r.rows_added for r in o.results)
        assert set(o.timings_s) == {"cdc", "cold", "hot"}
    assert [o.closed_in_batch for o in outs] == closed_within_a_batch(cold_table(one_by_one[0]), 7)
    merges = [h for h in reversed(lake.cold.history()) if h.get("operation") == "MERGE"]
    assert [int(h["livevectorlake.seq"]) for h in merges] == [1, 2, 3]  # the commit info counts the versions
    assert [int(h["livevectorlake.versions"]) for h in merges] == [sum(r.seq is not None for r in o.results)
                                                                   for o in outs]


def test_only_no_op_versions_write_nothing_and_still_count_for_the_time_order(tmp_path):
    lake, _, _ = ingest(tmp_path / "lake", HISTORY[:3], ALL)
    out = lake.ingest_batch([BatchItem("a", 2, P(A, B, C), 1.2, EMB.encode), BatchItem("e", 1, "", 1.3, EMB.encode)])
    assert out.seq is None and lake.seq == 1 and all(r.seq is None for r in out.results)
    with pytest.raises(BenchError, match="not after the document's last change"):
        lake.ingest_document("a", 3, P(A), 1.15, EMB.encode)


def test_compaction_counts_commits_and_changes_no_row(tmp_path, one_by_one):
    lake, _, outs = ingest(tmp_path / "lake", HISTORY, 7, compact_every=2)
    assert ["compact" in o.timings_s for o in outs] == [False, True, False]
    assert lake.seq == 3 and [h["operation"] for h in lake.cold.history()].count("MERGE") == 3
    assert_same_lake(lake, one_by_one[0])


def test_a_batch_that_fails_before_its_commit_writes_nothing(tmp_path, one_by_one):
    lake, _, _ = ingest(tmp_path / "lake", HISTORY[:5], ALL)
    before = cold_table(lake)
    late = ("a", 9, P(X), 1.5)  # before a v2 of the same batch: out of time order
    with pytest.raises(BenchError, match="a v9: effective_at"):
        lake.ingest_batch(_items(HISTORY[5:9] + [late] + HISTORY[9:]))
    assert cold_table(lake) == before and lake.seq == 1 and lake.check()["consistent"]

    def bad_shape(texts):
        return np.zeros((len(texts), DIM + 1))

    with pytest.raises(BenchError, match="vectors_for returned shape"):
        lake.ingest_batch(_items(HISTORY[5:9]) + [BatchItem("z", 1, P("Zeta."), 9.0, bad_shape)])
    assert cold_table(lake) == before and lake.seq == 1
    for item in _items(HISTORY[5:]):  # the lake goes on as if the failed batches never came
        lake.ingest_document(*item)
    assert_same_lake(lake, one_by_one[0])


@pytest.mark.parametrize("stage", ["after_cold_commit", "before_hot_state"])
def test_a_batch_cut_off_between_the_tiers_is_recovered_whole(tmp_path, one_by_one, stage):
    path = tmp_path / "lake"
    lake, _, _ = ingest(path, HISTORY[:4], ALL)

    def hook(at, seq):
        if at == stage and seq == 2:
            raise RuntimeError("writer died")

    lake.fault_hook = hook
    with pytest.raises(RuntimeError, match="writer died"):
        lake.ingest_batch(_items(HISTORY[4:]))
    assert LiveVectorLake.status(path) == {"cold_seq": 2, "hot_seq": 1}  # the whole batch in cold, hot behind
    lake.fault_hook = None
    reopened = LiveVectorLake.open(path)
    rec = reopened.recoveries[-1]
    assert rec["rebuilt"] and rec["hot_seq_before"] == 1 and rec["cold_seq"] == 2
    # the rebuilt hot tier holds the same rows and vectors; only the order of equal scores may differ from an
    # incrementally updated one (recovery adds the rows in key order), so its answers are not compared
    assert_same_lake(reopened, one_by_one[0], hot_answers=False)
    assert lake.check()["consistent"] and hot_tier(lake) == hot_tier(one_by_one[0])  # the writer recovers too
    # re-sending each document's last version writes nothing: the batch cut off is all in the cold tier
    last = {d: (d, v, t, at + 100) for d, v, t, at in HISTORY}
    again = reopened.ingest_batch(_items(list(last.values())))
    assert again.seq is None and [r.classes["new"] + r.classes["modified"] for r in again.results] == [0] * 4


CHILD = r"""
import sys
from smartvector_bench.core.embedding import HashingEmbedder
from smartvector_bench.systems.livevectorlake import BatchItem, LiveVectorLake
emb = HashingEmbedder(32)
lake = LiveVectorLake.open(sys.argv[1], dim=32)
history = [("a", 1, "A one.\n\nA two.", 1.0), ("b", 1, "B one.", 1.5), ("a", 2, "A one.\n\nA two, changed.", 2.0),
           ("b", 2, "", 2.5), ("a", 3, "A two, changed.\n\nA one.\n\nA three.", 3.0)]
lake.ingest_batch([BatchItem(*h, emb.encode) for h in history[:2]])
lake.ingest_batch([BatchItem(*h, emb.encode) for h in history[2:]])
print("DONE", flush=True)
"""


def test_a_writer_killed_between_the_tiers_of_a_batch_recovers_on_open(tmp_path):
    path = tmp_path / "lake"
    env = dict(os.environ, SMARTVECTOR_LVL_FAULT="after_cold_commit:2:pause", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        for line in proc.stdout:
            if line.startswith("LVL_FAULT_PAUSED"):
                os.kill(proc.pid, signal.SIGKILL)  # a real kill -9 between the two tier writes of the batch
                break
        rc = proc.wait()
    finally:
        watchdog.cancel()
        proc.stdout.close()
    assert rc == -signal.SIGKILL and LiveVectorLake.status(path) == {"cold_seq": 2, "hot_seq": 1}
    lake = LiveVectorLake.open(path)
    assert lake.recoveries[-1]["rebuilt"] and lake.check()["consistent"]
    assert sorted(k[:3] for k in lake.hot.keys()) == sorted(
        [("a", h, p) for p, h in enumerate(map(_hash, ["A two, changed.", "A one.", "A three."]))])
    assert lake.document_as_of("b", 2.0) == "B one." and lake.document_as_of("b", 2.6) is None


def _hash(text: str) -> str:
    from smartvector_bench.systems.updates import chunk_hash

    return chunk_hash(text)


# ---- the retriever on a generated dataset --------------------------------------------------------------------

@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A small generated dataset (TINY, a few more versions per document) with hashing vectors."""
    ds = load_dataset(write_tiny(tmp_path_factory.mktemp("gen") / "ds", ["dataset.versions=[3,4]"]))
    return ds, EMB.encode(ds.corpus.texts), EMB.encode(ds.queries.texts)


def _indexed(generated, path, size):
    ds, vectors, _ = generated
    r = build_retriever("livevectorlake", {"_target_": LVL_TARGET, "lake_path": str(path), "ingest_batch": size})
    r.index(ds.corpus, vectors, float(ds.queries.query_time.min()))
    return r


def _indexed_and_searched(generated, path, size):
    ds, _, qv = generated
    r = _indexed(generated, path, size)
    return r, r.search(qv, ds.queries.as_of, 10), r.describe()


@pytest.fixture(scope="module")
def generated_one_by_one(generated, tmp_path_factory):
    return _indexed_and_searched(generated, tmp_path_factory.mktemp("gen_ref") / "lake", 1)


@pytest.mark.parametrize("size", [7, ALL])
def test_the_retriever_in_batches_equals_one_by_one_on_a_generated_dataset(generated, generated_one_by_one,
                                                                          tmp_path, size):
    ds = generated[0]
    want, run_want, w = generated_one_by_one
    versions = corpus_versions(ds.corpus)
    assert len({v.doc_id for v in versions}) < len(versions)  # documents with several versions
    got, run_got, g = _indexed_and_searched(generated, tmp_path / "lake", size)
    assert_same_lake(got.lake, want.lake)
    assert np.array_equal(run_got.ranked, run_want.ranked) and np.array_equal(run_got.scores, run_want.scores)
    assert np.array_equal(run_got.confidence, run_want.confidence, equal_nan=True)
    assert g["routing"] == w["routing"] and w["routing"]["hot"] and w["routing"]["cold_historical"]
    assert g["leakage_check"] == w["leakage_check"]
    skip = ("commits", "ingest_latency_ms")  # one commit per batch; a batch's write time is shared
    assert {k: v for k, v in g["ingest"].items() if k not in skip} == \
        {k: v for k, v in w["ingest"].items() if k not in skip}
    assert w["ingest"]["commits"] == w["lake"]["seq"] > g["ingest"]["commits"] == g["lake"]["seq"]
    assert g["lake"]["seq"] == -(-len(versions) // size) and g["settings"]["ingest_batch"] == size


def test_ingest_batch_must_be_a_positive_integer():
    for bad in (0, -1, 2.5, "10"):
        with pytest.raises(BenchError, match="ingest_batch"):
            build_retriever("livevectorlake", {"_target_": LVL_TARGET, "ingest_batch": bad})


# ---- the perf case -------------------------------------------------------------------------------------------

def test_the_lvl_ingest_perf_case_times_per_version_and_batched_ingest_of_the_same_rows():
    from smartvector_bench.tools.perf.cases import CASES
    from smartvector_bench.tools.scale import scale_dataset

    data = scale_dataset(60, n_queries=10)  # 52 document versions, 6 queries
    section = {"sizes": [60], "batches": [1, 7], "retriever": {"hot_index": "flat"}}  # flat: the fastest to test
    rows = CASES["lvl_ingest"](data, section, 60, {})
    by = {(r.system, r.metric): r.value for r in rows}
    assert {s for s, _ in by} == {"livevectorlake_batch1", "livevectorlake_batch7"}
    assert by["livevectorlake_batch1", "cold_rows"] == by["livevectorlake_batch7", "cold_rows"] > 0
    assert by["livevectorlake_batch1", "versions"] == by["livevectorlake_batch7", "versions"] > 7
    assert by["livevectorlake_batch1", "commits"] > by["livevectorlake_batch7", "commits"] > 1
    assert by["livevectorlake_batch7", "s_per_1000_versions"] > 0 and by["livevectorlake_batch7", "speedup"] > 0
