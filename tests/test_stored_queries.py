"""A run folder's ``queries.jsonl`` (tools/report/stored_queries.py, ``publish --store-queries``): the report's
drill-down inputs that no embedding changes, from the dataset regenerated from the recorded config. Checked on a
real tiny run (the main experiment, hashing embedder) against the dataset's own files and the 1.1 run files'
labels, and on the committed results/ against their run files' flags."""

from __future__ import annotations

import json
import shutil

import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools import publish
from smartvector_bench.tools.gate.files import file_digest
from smartvector_bench.tools.report import cli, drill, stored_queries

from .conftest import REPO
from .report_dom import parse

NEW_KEYS = ("text", "as_of", "labels", "signals")


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def tiny_run(_tiny_main_run, tmp_path_factory):
    """A finished main run on a tiny dataset (1.1 run files; a copy of conftest's tiny_main_run), with the
    dataset/ folder it wrote kept aside."""
    root = tmp_path_factory.mktemp("stored")
    out = root / "results" / "main"
    shutil.copytree(_tiny_main_run[0], out)
    shutil.move(out / "dataset", root / "dataset")  # published folders keep no dataset/: force the regeneration
    (out / "PROVENANCE.json").write_text(json.dumps({"files": {}}))
    return out, root / "dataset"


@pytest.fixture
def folder(tiny_run, tmp_path):
    dest = tmp_path / "results" / "main"
    shutil.copytree(tiny_run[0], dest)
    return dest


def test_the_stored_file_is_the_datasets_text_as_of_and_judgments(folder, tiny_run):
    entry = stored_queries.store(folder, "test")
    assert entry["source"] == "the dataset regenerated from metrics.json's config"
    rows = _jsonl(folder / stored_queries.FILE)
    meta, lines = rows[0]["_meta"], rows[1:]
    assert meta["dataset_sha256"] == json.loads((folder / "metrics.json").read_text())["dataset"]["sha256"]
    ds = tiny_run[1]  # the run's own dataset files, read directly
    queries = {r["_id"]: r for r in _jsonl(ds / "queries.jsonl")}
    labels = {r["_id"]: r for r in _jsonl(ds / "labels" / "queries.jsonl")}
    qrels: dict[str, set[str]] = {}
    for split in ("dev", "test"):
        for line in (ds / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]:
            qid, cid, grade = line.split("\t")
            if int(grade) >= 1:
                qrels.setdefault(qid, set()).add(cid)
    assert [r["query_id"] for r in lines] == list(queries)
    for r in lines:
        q = queries[r["query_id"]]
        assert (r["text"], r["as_of"]) == (q["text"], q["metadata"]["as_of"])
        assert set(r["correct"]) == qrels.get(r["query_id"], set())
        assert set(r["stale"]) == set(labels[r["query_id"]]["stale"])
        assert set(r["rumor"]) == set(labels[r["query_id"]]["rumor"])
    assert any(r["stale"] for r in lines) and any(r["rumor"] for r in lines)
    prov = json.loads((folder / "PROVENANCE.json").read_text())
    assert prov["files"][stored_queries.FILE] == file_digest(folder / stored_queries.FILE)
    assert prov["stored_queries"]["dataset_sha256"] == meta["dataset_sha256"]


def test_stored_labels_are_the_1_1_run_files_labels_of_every_hit(folder):
    stored_queries.store(folder, "test")
    stored = stored_queries.read(folder)
    n = 0
    for path in sorted(folder.glob("run_*.jsonl")):
        for rec in _jsonl(path)[1:]:
            assert [stored_queries.label_of(c, stored[rec["query_id"]]) for c in rec["ranked"]] == rec["labels"], \
                (path.name, rec["query_id"])
            n += len(rec["ranked"])
    kinds = {lab for path in folder.glob("run_*.jsonl") for rec in _jsonl(path)[1:] for lab in rec["labels"]}
    assert n > 500 and kinds == {"correct", "stale", "rumor", "other"}


