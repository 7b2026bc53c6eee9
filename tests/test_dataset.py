"""Loading a v2 dataset folder: columnar arrays, graded qrels, labels/, and bad files named with their line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from smartvector_bench.core.dataset import LABEL_FILES, load_dataset
from smartvector_bench.core.errors import BenchError

from .conftest import write_tiny


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory) -> Path:
    """The conftest's tiny dataset, generated once for this module: every test reads it or edits a copy."""
    return write_tiny(tmp_path_factory.mktemp("tiny") / "tiny")


def test_loads_default_dataset_into_columns(default_dataset):
    ds = load_dataset(default_dataset)
    c, q = ds.corpus, ds.queries
    assert len(c) == 258 and len(q) == 138
    assert c.authority.dtype == np.float64 and c.created_at.dtype == np.float64
    assert np.isinf(c.valid_to).sum() > 0  # open windows of current versions
    assert (c.valid_to > c.valid_from).all()
    has = np.nonzero(c.supersedes >= 0)[0]
    assert len(has) > 0
    for i in has:  # supersedes points into the previous version of the same document
        j = c.supersedes[i]
        assert c.doc_id[i] == c.doc_id[j] and c.version[i] == c.version[j] + 1
        assert c.valid_to[j] == c.valid_from[i]
    succ = c.superseded_by()
    assert (succ[c.supersedes[has]] == has).all()
    assert set(q.split) == {"dev", "test"}
    assert q.stale.n_rows == len(q) and q.rumor.n_rows == len(q)
    assert q.stale.counts().sum() > 0 and q.rumor.counts().sum() > 0
    assert ds.seed == 42
    assert ds.labels is not None and len(ds.labels.timelines) == 12
    assert len(set(q.family)) == 12  # families from the labels, not the query ids
    assert ds.sha256 == ds.manifest["dataset_sha256"]


def _qrels(path: Path) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {}
    for line in path.read_text().splitlines()[1:]:
        qid, cid, score = line.split("\t")
        out.setdefault(qid, []).append((cid, int(score)))
    return out


def test_graded_qrels_load_best_grade_first(default_dataset):
    ds = load_dataset(default_dataset)
    c, q = ds.corpus, ds.queries
    files = {**_qrels(default_dataset / "qrels" / "dev.tsv"), **_qrels(default_dataset / "qrels" / "test.tsv")}
    assert {g for rows in files.values() for _, g in rows} == {1, 2}
    n_mixed = 0
    for i, qid in enumerate(q.ids):
        rel, grades = q.relevant.row(i).tolist(), q.grades.row(i).tolist()
        expected = sorted(files[qid], key=lambda cg: (-cg[1], c.index_of[cg[0]]))
        assert [c.ids[r] for r in rel] == [cid for cid, _ in expected], qid
        assert grades == [g for _, g in expected], qid
        assert grades == sorted(grades, reverse=True)
        assert q.gold[i] == rel[0]
        n_mixed += len(set(grades)) > 1
    assert n_mixed > 0  # some queries really have several grades


def test_grades_load_from_a_hand_edited_file_in_any_order(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d")
    path = d / "qrels" / "dev.tsv"
    lines = path.read_text().splitlines()
    qid = lines[1].split("\t")[0]
    own = [ln for ln in lines[1:] if ln.split("\t")[0] == qid]
    cids = [ln.split("\t")[1] for ln in own]
    rest = [ln for ln in lines[1:] if ln.split("\t")[0] != qid]
    # Reverse the file order and make the last one the best: the loader sorts by grade.
    new = [f"{qid}\t{cid}\t{g}" for cid, g in zip(reversed(cids), [1] * (len(cids) - 1) + [3])]
    path.write_text("\n".join([lines[0], *new, *rest]) + "\n")
    ds = load_dataset(d)
    i = ds.queries.ids.index(qid)
    assert ds.queries.grades.row(i).tolist()[0] == 3
    assert ds.corpus.ids[ds.queries.relevant.row(i)[0]] == cids[0]


def _copy(src: Path, dst: Path, keep_manifest: bool = False) -> Path:
    shutil.copytree(src, dst)
    if not keep_manifest:
        (dst / "manifest.json").unlink()  # a hand-edited folder without a manifest is still loadable
    return dst


def _corrupt(src, dst, name, lineno, new_line):
    _copy(src, dst)
    path = dst / name
    lines = path.read_text().splitlines()
    lines[lineno - 1] = new_line
    path.write_text("\n".join(lines) + "\n")
    return dst


def _corpus_row(root: Path, lineno: int) -> dict:
    return json.loads((root / "corpus.jsonl").read_text().splitlines()[lineno - 1])


def test_hand_edited_copy_without_manifest_loads(tiny_dataset, tmp_path):
    ds = load_dataset(_copy(tiny_dataset, tmp_path / "d"))
    assert ds.manifest is None and ds.seed is None and ds.labels is not None


def test_malformed_json_names_file_and_line(tiny_dataset, tmp_path):
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "corpus.jsonl", 5, '{"_id": "x", "text": ')
    with pytest.raises(BenchError, match=r"corpus\.jsonl:5: not valid JSON"):
        load_dataset(bad)


