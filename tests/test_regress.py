"""The publisher (smartvector_bench/tools/publish.py) and the gate's reruns through the real CLI.

Small runs made here (tiny dataset, hashing embedder) are the committed results; the gate reruns them through the
CLI with the same overrides and must find the same rankings and figures. The mutations the gate must catch are
tests/test_gate.py's; the committed results/ pass the committed check (test_the_committed_results_pass_the_gate)."""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smartvector_bench.tools import publish
from smartvector_bench.tools.gate import cli as gate_cli
from smartvector_bench.tools.gate.committed import check_committed
from smartvector_bench.tools.gate.files import read_expected

from .conftest import REPO, TINY, compose_config

# Overrides of the small runs, per experiment (also passed to the CLI by the rerun tests, so the CLI reproduces
# the in-process runs exactly).
SMALL = {  # fewer bootstrap resamples than the default 1,000: the gate checks them, their count does not matter
    "main": TINY + ["embedder=hashing", "experiment.n_boot=100"],
    "reembed_cost": TINY + ["embedder=hashing", "experiment.n_edits=30", "experiment.progress=false"],
    "feedback_loop": TINY + ["embedder=hashing", "experiment.n_boot=20"],
    "main_large": TINY + ["embedder=hashing", "experiment.n_boot=100"],
}


def _run_small(name: str, out: Path) -> None:
    cfg = compose_config([f"experiment={name}", *SMALL[name]])
    module = importlib.import_module(f"experiments.{cfg['experiment']['name']}")  # main_large runs experiments.main
    module.run(cfg, out)


@pytest.fixture(scope="module")
def small_results(tmp_path_factory) -> Path:
    """A results root (``<root>/<experiment>/``) of small real runs, and its derived ``expected.json``."""
    root = tmp_path_factory.mktemp("small_results")
    for name in SMALL:  # lvl_eval (also rerun by the gate) has its own tests; these four are the small ones
        _run_small(name, root / name)
    assert gate_cli.main(["--write-expected", "--results-from", str(root),
                         "--expected", str(root / "expected.json")]) == 0
    return root


@pytest.fixture
def results(small_results, tmp_path) -> Path:
    """A private copy of the small results, free to break."""
    dst = tmp_path / "results"
    shutil.copytree(small_results, dst)
    return dst


def committed_fails(root: Path) -> list[tuple[str, str]]:
    rows, _ = check_committed(root / "expected.json", read_expected(root / "expected.json"))
    return [(r.file, r.metric) for r in rows if not r.ok]


def _bump(path: Path, system: str, split: str, key: str, by: float) -> None:
    doc = json.loads(path.read_text())
    doc["systems"][system][split][key] = round(doc["systems"][system][split][key] + by, 6)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def test_the_small_results_pass_the_committed_check(results):
    manifest = json.loads((results / "expected.json").read_text())["manifest"]
    on_disk = sorted(p.relative_to(results).as_posix() for p in results.rglob("*") if p.is_file())
    assert manifest["root"] == "." and sorted(manifest["files"]) == [f for f in on_disk if f != "expected.json"]
    assert committed_fails(results) == []


# -- rerun mode and the publisher, through the real CLI (hashing embedder) ------------------------------------------

def _cli_overrides(name: str) -> list[str]:
    return [a for o in SMALL[name] for a in ("--set", o)]


@pytest.mark.parametrize("name", ["reembed_cost", "feedback_loop", "main"])
def test_rerun_through_the_cli_reproduces_the_small_run_exactly(small_results, tmp_path, capsys, name):
    code = gate_cli.main(["--only", name, "--expected", str(small_results / "expected.json"), "--verbose",
                          "--keep", str(tmp_path / "runs"), *_cli_overrides(name)])
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert f"{name}: ok" in out and f"experiment={name}" in out
    rows = [ln for ln in out.splitlines() if ln.startswith(f"| {name}")]
    assert rows and all("| exact (same machine fingerprint and packages) |" in ln or "| exact |" in ln
                        for ln in rows), rows[:3]
    assert any("ranked lists" in ln for ln in rows) or name == "reembed_cost"


