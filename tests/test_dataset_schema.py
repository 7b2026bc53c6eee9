"""The dataset schema (smartvector_bench/core/schema/dataset.schema.json), the loader's schema-2.1 relaxations (a plain
BEIR folder, optional fields, free-form categories, graded qrels, assigned splits) and smartvector-validate."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from smartvector_bench.core.dataset import (CORPUS_META, QUERY_META, SPLITS, SplitSettings, assign_grouped_split,
                                       load_dataset)
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.judgments import DOC_TYPES, KINDS
from smartvector_bench.core.schema import load_schema
from smartvector_bench.core.schema.check import main as validate_main
from smartvector_bench.core.schema.check import validate_folder


def write_beir(root: Path, n_docs: int = 12, qrels: dict[str, list[tuple[str, str, int]]] | None = None,
               queries: list[dict] | None = None) -> Path:
    """A plain BEIR folder: no metadata anywhere, qrels/test.tsv only, and one query no qrels file judges."""
    (root / "qrels").mkdir(parents=True)
    corpus = [{"_id": f"d{i}", "title": f"Doc {i}", "text": f"Document {i} is about topic {i % 4}."}
              for i in range(n_docs)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    queries = queries or [{"_id": f"q{i}", "text": f"topic {i % 4} question {i}"} for i in range(n_docs)] + [
        {"_id": "q_train", "text": "a training query"}]
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    qrels = qrels or {"test": [(f"q{i}", f"d{i}", 1) for i in range(n_docs)]}
    for split, rows in qrels.items():
        (root / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{c}\t{g}\n" for q, c, g in rows))
    return root


def test_the_schema_is_valid_and_names_the_loaders_fields():
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    defs = schema["$defs"]
    assert tuple(defs["corpus_row"]["properties"]["metadata"]["properties"]) == CORPUS_META
    assert tuple(defs["query_row"]["properties"]["metadata"]["properties"]) == QUERY_META
    assert defs["query_row"]["properties"]["metadata"]["properties"]["split"]["enum"] == list(SPLITS)
    assert set(defs["label_chunk_row"]["properties"]["kind"]["enum"]) == set(KINDS)
    assert defs["label_chunk_row"]["properties"]["doc_type"]["enum"] == list(DOC_TYPES)
    for row in ("corpus_row", "query_row"):
        assert defs[row]["required"] == ["_id", "text"]
        assert all("default" in p for p in defs[row]["properties"]["metadata"]["properties"].values())


def test_a_plain_beir_folder_loads_with_every_chunk_in_force_for_all_time(tmp_path):
    ds = load_dataset(write_beir(tmp_path / "beir"))
    c, q = ds.corpus, ds.queries
    assert c.present == frozenset()
    assert np.isneginf(c.valid_from).all() and np.isposinf(c.valid_to).all() and np.isneginf(c.created_at).all()
    assert list(c.doc_id) == c.ids and (c.authority == 1.0).all() and (c.version == 1).all()
    assert "q_train" not in q.ids and len(q) == 12  # judged nowhere: another split's query
    assert set(q.category) == {"all"} and (q.as_of == q.query_time).all() and (q.query_time == 0.0).all()
    assert ds.labels is None and ds.manifest is None


def test_the_assigned_split_is_seeded_grouped_and_recorded(tmp_path):
    # Two queries per document: grouping keeps both on one side.
    queries = [{"_id": f"q{i}{s}", "text": f"question {i}{s}"} for i in range(10) for s in "ab"]
    qrels = {"test": [(f"q{i}{s}", f"d{i}", 1) for i in range(10) for s in "ab"]}
    root = write_beir(tmp_path / "beir", n_docs=10, qrels=qrels, queries=queries)
    a = load_dataset(root)
    side = dict(zip(a.queries.ids, a.queries.split))
    assert all(side[f"q{i}a"] == side[f"q{i}b"] for i in range(10))
    assert sorted(set(side.values())) == ["dev", "test"]
    assert a.split_assignment == {"method": "seeded, grouped by the doc_id of each query's best-graded relevant chunk",
                                  "seed": 0, "test_fraction": 0.5, "n_queries": 20, "n_groups": 10, "n_test": 10}
    again = load_dataset(root)
    assert list(again.queries.split) == list(a.queries.split)
    splits = {tuple(load_dataset(root, split=SplitSettings(seed=s)).queries.split) for s in range(6)}
    assert len(splits) > 1  # the seed matters
    quarter = load_dataset(root, split=SplitSettings(seed=0, test_fraction=0.3))
    assert quarter.split_assignment["n_test"] == 6  # round(10 groups * 0.3) = 3 groups of 2


def test_assign_grouped_split_keeps_both_sides_non_empty():
    assert set(assign_grouped_split(["a", "b"], SplitSettings(test_fraction=0.99)).values()) == {"dev", "test"}
    assert assign_grouped_split(["a", "a"], SplitSettings()) == {"a": "test"}


def test_graded_qrels_and_several_relevant_chunks(tmp_path):
    qrels = {"test": [("q0", "d0", 1), ("q0", "d3", 3), ("q0", "d5", 2), ("q0", "d7", 0), ("q1", "d1", 1)]}
    ds = load_dataset(write_beir(tmp_path / "beir", qrels=qrels))
    row = ds.queries.ids.index("q0")
    rel = ds.queries.relevant.row(row)
    assert [ds.corpus.ids[i] for i in rel] == ["d3", "d5", "d0"]  # best grade first; grade 0 is not relevant
    assert ds.queries.gold[row] == ds.corpus.index_of["d3"]


def test_split_from_the_qrels_file_when_both_exist(tmp_path):
    qrels = {"dev": [("q0", "d0", 1), ("q1", "d1", 1)], "test": [(f"q{i}", f"d{i}", 1) for i in range(2, 12)]}
    ds = load_dataset(write_beir(tmp_path / "beir", qrels=qrels))
    assert ds.split_assignment is None
    assert [s for i, s in zip(ds.queries.ids, ds.queries.split) if i in ("q0", "q1")] == ["dev", "dev"]
    both = {"dev": [("q0", "d0", 1)], "test": [(f"q{i}", f"d{i}", 1) for i in range(12)]}
    with pytest.raises(BenchError, match=r"queries\.jsonl:1: query 'q0' has no 'metadata\.split' and is judged in "
                                         r"both"):
        load_dataset(write_beir(tmp_path / "both", qrels=both))


def test_times_given_on_some_fields_only(tmp_path):
    root = write_beir(tmp_path / "beir")
    rows = [json.loads(line) for line in (root / "corpus.jsonl").read_text().splitlines()]
    for i, r in enumerate(rows):
        r["metadata"] = {"created_at": f"2024-01-{i + 1:02d}T00:00:00Z", "doc_id": "manual"}
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = load_dataset(root)
    assert {"created_at", "valid_from", "valid_to", "doc_id"} <= ds.corpus.present  # an open window is a default
    assert "supersedes" not in ds.corpus.present
    assert (ds.corpus.valid_from == ds.corpus.created_at).all()
    assert (ds.queries.query_time == ds.corpus.created_at.max()).all()  # the corpus's latest time


def test_validate_reports_every_problem_with_file_line_and_field(tmp_path, capsys):
    root = write_beir(tmp_path / "bad")
    lines = (root / "corpus.jsonl").read_text().splitlines()
    lines[0] = json.dumps({"_id": "d0", "text": "x", "metadata": {"authority": 3, "valid_from": "2024-01-01"}})
    lines[1] = json.dumps({"_id": "d1", "title": 5, "text": "y", "metadata": {"depends_on": ["nope"]}})
    lines[2] = json.dumps({"_id": "d1", "text": "z"})
    lines[3] = '{"text": "no id"'
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    (root / "queries.jsonl").write_text((root / "queries.jsonl").read_text() + json.dumps(
        {"_id": "q_x", "text": "t", "metadata": {"split": "train", "category": ""}}) + "\n")
    problems, ds = validate_folder(root)
    assert ds is None
    shown = [str(p) for p in problems]
    for want in ("corpus.jsonl:1: metadata.authority: is 3; allowed: a number in [0, 1]",
                 "corpus.jsonl:1: metadata.valid_from: timestamp '2024-01-01' has no timezone",
                 "corpus.jsonl:2: title: is 5; allowed: a string or null",
                 "corpus.jsonl:2: metadata.depends_on: unknown chunk id 'nope'",
                 "corpus.jsonl:3: _id: duplicate 'd1' (first on line 2)",
                 "corpus.jsonl:4: not valid JSON",
                 "queries.jsonl:14: metadata.category: is \"\"; allowed: a non-empty string without tabs or line breaks",
                 "queries.jsonl:14: metadata.split: is \"train\"; allowed: one of dev, test",
                 "qrels/test.tsv:5: corpus-id: unknown chunk id 'd3'"):
        assert any(s.startswith(want) for s in shown), (want, shown)
    assert validate_main([str(root)]) == 1
    out, err = capsys.readouterr()
    assert out.count("\n") == len(problems) and f"{len(problems)} problems" in err


def test_validate_accepts_a_generated_dataset_and_a_beir_folder(tiny_dataset, tmp_path, capsys):
    assert validate_main([str(tiny_dataset)]) == 0
    assert "valid against schema 2.1 (declared: 2.0)" in capsys.readouterr().out
    root = write_beir(tmp_path / "beir")
    assert validate_main([str(root), "--split-seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "corpus fields given: none" in out and "split assigned to 12 queries" in out and "seed 3" in out


def test_validate_falls_back_on_the_loader_for_what_rows_cannot_show(tiny_dataset, tmp_path):
    import shutil

    root = tmp_path / "cycle"
    shutil.copytree(tiny_dataset, root)
    (root / "manifest.json").unlink()
    rows = [json.loads(line) for line in (root / "corpus.jsonl").read_text().splitlines()]
    superseded = {r["metadata"]["supersedes"] for r in rows}
    a = next(i for i, r in enumerate(rows) if r["metadata"]["supersedes"] and r["_id"] not in superseded)
    b = next(i for i, r in enumerate(rows) if r["_id"] == rows[a]["metadata"]["supersedes"])
    rows[b]["metadata"]["supersedes"] = rows[a]["_id"]  # a -> b -> a: each row alone is fine
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems, _ = validate_folder(root)
    assert len(problems) == 1 and "cycle" in problems[0].message and problems[0].file == "corpus.jsonl"


def test_the_command_line(tmp_path, cli):
    ok = cli("smartvector-validate", str(write_beir(tmp_path / "beir")))
    assert ok.returncode == 0 and "valid against schema" in ok.stdout
    missing = cli("smartvector-validate", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "is not a dataset folder" in missing.stdout and "Traceback" not in missing.stderr
    usage = cli("smartvector-validate")
    assert usage.returncode == 2 and "usage:" in usage.stderr
