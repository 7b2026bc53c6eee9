"""What loading a folder says about its manifest and about label lists it ignores: a present manifest's problems
all at once, each with its fix (loader, smartvector-validate and both command lines alike); a folder without
one loads unchecked, saying so in one line; stale or rumor lists in query metadata are named in a warning that
points to labels/queries.jsonl."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from smartvector_bench.core.dataset import DATA_FILES, LABEL_FILES, dataset_sha256, load_dataset
from smartvector_bench.core.errors import BenchProblems
from smartvector_bench.core.schema.check import main as validate_main
from smartvector_bench.core.schema.check import validate_folder

from .conftest import run_cli
from .test_dataset_schema import write_beir

UNCHECKED = "delete manifest.json to load the folder unchecked"


def _write_manifest(folder: Path, manifest: dict) -> None:
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _line_of(folder: Path, key: str) -> int:
    lines = (folder / "manifest.json").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(f'  "{key}":'))


@pytest.fixture
def old_schema(tiny_dataset, tmp_path) -> Path:
    """A generated folder under a schema-1.0 manifest, as the first generator wrote it: ``files`` and
    ``dataset_sha256`` cover the four data files only (labels/ came with schema 2.0)."""
    folder = tmp_path / "old"
    shutil.copytree(tiny_dataset, folder)
    m = json.loads((folder / "manifest.json").read_text())
    m["schema_version"] = "1.0"
    m["files"] = {k: v for k, v in m["files"].items() if k in DATA_FILES}
    m["dataset_sha256"] = dataset_sha256({k: v["sha256"] for k, v in m["files"].items()})
    _write_manifest(folder, m)
    return folder


def test_an_old_schema_manifest_lists_every_problem_at_once_each_with_its_fix(old_schema, capsys):
    with pytest.raises(BenchProblems) as exc:
        load_dataset(old_schema)
    mpath = old_schema / "manifest.json"
    lines = str(exc.value).split("\n")
    assert lines[0] == f"{mpath}: 3 problems, each with its fix:"
    assert lines[1:] == [f"  {p}" for p in exc.value.problems]
    schema, files, digest = exc.value.problems
    assert schema.startswith(f"{mpath}:{_line_of(old_schema, 'schema_version')}: schema_version: '1.0' is older "
                             "than 2.0 (this loader reads schema 2.0 or 2.1); regenerate the folder "
                             "(`smartvector-gen dataset=versioned_policies out_dir=<new folder>`")
    assert files.startswith(f"{mpath}:{_line_of(old_schema, 'files')}: files: has no entry for "
                            "labels/chunks.jsonl, labels/queries.jsonl, labels/families.jsonl; ")
    assert digest.startswith(f"{mpath}:{_line_of(old_schema, 'dataset_sha256')}: dataset_sha256: does not match")
    assert all(p.endswith(UNCHECKED) for p in exc.value.problems)
    # Nothing else was wrong: fixing exactly these three (by hand, as a user would) makes it load.
    m = json.loads(mpath.read_text())
    m["schema_version"] = "2.0"
    m["files"].update({n: {"sha256": hashlib.sha256((old_schema / n).read_bytes()).hexdigest()} for n in LABEL_FILES})
    m["dataset_sha256"] = dataset_sha256({n: e["sha256"] for n, e in m["files"].items()})
    _write_manifest(old_schema, m)
    assert load_dataset(old_schema).manifest["schema_version"] == "2.0"
    assert capsys.readouterr().err == ""  # a checked folder loads silently


def test_a_manifest_newer_than_the_loader_says_upgrade(tiny_dataset, tmp_path):
    folder = tmp_path / "new"
    shutil.copytree(tiny_dataset, folder)
    m = json.loads((folder / "manifest.json").read_text())
    _write_manifest(folder, {**m, "schema_version": "3.0", "config": {**m["config"], "seed": "42"}})
    with pytest.raises(BenchProblems) as exc:
        load_dataset(folder)
    version, seed = exc.value.problems
    assert "schema_version: '3.0' is newer than this loader, which reads schema 2.0 or 2.1; upgrade " \
           "smartvector-bench, or delete manifest.json" in version
    assert re.search(r"manifest\.json:\d+: config\.seed: must be an integer, got '42'; regenerate", seed)


def test_a_hand_written_manifest_is_never_answered_with_a_generator_command(tmp_path):
    folder = write_beir(tmp_path / "beir")
    _write_manifest(folder, {"schema_version": "2.1", "files": {"corpus.jsonl": "0" * 64}})
    with pytest.raises(BenchProblems) as exc:
        load_dataset(folder)
    text = str(exc.value)
    assert "smartvector-gen" not in text  # it would replace the user's own data with a synthetic dataset
    assert all(p.endswith("correct manifest.json (docs/datasets.md) or " + UNCHECKED) for p in exc.value.problems)
    assert {p.split(": ")[0].removeprefix(str(folder) + "/") for p in exc.value.problems} >= {"corpus.jsonl"}


def test_validate_lists_the_loaders_manifest_problems_as_file_line_field(old_schema, capsys):
    problems, ds = validate_folder(old_schema)
    assert ds is None
    with pytest.raises(BenchProblems) as exc:
        load_dataset(old_schema)
    loader = sorted(p.removeprefix(f"{old_schema}/") for p in exc.value.problems)
    assert sorted(str(p) for p in problems) == loader  # the same check, not a second one
    assert all(re.match(r"manifest\.json:\d+: (schema_version|files|dataset_sha256): ", str(p)) for p in problems)
    assert validate_main([str(old_schema)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [str(p) for p in problems] and f"{old_schema}: 3 problems" in err


def test_a_folder_without_a_manifest_loads_unchecked_and_says_so_in_one_line(tmp_path, capsys):
    folder = write_beir(tmp_path / "beir")
    ds = load_dataset(folder)
    note = (f"{folder}: note: no manifest.json, so the folder loads unchecked (no recorded sha256 or schema version "
            "to check its files against; smartvector-gen writes one)")
    assert ds.manifest is None and ds.notes == (note,)
    assert capsys.readouterr().err == note + "\n"


# a foreign export's key for its rumor lists, in its own spelling
FOREIGN_KEY = "rumour_ids"  # external spelling


def _stale_beir(root: Path) -> Path:
    """A BEIR export that carries its stale and rumor lists in the queries' metadata (and one at top level)."""
    queries = [{"_id": f"q{i}", "text": f"topic {i % 4} question {i}",
                "metadata": {"stale": [f"d{(i + 1) % 12}"], FOREIGN_KEY: [f"d{(i + 2) % 12}"]}} for i in range(12)]
    queries[0]["Rumor"] = ["d5"]
    return write_beir(root, queries=queries)


