"""The resume key covers what a result depends on: config (minus output-only keys), dataset content, code,
plug-in code and package versions. A regenerated dataset under the same path, or a code change, reruns the job
and says why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from smartvector_bench.core.results import provenance as prov
from smartvector_bench.tools.sweeps import resume

from .conftest import TINY, write_tiny

FAST = TINY + ["embedder=hashing", "experiment.n_boot=50", "print_table=false", "systems=[plain_cosine]"]


def test_result_config_drops_only_output_keys():
    cfg = {"print_table": True, "experiment": {"name": "main", "progress": False, "k": 10},
           "embedder": {"kind": "minilm", "cache_path": "a.sqlite"}, "dataset": {"path": "/x", "seed": 3},
           "retrievers": {"livevectorlake": {"lake_path": "/l", "keep_lake": True, "hot_tier_size": 5},
                          "kg_smartvector": {"db_path": "/d", "decay_rate": 0.1}}}
    out = prov.result_config(cfg)
    assert out == {"experiment": {"name": "main", "k": 10}, "embedder": {"kind": "minilm"},
                   "dataset": {"seed": 3}, "retrievers": {"livevectorlake": {"hot_tier_size": 5},
                                                          "kg_smartvector": {"decay_rate": 0.1}}}
    assert cfg["embedder"]["cache_path"] == "a.sqlite"  # the input is not modified
    moved = json.loads(json.dumps(cfg))
    moved["embedder"]["cache_path"], moved["dataset"]["path"], moved["print_table"] = None, "/y", False
    assert prov.resume_key(moved)["config_sha256"] == prov.resume_key({**cfg, "dataset": {"seed": 3}})["config_sha256"]
    changed = json.loads(json.dumps(cfg))
    changed["experiment"]["k"] = 20
    assert prov.resume_key(changed)["config_sha256"] != prov.resume_key(cfg)["config_sha256"]


def test_dataset_digest_follows_the_folder_content(tmp_path):
    folder = write_tiny(tmp_path / "ds")
    cfg = {"dataset": {"path": str(folder)}}
    first = prov.dataset_digest(cfg)
    assert first == prov.dataset_digest(cfg) and len(first) == 64
    assert prov.dataset_digest({"dataset": {"seed": 1}}) == "generated"
    (folder / "corpus.jsonl").write_bytes((folder / "corpus.jsonl").read_bytes() + b"\n")
    assert prov.dataset_digest(cfg) != first
    shutil.rmtree(folder)
    write_tiny(folder, ["dataset.seed=7"])
    assert prov.dataset_digest(cfg) not in (first, "generated")


def test_source_hash_changes_with_any_file_of_the_packages(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__pycache__").mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (pkg / "catalog.json").write_text('{"topic": 1}')  # a data file shapes results too
    (pkg / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"bytecode")
    base = prov.source_sha256(tmp_path, ("pkg",))
    (pkg / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"other bytecode")
    (pkg / "stray.pyc").write_bytes(b"x")
    assert prov.source_sha256(tmp_path, ("pkg",)) == base  # bytecode is no source
    (pkg / "catalog.json").write_text('{"topic": 2}')
    assert prov.source_sha256(tmp_path, ("pkg",)) != base
    (pkg / "catalog.json").write_text('{"topic": 1}')
    assert prov.source_sha256(tmp_path, ("pkg",)) == base
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    assert prov.source_sha256(tmp_path, ("pkg",)) != base
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (pkg / "sub" / "b.py").rename(pkg / "c.py")  # same bytes, another file: another hash
    assert prov.source_sha256(tmp_path, ("pkg",)) != base


def test_each_changed_part_reruns_and_is_named(tmp_path):
    config = {"experiment": {"name": "main"}, "dataset": {"seed": 1}}
    key = prov.resume_key(config)
    for part, words in [("config_sha256", "the configuration"), ("dataset", "the dataset content"),
                        ("code_sha256", "the code"), ("plugins_sha256", "the plug-in code"),
                        ("packages_sha256", "the package versions")]:
        old = {**key, part: "0" * 64}
        (tmp_path / "metrics.json").write_text(json.dumps({"provenance": {"resume_key": old}}))
        said: list[str] = []
        result, skipped = resume.run_or_skip(tmp_path, config, lambda: "ran", say=said.append)
        assert (result, skipped) == ("ran", False)
        assert len(said) == 1 and "rerunning" in said[0] and f"{words} changed" in said[0], said
        assert all(w not in said[0] for p, w in resume._PARTS.items() if p != part)
    (tmp_path / "metrics.json").write_text(json.dumps({"provenance": {"config_sha256": "abc"}}))  # older format
    said = []
    assert resume.run_or_skip(tmp_path, config, lambda: "ran", say=said.append) == ("ran", False)
    assert "no resume key" in said[0]


@pytest.mark.slow
def test_a_regenerated_dataset_under_the_same_path_is_rerun(cli, tmp_path):
    folder = write_tiny(tmp_path / "ds")
    run = tmp_path / "run"
    args = [*FAST, f"dataset.path={folder}", f"hydra.run.dir={run}"]
    first = cli("smartvector-bench", *args)
    assert first.returncode == 0, first.stderr[-2000:]
    sha1 = json.loads((run / "metrics.json").read_text())["dataset"]["sha256"]
    again = cli("smartvector-bench", *args)
    assert again.returncode == 0 and "smartvector-bench: skipped " in again.stdout

    shutil.rmtree(folder)
    write_tiny(folder, ["dataset.seed=7"])  # the same path, another dataset
    third = cli("smartvector-bench", *args)
    assert third.returncode == 0, third.stderr[-2000:]
    assert "skipped" not in third.stdout
    assert "rerunning" in third.stdout and "the dataset content changed" in third.stdout
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["dataset"]["sha256"] != sha1 and metrics["dataset"]["seed"] == 7
    assert metrics["provenance"]["resume_key"]["dataset"] == prov.folder_sha256(folder)