def test_a_failing_rerun_fails_the_gate(small_results, tmp_path, capsys):
    code = gate_cli.main(["--only", "reembed_cost", "--expected", str(small_results / "expected.json"),
                         "--keep", str(tmp_path / "runs"), *_cli_overrides("reembed_cost"),
                         "--set", "experiment.n_edits=0"])
    out = capsys.readouterr().out
    assert code == 1
    assert "| reembed_cost (rerun) | exit 0 | exit code 2 |" in out and "n_edits" in out


@pytest.mark.slow
def test_publish_reruns_through_the_cli_and_writes_provenance(tmp_path, capsys):
    dest = tmp_path / "results"
    code = publish.main(["--only", "main", "--results-dir", str(dest), *_cli_overrides("main")])
    assert code == 0, capsys.readouterr().err
    files = sorted(p.name for p in (dest / "main").iterdir())
    systems = list(compose_config()["retrievers"])
    assert files == sorted(["PROVENANCE.json", "metrics.json", "table.md", "qrels_dev.trec", "qrels_test.trec",
                            "queries.jsonl", "signals.jsonl"]  # signals: the four-signal systems' run files have them
                           + [f"run_{s}.{ext}" for s in systems for ext in ("jsonl", "trec")]
                           + [f"model_{s}.txt" for s in systems if s == "ltr"])  # a trained model (SavesModel)
    prov = json.loads((dest / "main" / "PROVENANCE.json").read_text())
    metrics = json.loads((dest / "main" / "metrics.json").read_text())
    assert prov["command"][:2] == ["smartvector-bench", "experiment=main"] and "embedder=hashing" in prov["command"]
    assert prov["git"] == metrics["provenance"]["git"] and "dirty" in prov["git"]
    assert prov["config_sha256"] == metrics["provenance"]["config_sha256"]
    assert prov["dataset_sha256"] == metrics["dataset"]["sha256"]
    assert prov["packages"]["numpy"] and prov["env"]["OMP_NUM_THREADS"] == "1"
    for fname, info in prov["files"].items():
        assert hashlib.sha256((dest / "main" / fname).read_bytes()).hexdigest() == info["sha256"], fname
    assert set(prov["files"]) == set(files) - {"PROVENANCE.json"}
    # A failed rerun publishes nothing and leaves the previous publication as it was.
    before = {p.name: p.read_bytes() for p in (dest / "main").iterdir()}
    code = publish.main(["--only", "main", "--results-dir", str(dest), *_cli_overrides("main"),
                                 "--set", "dataset.contradiction_rate=1.5"])
    err = capsys.readouterr().err
    assert code == 1 and "main: FAILED" in err and "contradiction_rate" in err
    assert {p.name: p.read_bytes() for p in (dest / "main").iterdir()} == before
    # The committed check of a publication: it passes; an edit re-blessed with --write-expected still fails,
    # on the PROVENANCE.json hash of the file (the bytes the recorded run published).
    exp = ["--expected", str(dest / "expected.json")]
    assert gate_cli.main(["--write-expected", "--results-from", str(dest), *exp]) == 0
    assert gate_cli.main(["--results-from", str(dest), *exp]) == 0, capsys.readouterr().out
    _bump(dest / "main" / "metrics.json", "oracle", "dev", "recall_at_5", -0.05)
    assert gate_cli.main(["--write-expected", "--results-from", str(dest), *exp]) == 0
    capsys.readouterr()
    # ... and on the figure today's code recomputes from the run files (and table.md, no longer its rendering)
    fails = committed_fails(dest)
    assert fails[0][0].endswith("main/metrics.json") and fails[0][1] == "PROVENANCE.json sha256", fails
    assert len(fails) == 3, fails
    assert fails[1][1].endswith("main: metrics.json systems") and fails[2][1].endswith("main: table.md")


