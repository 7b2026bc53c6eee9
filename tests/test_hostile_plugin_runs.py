"""Hostile plug-ins (issue 28) in a run: a plug-in broken on purpose, run by experiments.main.run with the hashing
embedder on the tiny dataset, stops the run in one line naming the system, the call and the rule, with no result
file written; the feedback loop checks its searches too; and two cases go through the CLI for the exit code and
the single stderr line."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from experiments import feedback_loop
from experiments import main as main_experiment
from smartvector_bench.core.run.contract import RetrieverFault
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run

from .conftest import TINY, compose_config, run_cli, write_tiny
from .factories import plugin_tree

PLUGIN = '''
import sys

import numpy as np

from smartvector_bench.core.run import Run


class Hostile:
    """Cosine, broken on purpose in the way ``mode`` names."""

    def __init__(self, name: str = "hostile", mode: str = "ok"):
        self.name, self.mode = name, mode

    def check_dataset(self, corpus):
        if self.mode == "check_raises":
            raise KeyError("created_at")

    def index(self, corpus, vectors, serve_time):
        if self.mode == "index_raises":
            raise RuntimeError("disk full")
        self.vectors = np.asarray(vectors, dtype=np.float64)

    def search(self, query_vectors, as_of, k, texts=None, **labels):
        if self.mode == "raises":
            raise ValueError("boom")
        if self.mode == "exits":
            sys.exit(3)
        scores = np.asarray(query_vectors, dtype=np.float64) @ self.vectors.T
        ranked = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        top = np.take_along_axis(scores, ranked, axis=1)
        conf = np.clip(top[:, 0], 0.0, 1.0)
        if self.mode == "negative_id":
            ranked[:, 0] = -5
        elif self.mode == "big_id":
            ranked[:, 0] = len(self.vectors)
        elif self.mode == "duplicates":
            ranked[:] = ranked[:, :1]
        elif self.mode == "nan_score":
            top[:, 1] = np.nan
        elif self.mode == "float_ids":
            ranked = ranked.astype(np.float64)
        elif self.mode == "dict":
            return {"ranked": ranked, "scores": top, "confidence": conf}
        elif self.mode == "confidence_5":
            conf[:] = 5.0
        return Run(self.name, ranked, top, conf)

    def describe(self):
        if self.mode == "describe_object":
            return object()
        if self.mode == "describe_nan":
            return {"rule": "cosine", "fit": {"loss": float("nan")}}
        return {"rule": "cosine", "mode": self.mode}
'''
RUN = ["embedder=hashing", "experiment.n_boot=20", "experiment.n_permutations=20", "print_table=false"]
CONTRACT = "systems: hostile.search broke the output contract: "


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> tuple[Path, Path]:
    """(folder holding the module hostile_ret, config dir with retriever/hostile.yaml), outside the repository."""
    return plugin_tree(tmp_path_factory.mktemp("hostile"), "hostile_ret.py", PLUGIN,
                       {"hostile": "_target_: hostile_ret.Hostile\nmode: ok\n"})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("tiny") / "ds")


@pytest.fixture(scope="module")
def first_hits(tiny) -> dict:
    """The first query's id, the corpus size, and the chunks the sound plug-in ranks first and second for that
    query (cosine of the hashing embedder, as in the run)."""
    ds = load_dataset(tiny)
    emb = build_embedder(dict(compose_config(["embedder=hashing"])["embedder"]))
    scores = emb.encode(ds.queries.texts[:1]) @ np.asarray(emb.encode(ds.corpus.texts), dtype=np.float64).T
    order = np.argsort(-scores[0], kind="stable")
    return {"q0": ds.queries.ids[0], "n": len(ds.corpus), "top": int(order[0]), "second": int(order[1])}


@pytest.fixture
def run_hostile(plugin, tiny, monkeypatch, tmp_path):
    """experiments.main.run with retrievers.hostile in ``mode``: (the out folder, the BenchError's message or
    None when the run passed)."""
    monkeypatch.syspath_prepend(str(plugin[0]))

    def go(mode: str, systems: str = "[hostile]") -> tuple[Path, str | None]:
        cfg = compose_config(TINY + RUN + [f"dataset.path={tiny}", f"systems={systems}", "+experiment.progress=false"])
        cfg["retrievers"]["hostile"] = {"_target_": "hostile_ret.Hostile", "mode": mode}
        out = tmp_path / mode
        try:
            main_experiment.run(cfg, out)
        except BenchError as exc:
            return out, str(exc)
        return out, None
    return go


def left_behind(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir()) if out.exists() else []


# ---- through experiments.main.run: the cases, nothing written ------------------------------------

def test_a_sound_plugin_runs(run_hostile):
    out, error = run_hostile("ok")
    assert error is None
    assert {"metrics.json", "run_hostile.jsonl", "run_hostile.trec"} <= set(left_behind(out))


HOSTILE = [
    ("negative_id", "{contract}query {q0}: id -5 at rank 1 is out of range [0, {n})"),
    ("big_id", "{contract}query {q0}: id {n} at rank 1 is out of range [0, {n})"),
    ("duplicates", "{contract}query {q0}: id {top} at rank 2 repeats rank 1; ids must be unique per query"),
    ("nan_score", "{contract}query {q0}: score nan at rank 2 (id {second}) is not finite"),
    ("float_ids", "{contract}Run.ranked has dtype float64; it must hold integer corpus rows"),
    ("dict", "{contract}returned a dict, not a smartvector_bench.core.run.Run"),
    ("confidence_5", "{contract}query {q0}: confidence 5 is outside [0, 1]"),
    ("raises", "systems: hostile.search raised ValueError: boom"),
    ("exits", "systems: hostile.search raised SystemExit: 3"),
    ("index_raises", "systems: hostile.index raised RuntimeError: disk full"),
    ("check_raises", "systems: hostile.check_dataset raised KeyError: 'created_at'"),
    ("describe_object", "systems: hostile.describe returned an object, not a dict (metrics.json's "
                        "system_info.hostile)"),
    ("describe_nan", "systems: hostile.describe returned a dict metrics.json cannot hold: describe()['fit']['loss'] "
                     "is nan (NaN and infinity are not JSON); allowed: dict with string keys, list, string, finite "
                     "number, bool, null"),
]


@pytest.mark.parametrize("mode, rule", HOSTILE, ids=[mode for mode, _ in HOSTILE])
def test_a_hostile_plugin_stops_the_run_in_one_line_and_writes_nothing(mode, rule, run_hostile, first_hits):
    out, error = run_hostile(mode)
    assert error == rule.format(contract=CONTRACT, **first_hits)
    assert left_behind(out) == []  # no run file, no metrics.json, no table: nothing at all


def test_a_crashing_check_dataset_stops_systems_all_instead_of_leaving_the_system_out(run_hostile):
    out, error = run_hostile("check_raises", systems="all")
    assert error == "systems: hostile.check_dataset raised KeyError: 'created_at'"
    assert left_behind(out) == []


def test_the_feedback_loop_checks_its_searches():
    class Exits:
        def search(self, qv, as_of, k, texts=None, **labels):
            raise SystemExit(3)

    class Repeats:
        def search(self, qv, as_of, k, texts=None, **labels):
            return Run("x", np.zeros((2, k), dtype=np.int64), np.ones((2, k)), np.ones(2))

    q_t = SimpleNamespace(ids=["q1", "q2"], as_of=np.zeros(2))
    with pytest.raises(RetrieverFault, match=r"^systems: smartvector\.search raised SystemExit: 3$"):
        feedback_loop._search("smartvector", Exits(), np.zeros((2, 4)), q_t, 3, 10)
    with pytest.raises(RetrieverFault, match=r"^systems: plain_cosine\.search broke the output contract: query q1: "
                                             r"id 0 at rank 2 repeats rank 1"):
        feedback_loop._search("plain_cosine", Repeats(), np.zeros((2, 4)), q_t, 3, 10)


# ---- the CLI: exit 2, one line, no run folder left -------------------------------------------------------

@pytest.mark.parametrize("mode, line", [("raises", "systems: hostile.search raised ValueError: boom"),
                                        ("exits", "systems: hostile.search raised SystemExit: 3")],
                         ids=["raises", "exits"])
def test_through_the_cli(mode, line, plugin, tiny, tmp_path):
    src, conf = plugin
    out = tmp_path / "run"
    r = run_cli("smartvector-bench", "--config-dir", str(conf), *RUN, f"dataset.path={tiny}", "systems=[hostile]",
                f"retrievers.hostile.mode={mode}", "+experiment.progress=false", f"hydra.run.dir={out}",
                env={"PYTHONPATH": str(src)})
    assert r.returncode == 2, r.stderr[-2000:]
    assert [ln for ln in r.stderr.splitlines() if ln.strip()] == [f"smartvector-bench: error: {line}"]
    assert not out.exists()
