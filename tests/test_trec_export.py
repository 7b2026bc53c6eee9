"""TREC run and qrels export (smartvector_bench.core.run): the files are well-formed, and an outside tool
(ir-measures reading the files) scores them to exactly the figures of metrics.json."""

from __future__ import annotations

from pathlib import Path

import ir_measures
import numpy as np
import pytest
from ir_measures import RR, R, nDCG

from experiments.main import run as run_main
from smartvector_bench.core.dataset import SPLITS, load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.evaluator import judge
from smartvector_bench.core.run import (Run, qrels_trec_lines, read_run_jsonl, read_run_trec, trec_run_lines,
                                   write_qrels_trec, write_run_trec)

from .conftest import TINY, compose_config

SYSTEMS = ("plain_cosine", "valid_cosine", "bm25_valid")
MEASURES = {"mrr_at_10": RR @ 10, "recall_at_5": R @ 5, "ndcg_at_10": nDCG @ 10}


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """The main experiment on a tiny dataset (hashing embedder), and the runs read back from its JSONL files."""
    out = tmp_path_factory.mktemp("trec") / "run"
    cfg = compose_config(TINY + ["embedder=hashing", f"systems=[{','.join(SYSTEMS)}]", "experiment.n_boot=20",
                                 "experiment.n_permutations=20"])
    metrics = run_main(cfg, out)
    ds = load_dataset(metrics["dataset"]["path"])
    runs = {name: read_run_jsonl(out / f"run_{name}.jsonl", ds.queries, ds.corpus)[1] for name in SYSTEMS}
    return metrics, out, ds, runs


def _score(qrels_path: Path, run_path: Path) -> dict[str, float]:
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    trec_run = list(ir_measures.read_trec_run(str(run_path)))
    agg = ir_measures.calc_aggregate(list(MEASURES.values()), qrels, trec_run)
    return {key: round(float(agg[m]), 6) for key, m in MEASURES.items()}


def test_run_lines_are_six_column_trec(experiment):
    _, _, ds, runs = experiment
    qids, cids = set(ds.queries.ids), set(ds.corpus.ids)
    for name, r in runs.items():
        lines = trec_run_lines(r, ds.queries, ds.corpus, k=10)
        per_query: dict[str, list[tuple[str, int, float]]] = {}
        for line in lines:
            cols = line.split(" ")
            assert len(cols) == 6 and cols[1] == "Q0" and cols[5] == name, line
            assert cols[0] in qids and cols[2] in cids
            per_query.setdefault(cols[0], []).append((cols[2], int(cols[3]), float(cols[4])))
        for i, qid in enumerate(ds.queries.ids):
            hits = per_query.get(qid, [])
            expected = [ds.corpus.ids[j] for j in r.ranked[i, :10] if j >= 0]
            assert [d for d, _, _ in hits] == expected  # our order, no -1 padding
            assert [rk for _, rk, _ in hits] == list(range(1, len(hits) + 1))
            scores = [s for _, _, s in hits]
            assert all(a > b for a, b in zip(scores, scores[1:]))  # strictly decreasing: no ties to re-break
        assert trec_run_lines(r, ds.queries, ds.corpus, tag="mine")[0].endswith(" mine")
        # the system's own scores, as in the JSONL file, on request
        first = trec_run_lines(r, ds.queries, ds.corpus, score="system")[0].split(" ")
        assert float(first[4]) == round(float(r.scores[0, 0]), 6)


def test_qrels_lines_match_the_graded_judgments(experiment):
    _, _, ds, _ = experiment
    q = ds.queries
    for split in SPLITS:
        got: dict[str, dict[str, int]] = {}
        for line in qrels_trec_lines(q, ds.corpus, split=split):
            qid, zero, docid, grade = line.split(" ")
            assert zero == "0"
            got.setdefault(qid, {})[docid] = int(grade)
        want = {qid: {ds.corpus.ids[int(c)]: int(g) for c, g in zip(q.relevant.row(i), q.grades.row(i))}
                for i, qid in enumerate(q.ids) if q.split[i] == split}
        assert got == want and want and all(g >= 1 for row in got.values() for g in row.values())
    assert len(qrels_trec_lines(q, ds.corpus)) == sum(len(q.relevant.row(i)) for i in range(len(q)))