def _fake_sweep(multirun: Path, preset: str, failed: int = 0) -> None:
    d = multirun / preset
    d.mkdir(parents=True)
    (d / "tidy.csv").write_text("sweep,job,system,split,top1,dataset_sha256,config_sha256\n"
                                f"{preset},0,smartvector,test,0.5,d1,c1\n{preset},1,smartvector,test,0.6,d2,c2\n")
    (d / "tidy.provenance.json").write_text(json.dumps({"git_sha": "abc", "git_dirty": ["False"],
                                                        "packages": {"numpy": "2"}, "preset": preset}))
    (d / "summary.json").write_text(json.dumps({"jobs": {"planned": 2, "complete": 2 - failed, "skipped": 0,
                                                         "failed": failed, "missing": 0}}))
    (d / "queries.csv").write_text("job,system,query_id,correct\n0,smartvector,q1,1\n")
    (d / "0").mkdir()  # job folders are not published
    (d / "0" / "metrics.json").write_text("{}")


def test_publish_sweeps_found_and_refuses_incomplete_ones(tmp_path, capsys):
    multirun, dest = tmp_path / "multirun", tmp_path / "results"
    _fake_sweep(multirun, "seeds")
    _fake_sweep(multirun, "contradiction_sweep", failed=1)
    code = publish.main(["--only", "none", "--sweeps", "seeds,contradiction_sweep,half_life",
                                 "--multirun-dir", str(multirun), "--results-dir", str(dest)])
    err = capsys.readouterr().err
    assert code == 1
    assert "contradiction_sweep" in err and "1 failed" in err and "half_life" in err
    assert sorted(p.name for p in (dest / "seeds").iterdir()) == ["PROVENANCE.json", "queries.csv", "summary.json",
                                                                  "tidy.csv", "tidy.provenance.json"]
    assert not (dest / "contradiction_sweep").exists() and not (dest / "half_life").exists()
    prov = json.loads((dest / "seeds" / "PROVENANCE.json").read_text())
    assert prov["kind"] == "sweep" and prov["git"]["sha"] == "abc" and prov["dataset_sha256"] == ["d1", "d2"]
    assert prov["config_sha256"] == ["c1", "c2"] and prov["command"] == ["smartvector-bench", "-m", "experiment=seeds"]
    for name in ("tidy.csv", "queries.csv"):  # every file PROVENANCE.json lists is there, as collected
        assert (dest / "seeds" / name).read_bytes() == (multirun / "seeds" / name).read_bytes()
    assert set(prov["files"]) == {"queries.csv", "summary.json", "tidy.csv", "tidy.provenance.json"}
    # auto: every sweep folder found; an incomplete one is skipped with a warning, or published when allowed
    code = publish.main(["--only", "none", "--sweeps", "auto",
                                 "--multirun-dir", str(multirun), "--results-dir", str(dest)])
    assert code == 0 and "skipped: sweep 'contradiction_sweep'" in capsys.readouterr().err
    assert not (dest / "contradiction_sweep").exists()
    code = publish.main(["--only", "none", "--sweeps", "auto", "--allow-incomplete",
                                 "--multirun-dir", str(multirun), "--results-dir", str(dest)])
    assert code == 0
    assert json.loads((dest / "contradiction_sweep" / "PROVENANCE.json").read_text())["complete"] is False


# -- the true gate -----------------------------------------------------------------------------------------------

def test_the_committed_results_pass_the_gate():
    """The committed results/ pass the committed check (file hashes; every figure recomputed by today's code
    from the committed run files; the sweep summaries from their tidy.csv). The reruns of `make regress` are not repeated here: CI runs `make regress`
    itself (.ci/run), and rerunning main with the real model would add two minutes to `make test`."""
    if not (REPO / "results" / "expected.json").is_file():
        pytest.fail("results/expected.json is missing: run `make results` (the publisher, then the gate's --write-expected)")
    r = subprocess.run([sys.executable, "-m", "smartvector_bench.tools.gate", "--results-from", "results"], cwd=REPO,
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-2000:]
    summary = r.stdout.strip().splitlines()[-1]
    assert "committed: " in summary and ", 0 failed" in summary, summary
    counts = summary.split("committed: ")[1]
    assert int(counts.split(" file checks")[0].rsplit("(", 1)[1]) > 150  # every committed file, hashed
    assert int(counts.split(" replayed parts")[0].rsplit(", ", 1)[1]) > 150  # main, main_large, handbook, sweep jobs