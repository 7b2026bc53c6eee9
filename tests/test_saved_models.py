"""Saved models (``systems.base.SavesModel``): ltr writes its trained model beside its run file and can search with
a saved one instead of training, and the gate reruns it so on another CPU (``tools/gate/models.py``), where
training on features that moved by rounding gives other trees."""

from __future__ import annotations

import numpy as np
import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from experiments.tuning import train_on_dev
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.base import SavesModel
from smartvector_bench.tools.gate import models
from smartvector_bench.tools.gate.cli import ran_config

from .test_rounding_bounds import setup  # noqa: F401 - the same tiny dataset and hashing vectors


def _ltr(setup, **over):
    ds, cfg, cv, qv, serve = setup
    r = build_retriever("ltr", {**cfg["retrievers"]["ltr"], "n_estimators": 20, **over})
    r.index(ds.corpus, cv, serve)
    summary = train_on_dev("ltr", r, qv, ds.queries)
    return r, summary, r.search(qv, ds.queries.as_of, 10, texts=ds.queries.texts)


def test_a_saved_model_searches_as_the_trained_one(setup, tmp_path):
    trained, fit, run = _ltr(setup)
    assert isinstance(trained, SavesModel) and trained.model_text().startswith("tree")
    path = tmp_path / "model_ltr.txt"
    path.write_text(trained.model_text())
    # another seed would train other trees; the saved model wins
    loaded, fit2, run2 = _ltr(setup, model_file=str(path), seed=7)
    assert np.array_equal(run.ranked, run2.ranked) and np.array_equal(run.scores, run2.scores, equal_nan=True)
    assert np.array_equal(run.confidence, run2.confidence, equal_nan=True)
    assert loaded.model_text() == trained.model_text()
    assert fit2["model_file"] == str(path) and fit2["feature_importance_gain"] == fit["feature_importance_gain"]
    _, _, other = _ltr(setup, seed=7, num_leaves=4)
    assert not np.array_equal(run.scores, other.scores, equal_nan=True)  # the comparison above can fail


def test_a_bad_model_file_is_named(setup, tmp_path):
    with pytest.raises(BenchError, match=r"retrievers\.ltr\.model_file=.*nope\.txt: not a LightGBM model file"):
        _ltr(setup, model_file=str(tmp_path / "nope.txt"))
    with pytest.raises(BenchError, match=r"retrievers\.ltr\.model_file=3: must be a path or null"):
        build_retriever("ltr", {**setup[1]["retrievers"]["ltr"], "model_file": 3})


def test_the_gate_loads_published_models_only_on_another_host(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for f in (a, b):
        f.mkdir()
    (a / "model_ltr.txt").write_text("x")
    assert models.model_overrides([a], exact=True) == []
    assert models.model_overrides([a], exact=False) == [f"retrievers.ltr.model_file='{(a / 'model_ltr.txt').resolve()}'"]
    # a stored job's folder name holds '=' and ',': the value is quoted so that Hydra reads the path whole
    odd = tmp_path / "dataset.metadata=created_only,dataset.seed=1" / "it's" / "model_ltr.txt"
    override = OverridesParser.create().parse_override(f"retrievers.ltr.model_file={models.quoted(odd)}")
    assert override.value() == str(odd)
    (b / "model_ltr.txt").write_text("y")  # two stored jobs, two models: one command line cannot give both
    assert models.model_overrides([a, b], exact=False) == []
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "model_ltr.txt").write_text("x")
    assert [r.ok for r in models.compare_models("m", a, fresh, True, "exact")] == [True]
    (fresh / "model_ltr.txt").write_text("z")
    row, = models.compare_models("m", a, fresh, True, "exact")
    assert not row.ok and "retrained to another model" in row.note
    assert [r.ok for r in models.compare_models("m", a, fresh, False, "rounding")] == [True]
    (fresh / "model_ltr.txt").unlink()
    assert not models.compare_models("m", a, fresh, True, "exact")[0].ok


def test_where_a_model_came_from_is_not_part_of_the_compared_config(setup):
    cfg = setup[1]
    metrics = {"provenance": {"config": {"retrievers": {"ltr": {"depth": 50, "model_file": "/x/model_ltr.txt"}}}},
               "systems": {"ltr": {}}}
    assert ran_config(metrics)["retrievers"] == {"ltr": {"depth": 50}}
    assert cfg["retrievers"]["ltr"].get("model_file") is None  # the default trains