def test_stale_lists_in_query_metadata_are_named_in_a_warning_that_points_to_labels(tmp_path, capsys):
    folder = _stale_beir(tmp_path / "beir")
    ds = load_dataset(folder)
    assert ds.queries.stale.counts().sum() == 0 and ds.queries.rumor.counts().sum() == 0  # ignored, as before
    warning = ds.notes[1]
    assert warning == (
        f"{folder / 'queries.jsonl'}:1: warning: ignored Rumor (1 query), metadata.{FOREIGN_KEY} (12 queries), "
        "metadata.stale (12 queries): stale and rumor sets are read from labels/queries.jsonl only, one line per "
        'query: {"_id": "<query id>", "stale": ["<chunk id>", ...], "rumor": ["<chunk id>", ...]} '
        "(docs/datasets.md, Labels); this folder has none, so the stale and rumor rates are not measured")
    assert capsys.readouterr().err.splitlines() == list(ds.notes)


def test_the_warnings_advice_works(tmp_path):
    """Moving the lists where the warning says makes them count, and then it no longer says 'not measured'."""
    folder = _stale_beir(tmp_path / "beir")
    rows = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines()]
    (folder / "labels").mkdir()
    (folder / "labels" / "queries.jsonl").write_text("".join(
        json.dumps({"_id": r["_id"], "stale": r["metadata"]["stale"], "rumor": r["metadata"][FOREIGN_KEY]}) + "\n"
        for r in rows))
    ds = load_dataset(folder)
    assert ds.queries.stale.counts().tolist() == [1] * 12 and ds.queries.rumor.counts().tolist() == [1] * 12
    assert "ignored" in ds.notes[1] and "not measured" not in ds.notes[1]
    for r in rows:
        r.pop("metadata"), r.pop("Rumor", None)
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(load_dataset(folder).notes) == 1  # only: no manifest


def _stderr_lines(res) -> list[str]:
    return [line for line in res.stderr.splitlines() if line.strip()]


def test_the_command_lines_print_every_manifest_problem_as_one_error(old_schema, tmp_path):
    run = run_cli("smartvector-bench", f"dataset.path={old_schema}", "embedder=hashing", "systems=[plain_cosine]",
                  f"hydra.run.dir={tmp_path / 'run'}", timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    lines = _stderr_lines(run)
    assert lines[0] == f"smartvector-bench: error: {old_schema / 'manifest.json'}: 3 problems, each with its fix:"
    assert len(lines) == 4 and all(line.startswith(f"  {old_schema / 'manifest.json'}:") for line in lines[1:])
    assert not (tmp_path / "run" / "metrics.json").exists()
    check = run_cli("smartvector-validate", str(old_schema), timeout=120)
    assert check.returncode == 1 and "Traceback" not in check.stderr, check.stderr
    assert [line.split(": ")[1] for line in check.stdout.splitlines()] == ["dataset_sha256", "files",
                                                                           "schema_version"]
    assert _stderr_lines(check) == [f"{old_schema}: 3 problems"]


@pytest.mark.slow
def test_the_command_line_prints_the_notes_and_runs(tmp_path):
    folder = _stale_beir(tmp_path / "beir")
    run = run_cli("smartvector-bench", f"dataset.path={folder}", "embedder=hashing", "systems=[plain_cosine]",
                  "++experiment.progress=false", f"hydra.run.dir={tmp_path / 'run'}", timeout=300)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    notes = [line for line in _stderr_lines(run) if line.startswith(str(folder))]
    assert len(notes) == 2 and "loads unchecked" in notes[0] and "labels/queries.jsonl" in notes[1], run.stderr
