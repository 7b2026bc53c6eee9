"""The baselines a ranking engineer tries first: valid_authority (one weight fitted on dev), hybrid_valid (BM25 and
cosine fused by RRF within the window) and ltr (LightGBM lambdarank trained on dev qrels only)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from experiments.tuning import fit_on_dev, train_on_dev
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.evaluator import judge
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.base import FitsOnDev, Retriever, TrainsOnDev
from smartvector_bench.systems.hybrid_valid import reciprocal_rank_fusion
from smartvector_bench.systems.ltr.features import FEATURES, DocumentVersions, pair_features
from smartvector_bench.systems.valid_cosine import in_force

from .conftest import TINY, compose_config, write_tiny


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    path = write_tiny(tmp_path_factory.mktemp("practitioner") / "ds")
    ds = load_dataset(path)
    cfg = compose_config(TINY + ["embedder=hashing"])
    emb = build_embedder(dict(cfg["embedder"]))
    cv, qv = emb.encode(ds.corpus.texts), emb.encode(ds.queries.texts)
    return path, ds, cv, qv, cfg, float(ds.queries.query_time.min())


def _built(cfg, name, **over):
    return build_retriever(name, {**cfg["retrievers"][name], **over})


# -- reciprocal rank fusion ----------------------------------------------------------------------------------------
def test_rrf_is_the_papers_sum_of_reciprocal_ranks():
    a = np.array([[2, 0, -1]])
    b = np.array([[0, 3, 1]])
    got = reciprocal_rank_fusion([a, b], 5, rrf_k=60)
    want = np.zeros((1, 5))
    want[0, 2] = 1 / 61
    want[0, 0] = 1 / 62 + 1 / 61
    want[0, 3] = 1 / 62
    want[0, 1] = 1 / 63
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


def test_hybrid_stays_in_the_window_and_fuses_both_lists(setup):
    _, ds, cv, qv, cfg, serve = setup
    hybrid = _built(cfg, "hybrid_valid")
    assert isinstance(hybrid, Retriever)
    hybrid.index(ds.corpus, cv, serve)
    q = ds.queries
    run = hybrid.search(qv, q.as_of, 10, texts=q.texts)
    ok = in_force(ds.corpus, q.as_of)
    hits = run.ranked >= 0
    assert hits.any() and ok[np.nonzero(hits)[0], run.ranked[hits]].all()
    assert np.all(np.diff(np.nan_to_num(run.scores, nan=-1.0), axis=1) <= 0)
    # with depth 1 the top-1 is the dense or the BM25 winner, whichever comes first by RRF's tie rule
    one = _built(cfg, "hybrid_valid", depth=1)
    one.index(ds.corpus, cv, serve)
    dense = _built(cfg, "valid_cosine")
    dense.index(ds.corpus, cv, serve)
    bm25 = _built(cfg, "bm25_valid")
    bm25.index(ds.corpus, cv, serve)
    top = one.search(qv, q.as_of, 10, texts=q.texts).ranked[:, 0]
    d = dense.search(qv, q.as_of, 10).ranked[:, 0]
    b = bm25.search(qv, q.as_of, 10, texts=q.texts).ranked[:, 0]
    assert np.all((top == d) | (top == b))
    agree = d == b
    assert np.array_equal(top[agree], d[agree])


def test_hybrid_refuses_bad_settings():
    with pytest.raises(BenchError, match=r"retrievers\.hybrid_valid\.depth=0: must be an integer > 0"):
        build_retriever("hybrid_valid", {"_target_": "smartvector_bench.systems.hybrid_valid.HybridValid", "depth": 0})


# -- valid_authority -----------------------------------------------------------------------------------------------
def test_valid_authority_at_zero_is_valid_cosine_and_large_alpha_ranks_by_authority(setup):
    _, ds, cv, qv, cfg, serve = setup
    q = ds.queries
    base = _built(cfg, "valid_cosine")
    base.index(ds.corpus, cv, serve)
    zero = _built(cfg, "valid_authority", alpha=0.0)
    zero.index(ds.corpus, cv, serve)
    assert np.array_equal(zero.search(qv, q.as_of, 10).ranked, base.search(qv, q.as_of, 10).ranked)
    big = _built(cfg, "valid_authority", alpha=100.0)
    big.index(ds.corpus, cv, serve)
    ranked = big.search(qv, q.as_of, 10).ranked
    auth = np.where(ranked >= 0, ds.corpus.authority[np.maximum(ranked, 0)], -np.inf)
    assert np.all(np.diff(auth, axis=1) <= 0)  # authority first, cosine within equal authority


def test_valid_authority_fits_its_one_weight_on_dev_by_the_tune_rule(setup):
    _, ds, cv, qv, cfg, serve = setup
    q = ds.queries
    grid = [0.0, 0.1, 1.0, 10.0]
    sys_ = _built(cfg, "valid_authority", alphas=grid)
    assert isinstance(sys_, FitsOnDev)
    report = fit_on_dev("valid_authority", sys_, ds.corpus, cv, serve, qv, q, 10)
    dev = np.asarray(q.split) == "dev"
    scores = []
    for a in grid:
        one = _built(cfg, "valid_authority", alpha=a)
        one.index(ds.corpus, cv, serve)
        j = judge(one.search(qv[dev], q.as_of[dev], 10), q.subset(dev))
        scores.append((j["correct"].mean(), j["rr10"].mean()))
    best = max(range(len(grid)), key=lambda i: (scores[i][0], scores[i][1], -i))
    assert sys_.alpha == grid[best] and sys_.describe()["tuning"]["fitted"] == {"alpha": grid[best]}
    assert report["dev_queries"] == int(dev.sum())


# -- ltr ------------------------------------------------------------------------------------------------------------
def test_document_versions_hand_case():
    from smartvector_bench.core.dataset.columns import Corpus

    n = 5
    corpus = Corpus(ids=[f"c{i}" for i in range(n)], titles=[""] * n, texts=["a"] * n,
                    doc_id=np.array(["A", "A", "A", "B", "B"], dtype=object), version=np.array([1, 2, 3, 1, 2]),
                    source=np.array(["s"] * n, dtype=object), authority=np.ones(n),
                    created_at=np.array([0.0, 10.0, 20.0, 5.0, 30.0]), valid_from=np.array([0.0, 10, 20, 5, 30]),
                    valid_to=np.array([10.0, 20, np.inf, 30, np.inf]),
                    depends_on=Ragged.from_lists([[], [], [], [0], [0, 1]]), supersedes=np.array([-1, 0, 1, -1, 3]),
                    offset_start=np.zeros(n, dtype=np.int64), offset_end=np.ones(n, dtype=np.int64))
    v = DocumentVersions(corpus)
    latest, count = v.at(np.array([0, 1, 2, 0, 3, 4, 3, 2]), np.array([5.0, 15, 15, 25, 25, 35, 35, -1]))
    assert latest.tolist() == [True, True, False, False, True, True, False, False]
    assert count.tolist() == [1, 2, 2, 3, 1, 2, 2, 0]
    cand = np.array([[0, 4, -1]])
    f = pair_features(corpus, v, cand, np.array([25.0]), np.array([[0.5, 0.2, 0.0]]), np.array([[2.0, 0.0, 0.0]]))
    col = {name: f[0, :, i].tolist() for i, name in enumerate(FEATURES)}
    assert col["age_days"] == [25.0, -5.0, 0.0] and col["in_window"] == [0.0, 0.0, 0.0]
    assert col["dep_in"] == [2.0, 0.0, 0.0] and col["dep_out"] == [0.0, 2.0, 0.0]
    assert col["cosine_gap"] == [0.0, -0.3, 0.0] and col["bm25_ratio"] == [1.0, 0.0, 0.0]
    assert col["version_count"] == [3.0, 1.0, 0.0] and col["is_latest"] == [0.0, 0.0, 0.0]


def _ltr_test_rankings(cfg, ds, cv, qv, serve, queries):
    ltr = _built(cfg, "ltr", n_estimators=30)
    assert isinstance(ltr, TrainsOnDev)
    ltr.index(ds.corpus, cv, serve)
    summary = train_on_dev("ltr", ltr, qv, queries)
    run = ltr.search(qv, ds.queries.as_of, 10, texts=ds.queries.texts)
    test = np.asarray(ds.queries.split) == "test"
    return run.ranked[test], run.scores[test], summary


def test_ltr_trains_on_dev_qrels_only_scrambled_test_labels_change_nothing(setup):
    _, ds, cv, qv, cfg, serve = setup
    q = ds.queries
    ranked, scores, summary = _ltr_test_rankings(cfg, ds, cv, qv, serve, q)
    assert summary["dev_queries"] == int((np.asarray(q.split) == "dev").sum()) and summary["positives"] > 0
    assert set(summary["feature_importance_gain"]) == set(FEATURES)
    assert sum(summary["feature_importance_gain"].values()) == pytest.approx(1.0, abs=1e-5)
    # scramble every test query's qrels and labels: random rows, random grades
    rng = np.random.default_rng(7)
    test = np.asarray(q.split) == "test"
    n = len(ds.corpus)

    def scrambled(r: Ragged, low: int, high: int) -> Ragged:
        rows = [r.row(i).tolist() if not test[i] else rng.integers(low, high, size=3).tolist() for i in range(len(q))]
        return Ragged.from_lists(rows)

    bad = q.subset(np.ones(len(q), dtype=bool))
    bad.relevant, bad.grades = scrambled(q.relevant, 0, n), scrambled(q.grades, 1, 3)
    bad.stale, bad.rumor = scrambled(q.stale, 0, n), scrambled(q.rumor, 0, n)
    assert not all(np.array_equal(bad.relevant.row(i), q.relevant.row(i)) for i in np.nonzero(test)[0])
    ranked2, scores2, _ = _ltr_test_rankings(cfg, ds, cv, qv, serve, bad)
    assert np.array_equal(ranked, ranked2) and np.array_equal(scores, scores2, equal_nan=True)
    # and the dev qrels do matter: scrambling them changes the model
    worse = q.subset(np.ones(len(q), dtype=bool))
    worse.relevant = Ragged.from_lists([rng.integers(0, n, size=3).tolist() if not test[i] else q.relevant.row(i)
                                        .tolist() for i in range(len(q))])
    worse.grades = Ragged.from_lists([[1] * len(worse.relevant.row(i)) for i in range(len(q))])
    ranked3, _, _ = _ltr_test_rankings(cfg, ds, cv, qv, serve, worse)
    assert not np.array_equal(ranked, ranked3)


def test_ltr_end_to_end_scrambled_test_qrels_file_leaves_its_run_unchanged(setup, tmp_path):
    from experiments.main import run

    path, ds, *_ = setup
    bad = tmp_path / "bad"
    shutil.copytree(path, bad)
    ok = tmp_path / "ok_ds"
    shutil.copytree(path, ok)
    for folder in (ok, bad):  # both load unchecked, alike
        (folder / "manifest.json").unlink()
    lines = (bad / "qrels" / "test.tsv").read_text().splitlines()
    rng = np.random.default_rng(3)
    ids = ds.corpus.ids
    (bad / "qrels" / "test.tsv").write_text("\n".join(
        [lines[0]] + [f"{ln.split(chr(9))[0]}\t{ids[rng.integers(len(ids))]}\t1" for ln in lines[1:]]) + "\n")
    runs = []
    for name, folder in (("ok", ok), ("bad", bad)):
        cfg = compose_config(TINY + ["embedder=hashing", "systems=[ltr]", f"dataset.path={folder}",
                                     "experiment.n_boot=20", "experiment.n_permutations=20"])
        cfg["retrievers"]["ltr"]["n_estimators"] = 20
        run(cfg, tmp_path / name)
        runs.append((tmp_path / name / "run_ltr.trec").read_text())
    assert runs[0] == runs[1] and runs[0]


def test_ltr_refuses_to_search_untrained_and_a_dataset_without_dev(setup):
    _, ds, cv, qv, cfg, serve = setup
    ltr = _built(cfg, "ltr")
    ltr.index(ds.corpus, cv, serve)
    with pytest.raises(BenchError, match="not trained"):
        ltr.search(qv, ds.queries.as_of, 10, texts=ds.queries.texts)
    only_test = ds.queries.subset(np.asarray(ds.queries.split) == "test")
    with pytest.raises(BenchError, match="no dev queries"):
        train_on_dev("ltr", ltr, qv[np.asarray(ds.queries.split) == "test"], only_test)


def test_the_report_shows_any_system_that_reports_feature_importances():
    from smartvector_bench.tools.report.model import learned_model

    m = {"system_info": {"ltr": {"fit": {"feature_importance_gain": {"cosine": 0.75, "authority": 0.25}}},
                         "mine": {"fit": {"feature_importance_gain": {"authority": 1.0}}},
                         "valid_cosine": {"rule": "x"}, "broken": {"fit": "not trained"}}}
    got = learned_model(m, ["valid_cosine", "ltr", "mine", "broken"])
    assert got["systems"] == ["ltr", "mine"]
    assert [(r["feature"], [c["text"] for c in r["cells"]]) for r in got["rows"]] == \
        [("cosine", ["75.0%", "-"]), ("authority", ["25.0%", "100.0%"])]
    assert learned_model({"system_info": {"valid_cosine": {}}}, ["valid_cosine"]) is None
