"""Retrievers on hand-made corpora with synthetic unit vectors (no model)."""


import numpy as np
import pytest
from omegaconf import OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever

from .factories import make_corpus


def default_sv_cfg() -> dict:
    cfg = OmegaConf.load(f"{CONF_DIR}/retriever/smartvector.yaml")
    cfg = OmegaConf.merge(cfg, {"weights": OmegaConf.load(f"{CONF_DIR}/weights/paper.yaml")})
    return OmegaConf.to_container(cfg, resolve=True)


def vecs(*rows) -> np.ndarray:
    v = np.array(rows, dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def unrelated_corpus(n: int) -> Corpus:
    return make_corpus([{"text": f"w{i} z{i}", "doc": f"d{i}", "authority": 0.9, "created": 0.0}
                        for i in range(n)])


# ---- building --------------------------------------------------------------------------------------------

def test_build_needs_a_target():
    with pytest.raises(BenchError, match=r"^retrievers\.nope\._target_: missing"):
        build_retriever("nope", {})
    with pytest.raises(BenchError, match=r"^retrievers\.nope\.kind: replaced by _target_"):
        build_retriever("nope", {"kind": "plain_cosine"})  # a config from before the plug-in layer


# ---- plain cosine ----------------------------------------------------------------------------------------

CORPUS4 = vecs([1, 0, 0], [0.8, 0.6, 0], [0, 1, 0], [-1, 0, 0])


def plain(vectors: np.ndarray):
    r = build_retriever("plain_cosine", {"_target_": "smartvector_bench.systems.plain_cosine.PlainCosine"})
    r.index(unrelated_corpus(len(vectors)), vectors, 0.0)
    return r


def test_plain_cosine_order_scores_and_confidence():
    r = plain(CORPUS4)
    run = r.search(vecs([1, 0, 0], [0, 1, 0], [-1, 0, 0]), np.zeros(3), 4)
    assert run.system == "plain_cosine"
    # q0 cosines [1, 0.8, 0, -1]; q1 [0, 0.6, 1, 0] (0 and 3 tie at 0 -> lower index first); q2 [-1, -0.8, 0, 1]
    assert run.ranked.tolist() == [[0, 1, 2, 3], [2, 1, 0, 3], [3, 2, 1, 0]]
    np.testing.assert_allclose(run.scores, [[1, 0.8, 0, -1], [1, 0.6, 0, 0], [1, 0, -0.8, -1]], atol=1e-6)
    np.testing.assert_allclose(run.confidence, [1.0, 1.0, 1.0], atol=1e-6)


def test_plain_cosine_confidence_clipped_top1():
    r = plain(vecs([1, 0, 0], [0.6, 0.8, 0]))
    run = r.search(vecs([-1, 0, 0], [0.8, 0.6, 0]), np.zeros(2), 2)
    # q0: cosines [-1, -0.6] -> top-1 is c1 at -0.6, confidence clipped to 0
    # q1: cosines [0.8, 0.48 + 0.48 = 0.96] -> top-1 c1, confidence 0.96
    assert run.ranked.tolist() == [[1, 0], [1, 0]]
    np.testing.assert_allclose(run.confidence, [0.0, 0.96], atol=1e-6)
    np.testing.assert_allclose(run.scores[0], [-0.6, -1.0], atol=1e-6)


def test_plain_cosine_exact_ties_lower_index_first():
    v = vecs(*([[0, 1, 0]] + [[1, 0, 0]] * 40))  # 40 identical vectors at 1..40
    r = plain(v)
    run = r.search(vecs([1, 0, 0]), np.zeros(1), 3)
    assert run.ranked.tolist() == [[1, 2, 3]]
    np.testing.assert_allclose(run.confidence, [1.0], atol=1e-6)


def test_plain_cosine_pads_when_k_exceeds_corpus():
    r = plain(CORPUS4[:2])
    run = r.search(vecs([1, 0, 0]), np.zeros(1), 10)
    assert run.ranked.tolist() == [[0, 1] + [-1] * 8]
    assert np.isnan(run.scores[0, 2:]).all()


# ---- SmartVector -----------------------------------------------------------------------------------------

def smartvector(corpus: Corpus, vectors: np.ndarray, serve_time: float, **overrides):
    cfg = default_sv_cfg()
    cfg.update(overrides)
    r = build_retriever("smartvector", cfg)
    r.index(corpus, vectors, serve_time)
    return r


def supersession_setup():
    corpus = make_corpus([
        {"text": "alpha bravo", "doc": "A", "version": 1, "authority": 0.9, "created": 0.0, "valid_to": 100.0},
        {"text": "charlie delta", "doc": "A", "version": 2, "authority": 0.9, "created": 90.0, "valid_from": 100.0,
         "supersedes": 0},
        {"text": "echo foxtrot", "doc": "B", "authority": 0.75, "created": 0.0},
    ])
    return corpus, vecs([1, 0, 0], [0.6, 0.8, 0], [0, 1, 0])


def test_superseded_chunk_excluded_once_successor_in_force():
    corpus, v = supersession_setup()
    r = smartvector(corpus, v, 110.0)
    q = vecs([1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0])
    run = r.search(q, np.array([110.0, 100.0, 99.0, 50.0]), 3)
    # at 110 and 100 (successor valid_from 100 <= as_of) c0 never appears
    assert 0 not in run.ranked[0].tolist() and 0 not in run.ranked[1].tolist()
    assert run.ranked[0].tolist() == [1, 2, -1] and run.ranked[1].tolist() == [1, 2, -1]
    # at 99 and 50 the successor is not yet in force: c0 is served
    assert 0 in run.ranked[2].tolist() and 0 in run.ranked[3].tolist()
    # at 50: c1 (created 90) did not exist yet and is not a candidate (exclude_created_after_as_of);
    #        c0 = 0.35*1 + 0.25*2^(-50/30) + 0.25*0.9*2^(-50/30) = 0.35 + 0.0787450 + 0.0708705 = 0.4996156
    assert run.ranked[3].tolist() == [0, 2, -1]
    np.testing.assert_allclose(run.scores[3, 0], 0.4996156246750162, atol=1e-6)
    # without that rule the future version (T = 0.05, age clamped so C = 0.9 undecayed) scores
    #        0.21 + 0.0125 + 0.225 = 0.4475 and is ranked second
    cfg = default_sv_cfg()
    cfg["exclude_created_after_as_of"] = False
    r2 = build_retriever("smartvector", cfg)
    r2.index(corpus, v, 110.0)
    run2 = r2.search(q[3:], np.array([50.0]), 3)
    assert run2.ranked[0, :2].tolist() == [0, 1]
    np.testing.assert_allclose(run2.scores[0, :2], [0.4996156246750162, 0.4475], atol=1e-6)


def test_version_from_the_future_does_not_outrank_version_in_force():
    """A historical (as-of) query: both versions match equally well, only v1 exists and is in force at 50."""
    corpus = make_corpus([
        {"text": "alpha bravo", "doc": "A", "version": 1, "authority": 0.9, "created": 0.0, "valid_to": 100.0},
        {"text": "charlie delta", "doc": "A", "version": 2, "authority": 0.9, "created": 100.0,
         "valid_from": 100.0, "supersedes": 0},
    ])
    r = smartvector(corpus, vecs([1, 0, 0], [1, 0, 0]), 110.0)
    run = r.search(vecs([1, 0, 0]), np.array([50.0]), 2)
    # v1: 0.35 + 0.25*2^(-50/30) + 0.25*0.9*2^(-50/30) = 0.35 + 0.0787450 + 0.0708705 = 0.4996156
    # v2 does not exist yet at 50 (created 100) and is not in force; T = 0.05, but its age is clamped to 0 so
    #    C = 0.9 undecayed: 0.35 + 0.0125 + 0.225 = 0.5875 -> it outranks the only version valid at as_of
    assert run.ranked[0, 0] == 0


def test_superseded_excluded_at_every_rank_depth():
    corpus, v = supersession_setup()
    r = smartvector(corpus, v, 110.0, query_batch=1)
    run = r.search(vecs([1, 0, 0], [0, 1, 0], [0.6, 0.8, 0]), np.full(3, 150.0), 10)
    assert not (run.ranked == 0).any()
    assert ((run.ranked >= 0).sum(axis=1) == 2).all()


# Dormancy scenario, all created at 0, serve and query at 40; c2 depends on c0 (one edge each: R = 0.1 ln 2).
#   T = 2^(-40/30) = 0.3968502630 for all; C = authority * T (no feedback, no accesses)
#   c0 policy 0.9: cos 0.6, C 0.3571652367 -> 0.35*0.6 + 0.25*0.39685026 + 0.25*0.35716524 + 0.15*0.06931472
#                                          = 0.21 + 0.09921257 + 0.08929131 + 0.01039721 = 0.4089010826
#   c1 slack 0.3:  cos 1.0, C 0.1190550789 (< 0.15: DORMANT) -> 0.35 + 0.09921257 + 0.02976377 = 0.4789763355
#   c2 wiki 0.75:  cos 0.0, C 0.2976376972 -> 0 + 0.09921257 + 0.07440942 + 0.01039721 = 0.1840191978
S0, S1, S2 = 0.4089010826296229, 0.4789763354724162, 0.18401919776742104


def dormant_setup():
    corpus = make_corpus([
        {"text": "alpha bravo", "doc": "P", "authority": 0.9, "created": 0.0},
        {"text": "charlie delta", "doc": "S", "authority": 0.3, "created": 0.0},
        {"text": "echo foxtrot", "doc": "W", "authority": 0.75, "created": 0.0, "depends": [0]},
    ])
    return corpus, vecs([0.6, 0.8, 0], [1, 0, 0], [0, 1, 0])


@pytest.mark.parametrize("policy, order, scores", [
    ("include", [1, 0, 2], [S1, S0, S2]),
    ("deprioritize", [0, 2, 1], [S0, S2, S1]),  # dormant c1 after every non-dormant one despite its top score
    ("exclude", [0, 2, -1], [S0, S2, np.nan]),
])
def test_dormant_policies(policy, order, scores):
    corpus, v = dormant_setup()
    r = smartvector(corpus, v, 40.0, dormant=policy)
    run = r.search(vecs([1, 0, 0]), np.array([40.0]), 3)
    assert run.ranked.tolist() == [order]
    np.testing.assert_allclose(run.scores[0], scores, atol=1e-6)
    # reported confidence = the top hit's fused score
    assert run.confidence[0] == pytest.approx(scores[0], abs=1e-6)


def test_dormancy_judged_at_as_of():
    # at as_of 20: c1's C = 0.3 * 2^(-20/30) = 0.1889881575 >= 0.15 -> not dormant, ranks first
    # c1 = 0.35 + 0.25*0.6299605249 + 0.25*0.1889881575 = 0.5547371706
    corpus, v = dormant_setup()
    r = smartvector(corpus, v, 0.0)
    run = r.search(vecs([1, 0, 0], [1, 0, 0]), np.array([20.0, 40.0]), 3)
    assert run.ranked.tolist() == [[1, 0, 2], [0, 2, 1]]
    assert run.confidence[0] == pytest.approx(0.5547371706079169, abs=1e-6)
    assert run.confidence[1] == pytest.approx(S0, abs=1e-6)


def test_reported_confidence_matches_signals_recomputed():
    corpus, v = dormant_setup()
    r = smartvector(corpus, v, 40.0)
    sem = np.array([[0.6, 1.0, 0.0]])
    sig = r.signals(sem, np.array([40.0]))
    np.testing.assert_allclose(sig["temporal"], [[0.3968502629920499] * 3], atol=1e-12)
    np.testing.assert_allclose(sig["confidence"], [[0.3571652366928449, 0.11905507889761496, 0.29763769724403744]],
                               atol=1e-12)
    np.testing.assert_allclose(sig["relational"], [[0.06931471805599453, 0.0, 0.06931471805599453]], atol=1e-12)
    assert sig["dormant"].tolist() == [[False, True, False]]
    run = r.search(vecs([1, 0, 0]), np.array([40.0]), 3)
    by_hand = (0.35 * 0.6 + 0.25 * sig["temporal"][0, 0] + 0.25 * sig["confidence"][0, 0]
               + 0.15 * sig["relational"][0, 0])
    assert run.confidence[0] == pytest.approx(by_hand, abs=1e-6) == pytest.approx(S0, abs=1e-6)


def test_reported_live_confidence():
    corpus, v = dormant_setup()
    r = smartvector(corpus, v, 40.0, reported_confidence="live_confidence")
    run = r.search(vecs([1, 0, 0]), np.array([40.0]), 3)
    assert run.ranked[0, 0] == 0
    assert run.confidence[0] == pytest.approx(0.3571652366928449, abs=1e-9)  # 0.9 * 2^(-40/30)


def test_batches_give_same_run():
    corpus, v = dormant_setup()
    q = vecs([1, 0, 0], [0, 1, 0], [0.3, 0.3, 0.9], [0.6, 0.8, 0])
    as_of = np.array([40.0, 20.0, 5.0, 70.0])
    a = smartvector(corpus, v, 0.0).search(q, as_of, 3)
    b = smartvector(corpus, v, 0.0, query_batch=1).search(q, as_of, 3)
    assert a.ranked.tolist() == b.ranked.tolist()
    np.testing.assert_allclose(a.scores, b.scores, equal_nan=True)
    np.testing.assert_allclose(a.confidence, b.confidence)


def test_exact_ties_lower_index_first():
    corpus = unrelated_corpus(4)
    r = smartvector(corpus, vecs([0, 1, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0]), 0.0)
    run = r.search(vecs([1, 0, 0]), np.array([0.0]), 4)
    assert run.ranked.tolist() == [[1, 2, 3, 0]]


def test_contradiction_loser_confidence_lowered():
    corpus = make_corpus([
        {"text": "remote work allowed two days weekly", "doc": "P", "authority": 0.9, "created": 0.0},
        {"text": "weekly days two never allowed remote work", "doc": "S", "authority": 0.3, "created": 50.0},
    ])
    r = smartvector(corpus, vecs([1, 0, 0], [1, 0, 0]), 60.0)
    assert r.describe()["consolidation"]["contradictions"] == 1
    c = r.signals(np.zeros((1, 2)), np.array([60.0]))["confidence"][0]
    # policy 0.9 * 2^(-60/30) = 0.225; slack 0.3 * 2^(-10/30) - 0.08 = 0.2381101578 - 0.08 = 0.1581101578
    np.testing.assert_allclose(c, [0.225, 0.15811015779523], atol=1e-9)


# ---- SmartVector config errors ---------------------------------------------------------------------------

def _with(path: str, value):
    cfg = default_sv_cfg()
    node = cfg
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
    return cfg


@pytest.mark.parametrize("path, value, prefix", [
    ("dormant", "sometimes", "retrievers.smartvector.dormant=sometimes"),
    ("exclude_statuses", ["DEPRECATED", "ACTIVE"], "retrievers.smartvector.exclude_statuses: 'ACTIVE'"),
    ("weights.temporal", -0.25, "retrievers.smartvector.weights.temporal=-0.25"),
    ("weights.recency", 0.1, "retrievers.smartvector.weights.recency:"),
    ("consolidation.topic_treshold", 0.3, "retrievers.smartvector.consolidation.topic_treshold:"),
    ("consolidation.ripple.depth", 2, "retrievers.smartvector.consolidation.ripple.depth:"),
    ("consolidation.ripple.penalty", -0.15, "retrievers.smartvector.consolidation.ripple.penalty=-0.15"),
    ("confidence.half_life", 30.0, "retrievers.smartvector.confidence.half_life:"),
    ("confidence.negative_penalty", -0.08, "retrievers.smartvector.confidence.negative_penalty=-0.08"),
    ("reported_confidence", "cosine", "retrievers.smartvector.reported_confidence=cosine"),
])
def test_config_errors_name_the_key(path, value, prefix):
    with pytest.raises(BenchError) as exc:
        build_retriever("smartvector", _with(path, value))
    assert str(exc.value).startswith(prefix)


def test_zero_half_life_rejected():
    with pytest.raises(BenchError, match=r"retrievers\.smartvector\.temporal\.half_life_days=0\.0: must be a finite number > 0"):
        build_retriever("smartvector", _with("temporal.half_life_days", 0.0))


@pytest.mark.parametrize("path, value", [
    ("temporal.half_life", 10.0),  # typo of half_life_days: silently ignored (default 30 used)
    ("relational.per_edg", 0.2),  # typo of per_edge: silently ignored
    ("relational.cap", -0.3),  # negative cap: R becomes -0.3 for every vector with an edge
    ("temporal.expired_score", -1.0),  # negative temporal score accepted
    ("consolidation.topic_threshold", -0.1),  # negative Jaccard threshold accepted
    ("consolidation.verdict", "demot"),  # only rejected later, inside index() (after data + embedding)
    ("query_batch", 0),  # search() then fails with a bare ValueError from range()
    ("consolidation.ripple.max_depth", 2.5),  # index() then fails with a TypeError from range()
])
def test_config_errors_caught_when_built(path, value):
    """Every other section rejects unknown keys and negative numbers at build time (experiments/main.py:
    "builds validate each system's config before any work"); these must too."""
    with pytest.raises(BenchError) as exc:
        build_retriever("smartvector", _with(path, value))
    assert path.split(".")[-1] in str(exc.value)


def test_default_config_builds_and_describes():
    corpus, v = dormant_setup()
    r = smartvector(corpus, v, 40.0)
    d = r.describe()
    assert d["status_policy"] == {"exclude": ["DEPRECATED", "ARCHIVED"], "dormant": "deprioritize",
                                  "exclude_created_after_as_of": True}
    assert d["consolidation"] == {"contradictions": 0, "edges": 1, "events": {}}
    assert r.weights.semantic == 0.35 and r.weights.relational == 0.15


def test_smartvector_soft_is_smartvector_without_its_status_filter(tmp_path):
    """With cosine as the only signal, the status filter is all that keeps superseded versions out: the soft
    variant (every other setting interpolated from smartvector) returns them, the hard one never does."""
    import json

    from experiments.main import run as run_main
    from smartvector_bench.core.dataset import load_dataset

    from .conftest import TINY, compose_config

    # dormant: include, so that cosine alone ranks (deprioritised dormant vectors, old versions among them, fall
    # below the first ten on the tiny corpus of benchmark v3, where more chunks are live)
    cfg = compose_config(TINY + ["embedder=hashing", "systems=[smartvector,smartvector_soft]", "weights=semantic_only",
                                 "retrievers.smartvector.dormant=include",
                                 "experiment.n_boot=20", "experiment.n_permutations=20"])
    soft_cfg = cfg["retrievers"]["smartvector_soft"]
    assert soft_cfg["exclude_statuses"] == [] and soft_cfg["weights"] == cfg["retrievers"]["smartvector"]["weights"]
    assert {k: v for k, v in soft_cfg.items() if k != "exclude_statuses"} == \
        {k: v for k, v in cfg["retrievers"]["smartvector"].items() if k != "exclude_statuses"}
    metrics = run_main(cfg, tmp_path)
    ds = load_dataset(metrics["dataset"]["path"])
    c = ds.corpus
    superseded_by = {int(p): i for i, p in enumerate(c.supersedes) if p >= 0}  # predecessor -> successor

    def returned_superseded(name):
        rows = [json.loads(line) for line in (tmp_path / f"run_{name}.jsonl").read_text().splitlines()[1:]]
        n = 0
        for q, row in zip(ds.queries.as_of, rows):
            for cid in row["ranked"]:
                j = c.index_of[cid]
                succ = superseded_by.get(j)
                n += succ is not None and c.valid_from[succ] <= q  # superseded at the query's as_of
        return n

    assert returned_superseded("smartvector") == 0
    assert returned_superseded("smartvector_soft") > 0
    assert metrics["system_info"]["smartvector_soft"]["status_policy"]["exclude"] == []
