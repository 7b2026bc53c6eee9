"""dataset=lvl_corpus: LiveVectorLake-shaped corpus with ground-truth edits."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from data_gen.params import params_from_config
from data_gen.writer import render_files, write_dataset
from smartvector_bench.dataset import load_dataset
from smartvector_bench.errors import BenchError
from smartvector_bench.timeutil import iso_to_days

from .conftest import compose_config


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return render_files(params_from_config(compose_config(["dataset=lvl_corpus"])["dataset"]))


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_shape_like_livevectorlake(files):
    m = json.loads(files["manifest.json"])["counts"]
    assert m["documents"] == 100 and m["document_versions"] == 500 and m["queries"] == 200
    assert m["queries_by_category"] == {"current": 100, "historical": 100}
    edits = _rows(files["edits.jsonl"])
    classes = Counter(c["class"] for e in edits if e["version"] > 1 for c in e["changes"])
    assert classes["modified"] > 0 and classes["new"] > 0 and classes["deleted"] > 0 and classes["unchanged"] > 0
    assert sum(c["revert"] for e in edits for c in e["changes"]) > 0


def test_deterministic(files):
    again = render_files(params_from_config(compose_config(["dataset=lvl_corpus"])["dataset"]))
    assert again == files


def test_ground_truth_matches_the_documents_and_the_corpus_windows(files):
    docs = _rows(files["documents.jsonl"])
    corpus = _rows(files["corpus.jsonl"])
    edits = {(e["doc_id"], e["version"]): e["changes"] for e in _rows(files["edits.jsonl"])}
    prev: dict[str, list[str]] = {}
    for d in docs:
        paras = d["text"].split("\n\n")
        changes = [c for c in edits[(d["doc_id"], d["version"])] if c["class"] != "deleted"]
        assert [c["position"] for c in changes] == list(range(len(paras)))
        before = prev.get(d["doc_id"])
        for c, text in zip(changes, paras):
            if c["class"] in ("unchanged", "moved"):
                assert text in before, (d["doc_id"], d["version"], c)
            if c["class"] in ("unchanged", "moved"):
                assert before[c["old_position"]] == text
                assert (c["position"] == c["old_position"]) == (c["class"] == "unchanged")
            if c["class"] == "modified":
                assert before[c["old_position"]] != text
            if c["revert"]:
                assert c["class"] == "modified" and text in "\n\n".join(
                    x["text"] for x in docs if x["doc_id"] == d["doc_id"] and x["version"] < d["version"] - 1)
        # the rows valid at the version's effective time are exactly its paragraphs
        t = iso_to_days(d["effective_at"])
        valid = sorted(r["text"] for r in corpus if r["metadata"]["doc_id"] == d["doc_id"]
                       and iso_to_days(r["metadata"]["valid_from"]) <= t < iso_to_days(r["metadata"]["valid_to"]))
        assert valid == sorted(paras)
        prev[d["doc_id"]] = paras
    boiler = [d for d in docs if "company handbook" in d["text"]]
    assert len({d["doc_id"] for d in boiler}) == 100  # one paragraph shared word for word by every document


def test_queries_have_gold_valid_at_as_of(tmp_path):
    write_dataset(params_from_config(compose_config(["dataset=lvl_corpus"])["dataset"]), tmp_path / "d")
    ds = load_dataset(tmp_path / "d")
    c, q = ds.corpus, ds.queries
    assert ((c.valid_from[q.gold] <= q.as_of) & (q.as_of < c.valid_to[q.gold])).all()


def test_bad_probability_names_the_key():
    with pytest.raises(BenchError, match=r"dataset\.p_modify=1\.5"):
        params_from_config(compose_config(["dataset=lvl_corpus", "dataset.p_modify=1.5"])["dataset"])
