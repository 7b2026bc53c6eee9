"""experiment=feedback_loop end to end: on a tiny dataset with the hashing embedder (fast; a shortened
timeline and few bootstrap resamples), and once on the default dataset with the real model through the CLI.

Benchmark v2: feedback comes from the dev families and accuracy is measured on the (held-out) test families;
``summary["in_sample"]`` reports the same figures on the feedback (dev) split."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from experiments.feedback_loop import run
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.timeutil import iso_to_days

from .conftest import TINY, compose_config

SYSTEMS = ("smartvector_live", "smartvector_frozen", "plain_cosine")
FAST = TINY + ["embedder=hashing", "experiment=feedback_loop", "experiment.n_boot=10",
               "experiment.replay.start_days_before_now=56", "experiment.replay.end_days_after_now=28"]
HEADER = ("round,time,days_from_now,system,split,n_queries,top1,top1_lo,top1_hi,stale_rate,rumor_rate,ece,"
          "corrections,acceptances,dormant_in_force")
METRICS = ("n_queries", "top1", "top1_lo", "top1_hi", "stale_rate", "rumor_rate", "ece", "dormant_in_force")


def config(*overrides: str) -> dict:
    cfg = compose_config(FAST + list(overrides))
    cfg["experiment"]["progress"] = False
    return cfg


def series(result: dict, system: str, split: str | None = None) -> list[dict]:
    return [r for r in result["series"] if r["system"] == system and (split is None or r["split"] == split)]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def learning(tmp_path_factory):
    """p_correct = 1: every wrong answer of the feedback split is corrected."""
    out = tmp_path_factory.mktemp("fl") / "run"
    return run(config("experiment.replay.p_correct=1"), out), out


def test_default_splits_are_feedback_dev_eval_test():
    replay = compose_config(["experiment=feedback_loop"])["experiment"]["replay"]
    assert (replay["feedback_split"], replay["eval_split"]) == ("dev", "test")


def test_files_written(learning):
    result, out = learning
    assert sorted(p.name for p in out.iterdir()) == ["dataset", "explain_final.jsonl", "feedback_loop.csv",
                                                    "feedback_loop.json", "feedback_loop_runs.jsonl", "lineage.jsonl",
                                                    "table.md"]
    assert json.loads((out / "feedback_loop.json").read_text()) == result
    # the outcomes the gate compares: every round's top two hits of each system for each asked query
    lines = [json.loads(x) for x in (out / "feedback_loop_runs.jsonl").read_text().splitlines()]
    assert lines[0]["_meta"]["k"] == 2 and lines[0]["_meta"]["dataset_sha256"] == result["dataset"]["sha256"]
    asked = sum(r["n_queries"] for r in result["series"] if r["split"] == "test")
    assert len(lines) - 1 >= asked and len({x["key"] for x in lines[1:]}) == len(lines) - 1
    top = next(x for x in lines[1:] if x["system"] == "plain_cosine" and len(x["ranked"]) == 2)
    assert top["scores"][0] >= top["scores"][1] and 0 <= top["confidence"] <= 1
    # rounds every 7 days from 56 days before to 28 after: 56/7 + 28/7 + 1 = 13
    assert result["experiment"]["rounds"] == 13 and result["experiment"]["name"] == "feedback_loop"
    assert result["experiment"]["replay"]["p_correct"] == 1.0
    text = (out / "feedback_loop.csv").read_text()
    assert text.splitlines()[0] == HEADER
    rows = list(csv.DictReader(text.splitlines()))
    assert len(rows) == len(result["series"]) > 0
    for got, want in zip(rows, result["series"]):
        assert (got["system"], got["split"], float(got["top1"])) == (want["system"], want["split"], want["top1"])
    assert (result["experiment"]["replay"]["feedback_split"], result["experiment"]["replay"]["eval_split"]) == \
        ("dev", "test")
    # one row per round x system x split (the eval split test and the feedback split dev)
    assert {(r["system"], r["split"]) for r in result["series"]} == {
        (s, sp) for s in ("smartvector_live", "smartvector_frozen", "plain_cosine") for sp in ("test", "dev")}
    assert sorted({r["round"] for r in result["series"]}) == list(range(13))
    # plain cosine has no store: no dormant count
    assert all(r["dormant_in_force"] is None for r in series(result, "plain_cosine"))
    # feedback totals are cumulative, logged before the round's own feedback
    corr = [r["corrections"] for r in series(result, "smartvector_live", "dev")]
    assert corr == sorted(corr) and corr[0] == 0 and corr[-1] <= result["feedback"]["corrections"]

    lineage = [json.loads(line) for line in (out / "lineage.jsonl").read_text().splitlines()]
    assert len(lineage) == len({r["id"] for r in lineage}) > 0
    assert all(r["state"]["status"] is not None for r in lineage)  # every vector in the live store
    # every simulated correction / acceptance is in the live store's lineage
    causes = [f["cause"] for r in lineage for f in r["feedback"]]
    assert causes.count("user correction") == result["feedback"]["corrections"]
    assert causes.count("user accepted") == result["feedback"]["acceptances"]

    explain = [json.loads(line) for line in (out / "explain_final.jsonl").read_text().splitlines()]
    last = [r for r in series(result, "smartvector_live") if r["round"] == 12]
    assert len(explain) == sum(r["n_queries"] for r in last)  # every query of the last round
    # the gold of the explanation is the best relevant chunk judged at the last round's time: a chunk of
    # the query's family (labels), in force at the query's as_of (the round's time, or a historical as_of)
    chunk_family = {r["_id"]: r["family"] for r in _jsonl(out / "dataset" / "labels" / "chunks.jsonl")}
    query_family = {r["_id"]: r["family"] for r in _jsonl(out / "dataset" / "labels" / "queries.jsonl")}
    window = {r["_id"]: (iso_to_days(r["metadata"]["created_at"]), iso_to_days(r["metadata"]["valid_from"]),
                         float("inf") if r["metadata"]["valid_to"] is None else iso_to_days(r["metadata"]["valid_to"]))
              for r in _jsonl(out / "dataset" / "corpus.jsonl")}
    for rec in explain:
        assert {"query_id", "split", "gold", "as_of", "top", "runner_ups", "changed_by"} <= set(rec)
        assert chunk_family[rec["gold"]] == query_family[rec["query_id"]], rec["query_id"]
        created, start, end = window[rec["gold"]]
        as_of = iso_to_days(rec["as_of"]) if isinstance(rec["as_of"], str) else rec["as_of"]
        assert created <= as_of and start <= as_of < end, rec["query_id"]
        if rec["top"] is not None:
            assert sum(rec["top"]["contributions"].values()) == pytest.approx(rec["top"]["score"], abs=2.5e-6)

    table = (out / "table.md").read_text()
    assert table.startswith("# Feedback loop: top-1 accuracy over simulated time")
    for name in ("smartvector_live", "smartvector_frozen", "plain_cosine"):
        assert f"| {name} |" in table
    assert f"{result['feedback']['corrections']} corrections" in table
    assert set(result["summary"]) >= {"smartvector_live", "smartvector_frozen", "plain_cosine",
                                      "last_round_mcnemar_live_vs", "in_sample"}
    assert set(result["detection_quality"]) == {"smartvector_live", "smartvector_frozen"}
    for name in SYSTEMS:  # the in-sample rows of the table
        assert f"| {name} (in sample: dev families) |" in table


def _expected_summary(rows: list[dict]) -> dict:
    """The per-system summary figures recomputed from one split's series rows."""
    at_now = min(rows, key=lambda r: abs(r["days_from_now"]))
    return {"top1_first": rows[0]["top1"], "top1_last": rows[-1]["top1"], "top1_at_now": at_now["top1"],
            "top1_last_ci": [rows[-1]["top1_lo"], rows[-1]["top1_hi"]],
            "top1_mean": round(sum(r["top1"] for r in rows) / len(rows), 6),
            "stale_rate_last": rows[-1]["stale_rate"], "rumor_rate_last": rows[-1]["rumor_rate"],
            "ece_last": rows[-1]["ece"], "n_rounds": len(rows)}


