"""``surface_gbm``: a learned surface auditor for the shortcut audit (:mod:`experiments.shortcut_audit_rules`).

A gradient-boosted classifier (scikit-learn's ``HistGradientBoostingClassifier``, :data:`GBM_PARAMS`) scores
each (query, in-force candidate) pair from the text surface only (:data:`CHUNK_FEATURES`: lengths, counts of
digits, hedge and certainty phrases, punctuation, sentences and lines, the chunk's position and length rank in
its document version, the id's random part, dependency in- and out-degree) plus the candidate's cosine, its
cosine rank among the query's candidates and its gap to the query's top cosine (:data:`PAIR_FEATURES`), so that
it can combine surface with semantics. It never sees times, authority, source or labels. It is fitted on the dev
queries' candidates among the top :data:`GBM_POOL` by cosine (target: the candidate is relevant) and picks, for
every query, the highest-scoring candidate of that pool (ties: the higher cosine, then the lower row). Its leaf
size and number of iterations are chosen by cross-validation over whole dev families (a chunk is a candidate of
every query of its family, so a model that memorises chunks looks good on its own families only), and the model
picks only if it beat the cosine order there (else its picks are valid_cosine's, as a cue rule that learns
nothing keeps every value). One OpenMP thread and a fixed ``random_state``: the same input gives the same picks.
Feature importance is permutation importance on dev (of the model refitted on every dev pair, whether it picks
or not): the drop in dev top-1 when one feature column is shuffled (:data:`PERMUTATION_REPEATS` seeded
shuffles, on at most :data:`PERMUTATION_QUERIES` dev queries).
"""

from __future__ import annotations

import re

import numpy as np

from smartvector_bench.core.dataset import Corpus
from experiments.shortcut_audit_rules import (LEARNED_FITS, CERTAINTY_RE, HEDGE_RE, Candidates, digit_counts, id_tail,
                                              length_rank, lexicon_count, text_lengths)

GBM_POOL = 100  # candidates per query, by cosine, the model is fitted on and picks from (None: all in force)
GBM_PARAMS = {"max_iter": 150, "learning_rate": 0.1, "max_leaf_nodes": 15, "min_samples_leaf": 20,
              "l2_regularization": 1.0, "n_iter_no_change": 10, "random_state": 0}
GBM_LEAF_GRID = (20, 100, 400)  # min_samples_leaf, chosen by cross-validation over dev groups
GBM_FOLDS = 3  # folds of whole dev groups (families)
PERMUTATION_REPEATS = 2
PERMUTATION_QUERIES = 200
PUNCTUATION = {"commas": ",", "periods": ".", "colons": ":", "semicolons": ";", "exclamations": "!",
               "questions": "?", "gt_signs": ">", "quotes": "\"'\u2018\u2019\u201c\u201d"}
CHUNK_FEATURES = ("length", "words", "digits", "hedges", "certainty", *PUNCTUATION, "sentences", "lines",
                  "uppercase", "position", "length_rank", "id_first", "id_last", "in_degree", "out_degree")
PAIR_FEATURES = ("cosine", "cosine_rank", "cosine_gap")
FEATURES = PAIR_FEATURES + CHUNK_FEATURES
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")


def _id_char(ch: str) -> float:
    return float(int(ch, 36)) if ch.isascii() and ch.isalnum() else -1.0


