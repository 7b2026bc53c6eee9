"""A run folder's ``signals.jsonl`` (tools/report/stored_signals.py, ``publish --store-signals``): the four-signal
systems' per-hit signals of the stored hits, recomputed and refused unless they fuse to every stored score. Checked
on a real tiny run (main experiment, hashing embedder) against its 1.1 run files' own signals."""

from __future__ import annotations

import json
import shutil

import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools import publish
from smartvector_bench.tools.gate.files import file_digest
from smartvector_bench.tools.report import cli, stored_queries, stored_signals

from .conftest import REPO
from .report_dom import parse

FOUR = {"smartvector", "smartvector_soft", "kg_smartvector"}
NEW_KEYS = ("text", "as_of", "labels", "signals")


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def tiny_run(_tiny_main_run, tmp_path_factory):
    """A finished main run on a tiny dataset (1.1 run files with signals; a copy of conftest's tiny_main_run);
    no dataset/ (it is regenerated)."""
    out = tmp_path_factory.mktemp("signals") / "results" / "main"
    shutil.copytree(_tiny_main_run[0], out)
    shutil.rmtree(out / "dataset")
    (out / "PROVENANCE.json").write_text(json.dumps({"files": {}}))
    return out


@pytest.fixture
def folder(tiny_run, tmp_path):
    dest = tmp_path / "results" / "main"
    shutil.copytree(tiny_run, dest)
    return dest


def _to_1_0(folder):
    """Make the run files format 1.0: no run_schema_version, text, as_of, labels or signals."""
    for path in folder.glob("run_*.jsonl"):
        rows = _jsonl(path)
        rows[0]["_meta"].pop("run_schema_version")
        path.write_text("\n".join(json.dumps({k: v for k, v in r.items() if k not in NEW_KEYS}) for r in rows) + "\n")


def test_the_recomputed_signals_are_the_1_1_run_files_signals(folder):
    want = {(p.stem[4:], r["query_id"]): r for p in folder.glob("run_*.jsonl") for r in _jsonl(p)[1:]}
    entry = stored_signals.store(folder, "test")
    assert set(entry["systems"]) == FOUR and entry["n_lines"] == 3 * sum(1 for k in want if k[0] == "oracle")
    side, source = stored_signals.read(folder, entry["dataset_sha256"])
    assert source.startswith("recomputed: the dataset regenerated") and set(side) == {k for k in want if k[0] in FOUR}
    for key, line in side.items():
        assert line["ranked"] == want[key]["ranked"] and line["signals"] == want[key]["signals"], key
    assert any(v != 1.0 for line in side.values() for v in line["signals"]["graph"] + line["signals"]["temporal"])
    prov = json.loads((folder / "PROVENANCE.json").read_text())
    assert prov["files"][stored_signals.FILE] == file_digest(folder / stored_signals.FILE)
    assert prov["stored_signals"]["systems"] == entry["systems"]


def test_the_publishers_file_from_the_run_files_equals_the_recomputed(folder):
    text = stored_signals.from_run_files(folder, json.loads((folder / "metrics.json").read_text()))
    built, _ = stored_signals.build(folder)
    assert text.splitlines()[1:] == built.splitlines()[1:]
    assert stored_signals.FILE in publish.collect_run_files("main", folder)


@pytest.mark.parametrize("delta", [1e-3, 2e-5])
def test_a_tampered_score_is_refused_in_one_line_and_nothing_is_written(folder, capsys, delta):
    _to_1_0(folder)
    path = folder / "run_kg_smartvector.jsonl"
    rows = _jsonl(path)
    rows[3]["scores"][2] += delta
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    before = (folder / "PROVENANCE.json").read_text()
    with pytest.raises(BenchError, match=r"run_kg_smartvector\.jsonl: the signals do not reproduce the stored "
                                         r"scores within 1e-05 .* rank 3.*refusing"):
        stored_signals.store(folder, "test")
    code = publish.main(["--store-signals", "main", "--results-dir", str(folder.parent)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err[0].startswith("publish: --store-signals main: ") and "Traceback" not in "\n".join(err)
    assert not (folder / stored_signals.FILE).exists() and (folder / "PROVENANCE.json").read_text() == before


def test_store_signals_rejects_a_name_that_is_no_main_run(capsys):
    assert publish.main(["--store-signals", "reembed_cost"]) == 2
    assert "--store-signals: 'reembed_cost' is not a main-kind experiment" in capsys.readouterr().err


def test_a_1_0_folder_with_the_file_shows_the_signals_and_says_where_they_come_from(folder, tiny_run):
    _to_1_0(folder)
    stored_queries.store(folder, "test")
    assert publish.main(["--store-signals", "main", "--results-dir", str(folder.parent)]) == 0
    assert cli.run([str(folder)]) == 0
    root = parse((folder / "report.html").read_text())
    section = root.one("section", cls="run", data_run="main")
    assert "come from the folder's signals.jsonl" in section.text and "need a run file made after" not in section.text
    data = json.loads(root.one("script", id="report-data").text)["runs"]["main"]
    assert data["has_signals"] is True and data["stored_signals"] is True
    want = {(p.stem[4:], r["query_id"]): r for p in tiny_run.glob("run_*.jsonl") for r in _jsonl(p)[1:]}
    for (system, qid), rec in want.items():
        hit = data["queries"][qid]["hits"][system]
        if system in FOUR:
            assert hit["g"] == {k: [round(x, 3) for x in rec["signals"][k][:10]] for k in rec["signals"]}
        else:
            assert "g" not in hit


def test_the_committed_file_fuses_to_its_run_files_scores():
    folder = REPO / "results" / "main"
    assert (folder / stored_signals.FILE).is_file(), f"results/main has no {stored_signals.FILE}"
    metrics = json.loads((folder / "metrics.json").read_text())
    side, _ = stored_signals.read(folder, metrics["dataset"]["sha256"])
    prov = json.loads((folder / "PROVENANCE.json").read_text())
    assert prov["files"][stored_signals.FILE] == file_digest(folder / stored_signals.FILE)
    systems = stored_signals.fused_systems(metrics, folder)
    assert set(systems) == FOUR
    for name, cfg in systems.items():
        rows = [{**r, "signals": side[(name, r["query_id"])]["signals"]} for r in _jsonl(folder / f"run_{name}.jsonl")[1:]
                if side[(name, r["query_id"])]["ranked"] == r["ranked"]]
        assert len(rows) == metrics["dataset"]["n_queries"]
        stored_signals.check(folder, name, rows, cfg)  # raises on any hit off by more than 1e-5