def test_summary_on_test_and_in_sample_on_the_feedback_split(learning):
    result, _ = learning
    summary = result["summary"]
    assert set(summary["in_sample"]) == set(SYSTEMS)
    for name in SYSTEMS:
        out_of_sample, in_sample = summary[name], summary["in_sample"][name]
        assert out_of_sample["split"] == "test" and in_sample["split"] == "dev"
        want_test = _expected_summary(series(result, name, "test"))
        want_dev = _expected_summary(series(result, name, "dev"))
        for got, want in ((out_of_sample, want_test), (in_sample, want_dev)):
            assert got["top1_mean"] == pytest.approx(want.pop("top1_mean"), abs=1.5e-6), name
            assert {k: got[k] for k in want} == want, name
    # the live system learns from the dev users: in sample it ends above the frozen one
    assert summary["in_sample"]["smartvector_live"]["top1_last"] > summary["in_sample"]["smartvector_frozen"]["top1_last"]


def test_feedback_only_touches_the_dev_families(learning):
    """Families are split whole between dev and test: the confirmations (acceptances, and the right chunk a
    correction points to) are of relevant chunks, so of the dev families only."""
    result, out = learning
    q_split = {r["_id"]: r["metadata"]["split"] for r in _jsonl(out / "dataset" / "queries.jsonl")}
    q_family = {r["_id"]: r["family"] for r in _jsonl(out / "dataset" / "labels" / "queries.jsonl")}
    split_of_family: dict[str, set] = {}
    for qid, fam in q_family.items():
        split_of_family.setdefault(fam, set()).add(q_split[qid])
    assert all(len(v) == 1 for v in split_of_family.values())  # a family is in one split
    chunk_family = {r["_id"]: r["family"] for r in _jsonl(out / "dataset" / "labels" / "chunks.jsonl")}
    confirmed = [r["id"] for r in _jsonl(out / "lineage.jsonl") for f in r["feedback"]
                 if f["cause"] in ("user accepted", "user pointed to the right answer")]
    assert confirmed
    assert all(split_of_family[chunk_family[c]] == {"dev"} for c in confirmed)


