"""Every experiment on external-style datasets written here: a plain BEIR folder (no metadata, no labels) and a
git-history corpus (validity windows, reduced labels, no rumors, no dependencies). Each experiment runs, or
refuses with one line that names what it needs, before any work; never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from data_gen.build import write_from_config
from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.validate import validate_config

from .conftest import compose_config, run_cli
from .test_dataset_schema import write_beir
from .test_git_history import C1, C2, P1, P2, P2_EDIT, P3, P4, Repo, _doc

EXPERIMENTS = ("main", "reembed_cost", "feedback_loop", "lvl_eval", "shortcut_audit")


@pytest.fixture(scope="module")
def beir(tmp_path_factory) -> Path:
    return write_beir(tmp_path_factory.mktemp("ext") / "beir", n_docs=16)


@pytest.fixture(scope="module")
def git_ds(tmp_path_factory) -> Path:
    r = Repo(tmp_path_factory.mktemp("ext") / "repo")
    r.write("docs/a.md", _doc(P1, P2, P3))
    r.write("docs/b.md", _doc(C1, C2, heading="# Onboarding"))
    r.commit("2024-01-01")
    r.write("docs/a.md", _doc(P1, P2_EDIT, P3))
    r.commit("2024-02-01")
    r.write("docs/b.md", _doc(C1, C2.replace("Tuesdays", "Mondays"), P4, heading="# Onboarding"))
    r.commit("2024-03-01")
    r.write("docs/a.md", _doc(P1, P2_EDIT, P3.replace("one business day", "two business days")))
    r.commit("2024-04-01")
    out = r.path.parent / "ds"
    write_from_config({"name": "git_history", "path": None, "repo": str(r.path), "glob": "docs/**/*.md",
                       "seed": 1, "min_chars": 20, "min_query_words": 3, "recent_days": 45,
                       "queries": {"current": 4, "historical": 4, "recently_updated": 4}}, out)
    return out


_RUNS: dict[tuple[str, Path], str | dict] = {}


def _run(name: str, path: Path, out: Path) -> str | dict:
    """The experiment's metrics, or the one-line refusal (validate, then run: the CLI's order); once per
    experiment and dataset."""
    if (name, path) in _RUNS:
        return _RUNS[name, path]
    cfg = compose_config([f"experiment={name}", f"dataset.path={path}", "embedder=hashing",
                          "++experiment.progress=false"])
    try:
        module = validate_config(cfg)
        _RUNS[name, path] = module.run(cfg, out)
    except BenchError as exc:
        _RUNS[name, path] = str(exc)
    return _RUNS[name, path]


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["beir", "git_ds"])
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_runs_or_refuses_in_one_line(name, dataset, request, tmp_path):
    path = request.getfixturevalue(dataset)
    out = tmp_path / "out"
    result = _run(name, path, out)
    if isinstance(result, str):
        assert "\n" not in result and len(result) < 400, result
        assert re.search(r"metadata\.\w+|labels/|\w+\.jsonl|dataset\.path", result), result  # names what it needs
        assert not any(out.rglob("metrics.json")) if out.exists() else True
    else:
        assert isinstance(result, dict) and result


@pytest.mark.slow
def test_main_on_a_git_history_corpus_reports_stale_rates_and_categories(git_ds, tmp_path):
    m = _run("main", git_ds, tmp_path / "out")
    assert isinstance(m, dict), m
    assert m["dataset"]["labels"] is True and m["dataset"]["n_vectors"] > 5
    cats = set(m["systems"]["plain_cosine"]["test"]["by_category"]) | set(
        m["systems"]["plain_cosine"]["dev"]["by_category"])
    assert cats <= {"current", "historical", "recently_updated"} and cats
    for name in ("valid_cosine", "livevectorlake"):
        assert m["systems"][name]["test"]["stale_rate"] == 0.0  # they keep what is in force at as_of


@pytest.mark.slow
def test_the_cli_on_a_beir_folder_never_ends_in_a_traceback(beir, tmp_path):
    for args in (["experiment=main", "systems=[plain_cosine,bm25]"], ["experiment=feedback_loop"]):
        res = run_cli("smartvector-bench", *args, f"dataset.path={beir}", "embedder=hashing",
                      f"hydra.run.dir={tmp_path / args[0]}")
        assert "Traceback" not in res.stderr, res.stderr
        if res.returncode == 0:
            assert json.loads((tmp_path / args[0] / "metrics.json").read_text())["dataset"]["labels"] is False
        else:  # one error line; the others are the loader's notes on the folder (no manifest.json)
            errors = [ln for ln in res.stderr.strip().splitlines() if not ln.startswith(f"{beir}: note: ")]
            assert res.returncode == 2 and len(errors) == 1, res.stderr
