"""Sweeps: the presets expand to the planned jobs with one safe folder each; jobs resume (complete ones are
skipped, killed or failed ones rerun); the collector writes tidy.csv / summary.json, lists failed and missing
jobs and exits non-zero for them; the tune preset is selected on dev and reported on test."""

from __future__ import annotations

import atexit
import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from data_gen.params import params_from_config
from experiments.main import chosen_systems
from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.results.provenance import config_sha256, resume_key
from smartvector_bench.systems import build_retriever
from smartvector_bench.tools.sweeps import MAX_DIRNAME, job_dirname, resume
from smartvector_bench.tools.sweeps.callback import CollectSweep, SweepFolderCollision
from smartvector_bench.core.results import RESULT_COLUMNS
from smartvector_bench.tools.sweeps.collect import run as collect_run
from smartvector_bench.tools.sweeps.plan import folder_collisions, plan_jobs
from smartvector_bench.tools.sweeps.summary import _mean_sd

from .conftest import TINY, compose_config

FAST = TINY + ["embedder=hashing", "experiment.n_boot=50", "print_table=false"]
SAFE_NAME = re.compile(r"[A-Za-z0-9._,=+\-\[\]@]+")


def hydra_config(overrides: list[str]):
    """The master config of a multirun, hydra node included (what Hydra saves as multirun.yaml)."""
    with initialize_config_dir(version_base="1.3", config_dir=CONF_DIR):
        return compose("config", overrides=list(overrides), return_hydra_config=True)


# --- presets -------------------------------------------------------------------------------------------------

RATES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75]
PRESETS = {
    # preset: (jobs, swept keys, systems)
    "seeds": (5, ["dataset.seed"], "all"),
    "contradiction_sweep": (45, ["dataset.contradiction_rate", "dataset.seed"],
                            ["plain_cosine", "valid_cosine", "smartvector", "smartvector_soft", "livevectorlake",
                             "kg_smartvector", "oracle"]),
    "ablation": (45, ["weights", "dataset.seed"], ["plain_cosine", "valid_cosine", "smartvector"]),
    "tune": (128, ["retrievers.smartvector.weights.semantic", "retrievers.smartvector.weights.temporal",
                   "retrievers.smartvector.weights.confidence", "retrievers.smartvector.weights.relational"],
             ["smartvector"]),
    "half_life": (49, ["retrievers.smartvector.temporal.half_life_days",
                       "retrievers.smartvector.confidence.half_life_days"], ["smartvector"]),
}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_expands_to_the_planned_jobs_one_safe_folder_each(preset):
    n_jobs, swept, systems = PRESETS[preset]
    cfg = hydra_config([f"experiment={preset}"])
    assert cfg.experiment.name == "main" and cfg.experiment.preset == preset  # each job is the main evaluation
    assert OmegaConf.to_container(cfg.systems) == systems if systems != "all" else cfg.systems == "all"
    assert cfg.hydra.sweep.dir == f"multirun/{preset}"  # no timestamp: a rerun finds the same folders
    assert "experiment" in cfg.hydra.job.config.override_dirname.exclude_keys
    plan = plan_jobs(cfg)
    assert len(plan.jobs) == n_jobs
    assert plan.swept_keys == swept
    names = [j.dirname for j in plan.jobs]
    assert all(SAFE_NAME.fullmatch(n) and len(n) <= MAX_DIRNAME for n in names), names
    assert len(set(names)) == n_jobs and not folder_collisions(plan)
    assert len({tuple(sorted(j.swept.items())) for j in plan.jobs}) == n_jobs  # every combination once
    assert all("experiment=" + preset in j.overrides for j in plan.jobs)
    if preset == "seeds":
        assert names == [f"dataset.seed={s}" for s in range(1, 6)]
    if preset == "contradiction_sweep":
        rates = [float(v) for v in dict.fromkeys(j.swept["dataset.contradiction_rate"] for j in plan.jobs)]
        assert rates == RATES
    if preset == "ablation":
        assert list(dict.fromkeys(j.swept["weights"] for j in plan.jobs)) == [
            "paper", "no_semantic", "no_temporal", "no_confidence", "no_relational",
            "only_semantic", "only_temporal", "only_confidence", "only_relational"]