def test_feedback_changes_the_live_series(learning):
    result, _ = learning
    fb = result["feedback"]
    assert fb["corrections"] > 0 and fb["acceptances"] > 0
    live, frozen = series(result, "smartvector_live"), series(result, "smartvector_frozen")
    assert [(r["round"], r["split"]) for r in live] == [(r["round"], r["split"]) for r in frozen]
    assert [r["top1"] for r in live] != [r["top1"] for r in frozen]
    # the first round is measured before any feedback: identical there
    assert [r["top1"] for r in live if r["round"] == 0] == [r["top1"] for r in frozen if r["round"] == 0]
    assert result["summary"]["smartvector_live"]["n_rounds"] == result["summary"]["smartvector_frozen"]["n_rounds"] \
        == 13


def test_without_feedback_and_access_live_equals_frozen(tmp_path):
    result = run(config("experiment.replay.p_correct=0", "experiment.replay.p_accept=0",
                        "experiment.replay.record_access=false"), tmp_path / "run")
    assert result["feedback"] == {"corrections": 0, "acceptances": 0, "revivals": 0}
    live, frozen = series(result, "smartvector_live"), series(result, "smartvector_frozen")
    assert len(live) == len(frozen) == 26  # 13 rounds x 2 splits
    for a, b in zip(live, frozen):
        assert (a["round"], a["split"]) == (b["round"], b["split"])
        assert {k: a[k] for k in METRICS} == {k: b[k] for k in METRICS}, (a["round"], a["split"])
    assert result["summary"]["smartvector_live"] == result["summary"]["smartvector_frozen"]
    assert result["summary"]["in_sample"]["smartvector_live"] == result["summary"]["in_sample"]["smartvector_frozen"]
    lineage = [json.loads(line) for line in (tmp_path / "run" / "lineage.jsonl").read_text().splitlines()]
    assert all(r["accesses"] == 0 and not [f for f in r["feedback"] if f["cause"].startswith("user")]
               for r in lineage)


def test_feedback_and_eval_on_the_same_split_has_no_in_sample(tmp_path):
    result = run(config("experiment.replay.feedback_split=test", "experiment.replay.eval_split=test"), tmp_path / "run")
    assert "in_sample" not in result["summary"]
    assert {r["split"] for r in result["series"]} == {"test"} and len(result["series"]) == 13 * 3
    assert all(result["summary"][name]["split"] == "test" for name in SYSTEMS)


def test_same_config_gives_identical_series(learning, tmp_path):
    first, out = learning
    again = run(config("experiment.replay.p_correct=1"), tmp_path / "again")
    assert again["series"] == first["series"]
    assert again["feedback"] == first["feedback"] and again["summary"] == first["summary"]
    assert again["detection_quality"] == first["detection_quality"]
    for name in ("feedback_loop.csv", "lineage.jsonl", "explain_final.jsonl", "table.md"):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name


@pytest.mark.parametrize("override, key", [
    ("experiment.replay.p_correct=1.5", "p_correct"),
    ("experiment.replay.p_accept=2", "p_accept"),
    ("experiment.replay.step_days=0", "step_days"),
    ("experiment.replay.consolidation_interval_days=0", "consolidation_interval_days"),
    ("experiment.replay.feedback_split=train", "feedback_split"),
    ("experiment.replay.eval_split=train", "eval_split"),
    ("experiment.replay.p_correct=-0.5", "p_correct"),
])
def test_bad_values_raise_naming_the_key(override, key, tmp_path):
    with pytest.raises(BenchError, match=rf"^experiment\.replay\.{key}="):
        run(config(override), tmp_path / "run")
    assert not (tmp_path / "run").exists()  # validated before any work


