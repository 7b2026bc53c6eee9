"""The plug-in layer: a system is any importable class satisfying the Retriever protocol, named by ``_target_`` in
one yaml found on the config search path (conf/, ``--config-dir``, ``hydra.searchpath``); bad plug-ins and
datasets a system cannot use are refused in one line before anything is embedded."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from experiments import main as main_experiment
from smartvector_bench.core import CONF_DIR
from smartvector_bench.systems import discovery
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.base import (AuditsConsolidation, ChecksDataset, FitsOnDev, LiveStore, ReadsLabels,
                                            Retriever, TrainsOnDev)
from smartvector_bench.tools.validate import check_retrievers, chosen_systems

from .conftest import TINY, compose_config, run_cli, write_tiny
from .factories import plugin_tree

PLUGIN = '''
import numpy as np
from smartvector_bench.core.run import Run


class NumpyCosine:
    """Cosine through numpy: the smallest class satisfying the Retriever protocol."""

    def __init__(self, name: str = "my_ret", bonus: float = 0.0):
        self.name, self.bonus = name, float(bonus)

    def index(self, corpus, vectors, serve_time):
        self.vectors = np.asarray(vectors, dtype=np.float64)

    def search(self, query_vectors, as_of, k, texts=None, **labels):
        scores = np.asarray(query_vectors, dtype=np.float64) @ self.vectors.T + self.bonus
        ranked = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        top = np.take_along_axis(scores, ranked, axis=1)
        return Run(self.name, ranked, top, np.clip(top[:, 0], 0.0, 1.0))

    def describe(self):
        return {"rule": "cosine through numpy", "bonus": self.bonus}


class NoSearch:
    def __init__(self, name: str = "x"):
        self.name = name

    def index(self, corpus, vectors, serve_time):
        pass

    def describe(self):
        return {}
'''
RUN = ["embedder=hashing", "experiment.n_boot=20", "experiment.n_permutations=20", "print_table=false"]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> tuple[Path, Path]:
    """(package folder for PYTHONPATH, config dir with retriever/my_ret.yaml), both outside the repository."""
    return plugin_tree(tmp_path_factory.mktemp("plugin"), "my_ret", PLUGIN,
                       {"my_ret": "_target_: my_ret.NumpyCosine\nbonus: 0.0\n"})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("tiny") / "ds")


@pytest.fixture
def importable(plugin, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin[0]))
    return plugin


@pytest.fixture
def restore_all():
    yield
    discovery.register(discovery.in_tree())  # the in-tree retriever/all again, for the tests that follow


def _one_line_error(r) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    # the loader's own line for a folder without a manifest is a note, not part of the error
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and ": note: no manifest.json, " not in ln]
    assert len(lines) == 1, r.stderr
    return lines[0]


# ---- an outside package through the real CLI -------------------------------------------------------------

@pytest.mark.parametrize("how", ["config_dir", "searchpath"])
def test_outside_retriever_runs_through_the_cli(how, plugin, tiny, tmp_path):
    pkgsrc, conf = plugin
    out = tmp_path / "run"
    where = ["--config-dir", str(conf)] if how == "config_dir" else [f"hydra.searchpath=[file://{conf}]"]
    args = [*RUN, f"dataset.path={tiny}", "systems=[plain_cosine,my_ret]", f"hydra.run.dir={out}"]
    r = run_cli("smartvector-bench", *where, *args, env={"PYTHONPATH": str(pkgsrc)})
    assert r.returncode == 0, r.stderr[-3000:]
    table = (out / "table.md").read_text(encoding="utf-8")
    assert "| my_ret |" in table and "| plain_cosine |" in table
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert sorted(metrics["systems"]) == ["my_ret", "plain_cosine"]  # (metrics.json sorts its keys)
    assert metrics["system_info"]["my_ret"] == {"rule": "cosine through numpy", "bonus": 0.0}
    assert 0.0 <= metrics["systems"]["my_ret"]["test"]["top1"] <= 1.0
    assert (out / "run_my_ret.jsonl").is_file()
    # nothing was added to the command line: the recorded overrides (job folder names, regress reruns) are ours
    recorded = yaml.safe_load((out / ".hydra" / "overrides.yaml").read_text(encoding="utf-8"))
    assert recorded == [a for a in args if not a.startswith("hydra.")]  # hydra.* overrides are kept apart


def test_a_bad_target_is_one_line_through_the_cli(plugin, tmp_path):
    pkgsrc, conf = plugin
    r = run_cli("smartvector-bench", "--config-dir", str(conf), "embedder=hashing",
                "retrievers.my_ret._target_=my_ret.Nope",
                f"hydra.run.dir={tmp_path / 'run'}", env={"PYTHONPATH": str(pkgsrc)})
    line = _one_line_error(r)
    assert line == ("smartvector-bench: error: retrievers.my_ret._target_=my_ret.Nope: cannot be imported "
                    "('my_ret' has no attribute 'Nope')")
    assert not (tmp_path / "run").exists()


# ---- building: every error names the key -----------------------------------------------------------------

def test_bad_targets(importable):
    node = {"_target_": "my_ret.NumpyCosine"}
    assert isinstance(build_retriever("my_ret", node), Retriever)
    for target, msg in (
            ("nopkg.Cosine",
             r"^retrievers\.my_ret\._target_=nopkg\.Cosine: cannot be imported \(no module named 'nopkg'\)$"),
            ("my_ret.Nope",
             r"^retrievers\.my_ret\._target_=my_ret\.Nope: cannot be imported \('my_ret' has no attribute"),
            ("not a path", r"^retrievers\.my_ret\._target_='not a path': must be a dotted path"),
            (3, r"^retrievers\.my_ret\._target_=3: must be a dotted path")):
        with pytest.raises(BenchError, match=msg):
            build_retriever("my_ret", {**node, "_target_": target})
    with pytest.raises(BenchError, match=r"^retrievers\.my_ret\._target_: missing"):
        build_retriever("my_ret", {"bonus": 1.0})
    with pytest.raises(BenchError, match=r"^retrievers\.my_ret\.kind: replaced by _target_"):
        build_retriever("my_ret", {"kind": "my_ret"})


def test_a_class_that_is_not_a_retriever(importable):
    with pytest.raises(BenchError, match=r"^retrievers\.x: NoSearch does not satisfy the Retriever protocol "
                                         r"\(missing search\)$"):
        build_retriever("x", {"_target_": "my_ret.NoSearch"})
    with pytest.raises(BenchError, match=r"^retrievers\.x: OrderedDict does not satisfy the Retriever protocol "
                                         r"\(missing index, search, describe\)$"):
        build_retriever("x", {"_target_": "collections.OrderedDict"})
    with pytest.raises(BenchError, match=r"^retrievers\.x: dumps is not a class"):
        build_retriever("x", {"_target_": "json.dumps"})


def test_unknown_and_bad_parameters(importable):
    with pytest.raises(BenchError, match=r"^retrievers\.my_ret\.bonsu: unknown parameter of NumpyCosine; "
                                         r"allowed: bonus$"):
        build_retriever("my_ret", {"_target_": "my_ret.NumpyCosine", "bonsu": 1.0})
    with pytest.raises(BenchError, match=r"^retrievers\.my_ret: NumpyCosine\(\.\.\.\) failed: ValueError: could not "
                                         r"convert string to float"):
        build_retriever("my_ret", {"_target_": "my_ret.NumpyCosine", "bonus": "lots"})  # the class's own error
    with pytest.raises(BenchError, match=r"^retrievers\.plain_cosine\.foo: unknown parameter of PlainCosine; "
                                         r"allowed: none$"):
        build_retriever("plain_cosine", {"_target_": "smartvector_bench.systems.plain_cosine.PlainCosine",
                                         "foo": 1})
    # a **params class checks its own keys, naming the configured system (a variant names itself)
    cfg = compose_config(["+retrievers.smartvector_soft.nope=1"])
    with pytest.raises(BenchError, match=r"^retrievers\.smartvector_soft\.nope: unknown key"):
        check_retrievers(cfg)


def test_capabilities_are_protocols():
    cfg = compose_config()["retrievers"]
    systems = {name: build_retriever(name, cfg[name]) for name in cfg}
    assert all(isinstance(r, Retriever) for r in systems.values())
    assert {n for n, r in systems.items() if isinstance(r, ReadsLabels)} == {"oracle"}
    sv = {"smartvector", "smartvector_soft", "smartvector_tuned"}
    assert {n for n, r in systems.items() if isinstance(r, AuditsConsolidation)} == sv
    assert {n for n, r in systems.items() if isinstance(r, LiveStore)} == sv
    assert {n for n, r in systems.items() if isinstance(r, FitsOnDev)} == {"smartvector_tuned", "valid_authority"}
    assert {n for n, r in systems.items() if isinstance(r, TrainsOnDev)} == {"ltr"}
    assert {n for n, r in systems.items() if not isinstance(r, ChecksDataset)} == {"plain_cosine", "bm25", "ltr"}


# ---- systems: all is every retriever yaml on the search path ----------------------------------------------

def test_systems_all_picks_up_a_yaml_added_to_a_copy_of_conf(tmp_path, restore_all):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    (conf / "retriever" / "aa_cosine.yaml").write_text(
        "# @package retrievers.aa_cosine\n_target_: smartvector_bench.systems.plain_cosine.PlainCosine\n",
        encoding="utf-8")
    found = discovery.on_search_path(str(conf))
    assert found == [*discovery.TABLE_ORDER, "aa_cosine"]  # the table order, then the new ones by name
    assert discovery.on_search_path(CONF_DIR, config_dir=str(conf)) == found  # --config-dir adds it too
    discovery.register(found)
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
        cfg = OmegaConf.to_container(compose("config", overrides=TINY), resolve=True)
    assert chosen_systems(cfg) == found
    check_retrievers(cfg)
    # the CLI composes with the same list (here only printed: --cfg job runs nothing)
    r = run_cli("smartvector-bench", "--config-path", str(conf), "--cfg", "job", "embedder=hashing")
    assert r.returncode == 0, r.stderr[-2000:]
    printed = yaml.safe_load(r.stdout)
    assert list(printed["retrievers"]) == found
    # one way to choose systems: retriever=[...] would compose only some, so the run refuses it, naming systems=
    r = run_cli("smartvector-bench", "--config-path", str(conf), "retriever=[aa_cosine,plain_cosine]",
                "embedder=hashing", f"hydra.run.dir={tmp_path / 'refused'}")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "retriever=[aa_cosine,plain_cosine]: choose the systems to run with systems=[a,b]" in r.stderr
    assert not (tmp_path / "refused").exists()


# ---- check_dataset: refused before anything is embedded ----------------------------------------------------

def _without_times(src: Path, dst: Path) -> Path:
    """A copy of a generated dataset whose chunks give no created_at / valid_from / valid_to, and no labels/."""
    dst.mkdir(parents=True)
    shutil.copytree(src / "qrels", dst / "qrels")
    shutil.copy(src / "queries.jsonl", dst / "queries.jsonl")
    with open(src / "corpus.jsonl", encoding="utf-8") as fin, open(dst / "corpus.jsonl", "w", encoding="utf-8") as out:
        for line in fin:
            row = json.loads(line)
            for key in ("created_at", "valid_from", "valid_to"):
                row["metadata"].pop(key)
            out.write(json.dumps(row) + "\n")
    return dst


def test_check_dataset_refuses_before_embedding(tiny, tmp_path, monkeypatch):
    folder = _without_times(tiny, tmp_path / "notimes")
    assert {"created_at", "valid_from", "valid_to"}.isdisjoint(load_dataset(folder).corpus.present)

    class NoEmbedding:
        model_id = "none"

        def encode(self, texts):
            raise AssertionError("a text was embedded before the dataset was checked")

    monkeypatch.setattr(main_experiment, "build_embedder", lambda cfg: NoEmbedding())
    for system, needs in (("valid_cosine", "metadata.created_at, metadata.valid_from, metadata.valid_to"),
                          ("recent_cosine", "metadata.created_at"), ("smartvector", "metadata.created_at")):
        cfg = compose_config(TINY + RUN + [f"dataset.path={folder}", f"systems=[plain_cosine,{system}]"])
        with pytest.raises(BenchError, match=rf"^systems: {system} needs {needs}.* on every chunk \(.*\); the dataset "
                                             rf"lacks (it|them) \({re.escape(str(folder))}; drop {system} from "
                                             rf"systems=\)$"):
            main_experiment.run(cfg, tmp_path / "out")
    cfg = compose_config(TINY + RUN + [f"dataset.path={folder}", "systems=[oracle]"])
    with pytest.raises(BenchError, match=rf"^systems: oracle reads the ground-truth labels, but "
                                         rf"{re.escape(str(folder))} has no labels/"):
        main_experiment.run(cfg, tmp_path / "out")
    assert not list((tmp_path / "out").glob("run_*"))


def test_check_dataset_through_the_cli(tiny, tmp_path):
    folder = _without_times(tiny, tmp_path / "notimes")
    out = tmp_path / "run"
    r = run_cli("smartvector-bench", *RUN, f"dataset.path={folder}", "systems=[plain_cosine,bm25_valid]",
                f"hydra.run.dir={out}")
    line = _one_line_error(r)
    assert line.startswith("smartvector-bench: error: systems: bm25_valid needs metadata.created_at, "
                           "metadata.valid_from, metadata.valid_to on every chunk")
    assert line.endswith(f"({folder}; drop bm25_valid from systems=)")
    assert not out.exists()  # a rejected run leaves nothing behind


def test_smartvector_ref_refuses_chunks_the_package_would_split(tiny):
    ds = load_dataset(tiny)
    r = build_retriever("smartvector_ref", compose_config()["retrievers"]["smartvector_ref"])
    r.check_dataset(ds.corpus)  # the generated chunks are short enough
    corpus = ds.corpus
    corpus.texts[3] = "This sentence is long enough to count as one. " * 6  # 276 characters, six sentences
    with pytest.raises(BenchError, match=rf"^smartvector_ref needs every chunk to stay one package chunk .*; chunk "
                                         rf"'{corpus.ids[3]}' has 276 characters and would become 2$"):
        r.check_dataset(corpus)
    corpus.texts[3] = "   "
    with pytest.raises(BenchError, match="has 3 characters and would become 0"):
        r.check_dataset(corpus)


def test_plugins_need_nothing_but_the_protocol():
    """A class with only the four members is a system; the optional capabilities are only looked for."""
    class Minimal:
        name = "m"

        def index(self, corpus, vectors, serve_time):
            self.n = len(corpus)

        def search(self, query_vectors, as_of, k, texts=None, **labels):
            from smartvector_bench.core.run import Run
            q = len(query_vectors)
            return Run(self.name, np.full((q, k), -1), np.full((q, k), np.nan), np.full(q, np.nan))

        def describe(self):
            return {}

    m = Minimal()
    assert isinstance(m, Retriever)
    assert not isinstance(m, (ChecksDataset, ReadsLabels, AuditsConsolidation, LiveStore))