@pytest.mark.slow  # hundreds of Hydra compositions (2 s a preset)
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_job_composes_and_builds(preset):
    """Each job's overrides give a valid config (every distinct swept value is used by some job checked)."""
    plan = plan_jobs(hydra_config([f"experiment={preset}"]))
    seen: set[tuple[str, str]] = set()
    for job in plan.jobs:
        new = set(job.swept.items()) - seen
        if not new:
            continue
        seen |= new
        cfg = compose_config(job.overrides)
        assert cfg["experiment"]["name"] == "main"
        params_from_config(cfg["dataset"])
        for name in chosen_systems(cfg):
            build_retriever(name, cfg["retrievers"][name])
        for key, value in job.swept.items():
            if key == "weights":
                continue
            node = cfg
            for part in key.split("."):
                node = node[part]
            assert float(node) == float(value), (key, node, value)


def test_ablation_weight_presets():
    paper = compose_config([])["retrievers"]["smartvector"]["weights"]
    signals = ["semantic", "temporal", "confidence", "relational"]
    for s in signals:
        no = compose_config([f"weights=no_{s}"])["retrievers"]["smartvector"]["weights"]
        assert no == {**paper, s: 0.0}
        only = compose_config([f"weights=only_{s}"])["retrievers"]["smartvector"]["weights"]
        assert only == {k: (1.0 if k == s else 0.0) for k in signals}


def test_job_dirname_is_safe_and_unique():
    assert job_dirname("dataset.seed=3") == "dataset.seed=3"
    assert job_dirname("") == "_no_overrides"
    long = ",".join(f"dataset.k{i}=value{i}" for i in range(40))
    names = [job_dirname(x) for x in ["dataset.path=/tmp/a b", "dataset.path=/tmp/a:b", "dataset.path=/tmp/a_b",
                                      "..", long, long + "x", "a=" + "é" * 10]]
    assert len(set(names)) == len(names)
    for n in names:
        assert SAFE_NAME.fullmatch(n) and len(n) <= MAX_DIRNAME and n not in (".", "..") and "/" not in n
    assert job_dirname(long) == job_dirname(long)  # stable: a rerun finds the same folder
    assert job_dirname(long).startswith("k0=value0,k1=value1")  # readable prefix


def test_callback_refuses_a_plan_whose_jobs_share_a_folder():
    cfg = hydra_config(["experiment=seeds", "hydra.job.config.override_dirname.exclude_keys=[experiment,dataset.seed]"])
    assert folder_collisions(plan_jobs(cfg))
    with pytest.raises(SweepFolderCollision, match="would share the folder"):
        CollectSweep().on_multirun_start(config=cfg)
    cb = CollectSweep()
    cb.on_multirun_start(config=hydra_config(["experiment=seeds"]))  # distinct folders: fine
    atexit.unregister(cb._collect_at_exit)  # no sweep ran: nothing to collect when pytest exits


# --- resume (unit) -------------------------------------------------------------------------------------------

def _fake_result(config: dict) -> dict:
    return {"systems": {}, "provenance": {"config_sha256": config_sha256(config), "resume_key": resume_key(config)}}


def test_resume_runs_skips_and_records_status(tmp_path):
    config = {"experiment": {"name": "main"}, "dataset": {"seed": 1}}
    calls = []

    def job():
        calls.append(1)
        (tmp_path / "metrics.json").write_text(json.dumps(_fake_result(config)))
        return "ran"

    said: list[str] = []
    assert resume.run_or_skip(tmp_path, config, job, say=said.append) == ("ran", False)
    assert json.loads((tmp_path / "job_status.json").read_text())["status"] == "complete"
    result, skipped = resume.run_or_skip(tmp_path, config, job, say=said.append)
    assert skipped and result == _fake_result(config) and len(calls) == 1
    assert len(said) == 1 and "skipped" in said[0] and str(tmp_path) in said[0]
    status = json.loads((tmp_path / "job_status.json").read_text())
    assert status["status"] == "skipped" and status["config_sha256"] == config_sha256(config)

    other = {"experiment": {"name": "main"}, "dataset": {"seed": 2}}  # another config: never skipped
    assert resume.run_or_skip(tmp_path, other, lambda: "ran again", say=said.append) == ("ran again", False)
    (tmp_path / "metrics.json").write_text('{"systems": {}, "provenance": {"config_sha')  # a torn file
    assert resume.run_or_skip(tmp_path, config, lambda: "reran", say=said.append) == ("reran", False)