def test_unknown_replay_key_is_rejected(tmp_path):
    cfg = config()
    cfg["experiment"]["replay"]["p_corect"] = 0.5
    with pytest.raises(BenchError, match=r"^experiment\.replay\.p_corect: unknown key"):
        run(cfg, tmp_path / "run")


@pytest.mark.model
def test_feedback_loop_with_the_real_model_through_the_cli(cli, tmp_path):
    out = tmp_path / "run"
    r = cli("smartvector-bench", "experiment=feedback_loop", "experiment.replay.start_days_before_now=28",
            "experiment.replay.end_days_after_now=14", f"hydra.run.dir={out}",
            f"embedder.cache_path={tmp_path / 'cache.sqlite'}")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "# Feedback loop" in r.stdout and "| smartvector_live |" in r.stdout
    assert "| smartvector_live (in sample: dev families) |" in r.stdout
    result = json.loads(Path(out / "feedback_loop.json").read_text())
    assert result["dataset"]["n_vectors"] == len(_jsonl(out / "dataset" / "corpus.jsonl"))
    assert result["dataset"]["n_queries"] == len(_jsonl(out / "dataset" / "queries.jsonl"))
    assert (result["experiment"]["replay"]["feedback_split"], result["experiment"]["replay"]["eval_split"]) == \
        ("dev", "test")
    # rounds at -28, -21, ..., +14: 28/7 + 14/7 + 1 = 7
    assert result["experiment"]["rounds"] == 7
    fb = result["feedback"]
    assert fb["corrections"] > 0 and fb["acceptances"] > 0
    s = result["summary"]
    for name in SYSTEMS:
        assert s[name]["split"] == "test" and s["in_sample"][name]["split"] == "dev"
        assert s[name]["n_rounds"] == s["in_sample"][name]["n_rounds"] == 7
    # the first round comes before any feedback: live and frozen agree there, on both splits
    assert s["smartvector_live"]["top1_first"] == s["smartvector_frozen"]["top1_first"]
    assert s["in_sample"]["smartvector_live"]["top1_first"] == s["in_sample"]["smartvector_frozen"]["top1_first"]
    # In sample (the dev families whose users gave the feedback) the live store learns. Measured with a local
    # fix of the summary bug: last round live 91.2% vs frozen 22.1% (dev, 68 queries); assert 35 points, about
    # half. On the held-out test families there is no such gain (live 27.1% vs frozen 35.7%), so nothing is
    # asserted there beyond the first round.
    ins = s["in_sample"]
    assert ins["smartvector_live"]["top1_last"] >= ins["smartvector_frozen"]["top1_last"] + 0.35
    assert ins["smartvector_live"]["top1_last"] >= ins["plain_cosine"]["top1_last"]
    for name in ("feedback_loop.csv", "lineage.jsonl", "explain_final.jsonl", "table.md"):
        assert (out / name).is_file(), name


def test_plain_cosine_over_the_chunks_that_exist_at_a_round_is_the_masked_exact_ranking():
    """exists_at cuts the plain_cosine system's full ranking to the chunks created by t: the same ranks, scores
    and confidence as ranking every existing chunk directly (ties to the lower row), duplicates included."""
    import numpy as np

    from experiments.feedback_loop import exists_at
    from smartvector_bench.core.index import FlatIndex
    from smartvector_bench.core.run import rank_by_score
    from smartvector_bench.systems.plain_cosine import PlainCosine

    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(60, 8)).astype(np.float32)
    vecs[30:40] = vecs[0]  # exact ties
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    created = rng.uniform(0, 10, size=60)
    qv = np.concatenate([vecs[:3], rng.normal(size=(4, 8)).astype(np.float32)])
    system = PlainCosine()
    system.index(None, vecs, 0.0)
    for t in (-1.0, 2.5, 7.0, 11.0):
        got = exists_at(system.search(qv, np.full(len(qv), t), len(vecs)), created, t, 10)
        scores = FlatIndex(vecs).all_scores(qv)
        scores[:, created > t] = -np.inf
        ranked, top = rank_by_score(scores, 10)
        assert np.array_equal(got.ranked, ranked) and np.array_equal(got.scores, top, equal_nan=True)
        conf = np.where(ranked[:, 0] >= 0, np.clip(top[:, 0], 0.0, 1.0), np.nan)
        assert np.array_equal(got.confidence, conf, equal_nan=True)
