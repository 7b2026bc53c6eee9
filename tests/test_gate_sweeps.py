"""The gate on the published sweeps: each summary.json recomputed from its tidy.csv (an edited figure is named by
its JSON path), the stored jobs' rows of tidy.csv and queries.csv, which jobs the publisher stores and how the
reduced rerun narrows the recorded multirun. On copies of the committed sweep folders; no rerun."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from smartvector_bench.tools.gate import sweep_reruns, sweeps
from smartvector_bench.tools.gate.committed import RUNS, stored_job_rows

from .conftest import REPO

PRESETS = ("seeds", "ablation", "contradiction_sweep", "half_life", "tune")


@pytest.fixture
def root(tmp_path) -> Path:
    for p in PRESETS:
        shutil.copytree(REPO / "results" / p, tmp_path / p)
    return tmp_path


def failing(root: Path) -> list[str]:
    return [f"{r.file}: {r.metric}: {r.note}" for r in sweeps.check_summaries(root) if not r.ok]


def edit(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def test_the_committed_summaries_recompute_from_their_tables(root):
    rows = sweeps.check_summaries(root)
    assert len(rows) == 3 * len(PRESETS) and failing(root) == []


@pytest.mark.parametrize("preset, path", [
    ("seeds", ["results", "systems", "smartvector", "test", "top1", "mean"]),
    ("ablation", ["results", "by_value", "paper", "smartvector", "ece", "sd"]),
    ("half_life", ["results", "systems", "smartvector", "top1", 0, 0]),
    ("tune", ["results", "winner", "test", "top1"]),
    ("tune", ["results", "dev_top5", 0, "dev_top1"]),
])
def test_an_edited_summary_figure_is_named_by_its_path(root, preset, path):
    def bump(doc):
        node = doc
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = round(node[path[-1]] + 0.01, 6)
    edit(root / preset / "summary.json", bump)
    bad = failing(root)
    assert len(bad) == 1 and bad[0].startswith(f"{preset}/summary.json: results:")
    assert ".".join(str(k) for k in path[1:]) + ":" in bad[0]


def test_job_counts_and_a_malformed_summary(root):
    edit(root / "seeds" / "summary.json", lambda d: d["jobs"].update(complete=4, failed=1))
    edit(root / "tune" / "summary.json", lambda d: d.pop("results"))
    bad = failing(root)
    assert len(bad) == 2 and bad[0].startswith("seeds/summary.json: ") and "failed" in bad[0]
    assert bad[1].startswith("tune/summary.json: readable") and "results" in bad[1]


def test_queries_csv_must_give_the_tidy_rates(root):
    path = root / "ablation" / "queries.csv"
    rows = list(csv.DictReader(path.open()))
    rows[0]["correct"] = str(1 - int(rows[0]["correct"]))
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    bad = failing(root)
    assert len(bad) == 1 and bad[0].startswith("ablation/queries.csv: per-query rows") and " top1: " in bad[0]


@pytest.mark.parametrize("preset", PRESETS)
def test_the_publisher_stores_exactly_the_jobs_the_gate_reruns(preset):
    stored = sweep_reruns.jobs_to_store(preset, REPO / "results" / preset / "tidy.csv")
    assert 1 <= len(stored) <= 2
    assert sorted(p.name for p in (REPO / "results" / preset / RUNS).iterdir()) == stored
    for o in sweep_reruns.REDUCED[preset]:  # each stored job has one of the narrowed values of every key
        key, values = o.split("=", 1)
        assert all(any(f"{key}={v}" in d for v in values.split(",")) for d in stored) or key not in stored[0]


@pytest.mark.parametrize("preset", PRESETS)
def test_a_stored_job_agrees_with_the_sweep_tables_and_an_edit_is_named(root, preset):
    job = sorted((root / preset / RUNS).iterdir())[0]
    assert [r for r in stored_job_rows(root / preset, job) if not r.ok] == []
    run_file = sorted(job.glob("run_*.jsonl"))[0]
    lines = run_file.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["confidence"] = (rec["confidence"] or 0) / 2 + 0.01
    run_file.write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    bad = [r for r in stored_job_rows(root / preset, job) if not r.ok]
    assert len(bad) == 1 and bad[0].metric.endswith("queries.csv rows") and rec["query_id"] in bad[0].note


def test_the_reduced_rerun_narrows_the_recorded_multirun(tmp_path):
    folder = REPO / "results" / "tune"
    cmd = sweep_reruns.rerun_command("tune", folder, tmp_path / "tune", tmp_path / "c.sqlite", ["bench"])
    assert cmd[:3] == ["bench", "-m", "experiment=tune"] and "print_table=false" in cmd
    assert [o for o in cmd if o.startswith("retrievers.")] == list(sweep_reruns.REDUCED["tune"])
    assert f"hydra.sweep.dir={tmp_path / 'tune'}" in cmd and f"embedder.cache_path={tmp_path / 'c.sqlite'}" in cmd
