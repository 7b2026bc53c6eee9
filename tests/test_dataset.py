"""Loading a dataset folder: columnar arrays, and bad files named with their line."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from smartvector_bench.dataset import load_dataset
from smartvector_bench.errors import BenchError


def test_loads_default_dataset_into_columns(default_dataset):
    ds = load_dataset(default_dataset)
    c, q = ds.corpus, ds.queries
    assert len(c) == 258 and len(q) == 138
    assert c.authority.dtype == np.float64 and c.created_at.dtype == np.float64
    assert np.isinf(c.valid_to).sum() > 0  # open windows of current versions
    assert (c.valid_to > c.valid_from).all()
    # supersedes points at the same position in the previous version of the same document
    has = np.nonzero(c.supersedes >= 0)[0]
    assert len(has) > 0
    for i in has[:20]:
        j = c.supersedes[i]
        assert c.doc_id[i] == c.doc_id[j] and c.version[i] == c.version[j] + 1
        assert c.valid_to[j] == c.valid_from[i]
    assert set(q.split) == {"dev", "test"}
    assert q.stale.n_rows == len(q) and q.rumor.n_rows == len(q)
    assert ds.seed == 42


def _corrupt(src, dst, name, lineno, new_line):
    shutil.copytree(src, dst)
    path = dst / name
    lines = path.read_text().splitlines()
    lines[lineno - 1] = new_line
    path.write_text("\n".join(lines) + "\n")
    (dst / "manifest.json").unlink()  # a hand-edited folder without a manifest is still loadable
    return dst


def test_malformed_json_names_file_and_line(tiny_dataset, tmp_path):
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "corpus.jsonl", 5, '{"_id": "x", "text": ')
    with pytest.raises(BenchError, match=r"corpus\.jsonl:5: not valid JSON"):
        load_dataset(bad)


def test_missing_metadata_key_names_key_and_line(tiny_dataset, tmp_path):
    lines = (tiny_dataset / "corpus.jsonl").read_text().splitlines()
    row = json.loads(lines[2])
    del row["metadata"]["valid_from"]
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "corpus.jsonl", 3, json.dumps(row))
    with pytest.raises(BenchError, match=r"corpus\.jsonl:3: missing key 'metadata\.valid_from'"):
        load_dataset(bad)


def test_unknown_gold_names_query_line(tiny_dataset, tmp_path):
    lines = (tiny_dataset / "queries.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["metadata"]["gold"] = "no-such-chunk"
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "queries.jsonl", 2, json.dumps(row))
    with pytest.raises(BenchError, match=r"queries\.jsonl:2: 'metadata\.gold' refers to unknown chunk id"):
        load_dataset(bad)


def test_bad_category_lists_allowed_values(tiny_dataset, tmp_path):
    row = json.loads((tiny_dataset / "queries.jsonl").read_text().splitlines()[0])
    row["metadata"]["category"] = "trivia"
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "queries.jsonl", 1, json.dumps(row))
    with pytest.raises(BenchError, match=r"queries\.jsonl:1: .*allowed: current, recently_updated"):
        load_dataset(bad)


def test_qrels_disagreeing_with_queries_is_an_error(tiny_dataset, tmp_path):
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "qrels/test.tsv", 2, "q9999\tnothing\t1")
    with pytest.raises(BenchError, match=r"qrels"):
        load_dataset(bad)


def test_qrels_bad_score_names_line(tiny_dataset, tmp_path):
    first = (tiny_dataset / "qrels" / "dev.tsv").read_text().splitlines()[1].split("\t")
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "qrels/dev.tsv", 2, f"{first[0]}\t{first[1]}\tone")
    with pytest.raises(BenchError, match=r"dev\.tsv:2: score 'one' is not an integer"):
        load_dataset(bad)


def test_missing_file_is_named(tiny_dataset, tmp_path):
    shutil.copytree(tiny_dataset, tmp_path / "d")
    (tmp_path / "d" / "queries.jsonl").unlink()
    with pytest.raises(BenchError, match=r"queries\.jsonl: file is missing"):
        load_dataset(tmp_path / "d")


def test_file_edited_after_generation_fails_the_manifest_check(tiny_dataset, tmp_path):
    shutil.copytree(tiny_dataset, tmp_path / "d")
    with (tmp_path / "d" / "corpus.jsonl").open("a") as fh:
        fh.write("\n")
    with pytest.raises(BenchError, match=r"corpus\.jsonl: sha256 differs from manifest\.json"):
        load_dataset(tmp_path / "d")


def test_naive_timestamp_is_rejected(tiny_dataset, tmp_path):
    row = json.loads((tiny_dataset / "corpus.jsonl").read_text().splitlines()[0])
    row["metadata"]["created_at"] = "2024-01-01T00:00:00"
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "corpus.jsonl", 1, json.dumps(row))
    with pytest.raises(BenchError, match=r"corpus\.jsonl:1: 'metadata\.created_at' .*no timezone"):
        load_dataset(bad)
