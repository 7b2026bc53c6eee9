"""The result objects (smartvector_bench.core.results) on every committed result file of their kinds: each loads,
validates, and saves back to the very bytes committed; a malformed file fails in one line naming file and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results import (KINDS, FeedbackLoop, LvlEval, MainMetrics, ReembedCost, ResultError,
                                            SweepSummary)

RESULTS = Path(__file__).resolve().parent.parent / "results"
COMMITTED = {"main": MainMetrics, "main_large": MainMetrics, "handbook": MainMetrics, "facts": MainMetrics,
             "reembed_cost": ReembedCost,
             "feedback_loop": FeedbackLoop, "lvl_eval": LvlEval, "seeds": SweepSummary, "ablation": SweepSummary,
             "contradiction_sweep": SweepSummary, "half_life": SweepSummary, "tune": SweepSummary,
             "regimes": SweepSummary, "regimes_facts": SweepSummary}


@pytest.mark.parametrize("folder", sorted(COMMITTED))
def test_every_committed_result_loads_validates_and_saves_back_byte_for_byte(folder, tmp_path):
    cls = COMMITTED[folder]
    path = RESULTS / folder / cls.FILE
    obj = cls.load(path)
    assert obj.schema_version in cls.SCHEMA_VERSIONS
    assert cls.load(RESULTS / folder).to_dict() == obj.to_dict()  # a folder means its file
    assert obj.dumps().encode("utf-8") == path.read_bytes()
    out = obj.save(tmp_path / cls.FILE)
    assert out.read_bytes() == path.read_bytes()


def test_every_result_file_of_these_kinds_is_covered():
    """A new committed result of one of these kinds must join COMMITTED (and so this loader test)."""
    names = {cls.FILE for cls in KINDS.values()}
    found = {p.parent.name for p in RESULTS.glob("*/*.json") if p.name in names}
    assert found == set(COMMITTED)


def test_metrics_json_splits_hold_the_declared_metric_names():
    for folder in ("main", "main_large", "handbook", "facts"):
        m = MainMetrics.load(RESULTS / folder)
        for system, per in m.systems.items():
            for split in per:
                assert set(M.CI_METRICS) <= set(per[split]), (folder, system, split)
                assert m.interval(system, split, M.TOP1) == tuple(per[split][M.ci(M.TOP1)])
        assert {r["system"] for r in m.rows()} == set(m.systems)


def _one_line(exc: pytest.ExceptionInfo, *parts: str) -> None:
    msg = str(exc.value)
    assert "\n" not in msg and isinstance(exc.value, BenchError), msg
    for p in parts:
        assert p in msg, msg


def _edited(tmp_path: Path, folder: str, edit) -> Path:
    cls = COMMITTED[folder]
    data = json.loads((RESULTS / folder / cls.FILE).read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / cls.FILE
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("folder, edit, key", [
    ("main", lambda d: d.pop("systems"), "systems: missing"),
    ("main", lambda d: d.update(sytems={}), "sytems: unknown key"),
    ("main", lambda d: d.update(schema_version="9.9"), "schema_version: '9.9' is not a main schema"),
    ("main", lambda d: d["systems"]["smartvector"]["test"].pop("top1"), "systems.smartvector.test.top1: missing"),
    ("main", lambda d: d["systems"]["bm25"]["dev"].update(top1_ci=[0.1]), "systems.bm25.dev.top1_ci: expected"),
    ("main", lambda d: d.update(embedder=3), "embedder: expected a string"),
    ("reembed_cost", lambda d: d.update(experiment="main"), "experiment: 'main', expected 'reembed_cost'"),
    ("reembed_cost", lambda d: d["strategies"]["cdc"]["by_edit_type"].pop("all"),
     "strategies.cdc.by_edit_type.all: missing"),
    ("feedback_loop", lambda d: d["series"][3].pop("top1_lo"), "series[3].top1_lo: missing"),
    ("feedback_loop", lambda d: d["feedback"].update(corrections="7"), "feedback.corrections: expected an integer"),
    ("lvl_eval", lambda d: d.pop("verdicts"), "verdicts: missing"),
    ("seeds", lambda d: d["jobs"].update(failed=1), "the counts per status do not add up"),
    ("seeds", lambda d: d["results"].pop("seeds"), "results.seeds: missing"),
    ("tune", lambda d: d.update(all_complete=False), "all_complete: False with 0 failed"),
])
def test_a_malformed_file_names_the_file_and_the_key(tmp_path, folder, edit, key):
    path = _edited(tmp_path, folder, edit)
    with pytest.raises(ResultError) as e:
        COMMITTED[folder].load(path)
    _one_line(e, str(path), key)


def test_the_error_holds_file_and_key_apart_and_names_the_file_as_asked(tmp_path):
    path = _edited(tmp_path, "main", lambda d: d["systems"]["bm25"]["dev"].pop("ece"))
    with pytest.raises(ResultError) as e:
        MainMetrics.load(path, source="results/main/metrics.json")
    assert str(e.value) == "results/main/metrics.json: systems.bm25.dev.ece: missing"
    assert (e.value.file, e.value.key) == ("results/main/metrics.json", "systems.bm25.dev.ece")
    with pytest.raises(ResultError) as e:
        MainMetrics.load(tmp_path / "nowhere.json", source="shown.json")
    assert str(e.value) == "shown.json: not found" and (e.value.file, e.value.key) == ("shown.json", None)


def test_unreadable_and_absent_files(tmp_path):
    bad = tmp_path / "metrics.json"
    bad.write_text('{"systems": ', encoding="utf-8")
    with pytest.raises(ResultError) as e:
        MainMetrics.load(bad)
    _one_line(e, str(bad), "not readable as JSON")
    with pytest.raises(ResultError) as e:
        ReembedCost.load(tmp_path / "nowhere")
    _one_line(e, "nowhere", "not found")
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ResultError) as e:
        MainMetrics.load(bad)
    _one_line(e, str(bad), "(top level): expected an object")


def test_save_validates_first_and_writes_nothing_when_invalid(tmp_path):
    m = MainMetrics.load(RESULTS / "main")
    m.experiment = {**m.experiment, "name": "tune"}
    with pytest.raises(ResultError) as e:
        m.save(tmp_path / "metrics.json")
    _one_line(e, "metrics.json", "experiment.name: 'tune', expected 'main'")
    assert not any(tmp_path.iterdir())


def test_optional_keys_are_left_out_when_absent():
    m = MainMetrics.load(RESULTS / "main")  # results/main has no skipped systems
    assert m.skipped_systems is None and "skipped_systems" not in m.to_dict()
    m.resources = None  # a metrics.json from before resources were recorded
    assert "resources" not in m.to_dict() and MainMetrics.from_dict(m.to_dict()).resources is None
    assert MainMetrics.load(RESULTS / "handbook").resources is not None
