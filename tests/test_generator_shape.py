"""The versioned-policy generator (benchmark v2): the shape of each profile, determinism, counts that do not depend on
the seed or the contradiction rate, and config errors that name the key."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from data_gen.catalog import TOPICS
from data_gen.generator import Generator, catalog_families
from data_gen.params import params_from_config
from data_gen.writer import render_files, write_dataset
from smartvector_bench.core.dataset import CATEGORIES, LABEL_FILES, load_dataset
from smartvector_bench.core.errors import BenchError

from .conftest import compose_config
from .generator_cases import _cfg, _render, _rows
from .generator_cases import default_files  # noqa: F401 - the default profile (fixtures)

FILES = ["corpus.jsonl", "labels/chunks.jsonl", "labels/families.jsonl", "labels/queries.jsonl", "manifest.json",
         "qrels/dev.tsv", "qrels/test.tsv", "queries.jsonl"]


@pytest.fixture(scope="module")
def large_files() -> dict[str, str]:
    return render_files(params_from_config(compose_config(["dataset=versioned_policies_large"])["dataset"]))


# -- shape and determinism ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 42, 7])
def test_default_shape_is_258_vectors_and_138_queries(seed):
    files = _render(seed=seed)
    manifest = json.loads(files["manifest.json"])
    assert len(files["corpus.jsonl"].splitlines()) == 258
    assert len(files["queries.jsonl"].splitlines()) == 138
    assert len(files["labels/chunks.jsonl"].splitlines()) == 258
    assert len(files["labels/queries.jsonl"].splitlines()) == 138
    assert len(files["labels/families.jsonl"].splitlines()) == 12
    assert manifest["counts"]["vectors"] == 258 and manifest["counts"]["queries"] == 138
    assert manifest["counts"]["families"] == 12
    assert manifest["config"]["seed"] == seed


def test_default_profile_has_every_category(default_files):
    cats = json.loads(default_files["manifest.json"])["counts"]["queries_by_category"]
    assert set(cats) == set(CATEGORIES)


def test_large_profile_has_over_1000_queries_over_60_families(large_files):
    queries = _rows(large_files["queries.jsonl"])
    labels = _rows(large_files["labels/queries.jsonl"])
    fams = _rows(large_files["labels/families.jsonl"])
    assert len(queries) >= 1000
    assert len({r["family"] for r in labels}) >= 60
    assert len(fams) >= 60
    assert len({f["topic"] for f in fams}) == len(TOPICS)  # every topic takes part
    manifest = json.loads(large_files["manifest.json"])
    assert manifest["counts"]["queries"] == len(queries)
    assert min(manifest["counts"]["families_by_split"].values()) >= 30


def test_same_seed_and_config_give_byte_identical_files(default_files):
    again = render_files(params_from_config(compose_config()["dataset"]))  # a fresh config and generator
    assert sorted(again) == FILES
    for name in FILES:
        assert again[name] == default_files[name], name


def test_write_dataset_writes_exactly_the_rendered_files(tmp_path, default_files):
    manifest = write_dataset(params_from_config(_cfg()), tmp_path / "d")
    written = sorted(str(p.relative_to(tmp_path / "d")) for p in (tmp_path / "d").rglob("*") if p.is_file())
    assert written == FILES
    for name in FILES:
        assert (tmp_path / "d" / name).read_bytes() == default_files[name].encode("utf-8"), name
    loaded = load_dataset(tmp_path / "d")
    assert loaded.sha256 == manifest["dataset_sha256"]
    assert manifest["schema_version"] and manifest["config"]["seed"] == 42


def test_another_seed_gives_another_corpus(default_files):
    other = _render(seed=7)
    assert other["corpus.jsonl"] != default_files["corpus.jsonl"]
    assert other["labels/families.jsonl"] != default_files["labels/families.jsonl"]
    ids = {r["_id"] for r in _rows(default_files["corpus.jsonl"])}
    assert not ids & {r["_id"] for r in _rows(other["corpus.jsonl"])}
    assert json.loads(other["manifest.json"])["dataset_sha256"] != json.loads(default_files["manifest.json"])[
        "dataset_sha256"]


def _invariant_counts(files: dict[str, str]) -> dict:
    counts = json.loads(files["manifest.json"])["counts"]
    fams = _rows(files["labels/families.jsonl"])
    labels = _rows(files["labels/chunks.jsonl"])
    scen = [f["scenario"] for f in fams]
    return {
        **{k: counts[k] for k in ("vectors", "documents", "families", "queries", "families_by_split")},
        "doc_types": sorted(Counter(r["doc_type"] for r in labels).items()),
        "kinds_without_messages": sorted(Counter(r["kind"] for r in labels if r["doc_type"] != "message").items()),
        "versions": sorted(Counter(s["versions"] for s in scen).items()),
        **{key: sum(int(s[key]) for s in scen) for key in ("runbook", "rumors", "recent", "announced", "lagging",
                                                          "confirmations", "notes")},
        "queries_per_family": sorted(Counter(Counter(r["family"] for r in _rows(files["labels/queries.jsonl"]))
                                             .values()).items()),
    }


def test_counts_do_not_depend_on_the_seed(default_files):
    base = _invariant_counts(default_files)
    assert base["rumors"] == 2 * round(0.5 * 12) and base["announced"] == 3 and base["lagging"] >= 1
    for seed in (0, 1, 7):
        assert _invariant_counts(_render(seed=seed)) == base, seed


def test_contradiction_rate_keeps_families_dates_and_values(default_files):
    def timelines(files):
        return [(f["family"], f["topic"], f["timeline"]) for f in _rows(files["labels/families.jsonl"])]

    def policy_facts(files):
        labels = {r["_id"]: r for r in _rows(files["labels/chunks.jsonl"])}
        return sorted((labels[r["_id"]]["family"], r["metadata"]["version"], r["metadata"]["valid_from"], r["text"])
                      for r in _rows(files["corpus.jsonl"]) if labels[r["_id"]]["doc_type"] == "policy")

    base_t, base_p = timelines(default_files), policy_facts(default_files)
    rumors = {}
    for rate in (0.0, 0.25, 1.0):
        files = _render(contradiction_rate=rate)
        assert timelines(files) == base_t, rate
        assert policy_facts(files) == base_p, rate  # the policy documents do not move either
        rumors[rate] = sum(f["scenario"]["rumors"] for f in _rows(files["labels/families.jsonl"]))
        # rumors are added to their families' messages; every other chunk stays
        assert len(files["corpus.jsonl"].splitlines()) == 258 - 12 + rumors[rate]
    assert rumors[0.0] == 0 and rumors[0.25] == 2 * round(0.25 * 12)
    assert rumors[0.0] < rumors[0.25] < rumors[1.0]


# -- config errors ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, key", [
    ({"test_fraction": 0}, "dataset.test_fraction=0"),
    ({"test_fraction": 1}, "dataset.test_fraction=1"),
    ({"test_fraction": 0.01}, "dataset.test_fraction=0.01"),  # rounds to no family in test
    ({"n_families": len(catalog_families()) + 1}, f"dataset.n_families={len(catalog_families()) + 1}"),
    ({"colour": "red"}, "dataset.colour"),
    ({"name": "no_such_generator"}, "dataset.name=no_such_generator"),
    ({"contradiction_rate": 1.5}, "dataset.contradiction_rate"),
    ({"contradiction_rate": -0.1}, "dataset.contradiction_rate"),
    ({"versions": []}, "dataset.versions"),
    ({"publish_lead_days": [5, 1]}, "dataset.publish_lead_days"),
    ({"queries": {"current_per_family": 1, "extra": 1}}, "dataset.queries.extra"),
], ids=lambda x: "-".join(f"{k}={v}" for k, v in x.items()) if isinstance(x, dict) else None)
def test_bad_generator_config_names_the_key(changes, key):
    with pytest.raises(BenchError, match=re.escape(key)):
        Generator(params_from_config(_cfg(**changes))).generate()


@pytest.mark.parametrize("override, key", [("+dataset.colour=red", "dataset.colour"),
                                           ("dataset.name=no_such_generator", "dataset.name")])
def test_bad_override_on_the_command_line_names_the_key(override, key):
    with pytest.raises(BenchError, match=re.escape(key)):
        params_from_config(compose_config([override])["dataset"])


def test_all_families_of_the_catalog_is_allowed():
    n = len(catalog_families())
    assert len(Generator(params_from_config(_cfg(n_families=n))).plan()) == n


def test_existing_out_dir_is_not_overwritten_by_default(tmp_path):
    params = params_from_config(_cfg(n_families=2))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep.txt").write_text("mine")
    with pytest.raises(BenchError, match="overwrite=true"):
        write_dataset(params, tmp_path / "d")
    assert (tmp_path / "d" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no temp folder left behind


def test_tiny_dataset_loads_with_labels(tiny_dataset):
    loaded = load_dataset(tiny_dataset)
    assert loaded.labels is not None
    assert all((tiny_dataset / name).is_file() for name in LABEL_FILES)
    assert len(set(loaded.queries.family)) == 4
