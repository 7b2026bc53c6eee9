"""The run file's 1.1 fields (query text and as_of, a label per hit, the four-signal systems' per-hit signals) on a
tiny generated dataset with the hashing embedder, and the 1.0 format still read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.evaluator import hit_labels, judge
from smartvector_bench.core.run import SIGNAL_KEYS, read_run_jsonl, read_run_rows, write_run_jsonl
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.base import ScoresHits
from smartvector_bench.systems.smartvector.signals.fusion import fuse

from .conftest import TINY, compose_config, write_tiny

NEW_KEYS = ("text", "as_of", "labels", "signals")
# name, overrides of its retrievers.<name> config: every search path of SmartVector, and kg_smartvector
SYSTEMS = [("smartvector", {}), ("smartvector", {"kernel": "numpy"}), ("smartvector", {"kernel": "numba"}),
           ("smartvector", {"candidates": 8}), ("smartvector_soft", {}), ("kg_smartvector", {})]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = write_tiny(tmp_path_factory.mktemp("runfile") / "ds")
    cfg = compose_config(TINY + ["embedder=hashing"])
    ds = load_dataset(path)
    emb = build_embedder({**cfg["embedder"], "cache_path": None})
    return cfg, ds, emb.encode(ds.corpus.texts), emb.encode(ds.queries.texts)


def _search(cfg, ds, cvec, qvec, name, extra):
    r = build_retriever(name, {**cfg["retrievers"][name], **extra})
    r.index(ds.corpus, cvec, float(ds.queries.query_time.min()))
    return r, r.search(qvec, ds.queries.as_of, 10, texts=ds.queries.texts)


@pytest.mark.parametrize("name,extra", SYSTEMS)
def test_hit_signals_fuse_to_the_scores_and_leave_the_ranking_alone(tiny, name, extra):
    cfg, ds, cvec, qvec = tiny
    r, run = _search(cfg, ds, cvec, qvec, name, extra)
    assert isinstance(r, ScoresHits)
    sig = r.hit_signals(qvec, ds.queries.as_of, run.ranked)
    pad = run.ranked < 0
    for key in SIGNAL_KEYS.values():
        assert sig[key].shape == run.ranked.shape and np.array_equal(np.isnan(sig[key]), pad), key
    fused = fuse(r.weights, sig["semantic"], sig["temporal"], sig["confidence"], sig["relational"])
    assert np.allclose(fused[~pad], run.scores[~pad], rtol=0, atol=1e-6)  # the cosine: float32 rounding
    # the full (Q, N) signals of the specification, at the ranked rows
    if name == "kg_smartvector":
        full = r.signals(qvec, ds.queries.as_of)
    else:
        full = r.signals(r._index.dense_scores(qvec), ds.queries.as_of)
    at = np.where(pad, 0, run.ranked)
    for key in SIGNAL_KEYS.values():
        want = np.take_along_axis(np.broadcast_to(full[key], (len(at), full[key].shape[1])), at, axis=1)
        assert np.allclose(sig[key][~pad], want[~pad], rtol=0, atol=1e-6 if key == "semantic" else 0.0), key
    again = r.search(qvec, ds.queries.as_of, 10, texts=ds.queries.texts)
    assert np.array_equal(again.ranked, run.ranked) and np.array_equal(again.scores, run.scores, equal_nan=True)


def test_hit_labels_are_the_evaluators_judgement_of_each_hit(tiny):
    cfg, ds, cvec, qvec = tiny
    q = ds.queries
    for name in ("plain_cosine", "smartvector", "valid_cosine"):
        _, run = _search(cfg, ds, cvec, qvec, name, {})
        labels, j = hit_labels(run, q), judge(run, q)
        for i, row in enumerate(labels):
            hits = [int(c) for c in run.ranked[i] if c >= 0]
            assert len(row) == len(hits)
            want = ["correct" if c in q.relevant.row(i) else "stale" if c in q.stale.row(i)
                    else "rumor" if c in q.rumor.row(i) else "other" for c in hits]
            assert row == want, (name, q.ids[i])
            for flag in ("correct", "stale", "rumor"):
                assert bool(j[flag][i]) == (row[:1] == [flag]), (name, q.ids[i], flag)
        assert {x for row in labels for x in row} >= {"correct", "other"}


def _write(tmp_path, tiny, name="smartvector"):
    cfg, ds, cvec, qvec = tiny
    r, run = _search(cfg, ds, cvec, qvec, name, {})
    path = tmp_path / f"run_{name}.jsonl"
    write_run_jsonl(path, run, ds.queries, ds.corpus, judge(run, ds.queries), {"schema_version": "2.0"},
                    labels=hit_labels(run, ds.queries), signals=r.hit_signals(qvec, ds.queries.as_of, run.ranked))
    return path, run


def test_run_file_carries_text_as_of_labels_and_signals(tmp_path, tiny):
    _, ds, _, _ = tiny
    path, run = _write(tmp_path, tiny)
    meta, rows = read_run_rows(path)
    assert meta["run_schema_version"] == "1.2" and len(rows) == len(ds.queries)
    stored = {json.loads(line)["_id"]: json.loads(line) for line in (ds.path / "queries.jsonl").open()}
    for i, rec in enumerate(rows):
        assert rec["text"] == stored[rec["query_id"]]["text"]
        assert rec["as_of"] == stored[rec["query_id"]]["metadata"]["as_of"]  # the dataset's own string
        assert len(rec["labels"]) == len(rec["ranked"]) and set(rec["signals"]) == set(SIGNAL_KEYS)
        assert (rec["labels"][:1] == ["correct"]) == rec["correct"]
    meta2, again = read_run_jsonl(path, ds.queries, ds.corpus)
    assert np.array_equal(again.ranked, run.ranked)


def test_a_1_0_run_file_still_reads(tmp_path, tiny):
    _, ds, _, _ = tiny
    path, run = _write(tmp_path, tiny)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    del lines[0]["_meta"]["run_schema_version"]
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({k: v for k, v in rec.items() if k not in NEW_KEYS}) + "\n" for rec in lines))
    meta, saved = read_run_jsonl(old, ds.queries, ds.corpus)
    assert np.array_equal(saved.ranked, run.ranked) and np.allclose(saved.scores, run.scores, equal_nan=True)
    _, rows = read_run_rows(old)
    assert all(rec[k] is None for rec in rows for k in NEW_KEYS)


@pytest.mark.parametrize("edit,message", [
    (lambda m, r: r.update(labels=r["labels"][:-1]), "'labels' must list one label per ranked hit"),
    (lambda m, r: r.update(labels=["wrong"] * len(r["ranked"])), "'labels' holds 'wrong'"),
    (lambda m, r: r["signals"].pop("graph"), "'signals' must map semantic, temporal, confidence, graph"),
    (lambda m, r: r["signals"].update(temporal=[]), "'signals.temporal' must hold one value per ranked hit"),
    (lambda m, r: m["_meta"].update(run_schema_version="9.0"), "run_schema_version='9.0'"),
])
def test_a_bad_1_1_field_is_one_line_naming_the_file_and_line(tmp_path, tiny, edit, message):
    path, _ = _write(tmp_path, tiny)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    edit(lines[0], lines[1])
    path.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    with pytest.raises(BenchError, match=message) as err:
        read_run_rows(path)
    assert str(err.value).startswith(f"{path}:") and "\n" not in str(err.value)


def test_queries_keep_the_stored_as_of_string_through_subset(tiny):
    _, ds, _, _ = tiny
    q = ds.queries
    assert len(q.as_of_text) == len(q) and all(isinstance(s, str) for s in q.as_of_text)
    sub = q.subset(np.arange(len(q)) % 2 == 0)
    assert sub.as_of_text == q.as_of_text[::2]


def _strict(line: str):
    def refuse(name):
        raise ValueError(f"bare {name} in a run file line")
    return json.loads(line, parse_constant=refuse)


def test_non_finite_scores_and_signals_are_written_as_null(tmp_path, tiny):
    cfg, ds, cvec, qvec = tiny
    r, run = _search(cfg, ds, cvec, qvec, "smartvector", {})
    sig = r.hit_signals(qvec, ds.queries.as_of, run.ranked)
    run.scores[0, 0], run.confidence[1] = np.nan, np.inf
    sig["temporal"][0, 1], sig["relational"][2, 0] = np.nan, -np.inf
    path = tmp_path / "run_nan.jsonl"
    write_run_jsonl(path, run, ds.queries, ds.corpus, judge(run, ds.queries), {"schema_version": "2.0"},
                    labels=hit_labels(run, ds.queries), signals=sig)
    rows = [_strict(line) for line in path.read_text().splitlines()[1:]]  # bare NaN / Infinity would raise
    assert rows[0]["scores"][0] is None and rows[1]["confidence"] is None
    assert rows[0]["signals"]["temporal"][1] is None and rows[2]["signals"]["graph"][0] is None
    assert rows[0]["scores"][1] == float(run.scores[0, 1])  # full precision: JSON round-trips a float
    _, again = read_run_jsonl(path, ds.queries, ds.corpus)
    assert np.isnan(again.scores[0, 0]) and np.array_equal(again.ranked, run.ranked)


def test_a_label_count_other_than_the_hit_count_is_a_bench_error(tmp_path, tiny):
    cfg, ds, cvec, qvec = tiny
    _, run = _search(cfg, ds, cvec, qvec, "plain_cosine", {})
    labels = hit_labels(run, ds.queries)
    labels[0] = labels[0][:-1]
    with pytest.raises(BenchError, match=rf"run_x\.jsonl: query {ds.queries.ids[0]}: \d+ labels for \d+ hits"):
        write_run_jsonl(tmp_path / "run_x.jsonl", run, ds.queries, ds.corpus, judge(run, ds.queries), {},
                        labels=labels)
    assert not (tmp_path / "run_x.jsonl").exists()


def test_a_run_file_that_is_not_utf8_is_a_bench_error_naming_the_line(tmp_path, tiny):
    path, _ = _write(tmp_path, tiny)
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"query_id"', b'"query_\xff"')
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(BenchError, match=r"not valid UTF-8 at line 3"):
        read_run_rows(path)


@pytest.mark.parametrize("name", ["smartvector", "kg_smartvector"])
def test_the_signals_fuse_to_the_scores_and_a_changed_score_or_weight_is_caught(tmp_path, tiny, name):
    from smartvector_bench.tools.report.stored_signals import fusion_misses

    cfg = tiny[0]["retrievers"][name]
    path, _ = _write(tmp_path, tiny, name)
    _, rows = read_run_rows(path)
    assert fusion_misses(name, rows, cfg) == []
    assert fusion_misses(name, rows, {**cfg, "weights": {"semantic": 1.0}})
    rows[3]["scores"][1] = rows[3]["scores"][1] + 1e-4
    assert [m for m in fusion_misses(name, rows, cfg) if f"{rows[3]['query_id']} rank 2" in m]
    rows[3]["signals"]["temporal"][0] = None
    assert any("rank 1: a null score or signal" in m for m in fusion_misses(name, rows, cfg))


def test_the_fusion_check_refuses_systems_whose_score_is_not_the_fusion(tmp_path, tiny):
    from smartvector_bench.tools.report.stored_signals import fusion_misses

    path, _ = _write(tmp_path, tiny)
    _, rows = read_run_rows(path)
    refused = fusion_misses("x", rows, {"_target_": "smartvector_bench.systems.plain_cosine.PlainCosine"})
    assert len(refused) == 1 and "not the four-signal fusion" in refused[0]
    assert fusion_misses("x", [{k: v for k, v in r.items() if k != "signals"} for r in rows], None) == ["no signals"]