def test_missing_valid_from_defaults_to_created_at(tiny_dataset, tmp_path):
    row = _corpus_row(tiny_dataset, 3)
    del row["metadata"]["valid_from"]
    ds = load_dataset(_corrupt(tiny_dataset, tmp_path / "d", "corpus.jsonl", 3, json.dumps(row)))
    assert ds.corpus.valid_from[2] == ds.corpus.created_at[2]
    assert {"valid_from", "created_at"} <= ds.corpus.present  # one stands in for the other


def test_a_chunk_without_times_is_in_force_for_all_time_and_not_present(tiny_dataset, tmp_path):
    row = _corpus_row(tiny_dataset, 3)
    for key in ("valid_from", "created_at", "valid_to"):
        del row["metadata"][key]
    ds = load_dataset(_corrupt(tiny_dataset, tmp_path / "d", "corpus.jsonl", 3, json.dumps(row)))
    assert ds.corpus.valid_from[2] == ds.corpus.created_at[2] == -np.inf and ds.corpus.valid_to[2] == np.inf
    assert not {"valid_from", "created_at", "valid_to"} & ds.corpus.present
    assert "doc_id" in ds.corpus.present


def test_unknown_depends_on_names_file_and_line(tiny_dataset, tmp_path):
    row = _corpus_row(tiny_dataset, 4)
    row["metadata"]["depends_on"] = row["metadata"]["depends_on"] + ["c0000000000"]
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "corpus.jsonl", 4, json.dumps(row))
    with pytest.raises(BenchError, match=r"corpus\.jsonl:4: 'metadata\.depends_on' refers to unknown chunk id "
                                         r"'c0000000000'"):
        load_dataset(bad)


def test_unknown_supersedes_names_file_and_line(tiny_dataset, tmp_path):
    row = _corpus_row(tiny_dataset, 2)
    row["metadata"]["supersedes"] = "cffffffffff"
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "corpus.jsonl", 2, json.dumps(row))
    with pytest.raises(BenchError, match=r"corpus\.jsonl:2: 'metadata\.supersedes' refers to unknown chunk id"):
        load_dataset(bad)


def test_self_supersedes_names_file_and_line(tiny_dataset, tmp_path):
    row = _corpus_row(tiny_dataset, 6)
    row["metadata"]["supersedes"] = row["_id"]
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "corpus.jsonl", 6, json.dumps(row))
    with pytest.raises(BenchError, match=r"corpus\.jsonl:6: 'metadata\.supersedes' names the chunk itself"):
        load_dataset(bad)


