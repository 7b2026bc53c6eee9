"""Capabilities go by protocol, not by name: a retriever from a package outside the project that exposes its
signals (``systems.base.FusesSignals``) gets the run file's per-hit signals, the report's signal columns and the
fusion check ``publish`` runs before it stores ``signals.jsonl``, with nothing added inside the project. One that
claims the fusion but scores otherwise is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.base import FusesSignals, ScoresHits
from smartvector_bench.tools.report import drill, stored_signals

from .conftest import run_cli, write_tiny
from .factories import plugin_tree

PLUGIN = '''
import numpy as np
from smartvector_bench.core.run import Run
from smartvector_bench.systems.smartvector.signals.fusion import fuse, weights_from_config


class CosineFusion:
    """Cosine fused with a recency signal and a constant confidence: its score is the four-signal fusion."""

    offset = 0.0  # a system that lies about its score sets this

    def __init__(self, name="my_fuser", weights=None):
        self.name = name
        self.weights = self.fusion_weights({"weights": weights}, f"retrievers.{name}")

    @classmethod
    def fusion_weights(cls, config, where):
        return weights_from_config(dict(config.get("weights") or {"semantic": 0.6, "temporal": 0.4}),
                                   f"{where}.weights")

    def index(self, corpus, vectors, serve_time):
        self.vectors = np.asarray(vectors, dtype=np.float64)
        self.created = np.asarray(corpus.created_at, dtype=np.float64)

    def _signals(self, query_vectors, as_of):
        cos = np.asarray(query_vectors, dtype=np.float64) @ self.vectors.T
        age = np.maximum(np.asarray(as_of, dtype=np.float64)[:, None] - self.created[None, :], 0.0)
        return {"semantic": cos, "temporal": np.exp(-age / 365.0), "confidence": np.full(cos.shape, 0.5),
                "relational": np.zeros(cos.shape)}

    def search(self, query_vectors, as_of, k, texts=None, **labels):
        score = fuse(self.weights, **self._signals(query_vectors, as_of)) + self.offset
        ranked = np.argsort(-score, axis=1, kind="stable")[:, :k]
        top = np.take_along_axis(score, ranked, axis=1)
        return Run(self.name, ranked, top, np.clip(top[:, 0], 0.0, 1.0))

    def hit_signals(self, query_vectors, as_of, ranked):
        return {n: np.take_along_axis(v, ranked, axis=1) for n, v in self._signals(query_vectors, as_of).items()}

    def describe(self):
        return {}


class LyingFusion(CosineFusion):
    offset = 0.01
'''
RUN = ["embedder=hashing", "experiment.n_boot=20", "experiment.n_permutations=20", "print_table=false"]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> tuple[Path, Path]:
    """(package folder for PYTHONPATH, config dir with my_fuser.yaml and my_liar.yaml), outside the repository."""
    return plugin_tree(tmp_path_factory.mktemp("capabilities"), "my_fuser", PLUGIN,
                       {"my_fuser": "_target_: my_fuser.CosineFusion\n", "my_liar": "_target_: my_fuser.LyingFusion\n"})


@pytest.fixture(scope="module")
def run_folder(plugin, tmp_path_factory) -> Path:
    pkgsrc, conf = plugin
    tiny = write_tiny(tmp_path_factory.mktemp("tiny") / "ds")
    out = tmp_path_factory.mktemp("run") / "out"
    r = run_cli("smartvector-bench", "--config-dir", str(conf), *RUN, f"dataset.path={tiny}",
                "systems=[plain_cosine,my_fuser,my_liar]", f"hydra.run.dir={out}", env={"PYTHONPATH": str(pkgsrc)})
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.fixture
def importable(plugin, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin[0]))


def _metrics(folder: Path) -> dict:
    return json.loads((folder / "metrics.json").read_text(encoding="utf-8"))


def test_the_plugin_class_is_the_capability(importable):
    import my_fuser

    assert issubclass(my_fuser.CosineFusion, FusesSignals) and issubclass(my_fuser.CosineFusion, ScoresHits)
    assert stored_signals.fusion_class({"_target_": "my_fuser.CosineFusion"}) is my_fuser.CosineFusion
    # a class with hit signals alone does not claim the fusion; an unknown target is nothing
    assert stored_signals.fusion_class({"_target_": "smartvector_bench.systems.plain_cosine.PlainCosine"}) is None
    assert stored_signals.fusion_class({"_target_": "my_fuser.Missing"}) is None


def test_its_run_file_carries_signals_the_report_shows(run_folder, importable):
    rows = [json.loads(line) for line in (run_folder / "run_my_fuser.jsonl").read_text().splitlines()[1:]]
    assert rows and all(set(r["signals"]) == {"semantic", "temporal", "confidence", "graph"} for r in rows)
    data = drill.drill_data(run_folder, ["my_fuser", "plain_cosine"], _metrics(run_folder)["dataset"]["sha256"])
    assert data["has_signals"]
    assert all("g" in q["hits"]["my_fuser"] and "g" not in q["hits"]["plain_cosine"] for q in data["queries"].values())


def test_publish_checks_its_fusion_and_stores_its_signals(run_folder, importable):
    metrics = _metrics(run_folder)
    honest = dict(metrics, systems={k: v for k, v in metrics["systems"].items() if k != "my_liar"})
    assert sorted(stored_signals.fused_systems(honest, run_folder)) == ["my_fuser"]
    text = stored_signals.from_run_files(run_folder, honest)
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["_meta"]["systems"] == ["my_fuser"]
    assert {r["system"] for r in lines[1:]} == {"my_fuser"} and len(lines) > 1


def test_a_plugin_whose_score_is_not_its_fusion_is_refused(run_folder, importable):
    metrics = _metrics(run_folder)
    assert "my_liar" in stored_signals.fused_systems(metrics, run_folder)
    with pytest.raises(BenchError, match=r"run_my_liar\.jsonl: the signals do not reproduce the stored scores"):
        stored_signals.from_run_files(run_folder, metrics)