def test_ir_measures_on_the_exported_files_reproduces_metrics_json(experiment, tmp_path):
    metrics, _, ds, runs = experiment
    for split in SPLITS:
        qrels_path = tmp_path / f"qrels_{split}.trec"
        write_qrels_trec(qrels_path, ds.queries, ds.corpus, split=split)
        for name, r in runs.items():
            want = {key: metrics["systems"][name][split][key] for key in MEASURES}
            run_path = tmp_path / f"run_{name}_{split}.trec"
            write_run_trec(run_path, r, ds.queries, ds.corpus, split=split)
            assert _score(qrels_path, run_path) == want, (name, split)
            # one run file with every query does too: the tools skip queries without qrels
            full_path = tmp_path / f"run_{name}.trec"
            write_run_trec(full_path, r, ds.queries, ds.corpus)
            assert _score(qrels_path, full_path) == want, (name, split)


def test_a_reordered_export_scores_differently(experiment, tmp_path):
    """The check above can fail: reversing every query's ranking (same docs) changes what the tools see."""
    metrics, _, ds, runs = experiment
    write_qrels_trec(tmp_path / "qrels.trec", ds.queries, ds.corpus, split="test")
    changed = 0
    for name, r in runs.items():
        rev = Run(name, r.ranked[:, ::-1].copy(), r.scores[:, ::-1].copy(), r.confidence)
        write_run_trec(tmp_path / "rev.trec", rev, ds.queries, ds.corpus)
        got = _score(tmp_path / "qrels.trec", tmp_path / "rev.trec")
        changed += got["mrr_at_10"] != metrics["systems"][name]["test"]["mrr_at_10"]
    assert changed >= 1


def test_ties_and_empty_queries_follow_our_ranking(experiment, tmp_path):
    """Tied system scores: ours go to the lower corpus index, trec_eval's to the higher docid, so only
    rank-derived scores keep our order; a query with no hit has no line and still scores 0."""
    _, _, ds, _ = experiment
    q, corpus = ds.queries, ds.corpus
    ranked = np.full((len(q), 10), -1, dtype=np.int64)
    scores = np.full((len(q), 10), np.nan)
    for i in range(1, len(q)):  # query 0 returns nothing
        rel = int(q.relevant.row(i)[0])
        other = next(j for j in range(len(corpus)) if j not in set(q.relevant.row(i).tolist()))
        ranked[i, :2], scores[i, :2] = [other, rel], [0.5, 0.5]  # a tie, non-relevant first
    r = Run("tied", ranked, scores, np.full(len(q), np.nan))
    j = judge(r, q)
    assert j["rr10"][0] == 0.0 and np.all(j["rr10"][1:] == 0.5)
    write_qrels_trec(tmp_path / "qrels.trec", q, corpus)
    write_run_trec(tmp_path / "run.trec", r, q, corpus)
    assert q.ids[0] not in read_run_trec(tmp_path / "run.trec")
    got = _score(tmp_path / "qrels.trec", tmp_path / "run.trec")
    assert got["mrr_at_10"] == round(float(j["rr10"].mean()), 6)
    assert got["ndcg_at_10"] == round(float(j["ndcg10"].mean()), 6)


def test_round_trip_and_bad_input(experiment, tmp_path):
    _, _, ds, runs = experiment
    r = runs["valid_cosine"]
    write_run_trec(tmp_path / "run.trec", r, ds.queries, ds.corpus)
    back = read_run_trec(tmp_path / "run.trec")
    for i, qid in enumerate(ds.queries.ids):
        assert [d for d, _ in back[qid]] == [ds.corpus.ids[j] for j in r.ranked[i, :10] if j >= 0]
    assert "#" not in (tmp_path / "run.trec").read_text()  # no comment / header lines
    (tmp_path / "bad.trec").write_text("q1 Q0 d1 1 1.0\n")
    with pytest.raises(BenchError, match=r"bad\.trec:1: expected 6 columns"):
        read_run_trec(tmp_path / "bad.trec")
    with pytest.raises(ValueError, match="whitespace"):
        trec_run_lines(r, ds.queries, ds.corpus, tag="my run")
    with pytest.raises(ValueError, match="score must be one of"):
        trec_run_lines(r, ds.queries, ds.corpus, score="raw")


REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("folder", ["main", "main_large"])
def test_the_published_trec_files_score_to_the_published_metrics(folder):
    """results/<folder>/run_<system>.trec with qrels_<split>.trec, read by ir-measures as an outside user would,
    give every system's MRR@10, recall@5 and nDCG@10 of metrics.json on both splits."""
    import json

    root = REPO / "results" / folder
    metrics = json.loads((root / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["systems"], folder
    for name in metrics["systems"]:
        for split in SPLITS:
            want = {key: metrics["systems"][name][split][key] for key in MEASURES}
            assert _score(root / f"qrels_{split}.trec", root / f"run_{name}.trec") == want, (folder, name, split)
