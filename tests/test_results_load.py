"""smartvector_bench.core.results.load: a run folder (metrics.json), a sweep folder (tidy.csv) and the results folder
as DataFrames, on the committed results/ and on a tiny hand-made run folder; anything else is a one-line
BenchError."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results import RUN_COLUMNS, SOURCE, load

RESULTS = Path(__file__).resolve().parent.parent / "results"
SWEEPS = ("ablation", "contradiction_sweep", "half_life", "regimes", "regimes_facts", "seeds", "tune")
RUNS = ("main", "main_large", "facts", "handbook")


def test_a_run_folder_is_one_row_per_system_and_split_with_intervals():
    df = load(RESULTS / "main")
    m = json.loads((RESULTS / "main" / "metrics.json").read_text(encoding="utf-8"))
    assert list(df.columns) == list(RUN_COLUMNS)
    assert len(df) == sum(len(per) for per in m["systems"].values())
    assert list(df["system"]) == sorted(df["system"]) and set(df["split"]) == {"dev", "test"}
    row = df.set_index(["system", "split"]).loc[("smartvector", "test")]
    test = m["systems"]["smartvector"]["test"]
    for key in ("top1", "stale_rate", "ece", "ndcg_at_10"):
        assert row[key] == test[key] and [row[f"{key}_lo"], row[f"{key}_hi"]] == test[f"{key}_ci"]
    assert row["n_queries"] == test["n_queries"] and row["n_families"] == test["n_families"]
    assert row["dataset"] == m["dataset"]["name"] and row["dataset_seed"] == m["dataset"]["seed"]
    assert row["mcnemar_p"] == test["mcnemar_p"] and row["permutation_p"] == test["permutation_p"]


def test_a_sweep_folder_is_its_tidy_csv_with_the_swept_keys_as_columns():
    df = load(RESULTS / "seeds")
    assert df.equals(pd.read_csv(RESULTS / "seeds" / "tidy.csv"))
    assert "dataset.seed" in df.columns and sorted(set(df["dataset.seed"])) == [1, 2, 3, 4, 5]
    # every job has its results: run by the last invocation, or complete from an earlier one (a resumed sweep)
    assert set(df["status"]) <= {"complete", "skipped"} and "complete" in set(df["status"])
    summary = json.loads((RESULTS / "seeds" / "summary.json").read_text(encoding="utf-8"))
    assert summary["all_complete"] and summary["jobs"]["missing"] == 0 and summary["jobs"]["failed"] == 0
    test = df[df["split"] == "test"]
    mean = test.groupby("system")["top1"].mean()
    for system, per in summary["results"]["systems"].items():
        assert mean[system] == pytest.approx(per["test"]["top1"]["mean"], abs=1e-6)
    assert load(RESULTS / "seeds" / "tidy.csv").equals(df)  # the file itself


def test_the_results_folder_stacks_every_run_and_sweep_with_its_source():
    df = load(RESULTS)
    assert df.columns[0] == SOURCE
    assert set(df[SOURCE]) == set(RUNS + SWEEPS)
    for name in RUNS:
        assert len(df[df[SOURCE] == name]) == len(load(RESULTS / name))
    for name in SWEEPS:
        part = df[df[SOURCE] == name]
        assert len(part) == len(pd.read_csv(RESULTS / name / "tidy.csv")) and set(part["sweep"]) == {name}
    assert set(df.attrs["skipped"]) >= {"feedback_loop", "shortcut_audit"}  # no system x split table
    main = df[df[SOURCE] == "main"].reset_index(drop=True)[list(RUN_COLUMNS)]
    pd.testing.assert_frame_equal(main, load(RESULTS / "main"), check_dtype=False)  # ints beside a sweep's NaN: floats


def _split(top1: float, **extra) -> dict:
    return {"n_queries": 10, "n_families": 2, "top1": top1, "top1_ci": [top1 - 0.1, top1 + 0.1], "ece": 0.2,
            "ece_ci": [0.1, 0.3], **extra}


@pytest.fixture
def tiny_run(tmp_path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    metrics = {"dataset": {"name": "tiny", "seed": 7, "sha256": "ab" * 32},
               "provenance": {"git": {"sha": "abc"}, "config_sha256": "cfg"},
               "systems": {"valid_cosine": {"test": _split(0.5, mcnemar_p=0.04), "dev": _split(0.6)},
                           "plain_cosine": {"dev": _split(0.3), "test": _split(0.2)}}}
    (run / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return run


def test_a_tiny_run_folder(tiny_run):
    df = load(tiny_run)
    assert list(zip(df["system"], df["split"])) == [("plain_cosine", "dev"), ("plain_cosine", "test"),
                                                    ("valid_cosine", "dev"), ("valid_cosine", "test")]
    assert df["top1"].tolist() == [0.3, 0.2, 0.6, 0.5] and df["top1_lo"].tolist()[1] == pytest.approx(0.1)
    assert df["mcnemar_p"].isna().tolist() == [True, True, True, False]
    assert df["stale_rate"].isna().all() and df["stale_rate_lo"].isna().all()  # a metric the run has not got
    assert set(df["dataset"]) == {"tiny"} and set(df["dataset_seed"]) == {7}
    assert load(tiny_run / "metrics.json").equals(df)
    stacked = load(tiny_run.parent)  # a folder holding one run folder is a results folder
    assert stacked[SOURCE].tolist() == ["run"] * 4 and stacked.drop(columns=SOURCE).equals(df)


@pytest.mark.parametrize("case, message", [
    ("missing", "not found"),
    ("empty folder", "not a run folder (metrics.json), a sweep folder (tidy.csv) or a results folder"),
    ("other file", "a file other than metrics.json or tidy.csv"),
    ("bad json", "metrics.json: not readable as JSON"),
    ("no systems", "metrics.json: no systems object"),
])
def test_anything_else_is_a_one_line_bench_error(tmp_path, case, message):
    path = tmp_path / "x"
    if case == "empty folder":
        path.mkdir()
    elif case == "other file":
        path.write_text("a,b\n1,2\n", encoding="utf-8")
    elif case in ("bad json", "no systems"):
        path.mkdir()
        (path / "metrics.json").write_text('{"systems": ' if case == "bad json" else '{"figures": {}}',
                                           encoding="utf-8")
    with pytest.raises(BenchError) as e:
        load(path)
    assert message in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)