def chunk_features(corpus: Corpus) -> np.ndarray:
    """(N, len(CHUNK_FEATURES)) surface features of every chunk: text, place in its document, id, edges."""
    texts = corpus.texts
    n = len(texts)

    def count(f) -> np.ndarray:
        return np.fromiter((f(t) for t in texts), dtype=np.float64, count=n)

    tails = [id_tail(c) for c in corpus.ids]
    cols = {
        "length": text_lengths(texts), "words": count(lambda t: len(t.split())), "digits": digit_counts(texts),
        "hedges": lexicon_count(texts, HEDGE_RE), "certainty": lexicon_count(texts, CERTAINTY_RE),
        **{name: count(lambda t, cs=chars: sum(t.count(ch) for ch in cs)) for name, chars in PUNCTUATION.items()},
        "sentences": count(lambda t: len(_SENTENCE_END.findall(t))), "lines": count(lambda t: t.count("\n") + 1),
        "uppercase": count(lambda t: sum(ch.isupper() for ch in t)),
        "position": corpus.position(), "length_rank": length_rank(corpus),
        "id_first": np.array([_id_char(t[:1]) for t in tails]), "id_last": np.array([_id_char(t[-1:]) for t in tails]),
        "in_degree": np.bincount(corpus.depends_on.indices, minlength=n)[:n], "out_degree": corpus.depends_on.counts(),
    }
    return np.column_stack([np.asarray(cols[k], dtype=np.float64) for k in CHUNK_FEATURES]).reshape(n, -1)


