"""The shortcut audit: cue rules learned on dev must find a planted cue, ignore a useless one, and start from
exactly valid_cosine."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.shortcut_audit import run as run_audit
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus, Labels, Queries, load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.systems import build_retriever
from smartvector_bench.core.shortcuts import audit, learn_set

from .conftest import compose_config, write_tiny


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
            "authority"} <= set(rules)
    assert result["summary"]["worst_surface_rule"] is not None
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
