"""smartvector_tuned: fitted on the dev queries only, by the tune preset's rule, and the shared store gives the
same rankings as a fresh index."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from experiments.tuning import fit_on_dev
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.evaluation.evaluator import judge
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.base import FitsOnDev
from smartvector_bench.systems.smartvector.retriever import SmartVector
from smartvector_bench.systems.smartvector.tuned import merged

from .conftest import TINY, compose_config, write_tiny

SMALL = [{"weights.semantic": [0.35, 0.7], "weights.temporal": [0, 0.25]},
         {"confidence.dormant_threshold": [0.15, 0.0], "temporal.half_life_days": [30, 3650]}]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    ds = load_dataset(write_tiny(tmp_path_factory.mktemp("tuned") / "ds"))
    cfg = compose_config(TINY + ["embedder=hashing"])
    emb = build_embedder(dict(cfg["embedder"]))
    cv, qv = emb.encode(ds.corpus.texts), emb.encode(ds.queries.texts)
    rcfg = dict(cfg["retrievers"]["smartvector_tuned"], stages=SMALL)
    return ds, cv, qv, rcfg, float(ds.queries.query_time.min())


class Spy:
    """Wraps a tuned system: records what each candidate's search was asked."""

    def __init__(self, inner):
        self.inner, self.asked = inner, []

    def stages(self):
        return self.inner.stages()

    def adopt(self, params, report):
        self.inner.adopt(params, report)

    def candidate(self, params):
        cand, needs = self.inner.candidate(params)
        spy = self

        class Watched:
            def __getattr__(self, key):
                return getattr(cand, key)

            def index(self, *a):
                return cand.index(*a)

            def search(self, qv, as_of, k, texts=None, **labels):
                spy.asked.append((len(qv), set(labels)))
                return cand.search(qv, as_of, k, texts=texts, **labels)

        return Watched(), needs


def test_fits_on_dev_only_and_picks_the_best_by_the_tune_rule(setup):
    ds, cv, qv, rcfg, serve = setup
    q = ds.queries
    tuned = build_retriever("smartvector_tuned", rcfg)
    assert isinstance(tuned, FitsOnDev)
    spy = Spy(tuned)
    report = fit_on_dev("smartvector_tuned", spy, ds.corpus, cv, serve, qv, q, 10)
    n_dev = int((np.asarray(q.split) == "dev").sum())
    assert spy.asked and all(n == n_dev and not labels for n, labels in spy.asked)  # dev only, no labels
    assert len(spy.asked) == 4 + 4 and report["dev_queries"] == n_dev
    # brute force, stage by stage, each candidate indexed afresh
    dev = np.asarray(q.split) == "dev"
    best: dict = {}
    for stage in SMALL:
        scores = []
        for combo in itertools.product(*stage.values()):
            params = {**best, **dict(zip(stage, combo))}
            sv = SmartVector("smartvector_tuned", **merged(tuned.base, params))
            sv.index(ds.corpus, cv, serve)
            j = judge(sv.search(qv[dev], q.as_of[dev], 10), q.subset(dev))
            scores.append((j["correct"].mean(), j["rr10"].mean(), params))
        top = max(range(len(scores)), key=lambda i: (scores[i][0], scores[i][1], -i))
        best = scores[top][2]
    assert tuned.tuning["fitted"] == best
    assert report["stages"][-1]["dev_top1"] == pytest.approx(scores[top][0])


def test_a_shared_store_ranks_as_a_fresh_index(setup):
    ds, cv, qv, rcfg, serve = setup
    tuned = build_retriever("smartvector_tuned", rcfg)
    first, needs = tuned.candidate({"weights.semantic": 0.35})
    assert needs
    first.index(ds.corpus, cv, serve)
    params = {"weights.semantic": 0.7, "temporal.half_life_days": 3650}
    view, needs = tuned.candidate(params)
    assert not needs  # search-time settings only: the same store
    fresh = SmartVector("x", **merged(tuned.base, params))
    fresh.index(ds.corpus, cv, serve)
    a, b = view.search(qv, ds.queries.as_of, 10), fresh.search(qv, ds.queries.as_of, 10)
    assert np.array_equal(a.ranked, b.ranked) and np.allclose(a.scores, b.scores, equal_nan=True)
    other, needs = tuned.candidate({"confidence.dormant_threshold": 0.0})
    assert needs and other is not first


def test_bad_stages_are_one_line_naming_the_key(setup):
    from smartvector_bench.core.errors import BenchError

    *_, rcfg, _ = setup
    with pytest.raises(BenchError, match=r"retrievers.smartvector_tuned.stages\[0\]: must map dotted"):
        build_retriever("smartvector_tuned", dict(rcfg, stages=[{"weights.semantic": []}]))
    with pytest.raises(BenchError, match=r"retrievers.smartvector_tuned.weights.semantic=-1"):
        build_retriever("smartvector_tuned", dict(rcfg, stages=[{"weights.semantic": [-1]}]))


def test_a_base_that_is_not_a_smartvector_config_is_refused(setup):
    from smartvector_bench.core.errors import BenchError

    *_, rcfg, _ = setup
    base = dict(rcfg["base"], _target_="smartvector_bench.systems.plain_cosine.PlainCosine")
    with pytest.raises(BenchError, match=r"^retrievers.smartvector_tuned.base._target_=smartvector_bench.systems."
                                         r"plain_cosine.PlainCosine: must name SmartVector's class"):
        build_retriever("smartvector_tuned", dict(rcfg, base=base))
    with pytest.raises(BenchError, match=r"^retrievers.smartvector_tuned.base._target_=no_such_choice: cannot be"):
        build_retriever("smartvector_tuned", dict(rcfg, base=dict(rcfg["base"], _target_="no_such_choice")))
    assert build_retriever("smartvector_tuned", rcfg).name == "smartvector_tuned"  # the shipped base passes