def test_invalid_utf8_in_corpus_is_a_bench_error(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d")
    path = d / "corpus.jsonl"
    data = path.read_bytes()
    cut = data.index(b'"text":"') + len(b'"text":"')
    path.write_bytes(data[:cut] + b"\xff\xfe" + data[cut:])
    with pytest.raises(BenchError, match=r"corpus\.jsonl: not valid UTF-8"):
        load_dataset(d)


def test_categories_are_free_form_but_not_empty(tiny_dataset, tmp_path):
    row = json.loads((tiny_dataset / "queries.jsonl").read_text().splitlines()[0])
    row["metadata"]["category"] = "trivia"
    ds = load_dataset(_corrupt(tiny_dataset, tmp_path / "ok", "queries.jsonl", 1, json.dumps(row)))
    assert ds.queries.category[0] == "trivia"
    for bad_value in ("", " ", "a\tb"):
        row["metadata"]["category"] = bad_value
        bad = _corrupt(tiny_dataset, tmp_path / f"bad{len(bad_value)}", "queries.jsonl", 1, json.dumps(row))
        with pytest.raises(BenchError, match=r"queries\.jsonl:1: 'metadata\.category' .*non-empty name"):
            load_dataset(bad)


def test_query_without_relevant_qrel_names_file_and_query(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d")
    queries = (d / "queries.jsonl").read_text().splitlines()
    lineno, row = next((n, json.loads(q)) for n, q in enumerate(queries, 1)
                       if json.loads(q)["metadata"]["split"] == "test")
    qid = row["_id"]
    path = d / "qrels" / "test.tsv"
    lines = path.read_text().splitlines()
    # Keep the query's rows but judge them all non-relevant (score 0).
    path.write_text("\n".join([lines[0]] + [
        f"{ln.split(chr(9))[0]}\t{ln.split(chr(9))[1]}\t0" if ln.split("\t")[0] == qid else ln
        for ln in lines[1:]]) + "\n")
    with pytest.raises(BenchError, match=rf"queries\.jsonl:{lineno}: qrels/test\.tsv has no relevant chunk "
                                         rf"\(score >= 1\) for query '{qid}'"):
        load_dataset(d)


def test_query_missing_from_qrels_names_file_and_query(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d")
    path = d / "qrels" / "dev.tsv"
    lines = path.read_text().splitlines()
    qid = lines[1].split("\t")[0]
    path.write_text("\n".join([lines[0]] + [ln for ln in lines[1:] if ln.split("\t")[0] != qid]) + "\n")
    with pytest.raises(BenchError, match=rf"qrels/dev\.tsv has no relevant chunk .*'{qid}'"):
        load_dataset(d)


def test_qrels_disagreeing_with_queries_is_an_error(tiny_dataset, tmp_path):
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "qrels/test.tsv", 2, "q9999\tnothing\t1")
    with pytest.raises(BenchError, match=r"qrels"):
        load_dataset(bad)


def test_qrels_unknown_chunk_is_an_error(tiny_dataset, tmp_path):
    first = (tiny_dataset / "qrels" / "dev.tsv").read_text().splitlines()[1].split("\t")
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "qrels/dev.tsv", 2, f"{first[0]}\tc0000000000\t2")
    with pytest.raises(BenchError, match=rf"qrels/dev\.tsv: query '{first[0]}' judges unknown chunk id 'c0000000000'"):
        load_dataset(bad)


def test_qrels_bad_score_names_line(tiny_dataset, tmp_path):
    first = (tiny_dataset / "qrels" / "dev.tsv").read_text().splitlines()[1].split("\t")
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "qrels/dev.tsv", 2, f"{first[0]}\t{first[1]}\tone")
    with pytest.raises(BenchError, match=r"dev\.tsv:2: score 'one' is not an integer"):
        load_dataset(bad)


