"""kg_smartvector: the retriever of the SmartVector spec for sqlite-knowledge-graph end to end (the graph
written to a real SQLite file, the four signals at each query's as_of, weights, config, the main
experiment)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from omegaconf import OmegaConf

from experiments.main import run
from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.kg_smartvector.store import KnowledgeGraph
from smartvector_bench.systems import build_retriever

from .conftest import TINY, compose_config


# ---- the retriever -------------------------------------------------------------------------------------------

INF = np.inf


KG_TARGET = "smartvector_bench.systems.kg_smartvector.retriever.KGSmartVector"


def kg_cfg(**overrides) -> dict:
    cfg = OmegaConf.to_container(OmegaConf.load(f"{CONF_DIR}/retriever/kg_smartvector.yaml"), resolve=True)
    cfg.update(overrides)
    return cfg


def tiny_corpus() -> tuple[Corpus, np.ndarray]:
    """c0 policy v1 [0, 100); c1 v2 (created 90, valid from 100) supersedes c0; c2 runbook depends on c0; c3
    depends on c2; c4 a recent rumor; c5 created after serve time (130)."""
    rows = [
        {"created": 0.0, "vf": 0.0, "vt": 100.0, "auth": 0.9, "v": [1, 0, 0], "src": "policy_doc", "ver": 1},
        {"created": 90.0, "vf": 100.0, "vt": INF, "auth": 0.9, "v": [0.99, 0.14, 0], "sup": 0, "src": "policy_doc", "ver": 2},
        {"created": 10.0, "vf": 10.0, "vt": INF, "auth": 0.85, "v": [0, 1, 0], "dep": [0], "src": "technical_doc", "ver": 1},
        {"created": 20.0, "vf": 20.0, "vt": INF, "auth": 0.85, "v": [0, 0.7, 0.7], "dep": [2], "src": "technical_doc", "ver": 1},
        {"created": 125.0, "vf": 125.0, "vt": INF, "auth": 0.3, "v": [0.9, 0, 0.43], "src": "slack", "ver": 1},
        {"created": 200.0, "vf": 200.0, "vt": INF, "auth": 0.9, "v": [1, 0, 0], "src": "policy_doc", "ver": 3},
    ]
    n = len(rows)
    corpus = Corpus(
        ids=[f"c{i}" for i in range(n)], titles=[""] * n, texts=[f"t{i}" for i in range(n)],
        doc_id=np.array(["pol", "pol", "rb", "rb", "chat", "pol"], dtype=object),
        offset_start=np.array([0, 0, 0, 3, 0, 0], dtype=np.int64),  # c3 follows c2 in the runbook ("t2\nt3")
        offset_end=np.array([2, 2, 2, 5, 2, 2], dtype=np.int64),
        version=np.array([r["ver"] for r in rows], dtype=np.int64),
        source=np.array([r["src"] for r in rows], dtype=object),
        authority=np.array([r["auth"] for r in rows]),
        created_at=np.array([r["created"] for r in rows]),
        valid_from=np.array([r["vf"] for r in rows]), valid_to=np.array([r["vt"] for r in rows]),
        depends_on=Ragged.from_lists([r.get("dep", []) for r in rows]),
        supersedes=np.array([r.get("sup", -1) for r in rows], dtype=np.int64),
        index_of={f"c{i}": i for i in range(n)})
    v = np.array([r["v"] for r in rows], dtype=np.float32)
    return corpus, v / np.linalg.norm(v, axis=1, keepdims=True)


def test_retriever_writes_the_graph_to_a_real_sqlite_file(tmp_path):
    corpus, vectors = tiny_corpus()
    path = tmp_path / "db" / "kg.sqlite"
    r = build_retriever("kg_smartvector", kg_cfg(db_path=str(path), decay_rate=0.01))
    r.index(corpus, vectors, serve_time=130.0)
    info = r.describe()
    assert info["db_path"] == str(path) and info["schema_version"] == 3 and info["journal_mode"] == "wal"
    r.close()
    with KnowledgeGraph(path) as kg:  # reopen the file independently
        ents = kg.query_entities()
        assert [e["name"] for e in ents] == ["c0", "c1", "c2", "c3", "c4"]  # c5: created after serve time
        e0, e1 = ents[0], ents[1]
        # no family: a retriever never sees the generator's labels
        assert e0["properties"] == {"chunk_id": "c0", "doc_id": "pol", "version": 1, "source": "policy_doc"}
        assert (e0["base_confidence"], e0["decay_rate"], e0["valid_from"], e0["valid_until"]) == (0.9, 0.01, 0, 100)
        assert (e1["valid_from"], e1["valid_until"], e1["created_at"]) == (100.0, None, 90.0)
        _ids, mat = kg.vectors()
        np.testing.assert_allclose(mat, vectors[:5], atol=1e-7)
        name = {e["id"]: e["name"] for e in ents}
        deps = kg.dependencies()
        assert sorted(zip([name[s] for s in deps["source"]], [name[t] for t in deps["target"]],
                          deps["dep_type"].tolist(), deps["created_at"].tolist())) == [
            ("c1", "c0", "supersedes", 90.0), ("c2", "c0", "depends_on", 10.0), ("c3", "c2", "depends_on", 20.0)]
        # the ripple ran for c0 at its successor's valid_from (100): c2 hop 1 (0.15), c3 hop 2 (0.075)
        log = kg.confidence_log()
        assert [(name[r["entity_id"]], r["timestamp"], r["reason"]) for r in log] == [
            ("c2", 100.0, f"ripple from entity {e0['id']} at depth 1"),
            ("c3", 100.0, f"ripple from entity {e0['id']} at depth 2")]
        c2 = ents[2]["id"]
        assert kg.get_confidence(c2, 99.0) == pytest.approx(0.85 * math.exp(-0.01 * 89))
        assert kg.get_confidence(c2, 100.0) == pytest.approx(0.85 * math.exp(-0.01 * 90) - 0.15)
    with pytest.raises(BenchError, match=r"retrievers\.kg_smartvector\.db_path=.*file exists"):
        build_retriever("kg_smartvector", kg_cfg(db_path=str(path))).index(corpus, vectors, 130.0)


def test_retriever_four_signals_at_each_queries_as_of():
    corpus, vectors = tiny_corpus()
    r = build_retriever("kg_smartvector", kg_cfg(decay_rate=0.01))
    r.index(corpus, vectors, serve_time=130.0)
    q = np.array([[1, 0, 0], [1, 0, 0]], dtype=np.float32)
    as_of = np.array([130.0, 50.0])
    sig = r.signals(q, as_of)
    # temporal: the superseded c0 is 30 days past its valid_until at 130; c1 is 50 days before its start at 50
    assert sig["temporal"][0, 0] == pytest.approx(math.exp(-0.05 * 30)) and sig["temporal"][0, 0] < 1
    assert sig["temporal"][0, 1] == 1.0 and sig["temporal"][1, 0] == 1.0
    assert sig["temporal"][1, 1] == pytest.approx(math.exp(-0.05 * 50))
    # confidence at each as_of: c2 has the ripple penalty at 130, not at 50
    assert sig["confidence"][0, 2] == pytest.approx(0.85 * math.exp(-0.01 * 120) - 0.15)
    assert sig["confidence"][1, 2] == pytest.approx(0.85 * math.exp(-0.01 * 40))
    assert sig["confidence"][0, 4] == pytest.approx(0.3 * math.exp(-0.01 * 5))
    # graph importance: rows c2 -> c0, c3 -> c2 (the supersedes row excluded), c1 and c4 isolated: the chain
    # 3 -> 2 -> 0 of the closed-form test above with one more isolated node gives the same normalised values
    np.testing.assert_allclose(sig["relational"][0, :5], [1, 1 / 2.5725, 1.85 / 2.5725, 1 / 2.5725, 1 / 2.5725],
                               atol=1e-9)
    # as of 15 only c2 -> c0 exists (c3's row is created at 20)
    assert sig["relational"][0, 3] != pytest.approx(r.signals(q[:1], np.array([15.0]))["relational"][0, 3])
    # at 50: c1 (created 90) and c4 (125) are not candidates yet; c5 was never ingested
    assert sig["candidate"][1].tolist() == [True, False, True, True, False, False]
    assert sig["candidate"][0].tolist() == [True] * 5 + [False]
    assert np.isnan(sig["final"][:, 5]).all()
    # the final score is the weighted sum (default weights sum to 1)
    expected = (0.5 * np.clip(sig["semantic"], 0, 1) + 0.2 * sig["temporal"] + 0.2 * sig["confidence"]
                + 0.1 * sig["relational"])
    np.testing.assert_allclose(sig["final"][:, :5], expected[:, :5])

    run_ = r.search(q, as_of, k=6)
    assert run_.ranked[0, 0] == 1    # the current version, though c0's cosine is higher
    assert run_.ranked[1, 0] == 0    # as of 50, the version then in force
    assert 5 not in run_.ranked[0] and run_.ranked[1, 4:].tolist() == [-1, -1]
    np.testing.assert_allclose(run_.confidence, [sig["final"][0, 1], sig["final"][1, 0]])
    assert ((run_.confidence >= 0) & (run_.confidence <= 1)).all()
    # each query judged at its own as_of: batching does not matter
    alone = r.search(q[1:], as_of[1:], k=6)
    np.testing.assert_array_equal(alone.ranked[0], run_.ranked[1])


def test_retrieval_weights_are_settable():
    corpus, vectors = tiny_corpus()
    r = build_retriever("kg_smartvector", kg_cfg())
    r.index(corpus, vectors, serve_time=130.0)
    q = np.array([[1, 0, 0]], dtype=np.float32)
    assert r.search(q, np.array([130.0]), 3).ranked[0, 0] == 1
    r.set_retrieval_weights(1.0, 0.0, 0.0, 0.0)  # cosine alone: the superseded c0 wins (cos 1 vs 0.99)
    run_ = r.search(q, np.array([130.0]), 3)
    assert run_.ranked[0].tolist() == [0, 1, 4]
    assert run_.confidence[0] == pytest.approx(1.0)
    r.set_retrieval_weights(0.0, 2.0, 0.0, 0.0)  # temporal alone (normalised): ties go to the lower index
    run_ = r.search(q, np.array([130.0]), 5)
    assert run_.ranked[0].tolist() == [1, 2, 3, 4, 0] and run_.confidence[0] == 1.0
    with pytest.raises(BenchError, match=r"set_retrieval_weights\.temporal=-1: must be a finite number >= 0"):
        r.set_retrieval_weights(1, -1, 0, 0)


def test_search_reads_the_database_not_a_cache(tmp_path):
    """A write through another connection to the same file changes the next search."""
    corpus, vectors = tiny_corpus()
    path = tmp_path / "kg.sqlite"
    r = build_retriever("kg_smartvector", kg_cfg(db_path=str(path)))
    r.index(corpus, vectors, serve_time=130.0)
    q, t = np.array([[1, 0, 0]], dtype=np.float32), np.array([130.0])
    first = r.search(q, t, 3)
    assert first.ranked[0, 0] == 1
    with KnowledgeGraph(path) as other:
        c1 = other.query_entities(created_after=90.0, created_before=91.0)[0]["id"]
        other.update_confidence(c1, -1.0, at=129.0, reason="test")
        other.conn.execute("UPDATE kg_entities SET valid_until = 110 WHERE id = ?", (c1,))
    again = r.search(q, t, 3)
    assert again.ranked[0, 0] != 1 and again.scores[0, 0] < first.scores[0, 0]


def test_in_degree_mode_is_selectable_and_raises_the_superseded_version():
    corpus, vectors = tiny_corpus()
    r = build_retriever("kg_smartvector", kg_cfg(graph_importance="in_degree"))
    r.index(corpus, vectors, serve_time=130.0)
    g = r.signals(np.array([[1, 0, 0]], dtype=np.float32), np.array([130.0]))["relational"][0]
    # rows by target: c0 has c2's depends_on and c1's supersedes (2), c2 has 1
    np.testing.assert_allclose(g[:5], [1.0, 0.0, 0.5, 0.0, 0.0])


@pytest.mark.parametrize("overrides, message", [
    ({"colour": 1}, r"retrievers\.kg_smartvector\.colour: unknown key"),
    ({"decay_rate": -0.1}, r"retrievers\.kg_smartvector\.decay_rate=-0\.1: must be a finite number >= 0"),
    ({"ripple_penalty": -1}, r"retrievers\.kg_smartvector\.ripple_penalty=-1: must be a finite number >= 0"),
    ({"ripple_max_depth": 1.5}, r"retrievers\.kg_smartvector\.ripple_max_depth=1\.5: must be an integer >= 0"),
    ({"damping": 1.0}, r"retrievers\.kg_smartvector\.damping=1\.0: must be in \[0, 1\)"),
    ({"graph_importance": "hits"}, (r"retrievers\.kg_smartvector\.graph_importance=hits: unknown; allowed: "
                                   r"pagerank, in_degree")),
    ({"weights": {"semantic": -0.5}}, r"retrievers\.kg_smartvector\.weights\.semantic=-0\.5: must be a finite number >= 0"),
    ({"weights": {"lexical": 0.5}}, r"retrievers\.kg_smartvector\.weights\.lexical: unknown weight"),
    ({"db_path": 3}, r"retrievers\.kg_smartvector\.db_path=3: must be null"),
    ({"query_batch": 0}, r"retrievers\.kg_smartvector\.query_batch=0: must be an integer > 0"),
])
def test_config_is_validated(overrides, message):
    with pytest.raises(BenchError, match=message):
        build_retriever("kg_smartvector", kg_cfg(**overrides))


def test_config_defaults_are_the_specs():
    r = build_retriever("kg_smartvector", kg_cfg())
    w = r.weights
    assert (w.semantic, w.temporal, w.confidence, w.relational) == (0.5, 0.2, 0.2, 0.1)
    p = r.params
    assert (p.decay_rate, p.access_bonus, p.graph_importance, p.damping, p.ripple_penalty) == \
        (0.05, 0.1, "pagerank", 0.85, 0.15)
    assert r.db_path is None
    bare = build_retriever("kg_smartvector", {"_target_": KG_TARGET})  # no weights key: the spec's defaults
    assert bare.weights == w


def test_main_experiment_on_the_tiny_dataset(tmp_path):
    cfg = compose_config(TINY + ["embedder=hashing", "systems=[plain_cosine,kg_smartvector]"])
    assert cfg["retrievers"]["kg_smartvector"]["_target_"] == KG_TARGET
    metrics = run(cfg, tmp_path / "run")
    assert list(metrics["systems"]) == ["plain_cosine", "kg_smartvector"]
    n = metrics["dataset"]["n_queries"]
    for split in ("dev", "test"):
        m = metrics["systems"]["kg_smartvector"][split]
        for key in ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5"):
            assert 0.0 <= m[key] <= 1.0, (split, key)
        assert 0.0 <= m["mcnemar_p"] <= 1.0
        assert sum(m["ece_bins"]["counts"]) == m["n_queries"]
    info = metrics["system_info"]["kg_smartvector"]
    assert info["schema_version"] == 3 and info["journal_mode"] == "wal"
    assert info["counts"]["entities"] <= metrics["dataset"]["n_vectors"]
    assert info["counts"]["dependencies_supersedes"] > 0 and info["counts"]["ripple_rows"] > 0
    lines = (tmp_path / "run" / "run_kg_smartvector.jsonl").read_text().splitlines()
    assert len(lines) == n + 1
    assert "| kg_smartvector |" in (tmp_path / "run" / "table.md").read_text()
