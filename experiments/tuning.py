"""Fitting a :class:`~smartvector_bench.systems.base.FitsOnDev` system (``smartvector_tuned``) on the dev split, for
experiment=main: the harness judges each candidate on the dev queries (the system never sees a label), keeps the
best of each stage by the tune preset's rule (highest dev top-1, ties by dev MRR@10, then the earlier candidate;
conf/experiment/tune.yaml) and hands the winner back. Test queries are never searched while fitting."""

from __future__ import annotations

import itertools

import numpy as np
from tqdm.auto import tqdm

from smartvector_bench.core.run.contract import check_info, check_search, retriever_call
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.evaluator import judge
from smartvector_bench.systems.base import FitsOnDev, RanksByKey, TrainsOnDev

SELECTION = ("each stage's grid over the best settings so far, judged on the dev queries: highest dev top1, ties: "
             "higher dev mrr_at_10, then the earlier candidate; the winner's test figures are the result")


def fit_on_dev(name: str, system: FitsOnDev, corpus, vectors: np.ndarray, serve_time: float,
               query_vectors: np.ndarray, queries, k: int, progress: bool = False) -> dict:
    """Fit ``system`` stage by stage on the dev queries, then ``adopt`` the winner; returns the report it keeps."""
    dev = np.asarray(queries.split) == "dev"
    if not dev.any():
        report = {"selection": SELECTION, "dev_queries": 0, "stages": [], "note": "no dev queries: the base settings"}
        system.adopt({}, report)
        return report
    qd = queries.subset(dev)
    qv, as_of = query_vectors[dev], np.asarray(queries.as_of)[dev]
    texts = [t for t, d in zip(queries.texts, dev) if d]
    best: dict = {}
    stages = []
    for i, stage in enumerate(system.stages()):
        scored = []
        grid = list(itertools.product(*stage.values()))
        for combo in tqdm(grid, desc=f"{name} stage {i + 1}", disable=not progress, leave=False):
            params = {**best, **dict(zip(stage, combo))}
            with retriever_call(name, "candidate"):
                cand, needs_index = system.candidate(params)
            if needs_index:
                with retriever_call(name, "index"):
                    cand.index(corpus, vectors, serve_time)
            with retriever_call(name, "search"):
                out = cand.search(qv, as_of, k, texts=texts)
            run = check_search(name, out, qd.ids, k, len(corpus), ordered=not isinstance(cand, RanksByKey))
            j = judge(run, qd)
            scored.append((float(j["correct"].mean()), float(j["rr10"].mean())))
        top = max(range(len(grid)), key=lambda c: (scored[c][0], scored[c][1], -c))
        best = {**best, **dict(zip(stage, grid[top]))}
        stages.append({"grid": {key: list(values) for key, values in stage.items()}, "candidates": len(grid),
                       "best": dict(zip(stage, grid[top])), "dev_top1": scored[top][0],
                       "dev_mrr_at_10": scored[top][1]})
    report = {"selection": SELECTION, "dev_queries": int(dev.sum()), "stages": stages}
    with retriever_call(name, "adopt"):
        system.adopt(best, report)
    return report


def train_on_dev(name: str, system: TrainsOnDev, query_vectors: np.ndarray, queries) -> dict:
    """Train an indexed :class:`~smartvector_bench.systems.base.TrainsOnDev` system on the dev queries' qrels only
    (the test queries, their qrels and every other label stay here); returns the fit summary it reports."""
    dev = np.asarray(queries.split) == "dev"
    if not dev.any():
        raise BenchError(f"{name} is trained on the dev split's qrels, but the dataset has no dev queries; "
                         f"drop it from systems= or give queries a dev split")
    rows = np.nonzero(dev)[0]
    with retriever_call(name, "train"):
        summary = system.train(query_vectors[rows], np.asarray(queries.as_of, dtype=np.float64)[rows],
                               [queries.texts[i] for i in rows], queries.relevant.take(rows),
                               queries.grades.take(rows))
    return check_info(name, "train", summary)
