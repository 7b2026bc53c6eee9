"""The shortcut audit: cue rules learned on dev must find a planted cue, ignore a useless one, and start from exactly
valid_cosine; the experiment writes its table, refuses data it cannot audit, bars surface_gbm in its summary,
reports the metadata rules, and computes its diagnostics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.shortcut_audit import run as run_audit
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus, Labels, Queries, load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.systems import build_retriever
from experiments.shortcut_audit_rules import audit, learn_set

from .conftest import compose_config, write_tiny
from .shortcut_cases import _corpus


def _toy(n_fam: int = 20, seed: int = 0):
    """Per family: an answer chunk and a distractor with a higher cosine; a planted cue marks the answer."""
    rng = np.random.default_rng(seed)
    n = 2 * n_fam
    ids = [f"c{int(rng.integers(16 ** 10)):010x}" for _ in range(n)]
    corpus = Corpus(
        ids=ids, titles=[""] * n, texts=["x 1"] * n, doc_id=np.array([f"d{i}" for i in range(n)], dtype=object),
        version=np.ones(n, dtype=np.int64), source=np.array(["wiki"] * n, dtype=object), authority=np.full(n, 0.5),
        created_at=np.zeros(n), valid_from=np.zeros(n), valid_to=np.full(n, np.inf),
        depends_on=Ragged.from_lists([[] for _ in range(n)]), supersedes=np.full(n, -1, dtype=np.int64),
        offset_start=np.zeros(n, dtype=np.int64), offset_end=np.ones(n, dtype=np.int64),
        index_of={c: i for i, c in enumerate(ids)})
    answer = np.arange(0, n, 2)
    cos = np.full((n_fam, n), 0.1)
    cos[np.arange(n_fam), answer] = 0.5
    cos[np.arange(n_fam), answer + 1] = 0.6  # the distractor wins on cosine
    fam = np.array([f"f{i}" for i in range(n_fam)], dtype=object)
    queries = Queries(
        ids=[f"q{i}" for i in range(n_fam)], texts=[""] * n_fam, query_time=np.ones(n_fam), as_of=np.ones(n_fam),
        category=np.array(["current"] * n_fam, dtype=object),
        split=np.array(["dev" if i % 2 else "test" for i in range(n_fam)], dtype=object),
        relevant=Ragged.from_lists([[int(a)] for a in answer]), grades=Ragged.from_lists([[2]] * n_fam),
        stale=Ragged.from_lists([[] for _ in range(n_fam)]), rumor=Ragged.from_lists([[] for _ in range(n_fam)]),
        family=fam)
    kind = np.array(["statement" if i % 2 == 0 else "scope" for i in range(n)], dtype=object)
    labels = Labels(chunk_family=np.repeat(fam, 2), chunk_doc_type=np.array(["policy"] * n, dtype=object),
                    chunk_kind=kind, chunk_value=np.where(np.arange(n) % 2 == 0, 1.0, np.nan), query_family=fam,
                    query_asks=np.array(["policy"] * n_fam, dtype=object), timelines={})
    return cos, corpus, queries, labels


def test_a_planted_cue_is_found_and_a_useless_one_is_not():
    cos, corpus, queries, labels = _toy()
    out = audit(cos, corpus, queries, labels, cues=("kind", "id_pattern", "has_digit"))
    assert out["rules"]["valid_cosine"]["test_top1"] == 0.0  # the distractor always wins on cosine
    assert out["rules"]["kind"]["keep"] == ["statement"]
    assert out["rules"]["kind"]["test_top1"] == 1.0
    assert out["rules"]["has_digit"]["test_gain"] == 0.0  # every text has a digit: nothing to learn
    assert out["rules"]["id_pattern"]["test_gain"] <= 0.5  # random ids: what dev learns does not carry over


def test_learn_set_prefers_keeping_everything_on_ties():
    # Two levels, neither changes anything: the full set (= valid_cosine) is kept.
    table = np.array([[[0.5, 0.0], [0.4, 1.0]]])
    hit = np.array([[True, False]])
    assert learn_set(table, hit, ["a", "b"]).tolist() == [True, True]


def test_audit_baseline_is_the_valid_cosine_system(tmp_path):
    folder = write_tiny(tmp_path / "ds")
    ds = load_dataset(folder)
    emb = build_embedder({"kind": "hashing", "dim": 64})
    cv, qv = emb.encode(ds.corpus.texts), emb.encode(ds.queries.texts)
    out = audit(qv @ cv.T, ds.corpus, ds.queries, ds.labels)
    r = build_retriever("valid_cosine", {"_target_": "smartvector_bench.systems.valid_cosine.ValidCosine"})
    r.index(ds.corpus, cv, 0.0)
    run = r.search(qv, ds.queries.as_of, 10)
    expected = ds.queries.relevant.contains(run.top1)
    assert np.array_equal(out["correct"]["valid_cosine"], expected)


@pytest.mark.slow
def test_experiment_writes_its_table(tmp_path):
    cfg = compose_config(["experiment=shortcut_audit", "embedder=hashing", "experiment.seeds=[1]",
                          "experiment.profiles=[versioned_policies]", "experiment.progress=false"])
    result = run_audit(cfg, tmp_path)
    assert (tmp_path / "table.md").read_text().startswith("# Shortcut audit")
    doc = json.loads((tmp_path / "shortcut_audit.json").read_text())
    rules = doc["summary"]["by_profile"]["versioned_policies"]
    assert {"valid_cosine", "kind", "position", "dependency_target", "id_pattern", "has_digit", "source",
            "authority", "hedge", "certainty", "length_rank", "length_bin", "digit_count", "surface_gbm",
            "email_source", "newest_created"} <= set(rules)
    assert rules["surface_gbm"]["kind"] == "surface" and rules["newest_created"]["kind"] == "metadata"
    assert result["summary"]["worst_surface_rule"] is not None
    assert result["summary"]["worst_metadata_rule"] is not None
    gbm = doc["runs"][0]["rules"]["surface_gbm"]
    assert set(gbm["importance"]) == set(doc["experiment"]["surface_gbm"]["features"])
    diag = doc["diagnostics"]["versioned_policies"]["1"]
    assert {"by_class", "by_judgment"} <= set(diag["hedge"]) and "policy" in diag["longest_section"]
    assert "**Diagnostics**" in (tmp_path / "table.md").read_text()
    rows = (tmp_path / "shortcut_audit.csv").read_text().splitlines()
    assert rows[0].startswith("profile,seed,dataset_sha256,rule")
    assert len(rows) == 1 + len(rules)


def test_an_external_dataset_or_an_unlabelled_profile_is_refused_in_one_line(tmp_path):
    from smartvector_bench.core.errors import BenchError

    base = ["experiment=shortcut_audit", "embedder=hashing", "experiment.seeds=[1]", "experiment.progress=false"]
    with pytest.raises(BenchError, match=rf"^dataset\.path={tmp_path}: experiment=shortcut_audit does not read a "
                                         r"dataset folder; [^\n]*labels/[^\n]*$"):
        run_audit(compose_config(base + [f"dataset.path={tmp_path}"]), tmp_path / "out")
    with pytest.raises(BenchError, match=r"^experiment\.profiles: 'lvl_corpus' is a lvl_corpus dataset, without the "
                                         r"labels/"):
        run_audit(compose_config(base + ["experiment.profiles=[lvl_corpus]"]), tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- the experiment's summary, table and diagnostics ------------------------------------------------------------


def test_summary_bars_surface_gbm_and_reports_metadata_beside_it():
    import pandas as pd

    from experiments.shortcut_audit import CSV_FIELDS, render, summarise

    rows = [{"profile": "p", "seed": 1, "dataset_sha256": "x", "rule": rule, "kind": kind, "keep": "",
             "dev_top1": 0.5, "test_top1": 0.5 + gain, "test_gain": gain, "n_test": 10, "n_test_families": 2}
            for rule, kind, gain in (("source", "trust", 0.3), ("newest_created", "metadata", 0.1),
                                     ("valid_cosine", "baseline", 0.0), ("surface_gbm", "surface", 0.08),
                                     ("hedge", "surface", 0.01), ("email_source", "metadata", 0.0))]
    summary = summarise(pd.DataFrame(rows, columns=list(CSV_FIELDS)), 0.05)
    assert summary["worst_surface_rule"] == "p/surface_gbm" and not summary["surface_within_bar"]
    assert summary["worst_metadata_rule"] == "p/newest_created" and not summary["metadata_within_bar"]
    assert summary["worst_metadata_mean_gain"] == 0.1
    text = render({"summary": summary, "experiment": {"seeds": [1]}})
    order = [line.split(" | ")[0].lstrip("| ") for line in text.splitlines() if line.startswith("| ")][1:]
    assert order == ["valid_cosine", "hedge", "surface_gbm", "email_source", "newest_created", "source"]
    assert "+8.0 points (p/surface_gbm), **above** the bar of 5 points" in text
    assert "metadata rule: +10.0 points (p/newest_created), **above** the bar" in text
    ok = summarise(pd.DataFrame([r for r in rows if r["rule"] != "surface_gbm"], columns=list(CSV_FIELDS)), 0.05)
    assert ok["surface_within_bar"] and ok["worst_surface_rule"] == "p/hedge"


def test_diagnostics_hedges_by_message_class_and_longest_sections():
    from experiments.shortcut_audit import diagnostics, render_diagnostics
    from smartvector_bench.core.evaluation.judgments import Timeline

    texts = ["Confirmed: it is 1.", "I heard it is 3, pretty sure.", "Please note: from day 50 it is 2.",
             "Pretty sure it's 1.", "Town hall on Friday.",
             "statement long long long", "scope", "statement", "scope long long long long",
             "prerequisite long long long", "verification", "statement"]
    n = len(texts)
    corpus = _corpus(texts, doc_id=["m0", "m1", "m2", "m3", "m4", "p", "p", "p", "p", "r", "r", "r"],
                     version=[1, 1, 1, 1, 1, 1, 1, 2, 2, 1, 1, 1], offsets=[0, 0, 0, 0, 0, 0, 30, 0, 30, 0, 30, 60],
                     created=[10, 20, 45, 60, 5, 0, 0, 50, 50, 0, 0, 0])
    doc_type = ["message"] * 5 + ["policy"] * 4 + ["runbook"] * 3
    kind = ["statement"] * 4 + ["note", "statement", "scope", "statement", "scope", "prerequisite", "verification",
                                "statement"]
    value = [1, 3, 2, 1, np.nan] + [np.nan] * 7
    labels = Labels(chunk_family=np.array(["f"] * n, dtype=object), chunk_doc_type=np.array(doc_type, dtype=object),
                    chunk_kind=np.array(kind, dtype=object), chunk_value=np.array(value, dtype=float),
                    query_family=np.array(["f"], dtype=object), query_asks=np.array(["policy"], dtype=object),
                    timelines={"f": Timeline(np.array([0.0, 50.0]), np.array([1.0, 2.0]))})
    queries = Queries(ids=["q"], texts=[""], query_time=np.ones(1), as_of=np.ones(1),
                      category=np.array(["current"], dtype=object), split=np.array(["test"], dtype=object),
                      relevant=Ragged.from_lists([[0]]), grades=Ragged.from_lists([[2]]),
                      stale=Ragged.from_lists([[]]), rumor=Ragged.from_lists([[1, 3]]),
                      family=np.array(["f"], dtype=object))
    d = diagnostics(corpus, queries, labels)
    by = d["hedge"]["by_class"]
    assert {c: by[c]["n"] for c in by} == {"rumor": 2, "announcement": 1, "right_when_written": 1, "no_value": 1}
    assert by["rumor"]["hedged"] == 1.0 and by["rumor"]["mean_hedges"] == 1.5
    assert by["right_when_written"]["hedged"] == 0.0 and by["right_when_written"]["certain"] == 1.0
    assert by["announcement"]["certain"] == 1.0
    assert d["hedge"]["by_judgment"]["in_a_rumor_set"] == {"n": 2, "hedged": 1.0, "mean_hedges": 1.5,
                                                            "certain": 0.0}
    assert d["longest_section"]["policy"] == {"versions": 2, "chance": 0.5,
                                              "longest_share": {"statement": 0.5, "scope": 0.5}}
    runbook = d["longest_section"]["runbook"]
    assert runbook["longest_share"] == {"statement": 0.0, "prerequisite": 1.0, "verification": 0.0}
    assert runbook["chance"] == pytest.approx(1 / 3)
    text = "\n".join(render_diagnostics({"p": {"1": d}}))
    assert "| p | 100.0% (0.0%; n=2) | 0.0% (100.0%; n=1) | 0.0% (100.0%; n=1) | 0.0% (0.0%; n=1) |" in text
    assert "| p | runbook | 1 | prerequisite 100.0%, statement 0.0%, verification 0.0% | 33.3% |" in text