def test_missing_file_is_named(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d", keep_manifest=True)
    (d / "queries.jsonl").unlink()
    with pytest.raises(BenchError, match=r"queries\.jsonl: file is missing"):
        load_dataset(d)


@pytest.mark.parametrize("manifest, message", [
    ("[1, 2, 3]\n", r"manifest\.json: expected a JSON object"),
    ('{"files": ["corpus.jsonl"]}\n', r"manifest\.json:1: files: must be an object"),
    ('{"files": {"corpus.jsonl": 42}}\n', r"manifest\.json:1: files\.corpus\.jsonl: must be a sha256 string"),
    ('{"files": \n', r"manifest\.json:\d+: not valid JSON"),
])
def test_malformed_manifest_is_a_bench_error(tiny_dataset, tmp_path, manifest, message):
    d = _copy(tiny_dataset, tmp_path / "d")
    (d / "manifest.json").write_text(manifest)
    with pytest.raises(BenchError, match=message):
        load_dataset(d)


def test_corpus_edited_after_generation_fails_the_sha256_check(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d", keep_manifest=True)
    path = d / "corpus.jsonl"
    data = bytearray(path.read_bytes())
    i = data.index(b'"text":"') + len(b'"text":"')
    data[i] = ord("X") if data[i] != ord("X") else ord("Y")  # same length, still valid JSON
    path.write_bytes(bytes(data))
    with pytest.raises(BenchError, match=r"corpus\.jsonl: sha256 differs from manifest\.json"):
        load_dataset(d)


def test_labels_edited_after_generation_fails_the_sha256_check(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d", keep_manifest=True)
    with (d / "labels" / "queries.jsonl").open("a") as fh:
        fh.write("\n")
    with pytest.raises(BenchError, match=r"labels/queries\.jsonl: sha256 differs from manifest\.json"):
        load_dataset(d)


@pytest.mark.parametrize("name", LABEL_FILES)
def test_each_labels_file_is_optional_without_a_manifest(tiny_dataset, tmp_path, name):
    full = load_dataset(tiny_dataset)
    d = _copy(tiny_dataset, tmp_path / "d")
    assert not (d / "manifest.json").exists()
    (d / name).unlink()
    ds = load_dataset(d)
    if name == "labels/chunks.jsonl":
        assert (ds.labels.chunk_family == "").all() and (ds.labels.chunk_kind == "").all()
    if name == "labels/queries.jsonl":
        assert list(ds.queries.family) == ds.queries.ids and ds.queries.stale.counts().sum() == 0
    else:
        assert list(ds.queries.family) == list(full.queries.family)
    if name == "labels/families.jsonl":
        assert ds.labels.timelines == {}


@pytest.mark.parametrize("name", LABEL_FILES)
def test_a_labels_file_the_manifest_lists_must_be_there(tiny_dataset, tmp_path, name):
    d = tmp_path / "d"
    shutil.copytree(tiny_dataset, d)
    (d / name).unlink()
    with pytest.raises(BenchError, match=re.escape(f"{d / name}: file is missing")):
        load_dataset(d)


def test_labels_for_an_unknown_chunk_are_an_error(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d")
    path = d / "labels" / "chunks.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[2])
    row["_id"] = "c0000000000"
    lines[2] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BenchError, match=r"labels/chunks\.jsonl:3: unknown chunk id 'c0000000000'"):
        load_dataset(d)


def test_a_chunk_without_labels_is_an_error(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d")
    path = d / "labels" / "chunks.jsonl"
    lines = path.read_text().splitlines()
    missing = json.loads(lines[0])["_id"]
    path.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(BenchError, match=rf"labels/chunks\.jsonl: chunk '{missing}' has no labels"):
        load_dataset(d)


def test_label_with_unknown_kind_lists_allowed_values(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d")
    path = d / "labels" / "chunks.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[0])
    row["kind"] = "fact"
    lines[0] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BenchError, match=r"labels/chunks\.jsonl:1: 'kind' is 'fact'; allowed: statement"):
        load_dataset(d)


def test_query_label_naming_an_unknown_family_is_an_error(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d")
    path = d / "labels" / "queries.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[0])
    row["family"] = "no_such.family"
    lines[0] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BenchError, match=r"labels/queries\.jsonl:1: family 'no_such\.family' is not in "
                                         r"labels/families\.jsonl"):
        load_dataset(d)


def test_folder_without_labels_still_loads(tiny_dataset, tmp_path):
    with_labels = load_dataset(tiny_dataset)
    d = _copy(tiny_dataset, tmp_path / "d")  # the manifest's dataset_sha256 covers labels/: drop it too
    shutil.rmtree(d / "labels")
    ds = load_dataset(d)
    q = ds.queries
    assert ds.labels is None
    assert list(q.family) == q.ids  # each query is its own cluster
    assert q.stale.n_rows == len(q) and q.stale.counts().sum() == 0
    assert q.rumor.n_rows == len(q) and q.rumor.counts().sum() == 0
    # Relevance and grades come from the qrels alone, unchanged.
    assert q.relevant.indices.tolist() == with_labels.queries.relevant.indices.tolist()
    assert q.grades.indices.tolist() == with_labels.queries.grades.indices.tolist()


def test_removing_labels_from_a_manifested_folder_names_a_listed_file(tiny_dataset, tmp_path):
    d = _copy(tiny_dataset, tmp_path / "d", keep_manifest=True)
    shutil.rmtree(d / "labels")
    with pytest.raises(BenchError, match=r"labels/\w+\.jsonl: file is missing; manifest\.json lists it"):
        load_dataset(d)


def test_naive_timestamp_is_rejected(tiny_dataset, tmp_path):
    row = _corpus_row(tiny_dataset, 1)
    row["metadata"]["created_at"] = "2024-01-01T00:00:00"
    bad = _corrupt(tiny_dataset, tmp_path / "bad", "corpus.jsonl", 1, json.dumps(row))
    with pytest.raises(BenchError, match=r"corpus\.jsonl:1: 'metadata\.created_at' .*no timezone"):
        load_dataset(bad)
