"""Every config option composes and builds; bad input is one clear message, a non-zero exit, no output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_gen.params import params_from_config
from experiments.main import chosen_systems
from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.discovery import TABLE_ORDER
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.base import Retriever

from .conftest import compose_config

GROUPS = ("dataset", "embedder", "retriever", "weights", "experiment")
# benchmark v2: the systems of conf/config.yaml, in its order
SYSTEMS = ["plain_cosine", "bm25", "bm25_valid", "valid_cosine", "recent_cosine", "valid_authority", "hybrid_valid",
           "ltr", "lancedb_valid", "chroma_valid", "milvus_valid",
           "smartvector", "smartvector_soft", "smartvector_tuned", "smartvector_ref", "smartvector_ref_soft",
           "livevectorlake", "kg_smartvector", "metadata_filter", "oracle"]
# name -> the system whose folder holds its class (smartvector_tuned: systems/smartvector/tuned.py)
VARIANTS = {"smartvector_soft": "smartvector", "smartvector_ref_soft": "smartvector_ref",
            "smartvector_tuned": "smartvector"}
# experiment presets that run another experiment under its own name without a `preset` key
RUNS_AS = {"main_large": "main", "handbook": "main", "facts": "main"}


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml"))


def test_every_group_has_options():
    for group in GROUPS:
        assert _options(group), group


@pytest.mark.parametrize("option", _options("dataset"))
def test_dataset_options_compose_and_validate(option):
    cfg = compose_config([f"dataset={option}"])
    params_from_config(cfg["dataset"])


@pytest.mark.parametrize("option", _options("embedder"))
def test_embedder_options_compose(option):
    cfg = compose_config([f"embedder={option}"])
    assert cfg["embedder"]["kind"] in ("minilm", "hashing")
    if cfg["embedder"]["kind"] == "hashing":
        emb = build_embedder(cfg["embedder"])
        assert emb.encode(["a b"]).shape == (1, cfg["embedder"]["dim"])


@pytest.mark.parametrize("weights", _options("weights"))
def test_every_system_builds_with_every_weight_preset(weights):
    cfg = compose_config([f"weights={weights}"])
    assert sorted(cfg["retrievers"]) == _options("retriever")
    for name in chosen_systems(cfg):
        assert isinstance(build_retriever(name, cfg["retrievers"][name]), Retriever)


def test_every_configured_retriever_names_its_class():
    cfg = compose_config()
    targets = {name: cfg["retrievers"][name]["_target_"] for name in _options("retriever")}
    assert targets["bm25_valid"] == "smartvector_bench.systems.bm25.BM25Valid"  # bm25.py holds both
    for name, target in targets.items():  # a variant names the class of the system it varies
        module = {"bm25_valid": "bm25"}.get(name, VARIANTS.get(name, name))
        assert target.startswith(f"smartvector_bench.systems.{module}."), (name, target)
        assert "kind" not in cfg["retrievers"][name]
    assert sorted(TABLE_ORDER) == _options("retriever")  # the in-tree table order lists every in-tree system


@pytest.mark.parametrize("option", _options("experiment"))
def test_experiment_options_compose(option):
    from smartvector_bench.tools.cli import EXPERIMENTS

    cfg = compose_config([f"experiment={option}"])
    # an experiment runs its own function; a sweep preset runs `main` in every job and names itself `preset`;
    # main_large is the main experiment on the large dataset profile
    if option in RUNS_AS:
        assert cfg["experiment"]["name"] == RUNS_AS[option]
    else:
        assert option in (cfg["experiment"]["name"], cfg["experiment"].get("preset"))
    assert cfg["experiment"]["name"] in EXPERIMENTS
    # one way to choose systems: every preset composes every retriever config and picks with `systems`
    assert sorted(cfg["retrievers"]) == _options("retriever")
    assert set(chosen_systems(cfg)) <= set(SYSTEMS)


def test_main_large_is_main_on_the_large_profile():
    main = compose_config(["experiment=main"])
    large = compose_config(["experiment=main_large"])
    assert large["dataset"]["name"] == "versioned_policies_large"
    assert main["dataset"]["name"] == "versioned_policies"
    assert large["dataset"]["n_families"] > main["dataset"]["n_families"]
    params_from_config(large["dataset"])
    # same evaluator settings as main; every system but smartvector_ref and its soft variant (all-pairs consolidation is
    # quadratic in the corpus, see conf/experiment/main_large.yaml)
    assert large["experiment"] == main["experiment"]
    assert chosen_systems(main) == SYSTEMS
    assert chosen_systems(large) == [s for s in SYSTEMS if not s.startswith("smartvector_ref")]
    assert {k: v for k, v in large["dataset"].items() if k not in ("name", "n_families")} == \
        {k: v for k, v in main["dataset"].items() if k not in ("name", "n_families")}


def test_shortcut_audit_composes_and_is_an_experiment():
    from smartvector_bench.tools.cli import EXPERIMENTS, experiment_module

    cfg = compose_config(["experiment=shortcut_audit"])
    exp = cfg["experiment"]
    assert exp["name"] == "shortcut_audit" and "shortcut_audit" in EXPERIMENTS
    assert exp["profiles"] == ["versioned_policies", "versioned_policies_large"]
    for profile in exp["profiles"]:
        assert (Path(CONF_DIR) / "dataset" / f"{profile}.yaml").is_file()
    assert exp["seeds"] and all(isinstance(s, int) for s in exp["seeds"])
    assert 0.0 <= exp["max_surface_gain"] <= 1.0
    module = experiment_module("shortcut_audit")
    assert module.__name__ == "experiments.shortcut_audit" and callable(module.run)
    with pytest.raises(BenchError, match="unknown; allowed: .*shortcut_audit"):
        experiment_module("shortcut_audits")


def test_same_dataset_keys_mean_the_same_to_both_apps():
    gen = compose_config(["dataset.seed=7", "out_dir=x"], name="gen")
    bench = compose_config(["dataset.seed=7"])
    assert gen["dataset"] == bench["dataset"]


def test_systems_selection():
    cfg = compose_config()
    everything = chosen_systems(cfg)
    assert sorted(everything) == sorted(SYSTEMS) == _options("retriever")
    assert everything == list(cfg["retrievers"]) == SYSTEMS  # in the table order (smartvector_bench/systems/discovery.py)
    assert chosen_systems(compose_config(["systems=[smartvector]"])) == ["smartvector"]
    assert chosen_systems(compose_config(["systems=[oracle,metadata_filter,bm25]"])) == \
        ["oracle", "metadata_filter", "bm25"]  # in the order asked for
    with pytest.raises(BenchError, match="unknown system 'bogus'; allowed: " + ", ".join(SYSTEMS) + "$"):
        chosen_systems(compose_config(["systems=[bogus]"]))
    with pytest.raises(BenchError, match="unknown system 'bogus'"):
        chosen_systems(compose_config(["systems=[plain_cosine,bogus]"]))
    with pytest.raises(BenchError, match="listed twice"):
        chosen_systems(compose_config(["systems=[bm25,bm25]"]))
    with pytest.raises(BenchError, match=r"systems=\[\]: choose at least one"):
        chosen_systems(compose_config(["systems=[]"]))


# --- the CLI: clear message, non-zero exit, nothing half-written -----------------------------------------

BAD_INPUT = [
    (["systems=[nope]"], "unknown system 'nope'; allowed: " + ", ".join(SYSTEMS)),
    (["retrievers.smartvector.weights.temporal=-0.25"], "retrievers.smartvector.weights.temporal=-0.25: must be a finite number >= 0"),
    (["dataset.contradiction_rate=1.5"], "dataset.contradiction_rate=1.5: must be a number in [0, 1]"),
    (["retrievers.smartvector.dormant=sleepy"], "retrievers.smartvector.dormant=sleepy: unknown; allowed: deprioritize, include, exclude"),
    (["embedder=hashing", "embedder.kind=magic"], "embedder.kind=magic: unknown; allowed: minilm, hashing"),
]


@pytest.mark.parametrize("overrides, message", BAD_INPUT)
def test_bad_input_exits_with_one_clear_line(cli, tmp_path, overrides, message):
    out = tmp_path / "run"
    r = cli("smartvector-bench", *overrides, f"hydra.run.dir={out}")
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert not out.exists()  # not even Hydra's .hydra/ and log: a rejected config leaves nothing


def test_unknown_experiment_lists_the_options(cli, tmp_path):
    r = cli("smartvector-bench", "experiment=nope", f"hydra.run.dir={tmp_path / 'run'}")
    assert r.returncode != 0
    assert "experiment/nope" in r.stderr and "main" in r.stderr
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_malformed_dataset_file_names_file_and_line(cli, tiny_dataset, tmp_path):
    lines = (tiny_dataset / "corpus.jsonl").read_text().splitlines()
    lines[3] = lines[3][:20]
    (tiny_dataset / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    (tiny_dataset / "manifest.json").unlink()
    r = cli("smartvector-bench", f"dataset.path={tiny_dataset}", "embedder=hashing",
            f"hydra.run.dir={tmp_path / 'run'}")
    assert r.returncode == 2
    assert f"{tiny_dataset}/corpus.jsonl:4: not valid JSON" in r.stderr
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_gen_cli_is_deterministic_and_refuses_to_overwrite(cli, tmp_path):
    args = ["dataset.n_families=3", "dataset.seed=5"]
    a = cli("smartvector-gen", *args, f"out_dir={tmp_path / 'a'}")
    b = cli("smartvector-gen", *args, f"out_dir={tmp_path / 'b'}")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    again = cli("smartvector-gen", *args, f"out_dir={tmp_path / 'a'}")
    assert again.returncode == 2 and "overwrite=true" in again.stderr
    missing = cli("smartvector-gen", *args)
    assert missing.returncode == 2 and "out_dir" in missing.stderr
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["config"]["seed"] == 5 and manifest["config"]["n_families"] == 3