def pair_features(cand: Candidates, chunk_x: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """(len(pos), len(FEATURES)) features of the candidate pairs at flat positions ``pos``."""
    top = cand.cos[cand.indptr[:-1][cand.query[pos]]]
    pair = np.column_stack([cand.cos[pos], cand.rank[pos], top - cand.cos[pos]]).astype(np.float64)
    return np.hstack([pair, chunk_x[cand.row[pos]]])


def best_scored(cand: Candidates, pos: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Per query: the flat position of its highest ``score`` among ``pos`` (ties: the earlier position, i.e. the
    higher cosine, then the lower row); -1 where the query has none."""
    sel = pos[np.lexsort((pos, -score, cand.query[pos]))]
    qs, at = np.unique(cand.query[sel], return_index=True)
    pick = np.full(cand.n_queries, -1, dtype=np.int64)
    pick[qs] = sel[at]
    return pick


def dev_folds(groups: np.ndarray, dev: np.ndarray, k: int = GBM_FOLDS) -> np.ndarray:
    """Per query: its cross-validation fold (whole groups, dealt in a seeded order), -1 off dev; all -1 with fewer
    than two dev groups."""
    fams = sorted({str(g) for g in groups[dev]})
    if len(fams) < 2:
        return np.full(len(dev), -1)
    order = np.random.default_rng(0).permutation(len(fams))
    fold_of = {fams[i]: j % min(k, len(fams)) for j, i in enumerate(order)}
    return np.array([fold_of[str(g)] if d else -1 for g, d in zip(groups, dev)], dtype=np.int64)


def surface_gbm(cand: Candidates, corpus: Corpus, dev: np.ndarray, groups: np.ndarray | None = None,
                pool: int | None = GBM_POOL, params: dict | None = None) -> dict:
    """Fit on the dev queries' pool pairs, pick every query's best-scored pool candidate. ``min_samples_leaf``
    (from :data:`GBM_LEAF_GRID`) and the number of boosting iterations are chosen by cross-validation over whole
    ``groups`` of dev queries (e.g. their families, read on dev only): each fold is held out once, the iterations
    by early stopping on it, the leaf size by its top-1 (ties: the larger leaf); the model is then refitted on
    every dev pair, and picks only if its cross-validated top-1 beat the cosine order's (else the cosine order,
    i.e. valid_cosine: there was nothing to learn that carries over to other families). Returns ``pick`` (flat
    positions, -1: none) and what the json reports (importances of the refitted model either way)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    params = {**GBM_PARAMS, **(params or {})}
    dev = np.asarray(dev, dtype=bool)
    groups = np.arange(len(dev)) if groups is None else np.asarray(groups, dtype=object)
    pos = np.nonzero(cand.rank < pool)[0] if pool is not None else np.arange(len(cand.row))
    x = pair_features(cand, chunk_features(corpus), pos)
    on_dev = dev[cand.query[pos]]
    y = cand.relevant[pos]
    info = {"features": list(FEATURES), "params": params, "pool": pool, "train_rows": int(on_dev.sum()),
            "train_positives": int(y[on_dev].sum()), "fitted": bool(0 < y[on_dev].sum() < on_dev.sum()),
            "min_samples_leaf": params["min_samples_leaf"], "n_iter": 0, "cv": {}, "cv_queries": 0,
            "uses_model": False, "importance": {}}
    if not info["fitted"]:  # nothing to learn from: the cosine order, i.e. valid_cosine
        return {"pick": best_scored(cand, pos, -cand.rank[pos].astype(np.float64)), **info}
    fold_q = dev_folds(groups, dev)
    fold = fold_q[cand.query[pos]]
    cosine_pick = best_scored(cand, pos, -cand.rank[pos].astype(np.float64))  # valid_cosine's picks
    with threadpool_limits(limits=1):
        best = None
        for leaf in (GBM_LEAF_GRID if fold_q.max() >= 1 else ()):
            hits, cos_hits, n_iters = 0, 0, []
            for k in range(int(fold_q.max()) + 1):
                fit, val = on_dev & (fold != k), fold == k
                if not (0 < y[fit].sum() < fit.sum() and y[val].any()):
                    continue
                m = HistGradientBoostingClassifier(**{**params, "min_samples_leaf": leaf, "early_stopping": True})
                m.fit(x[fit], y[fit], X_val=x[val], y_val=y[val])
                hits += int(cand.correct(best_scored(cand, pos[val], m.decision_function(x[val]))).sum())
                cos_hits += int(cand.correct(cosine_pick)[fold_q == k].sum())
                n_iters.append(int(m.n_iter_))
            info["cv"][str(leaf)] = {"hits": hits, "valid_cosine_hits": cos_hits, "n_iter": n_iters}
            if n_iters and (best is None or hits >= best[0]):
                best = (hits, leaf, int(np.median(n_iters)), cos_hits)
        info["cv_queries"] = int((fold_q >= 0).sum())
        if best is not None:
            info["min_samples_leaf"], params = best[1], {**params, "min_samples_leaf": best[1], "max_iter": best[2]}
        # The model is used only if it beat the cosine order on the held-out families (ties: the cosine order,
        # as a cue rule that learns nothing keeps every value); without folds it is used as fitted.
        info["uses_model"] = best is None or best[0] > best[3]
        model = HistGradientBoostingClassifier(**{**params, "early_stopping": False})
        model.fit(x[on_dev], y[on_dev])
        score = model.decision_function(x)
        info["n_iter"] = int(model.n_iter_)
        info["importance"] = _permutation_importance(cand, model, pos[on_dev], x[on_dev], dev)
    return {"pick": best_scored(cand, pos, score) if info["uses_model"] else cosine_pick, **info}


def _permutation_importance(cand: Candidates, model, pos: np.ndarray, x: np.ndarray, dev: np.ndarray) -> dict:
    """Drop in dev top-1 when one feature column is shuffled (mean of PERMUTATION_REPEATS seeded shuffles), on
    at most PERMUTATION_QUERIES dev queries (a seeded sample)."""
    queries = np.nonzero(dev)[0]
    if len(queries) > PERMUTATION_QUERIES:
        queries = np.sort(np.random.default_rng(0).choice(queries, PERMUTATION_QUERIES, replace=False))
    keep = np.isin(cand.query[pos], queries)
    pos, x = pos[keep], x[keep]

    def top1(xm: np.ndarray) -> float:
        return float(cand.correct(best_scored(cand, pos, model.decision_function(xm)))[queries].mean())

    base = top1(x)
    rng = np.random.default_rng(0)
    out = {}
    for j, name in enumerate(FEATURES):
        drops = []
        for _ in range(PERMUTATION_REPEATS):
            xp = x.copy()
            xp[:, j] = xp[rng.permutation(len(xp)), j]
            drops.append(base - top1(xp))
        out[name] = round(float(np.mean(drops)), 6)
    return out


LEARNED_FITS["surface_gbm"] = surface_gbm