def test_resume_records_a_failure_and_reraises(tmp_path):
    config = {"experiment": {"name": "main"}}

    def boom():
        raise ValueError("bad value")

    with pytest.raises(ValueError, match="bad value"):
        resume.run_or_skip(tmp_path, config, boom)
    status = json.loads((tmp_path / "job_status.json").read_text())
    assert status["status"] == "failed" and status["error"] == "ValueError: bad value"
    assert not (tmp_path / "metrics.json").exists()


# --- the CLI: multirun, resume, collector ---------------------------------------------------------------------

def read_tidy(sweep: Path) -> list[dict]:
    with open(sweep / "tidy.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def job_folders(sweep: Path) -> dict[str, Path]:
    """dataset.seed value -> job folder."""
    out = {}
    for d in sweep.iterdir():
        if (d / ".hydra" / "overrides.yaml").exists():
            ov = OmegaConf.to_container(OmegaConf.load(d / ".hydra" / "overrides.yaml"))
            out[next(o.split("=", 1)[1] for o in ov if o.startswith("dataset.seed="))] = d
    return out


def test_multirun_collects_resumes_and_reports_missing(cli, tmp_path):
    sweep = tmp_path / "sweep"
    args = ["-m", "experiment=seeds", *FAST, "systems=[plain_cosine,smartvector]", "dataset.seed=1,2,3",
            f"hydra.sweep.dir={sweep}"]

    first = cli("smartvector-bench", *args)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "0 of 3 jobs skipped as already complete" in first.stdout
    rows = read_tidy(sweep)
    assert len(rows) == 3 * 2 * 2
    assert {"dataset.seed", *RESULT_COLUMNS} <= set(rows[0])
    assert sorted({r["dataset.seed"] for r in rows}) == ["1", "2", "3"]
    assert {r["status"] for r in rows} == {"complete"}
    assert {(r["system"], r["split"]) for r in rows} == {(s, p) for s in ("plain_cosine", "smartvector")
                                                         for p in ("dev", "test")}
    assert all(r["dataset_seed"] == r["dataset.seed"] and r["top1"] and r["top1_lo"] for r in rows)
    summary = json.loads((sweep / "summary.json").read_text())
    assert summary["preset"] == "seeds" and summary["jobs"]["complete"] == 3 and summary["all_complete"]
    top1 = summary["results"]["systems"]["smartvector"]["test"]["top1"]
    per_seed = [float(r["top1"]) for r in rows if r["system"] == "smartvector" and r["split"] == "test"]
    assert sorted(top1["per_seed"]) == ["1", "2", "3"] and top1["n"] == 3
    assert top1["mean"] == pytest.approx(sum(per_seed) / 3, abs=1e-6)
    prov = json.loads((sweep / "tidy.provenance.json").read_text())
    assert prov["preset"] == "seeds" and prov["sweep_params"] == {"dataset.seed": "1,2,3,4,5"}
    assert prov["packages"]["hydra-core"] and prov["jobs"]["complete"] == 3
    folders = job_folders(sweep)
    assert sorted(folders) == ["1", "2", "3"]
    mtimes = {s: (d / "metrics.json").stat().st_mtime_ns for s, d in folders.items()}

    again = cli("smartvector-bench", *args)  # everything complete: every job skipped, and said so
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("smartvector-bench: skipped ") == 3
    assert "3 of 3 jobs skipped as already complete" in again.stdout
    assert {s: (d / "metrics.json").stat().st_mtime_ns for s, d in folders.items()} == mtimes
    assert {r["status"] for r in read_tidy(sweep)} == {"skipped"}

    (folders["2"] / "metrics.json").unlink()  # a job killed before its last write
    check = cli("smartvector-collect", str(sweep))
    assert check.returncode == 1 and "1 missing" in check.stdout and "dataset.seed=2" in check.stdout
    third = cli("smartvector-bench", *args)
    assert third.returncode == 0, third.stderr[-3000:]
    assert third.stdout.count("smartvector-bench: skipped ") == 2 and "2 of 3 jobs skipped" in third.stdout
    assert (folders["2"] / "metrics.json").exists()
    assert {s: (d / "metrics.json").stat().st_mtime_ns for s, d in folders.items() if s != "2"} == \
        {s: m for s, m in mtimes.items() if s != "2"}
    status = {r["dataset.seed"]: r["status"] for r in read_tidy(sweep)}
    assert status == {"1": "skipped", "2": "complete", "3": "skipped"}
    ok = cli("smartvector-collect", str(sweep))
    assert ok.returncode == 0 and "3 planned jobs: 1 complete, 2 skipped" in ok.stdout

    shutil.rmtree(folders["3"])  # a job that never started
    gone = cli("smartvector-collect", str(sweep))
    assert gone.returncode == 1
    assert "missing (1):" in gone.stdout and "dataset.seed=3" in gone.stdout and "no job folder" in gone.stdout
    rows = read_tidy(sweep)
    missing = [r for r in rows if r["status"] == "missing"]
    assert len(missing) == 1 and missing[0]["dataset.seed"] == "3" and missing[0]["top1"] == ""
    assert missing[0]["job_dir"] == folders["3"].name  # the collector predicts the folder Hydra would use
    assert len(rows) == 2 * 2 * 2 + 1
    summary = json.loads((sweep / "summary.json").read_text())
    assert summary["jobs"]["missing"] == 1 and summary["missing"][0]["overrides"] == "dataset.seed=3"


def test_a_failed_job_is_recorded_and_the_sweep_goes_on(cli, tmp_path):
    sweep = tmp_path / "sweep"
    # contradiction_rate=1.5 passes Hydra and fails the dataset's validation (BenchError) inside the job
    r = cli("smartvector-bench", "-m", *FAST, "systems=[plain_cosine]", "dataset.contradiction_rate=1.5,0.5",
            f"hydra.sweep.dir={sweep}")
    assert r.returncode != 0
    assert "smartvector-bench: error: dataset.contradiction_rate=1.5: must be a number in [0, 1]" in r.stderr
    rows = read_tidy(sweep)  # collected although Hydra skipped on_multirun_end
    by_rate = {}
    for row in rows:
        by_rate.setdefault(row["dataset.contradiction_rate"], []).append(row)
    assert [x["status"] for x in by_rate["1.5"]] == ["failed"] and by_rate["1.5"][0]["top1"] == ""
    assert {x["status"] for x in by_rate["0.5"]} == {"complete"} and len(by_rate["0.5"]) == 2
    # beside the failed job's empty cells, the counts stay integers and the floats keep their repr (object cells)
    assert all(x["n_queries"].isdigit() and x["dataset_seed"].isdigit() for x in by_rate["0.5"])
    failed_dir = sweep / by_rate["1.5"][0]["job_dir"]
    status = json.loads((failed_dir / "job_status.json").read_text())
    assert status["status"] == "failed" and "must be a number in [0, 1]" in status["error"]
    assert not (failed_dir / "metrics.json").exists()

    c = cli("smartvector-collect", str(sweep))
    assert c.returncode == 1
    assert "1 failed" in c.stdout and "failed (1):" in c.stdout
    assert "dataset.contradiction_rate=1.5" in c.stdout and "must be a number in [0, 1]" in c.stdout
    summary = json.loads((sweep / "summary.json").read_text())
    assert summary["failed"][0]["overrides"] == "dataset.contradiction_rate=1.5" and not summary["all_complete"]


def test_single_runs_are_only_skipped_when_the_run_dir_is_reused(cli, tmp_path):
    args = [*FAST, "systems=[plain_cosine]"]
    a = cli("smartvector-bench", *args, cwd=tmp_path)
    b = cli("smartvector-bench", *args, cwd=tmp_path)
    assert a.returncode == 0 and b.returncode == 0, b.stderr[-2000:]
    assert "skipped" not in a.stdout + b.stdout
    runs = sorted((tmp_path / "outputs" / "main").iterdir())
    assert len(runs) == 2 and all((d / "metrics.json").exists() for d in runs)
    assert all(json.loads((d / "job_status.json").read_text())["status"] == "complete" for d in runs)
    assert not list(tmp_path.rglob("tidy.csv"))  # the sweep callback does nothing for single runs
    reuse = cli("smartvector-bench", *args, f"hydra.run.dir={runs[0]}", cwd=tmp_path)
    assert reuse.returncode == 0 and "smartvector-bench: skipped " in reuse.stdout
    assert json.loads((runs[0] / "job_status.json").read_text())["status"] == "skipped"


def test_summary_statistics_keep_the_published_arithmetic():
    """The mean of four 6-decimal values can end in 5 at the 7th decimal: summed one value after the other (as every
    published summary.json was) it rounds up; pandas 3.1's compensated groupby mean gives 0.071428 (seen on a
    4-seed sweep: smartvector's test rumor rate), which would change summary.json's bytes."""
    import pandas as pd

    values = pd.Series([0.0, 0.142857, 0.142857, 0.0])
    assert _mean_sd(values) == {"mean": 0.071429, "sd": 0.082479, "n": 4}
    assert _mean_sd(pd.Series([0.25])) == {"mean": 0.25, "sd": None, "n": 1}
    assert _mean_sd(pd.Series([], dtype=object)) == {"mean": None, "sd": None, "n": 0}


def test_collector_rejects_a_folder_that_is_not_a_sweep(cli, tmp_path):
    r = cli("smartvector-collect", str(tmp_path))
    assert r.returncode == 2 and "multirun.yaml: not found" in r.stderr and "Traceback" not in r.stderr


# --- tune: selected on dev, reported on test (hand-made sweep folder) --------------------------------------

TUNE_GRID = {"retrievers.smartvector.weights.semantic": "0.2,0.5",
             "retrievers.smartvector.weights.temporal": "0,0.25",
             "retrievers.smartvector.weights.confidence": "0.25",
             "retrievers.smartvector.weights.relational": "0"}


def _split(top1: float, mrr: float) -> dict:
    m = {"n_queries": 10, "mcnemar_p": None}
    for key, v in {"top1": top1, "stale_rate": 0.0, "rumor_rate": 0.1, "ece": 0.2, "mrr_at_10": mrr,
                   "recall_at_5": 0.5, "leakage_at_10": 0.0}.items():
        m[key], m[f"{key}_ci"] = v, [round(max(0.0, v - 0.1), 6), round(min(1.0, v + 0.1), 6)]
    return m


def test_tune_selects_on_dev_and_reports_test_once(tmp_path):
    sweep = tmp_path / "tune"
    cfg = hydra_config(["experiment=tune"])
    cfg.hydra.sweeper.params = TUNE_GRID
    plan = plan_jobs(cfg)
    assert len(plan.jobs) == 4
    sweep.mkdir()
    OmegaConf.save(cfg, sweep / "multirun.yaml")
    labels = sorted(j.label for j in plan.jobs)
    # (dev top1, dev mrr, test top1) by label rank: the best test score (0.9) belongs to a job that is worse on
    # dev; two jobs tie on dev top1 and MRR, and the smaller override string wins.
    figures = {labels[0]: (0.5, 0.6, 0.1), labels[1]: (0.5, 0.7, 0.2), labels[2]: (0.4, 0.9, 0.9),
               labels[3]: (0.5, 0.7, 0.3)}
    for job in plan.jobs:
        d = sweep / job.dirname
        (d / ".hydra").mkdir(parents=True)
        OmegaConf.save(OmegaConf.create(job.overrides), d / ".hydra" / "overrides.yaml")
        dev, mrr, test = figures[job.label]
        config = compose_config(job.overrides)
        sha = config_sha256(config)
        metrics = {"systems": {"smartvector": {"dev": _split(dev, mrr), "test": _split(test, test)}},
                   "dataset": {"sha256": "d" * 64, "seed": 42},
                   "provenance": {"config_sha256": sha, "git": {"sha": "abc", "dirty": False}, "config": config}}
        (d / "metrics.json").write_text(json.dumps(metrics))
        (d / "job_status.json").write_text(json.dumps({"status": "complete", "config_sha256": sha}))

    _, summary, code = collect_run(sweep, quiet=True)
    assert code == 0
    tune = summary["results"]
    winner = tune["winner"]
    assert winner["overrides"] == labels[1]
    assert winner["dev"]["top1"] == 0.5 and winner["dev"]["mrr_at_10"] == 0.7
    assert winner["test"]["top1"] == 0.2 and winner["test"]["top1_ci"] == [0.1, 0.3]
    chosen = next(j for j in plan.jobs if j.label == labels[1])
    assert winner["weights"] == {k.rsplit(".", 1)[1]: float(v) for k, v in chosen.swept.items()}
    assert [x["overrides"] for x in tune["dev_top5"]] == [labels[1], labels[3], labels[0], labels[2]]
    assert tune["final"] and tune["n_candidates"] == 4
    assert len(read_tidy(sweep)) == 4 * 2

    shutil.rmtree(sweep / next(j.dirname for j in plan.jobs if j.label == labels[3]))
    _, summary, code = collect_run(sweep, quiet=True)
    assert code == 1 and summary["jobs"]["missing"] == 1
    assert summary["results"]["winner"]["overrides"] == labels[1] and not summary["results"]["final"]
