"""Rounding bounds (``Run.bounds``): a system whose scores jump with its inputs (hybrid_valid's rank fusion, ltr's
trees) says which values its run could take when its float32 inputs move by rounding, and the regression gate
compares another host's rerun within them. Checked here by moving the inputs ourselves: every moved run stays
within the bounds, the gate's old rule (the score bound alone) fails some of them, and a move beyond rounding
fails the bounded rule too."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from experiments.tuning import train_on_dev
from smartvector_bench.core.run.contract import RetrieverFault, check_search
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run.rounding import SCORE_NOISE, rank_bounds, score_noise
from smartvector_bench.core.run import Run, read_run_rows, write_run_jsonl
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.ltr.bounds import score_ranges, softmax_bounds, thresholds
from smartvector_bench.systems.ltr.features import FEATURES
from smartvector_bench.tools.gate.rankings import line_diff

from .conftest import TINY, compose_config, write_tiny


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    ds = load_dataset(write_tiny(tmp_path_factory.mktemp("bounds") / "ds"))
    cfg = compose_config(TINY + ["embedder=hashing"])
    emb = build_embedder(dict(cfg["embedder"]))
    return ds, cfg, emb.encode(ds.corpus.texts), emb.encode(ds.queries.texts), float(ds.queries.query_time.min())


def _line(run, i: int, bounds: bool = True) -> dict:
    """Query ``i`` of ``run`` as its run-file line (corpus rows as ids; an infinite bound as null)."""
    keep = [r for r, j in enumerate(run.ranked[i]) if j >= 0]
    num = lambda x: None if not math.isfinite(x) else float(x)  # noqa: E731
    line = {"ranked": [f"c{run.ranked[i, r]}" for r in keep], "scores": [float(run.scores[i, r]) for r in keep],
            "confidence": num(run.confidence[i])}
    if bounds and run.bounds is not None:
        line["bounds"] = [[num(x) for x in run.bounds[i, r]] for r in keep]
        line["confidence_bounds"] = [num(x) for x in run.confidence_bounds[i]]
    return line


def _fed(retriever, cos: np.ndarray, bm25: np.ndarray):
    """``retriever`` searching with these cosine and BM25 scores in place of its own (another CPU's)."""
    retriever._index = type("Scores", (), {"all_scores": staticmethod(lambda qv: cos.astype(np.float32))})()
    retriever._bm25._scores = lambda texts: bm25
    return retriever


def _near_ties(cos: np.ndarray, rng, cuts: np.ndarray | None = None) -> np.ndarray:
    """``cos`` with, per query, several chunks moved to within a third of the score noise of another one, or of
    one of ``cuts`` (a tree's cosine thresholds): the near ties another CPU may break the other way."""
    out = cos.astype(np.float64).copy()
    for row in out:
        order = np.argsort(-row)
        for r in rng.choice(np.arange(1, min(40, len(row))), size=min(8, len(row) - 1), replace=False):
            near = row[order[r - 1]] if cuts is None else rng.choice(cuts)
            row[order[r]] = near - SCORE_NOISE / 3
    return out


def _moved(scores: np.ndarray, rng, scale: float, keep_zeros: bool = False) -> np.ndarray:
    """Each finite score moved by up to ``scale`` times its noise, uniformly (rounded back to float32); with
    ``keep_zeros``, a 0 stays 0 (a BM25 score with no shared term is exactly 0 on every CPU)."""
    moved = scores + rng.uniform(-scale, scale, scores.shape) * score_noise(scores)
    fixed = ~np.isfinite(scores) | ((scores == 0) if keep_zeros else False)
    return np.where(fixed, scores, moved.astype(np.float32).astype(np.float64))


def _runs(setup, name: str, rng, scale: float, n: int = 12, **over):
    """(base run, moved runs) of system ``name`` on inputs with planted near ties."""
    ds, cfg, cv, qv, serve = setup
    q = ds.queries
    r = build_retriever(name, {**cfg["retrievers"][name], **over})
    r.index(ds.corpus, cv, serve)
    if name == "ltr":
        train_on_dev(name, r, qv, q)
    cuts = thresholds(r.model).get(FEATURES.index("cosine")) if name == "ltr" else None
    cos = _near_ties(r._index.all_scores(qv), rng, cuts)
    bm25 = r._bm25._scores(q.texts).astype(np.float32).astype(np.float64)

    def search(c, b):
        out = _fed(r, c, b).search(qv, q.as_of, 10, texts=q.texts)
        return check_search(name, out, q.ids, 10, len(ds.corpus))

    base = search(cos, bm25)
    return base, [search(_moved(cos, rng, scale), _moved(bm25, rng, scale, keep_zeros=True)) for _ in range(n)]


def _verdicts(base, moved, bounds: bool) -> tuple[int, list[str]]:
    """(lines that moved at all, why the gate refuses those it refuses) on a foreign host."""
    n_moved, why = 0, []
    for run in moved:
        for i in range(len(base.confidence)):
            a, b = _line(base, i, bounds), _line(run, i, bounds)
            n_moved += line_diff(a, b, True) is not None
            if (w := line_diff(a, b, False)) is not None:
                why.append(w)
    return n_moved, why


def test_rank_bounds_hand_case():
    row = np.array([0.5, 0.5 - SCORE_NOISE, 0.4, -np.inf, 0.5])
    best, worst = rank_bounds(row, row[[0, 1, 2]])
    assert best.tolist() == [1, 1, 4] and worst.tolist() == [3, 3, 4]


@pytest.mark.parametrize("name", ["hybrid_valid", "ltr"])
def test_runs_moved_by_rounding_stay_within_their_bounds_and_the_score_bound_alone_refuses_some(setup, name):
    over = {"n_estimators": 30} if name == "ltr" else {}
    base, moved = _runs(setup, name, np.random.default_rng(3), 0.45, **over)
    assert base.bounds is not None and base.confidence_bounds is not None
    n_moved, why = _verdicts(base, moved, bounds=True)
    assert n_moved > 0 and why == []
    # without the bounds the gate's score rule sees jumps it cannot explain (CI's failure on another host)
    _, why_plain = _verdicts(base, moved, bounds=False)
    assert why_plain


@pytest.mark.parametrize("name", ["hybrid_valid", "ltr"])
def test_a_move_beyond_rounding_is_refused_within_the_bounds_too(setup, name):
    over = {"n_estimators": 30} if name == "ltr" else {}
    base, moved = _runs(setup, name, np.random.default_rng(5), 2000.0, n=3, **over)
    _, why = _verdicts(base, moved, bounds=True)
    assert why


def test_ltr_bounds_hold_the_scores_and_confidence_of_the_run(setup):
    base, _ = _runs(setup, "ltr", np.random.default_rng(1), 0.45, n=0, n_estimators=30)
    hit = base.ranked >= 0
    lo, hi = base.bounds[..., 0][hit], base.bounds[..., 1][hit]
    assert np.all(lo <= base.scores[hit]) and np.all(base.scores[hit] <= hi)
    has = ~np.isnan(base.confidence)
    c, (clo, chi) = base.confidence[has], base.confidence_bounds[has].T
    assert np.all(clo - 1e-12 <= c) and np.all(c <= chi + 1e-12)


def test_softmax_bounds_hand_cases():
    # points, every candidate sure: the bounds close on the softmax share itself
    lo = hi = np.array([2.0, 1.0, 0.0])
    share = math.exp(2) / (math.exp(2) + math.exp(1) + 1)
    assert softmax_bounds(lo, hi, np.ones(3, bool)) == pytest.approx((share, share), rel=1e-12)
    # the third may be absent: the share may rise to e^2 / (e^2 + e^1)
    low, high = softmax_bounds(lo, hi, np.array([True, True, False]))
    assert low == pytest.approx(share) and high == pytest.approx(math.exp(2) / (math.exp(2) + math.exp(1)))
    # two near-tied tops: either may be the top-1, and a top-1 scores at least the other's lowest (1.0)
    low, high = softmax_bounds(np.array([1.0, 0.9]), np.array([1.1, 1.05]), np.ones(2, bool))
    assert low == pytest.approx(math.exp(1.0) / (math.exp(1.0) + math.exp(1.1)))
    assert high == pytest.approx(math.exp(1.1) / (math.exp(1.1) + math.exp(0.9)))


def test_thresholds_are_the_models_numerical_splits(setup):
    ds, cfg, cv, qv, serve = setup
    r = build_retriever("ltr", {**cfg["retrievers"]["ltr"], "n_estimators": 5})
    r.index(ds.corpus, cv, serve)
    train_on_dev("ltr", r, qv, ds.queries)
    cuts = thresholds(r.model)
    assert cuts and all(np.all(np.diff(t) > 0) for t in cuts.values())
    assert FEATURES.index("source") not in cuts  # the categorical feature splits by set, never by threshold


def test_the_contract_keeps_the_bounds_and_refuses_a_wrong_shape():
    ranked = np.array([[1, 0]])
    run = Run("x", ranked, np.array([[0.5, 0.4]]), np.array([0.5]), np.array([[[0.4, 0.6], [-np.inf, 0.45]]]),
              np.array([[0.4, 0.6]]))
    got = check_search("x", run, ["q"], 2, 3)
    assert np.array_equal(got.bounds, run.bounds) and np.array_equal(got.confidence_bounds, run.confidence_bounds)
    run.bounds = np.zeros((1, 2))
    with pytest.raises(RetrieverFault, match=r"Run\.bounds has shape \(1, 2\); expected \(1, 2, 2\)"):
        check_search("x", run, ["q"], 2, 3)


def test_run_files_carry_the_bounds_with_null_for_an_open_end(tmp_path):
    ds = load_dataset(write_tiny(tmp_path / "ds"))
    q, n = len(ds.queries), 2
    ranked = np.tile(np.arange(n), (q, 1))
    scores = np.tile([0.5, 0.4], (q, 1))
    bounds = np.tile([[0.45, 0.55], [-np.inf, 0.42]], (q, 1, 1))
    run = Run("x", ranked, scores, np.full(q, 0.5), bounds, np.tile([0.4, 0.6], (q, 1)))
    judged = {f: np.zeros(q, bool) for f in ("correct", "stale", "rumor")}
    path = tmp_path / "run_x.jsonl"
    write_run_jsonl(path, run, ds.queries, ds.corpus, judged, {}, k=n)
    _, rows = read_run_rows(path)
    assert rows[0]["bounds"] == [[0.45, 0.55], [None, 0.42]] and rows[0]["confidence_bounds"] == [0.4, 0.6]
    lines = path.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["bounds"] = [[0.45, 0.55]]
    path.write_text("\n".join([lines[0], json.dumps(bad)]) + "\n")
    with pytest.raises(BenchError, match=r"run_x\.jsonl:2: 'bounds' must hold one \[lo, hi\] pair per ranked hit"):
        read_run_rows(path)


def _l(ids, scores, bounds=None, conf=0.5, conf_bounds=None) -> dict:
    line = {"ranked": list(ids), "scores": list(scores), "confidence": conf}
    if bounds is not None:
        line["bounds"] = [list(b) for b in bounds]
    if conf_bounds is not None:
        line["confidence_bounds"] = list(conf_bounds)
    return line


B0 = [(0.030, 0.0312), (None, 0.031), (0.02, 0.02)]  # x, y, z: y could drop out


@pytest.mark.parametrize("b, why", [
    # a score jump within both runs' bounds, and a swap of hits whose bounds overlap: rounding
    (_l("xyz", [0.031, 0.0305, 0.02], B0), None),
    (_l("yxz", [0.031, 0.0305, 0.02], [B0[1], B0[0], B0[2]]), None),
    # a hit scored outside the committed bounds
    (_l("xyz", [0.035, 0.0305, 0.02], [(0.030, 0.036), *B0[1:]]), "x scored 0.035"),
    # y left and w entered: y could drop out (lo null), and so could w
    (_l("xwz", [0.031, 0.025, 0.02], [B0[0], (None, 0.026), B0[2]]), None),
    # x left though its bounds keep it above z, which stayed
    (_l("yzw", [0.031, 0.02, 0.019], [B0[1], B0[2], (None, 0.0195)]), "x left the list"),
    # the confidence outside the committed bounds
    (_l("xyz", [0.031, 0.0305, 0.02], B0, conf=0.7, conf_bounds=(0.45, 0.8)),
     "confidence 0.7, committed 0.5: outside the committed run's bounds"),
])
def test_bounded_lines_hand_cases(b, why):
    a = _l("xyz", [0.0312, 0.030, 0.02], B0, conf_bounds=(0.4, 0.6))
    got = line_diff(a, b, False)
    assert (got is None) if why is None else (got is not None and why in got), got


def test_bounded_lines_keep_the_tie_rule_and_read_one_sided_bounds():
    tied = _l("xy", [0.03, 0.03], [(0.03, 0.03), (0.03, 0.03)])
    assert "exactly tied in both runs" in line_diff(tied, _l("yx", [0.03, 0.03], [(0.03, 0.03)] * 2), False)
    # committed before schema 1.2 (no bounds): the rerun's own bounds explain the swap and the jump
    old = _l("xy", [0.0301, 0.0300])
    assert line_diff(old, _l("yx", [0.0302, 0.0300], [(0.0299, 0.0302), (0.0300, 0.0302)]), False) is None
    assert "y scored 0.0302" in line_diff(old, _l("yx", [0.0302, 0.0300], [(0.0302, 0.0302), (0.0300, 0.0302)]),
                                          False)
    # an exact host never reads the bounds
    assert "exact host" in line_diff(old, _l("yx", [0.0302, 0.0300], [(0.0299, 0.0302), (0.0300, 0.0302)]), True)


def test_a_tie_at_the_zero_cut_is_bounded_both_ways(setup):
    """cosine_gap is 0 for the best candidate and a hair below 0 for an exact duplicate whose cosine another
    BLAS block rounded down: LightGBM's cut between them sits at -1e-35 and reads |x| <= 1e-35 as zero, so the
    bounds must try a value clearly below the cut."""
    import lightgbm

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, len(FEATURES)))
    x[:, FEATURES.index("cosine_gap")] = np.where(rng.random(400) < 0.5, 0.0, -rng.random(400))
    y = (x[:, FEATURES.index("cosine_gap")] == 0).astype(float) + rng.normal(scale=0.1, size=400)
    model = lightgbm.train({"objective": "regression", "verbosity": -1, "num_leaves": 4, "seed": 0},
                           lightgbm.Dataset(x, y, feature_name=list(FEATURES)), num_boost_round=3)
    assert np.isclose(thresholds(model)[FEATURES.index("cosine_gap")], -1e-35).any()
    row = x[:1].copy()
    row[0, FEATURES.index("cosine")], row[0, FEATURES.index("cosine_gap")] = 0.8, 0.0
    below = row.copy()
    below[0, FEATURES.index("cosine_gap")] = -6e-8  # one float32 ulp under the best cosine
    at, under = model.predict(row)[0], model.predict(below)[0]
    assert at != under
    for r, s in ((row, at), (below, under)):
        lo, hi = score_ranges(model, r, np.array([s]))
        assert lo[0] <= min(at, under) and hi[0] >= max(at, under)
