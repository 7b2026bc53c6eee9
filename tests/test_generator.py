"""The versioned-policy generator: shape, determinism, and the properties the benchmark relies on."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from data_gen.params import params_from_config
from data_gen.writer import render_files, write_dataset
from smartvector_bench.dataset import load_dataset
from smartvector_bench.errors import BenchError
from smartvector_bench.timeutil import iso_to_days

from .conftest import compose_config


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def default_files() -> dict[str, str]:
    return render_files(params_from_config(compose_config()["dataset"]))


@pytest.fixture(scope="module")
def corpus(default_files):
    return {r["_id"]: r for r in _rows(default_files["corpus.jsonl"])}


@pytest.fixture(scope="module")
def queries(default_files):
    return _rows(default_files["queries.jsonl"])


def test_default_shape_is_258_vectors_and_138_queries(default_files):
    manifest = json.loads(default_files["manifest.json"])
    assert manifest["counts"]["vectors"] == 258
    assert manifest["counts"]["queries"] == 138
    assert len(default_files["corpus.jsonl"].splitlines()) == 258
    assert len(default_files["queries.jsonl"].splitlines()) == 138
    cats = manifest["counts"]["queries_by_category"]
    assert set(cats) == {"current", "recently_updated", "contested", "dependent", "historical"}


def test_same_seed_gives_identical_bytes(tmp_path):
    params = params_from_config(compose_config()["dataset"])
    write_dataset(params, tmp_path / "a")
    write_dataset(params, tmp_path / "b")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert [str(f) for f in files] == ["corpus.jsonl", "manifest.json", "qrels/dev.tsv", "qrels/test.tsv",
                                       "queries.jsonl"]
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_other_seed_gives_other_dataset_with_same_shape(default_files):
    other = render_files(params_from_config(compose_config(["dataset.seed=7"])["dataset"]))
    m0, m1 = json.loads(default_files["manifest.json"]), json.loads(other["manifest.json"])
    assert m0["dataset_sha256"] != m1["dataset_sha256"]
    for key in ("vectors", "queries", "documents", "families", "vectors_by_kind", "queries_by_split"):
        assert m0["counts"][key] == m1["counts"][key], key
    assert default_files["corpus.jsonl"] != other["corpus.jsonl"]


def test_manifest_hashes_match_files(tmp_path):
    manifest = write_dataset(params_from_config(compose_config()["dataset"]), tmp_path / "d")
    ds = load_dataset(tmp_path / "d")
    assert ds.sha256 == manifest["dataset_sha256"]
    assert manifest["schema_version"]
    assert manifest["config"]["seed"] == 42


def test_chunks_are_sections_with_consistent_offsets(corpus):
    by_doc: dict[tuple[str, int], list[dict]] = {}
    for row in corpus.values():
        m = row["metadata"]
        by_doc.setdefault((m["doc_id"], m["version"]), []).append(row)
        assert len(row["text"]) == m["offset_end"] - m["offset_start"]
        assert 0 < len(row["text"]) <= 200
    for chunks in by_doc.values():
        chunks.sort(key=lambda r: r["metadata"]["chunk_index"])
        assert [c["metadata"]["chunk_index"] for c in chunks] == list(range(len(chunks)))
        for a, b in zip(chunks, chunks[1:]):  # sections are separated by one newline
            assert b["metadata"]["offset_start"] == a["metadata"]["offset_end"] + 1


def test_timestamps_are_iso_utc(corpus, queries):
    iso = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
    for row in corpus.values():
        m = row["metadata"]
        for key in ("created_at", "valid_from"):
            assert iso.match(m[key]), (row["_id"], key)
        assert m["valid_to"] is None or iso.match(m["valid_to"])
    for q in queries:
        assert iso.match(q["metadata"]["query_time"]) and iso.match(q["metadata"]["as_of"])


def _window(corpus, cid):
    m = corpus[cid]["metadata"]
    return iso_to_days(m["valid_from"]), iso_to_days(m["valid_to"])


def test_gold_holds_at_as_of_and_stale_versions_do_not(corpus, queries):
    for q in queries:
        m = q["metadata"]
        as_of = iso_to_days(m["as_of"])
        lo, hi = _window(corpus, m["gold"])
        assert lo <= as_of < hi, q["_id"]
        gold_meta = corpus[m["gold"]]["metadata"]
        for sid in m["stale"]:
            s = corpus[sid]["metadata"]
            assert s["doc_id"] == gold_meta["doc_id"] and s["version"] < gold_meta["version"]
            assert _window(corpus, sid)[1] <= as_of, (q["_id"], sid)
        if m["category"] == "historical":
            assert as_of < iso_to_days(m["query_time"])
            assert corpus[m["gold"]]["metadata"]["valid_to"] is not None  # a superseded version
        else:
            assert m["as_of"] == m["query_time"]


def test_versions_of_a_fact_are_worded_alike_and_differ_in_value(corpus):
    facts: dict[str, list[str]] = {}
    for row in corpus.values():
        if row["metadata"]["kind"] == "fact":
            facts.setdefault(row["metadata"]["family"], []).append(row["text"])
    assert len(facts) == 12
    for texts in facts.values():
        numbers = [re.findall(r"\d+", t) for t in texts]
        assert all(len(n) == 1 for n in numbers)
        assert len({n[0] for n in numbers}) == len(texts)  # each version states a new value
        words = [set(re.sub(r"\d+", "", t).lower().split()) for t in texts]
        assert min(len(a & b) / len(a | b) for a in words for b in words) > 0.3


def test_rumours_are_low_authority_and_contradict_the_current_value(corpus, queries):
    rumours = [r for r in corpus.values() if r["metadata"]["kind"] == "rumor"]
    assert len(rumours) == round(0.5 * 12 * 3)
    assert {r["metadata"]["source"] for r in rumours} <= {"slack", "email", "meeting_notes"}
    for q in queries:
        m = q["metadata"]
        if m["category"] != "contested":
            continue
        assert m["rumor"]
        gold_value = re.findall(r"\d+", corpus[m["gold"]]["text"])
        for rid in m["rumor"]:
            assert re.findall(r"\d+", corpus[rid]["text"]) != gold_value
    gold_from = {}
    for q in queries:
        if q["metadata"]["category"] == "contested":
            gold_from[q["metadata"]["family"]] = iso_to_days(corpus[q["metadata"]["gold"]]["metadata"]["valid_from"])
    newer = [iso_to_days(r["metadata"]["created_at"]) > gold_from[r["metadata"]["family"]] for r in rumours]
    assert np.mean(newer) >= 0.5  # typically newer than the authoritative version


def test_queries_never_appear_verbatim_in_the_corpus(corpus, queries):
    texts = [r["text"].lower() for r in corpus.values()]
    for q in queries:
        needle = q["text"].lower().rstrip("?")
        assert not any(needle in t for t in texts), q["text"]


def test_dependent_queries_answer_from_a_runbook_whose_policy_changed(corpus, queries):
    dependent = [q for q in queries if q["metadata"]["category"] == "dependent"]
    assert len(dependent) == 18
    for q in dependent:
        gold = corpus[q["metadata"]["gold"]]["metadata"]
        assert gold["kind"] == "runbook_step" and gold["depends_on"]
        policy = corpus[gold["depends_on"][0]]["metadata"]
        assert policy["kind"] == "fact" and policy["version"] >= 2


def test_contradiction_rate_controls_rumours_not_corpus_size():
    sizes, rumours = [], []
    for rate in (0.0, 0.25, 1.0):
        files = render_files(params_from_config(compose_config([f"dataset.contradiction_rate={rate}"])["dataset"]))
        rows = _rows(files["corpus.jsonl"])
        sizes.append(len(rows))
        rumours.append(sum(r["metadata"]["kind"] == "rumor" for r in rows))
        cats = Counter(q["metadata"]["category"] for q in _rows(files["queries.jsonl"]))
        if rate == 0.0:
            assert "contested" not in cats
    assert sizes == [258, 258, 258]
    assert rumours == [0, 9, 36]


def test_splits_are_stratified_by_category(queries):
    per = Counter((q["metadata"]["category"], q["metadata"]["split"]) for q in queries)
    for cat in {c for c, _ in per}:
        assert abs(per[(cat, "test")] - per[(cat, "dev")]) <= 1, cat


def test_qrels_list_each_gold_once(default_files, queries):
    for split in ("dev", "test"):
        lines = default_files[f"qrels/{split}.tsv"].splitlines()
        assert lines[0] == "query-id\tcorpus-id\tscore"
        expected = [f"{q['_id']}\t{q['metadata']['gold']}\t1" for q in queries if q["metadata"]["split"] == split]
        assert lines[1:] == expected


@pytest.mark.parametrize("override, key", [
    ("dataset.contradiction_rate=1.5", "dataset.contradiction_rate"),
    ("dataset.contradiction_rate=-0.1", "dataset.contradiction_rate"),
    ("dataset.n_families=99", "dataset.n_families"),
    ("dataset.versions=[]", "dataset.versions"),
    ("dataset.publish_lead_days=[5,1]", "dataset.publish_lead_days"),
    ("+dataset.colour=red", "dataset.colour"),
])
def test_bad_generator_config_names_the_key(override, key):
    cfg = compose_config([override])["dataset"]
    with pytest.raises(BenchError, match=re.escape(key)):
        from data_gen.generator import Generator

        Generator(params_from_config(cfg)).generate()


def test_existing_out_dir_is_not_overwritten_by_default(tmp_path):
    params = params_from_config(compose_config(["dataset.n_families=2"])["dataset"])
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep.txt").write_text("mine")
    with pytest.raises(BenchError, match="overwrite=true"):
        write_dataset(params, tmp_path / "d")
    assert (tmp_path / "d" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no temp folder left behind