def test_a_sha256_mismatch_is_one_line_and_writes_nothing(folder, capsys):
    metrics = json.loads((folder / "metrics.json").read_text())
    metrics["provenance"]["config"]["dataset"]["seed"] += 1  # regenerates another dataset
    (folder / "metrics.json").write_text(json.dumps(metrics))
    before = (folder / "PROVENANCE.json").read_text()
    with pytest.raises(BenchError, match=r"metrics\.json: the dataset regenerated .* refusing"):
        stored_queries.store(folder, "test")
    code = publish.main(["--store-queries", "main", "--results-dir", str(folder.parent)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and "Traceback" not in "\n".join(err)
    assert err[0].startswith("publish: --store-queries main: ") and "sha256" in err[0] and "refusing" in err[0]
    assert not (folder / stored_queries.FILE).exists() and (folder / "PROVENANCE.json").read_text() == before


def test_store_queries_rejects_a_name_that_is_no_main_run(capsys):
    assert publish.main(["--store-queries", "reembed_cost"]) == 2
    assert "not a main-kind experiment" in capsys.readouterr().err


def test_a_stored_file_of_another_dataset_is_refused_by_the_report(folder):
    stored_queries.store(folder, "test")
    with pytest.raises(BenchError, match=r"queries\.jsonl:1: dataset_sha256 .* is not the run's"):
        drill.drill_data(folder, ["oracle"], "0" * 64)


def test_the_publisher_adds_the_file_from_the_runs_own_dataset(tiny_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run[0], run_dir)
    shutil.copytree(tiny_run[1], run_dir / "dataset")
    files = publish.collect_run_files("main", run_dir)
    lines = [json.loads(x) for x in files[stored_queries.FILE].decode().splitlines()]
    assert lines[0]["_meta"]["source"] == "the run folder's dataset/" and len(lines) > 10


def test_a_1_0_folder_with_the_file_shows_text_as_of_and_every_hits_label(folder):
    stored_queries.store(folder, "test")
    want = {}
    for path in folder.glob("run_*.jsonl"):  # make the run files 1.0: no text, as_of, labels, signals
        rows = _jsonl(path)
        rows[0]["_meta"].pop("run_schema_version")
        want[path.stem[4:]] = {r["query_id"]: r for r in rows[1:]}
        path.write_text("\n".join(json.dumps({k: v for k, v in r.items() if k not in NEW_KEYS}) for r in rows) + "\n")
    assert cli.run([str(folder)]) == 0
    root = parse((folder / "report.html").read_text())
    section = root.one("section", cls="run", data_run="main")
    assert "from the folder's queries.jsonl" in section.text and "need a run file made after" in section.text
    assert "need a run file written with per-hit labels" not in section.text
    data = json.loads(root.one("script", id="report-data").text)["runs"]["main"]
    assert data["per_hit_labels"] is True and data["stored_queries"] is True and data["has_signals"] is False
    letters = {v: k for k, v in drill.LABELS.items()}
    for system, by_q in want.items():
        for qid, rec in by_q.items():
            q, hit = data["queries"][qid], data["queries"][qid]["hits"][system]
            assert (q["text"], q["as_of"]) == (rec["text"], rec["as_of"])
            assert [letters[c] for c in hit["l"]] == rec["labels"][:10] and "g" not in hit
    assert len(section.one("select", cls="query-select").find("option")) == len(data["queries"])


@pytest.mark.parametrize("name", ["main", "main_large", "handbook"])
def test_the_committed_files_agree_with_their_run_files(name):
    folder = REPO / "results" / name
    assert (folder / stored_queries.FILE).is_file(), f"results/{name} has no {stored_queries.FILE}"
    sha = json.loads((folder / "metrics.json").read_text())["dataset"]["sha256"]
    stored = stored_queries.read(folder, sha)
    prov = json.loads((folder / "PROVENANCE.json").read_text())
    assert prov["files"][stored_queries.FILE] == file_digest(folder / stored_queries.FILE)
    for path in sorted(folder.glob("run_*.jsonl")):
        for rec in _jsonl(path)[1:]:
            first = [stored_queries.label_of(c, stored[rec["query_id"]]) for c in rec["ranked"][:1]] or ["other"]
            flags = "correct" if rec["correct"] else "stale" if rec["stale"] else "rumor" if rec["rumor"] else "other"
            assert first == [flags], (path.name, rec["query_id"])


@pytest.mark.parametrize("exc,message", [
    (KeyError("versions"), r"provenance\.config\.dataset: no key 'versions'"),
    (TypeError("unsupported operand"), r"provenance\.config\.dataset: .*\(TypeError: unsupported operand\)"),
    (ValueError("bad date"), r"provenance\.config\.dataset: .*\(ValueError: bad date\)"),
])
def test_a_regeneration_failure_is_one_line_naming_metrics_json(folder, capsys, monkeypatch, exc, message):
    def broken(*args, **kwargs):
        raise exc
    monkeypatch.setattr(stored_queries, "write_from_config", broken)
    with pytest.raises(BenchError, match=rf"metrics\.json: {message}"):
        stored_queries.store(folder, "test")
    assert publish.main(["--store-queries", "main", "--results-dir", str(folder.parent)]) == 1
    err = capsys.readouterr().err.splitlines()  # the failure, then the publisher's summary line
    assert err[0].startswith("publish: --store-queries main: ") and "metrics.json: provenance.config" in err[0]
    assert err[1:] == ["publish: not published: main"]
    assert not (folder / stored_queries.FILE).exists()


def test_a_store_cut_off_after_the_provenance_fails_the_gates_provenance_check(folder, monkeypatch):
    from smartvector_bench.tools.gate.files import check_provenance

    def crash(path, text):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(stored_queries, "atomic_write_text", crash)
    with pytest.raises(OSError):
        stored_queries.store(folder, "test")
    bad = [c for c in check_provenance(folder.parent) if not c.ok]
    assert [(c.file, c.got) for c in bad] == [(f"main/{stored_queries.FILE}", "MISSING")]
    monkeypatch.undo()
    stored_queries.store(folder, "test")  # storing again completes it
    assert all(c.ok for c in check_provenance(folder.parent))
