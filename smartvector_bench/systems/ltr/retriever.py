"""``ltr``: a learning-to-rank model (LightGBM ``lambdarank``) over candidate features a document store has, trained
on the dev split's qrels and judged on test: "what metadata can learn", the ranking engineer's first try.

Candidates per query (at most 3 x ``depth``, deduplicated): the ``depth`` best by cosine among every chunk, the
``depth`` best by cosine among the chunks in force at as_of, and the ``depth`` best by BM25 among every chunk
(:mod:`.features` lists what is known of each). The model is :class:`~smartvector_bench.systems.base.TrainsOnDev`:
the harness (``experiments/tuning.py``) hands it the dev queries and their graded qrels (0 for a candidate not in
them); test qrels and every other label never reach it, and it reads no label at search time. Training is
deterministic (one thread, fixed seed, LightGBM's ``deterministic`` mode). The candidates are ranked by the model's
score, ties to the lower corpus index; the rest are not returned.

Reported confidence: the top-1's softmax share of the query's candidate scores (a listwise model's probability
that the top-1 is the one), in [0, 1]. ``describe()`` holds the fit (dev queries, pairs, positives) and each
feature's share of the total split gain (LightGBM's ``feature_importance("gain")``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.index import FlatIndex
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.core.settings import section
from smartvector_bench.systems.bm25 import BM25, query_texts
from smartvector_bench.systems.ltr.bounds import ltr_bounds
from smartvector_bench.systems.ltr.features import CATEGORICAL, FEATURES, DocumentVersions, pair_features
from smartvector_bench.systems.valid_cosine import in_force

logging.getLogger("lightgbm").setLevel(logging.WARNING)


@dataclass(frozen=True)
class LTRParams:
    depth: int = 50             # candidates from each of the three lists
    n_estimators: int = 200     # boosting rounds
    learning_rate: float = 0.05
    num_leaves: int = 15
    min_child_samples: int = 10
    seed: int = 0
    k1: float = 1.5             # BM25 feature
    b: float = 0.75
    # A saved model (``model_<name>.txt``, which the harness writes beside the run file) to search with instead of
    # training: the regression gate's rerun on another CPU, where features that moved by float rounding would
    # train other trees (a value crossing a histogram bin changes every later tree).
    model_file: str | None = None
    POSITIVE = ("depth", "n_estimators", "learning_rate", "num_leaves", "min_child_samples")


def softmax_top1(top: np.ndarray, scores: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Per query, exp(top) / sum over its candidates of exp(score); NaN for a query without candidates."""
    best = np.max(np.where(valid, scores, -np.inf), axis=1, keepdims=True)
    safe = np.where(np.isfinite(best), best, 0.0)
    total = np.sum(np.where(valid, np.exp(scores - safe), 0.0), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.exp(top - safe[:, 0]) / total
    return np.where(valid.any(axis=1), np.clip(share, 0.0, 1.0), np.nan)


class LTR:
    name = "ltr"

    def __init__(self, name: str = "ltr", **params):
        self.name = name
        self.p = section(LTRParams, params, f"retrievers.{name}")
        if self.p.learning_rate > 1.0:
            raise BenchError(f"retrievers.{name}.learning_rate={self.p.learning_rate!r}: must be in (0, 1]")
        if self.p.model_file is not None and not isinstance(self.p.model_file, str):
            raise BenchError(f"retrievers.{name}.model_file={self.p.model_file!r}: must be a path or null")
        self._bm25 = BM25(name, k1=self.p.k1, b=self.p.b)
        self.model = None
        self.fit_summary: dict | None = None

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        self.corpus = corpus
        self._index = FlatIndex(vectors)
        self._bm25.index(corpus, vectors, serve_time)
        self._versions = DocumentVersions(corpus)

    def _inputs(self, query_vectors: np.ndarray, as_of: np.ndarray, texts: list[str]):
        """(as_of, cosine, BM25, in force): the (Q, N) scores and window every candidate list is drawn from."""
        as_of = query_texts(self.name, texts, as_of)
        return as_of, self._index.all_scores(query_vectors), self._bm25._scores(texts), in_force(self.corpus, as_of)

    def _candidates(self, query_vectors: np.ndarray, as_of: np.ndarray, texts: list[str]):
        """(cand, features, inputs): (Q, C) candidate rows (-1 padding, each row's candidates ascending), their
        (Q, C, F) features, and ``_inputs``' (as_of, cosine, BM25, in force) they were drawn from."""
        inputs = as_of, cos, bm25, window = self._inputs(query_vectors, as_of, texts)
        n = len(self.corpus)
        depth = min(self.p.depth, n)
        lists = [rank_by_score(cos, depth)[0],
                 rank_by_score(np.where(window, cos, -np.inf), depth)[0],
                 rank_by_score(np.where(bm25 > 0, bm25, -np.inf), depth)[0]]
        cand = np.sort(np.concatenate(lists, axis=1), axis=1)
        cand[:, 1:][cand[:, 1:] == cand[:, :-1]] = -1  # duplicates (sorted, so adjacent) become padding
        cand = np.sort(np.where(cand >= 0, cand, n), axis=1)  # padding last
        cand = np.where(cand < n, cand, -1)
        rows = np.maximum(cand, 0)
        feats = pair_features(self.corpus, self._versions, cand, as_of, np.take_along_axis(cos, rows, axis=1),
                              np.take_along_axis(bm25, rows, axis=1), window)
        return cand, feats, inputs

    # -- TrainsOnDev -----------------------------------------------------------------------------------------------
    def train(self, query_vectors: np.ndarray, as_of: np.ndarray, texts: list[str], relevant: Ragged,
              grades: Ragged) -> dict:
        import lightgbm

        cand, feats, _ = self._candidates(query_vectors, as_of, texts)
        label = np.zeros(cand.shape, dtype=np.int64)
        for q in range(len(cand)):
            grade_of = dict(zip(relevant.row(q).tolist(), grades.row(q).tolist()))
            label[q] = [grade_of.get(int(c), 0) if c >= 0 else 0 for c in cand[q]]
        valid = cand >= 0
        group = valid.sum(axis=1)
        params = {"objective": "lambdarank", "learning_rate": self.p.learning_rate, "num_leaves": self.p.num_leaves,
                  "min_data_in_leaf": self.p.min_child_samples, "seed": self.p.seed, "num_threads": 1,
                  "deterministic": True, "force_row_wise": True, "verbosity": -1}
        if self.p.model_file is not None:
            self.model = self._load(lightgbm)
        else:
            data = lightgbm.Dataset(feats[valid], label[valid], group=group[group > 0], feature_name=list(FEATURES),
                                    categorical_feature=list(CATEGORICAL), free_raw_data=True)
            self.model = lightgbm.train(params, data, num_boost_round=self.p.n_estimators)
        gain = self.model.feature_importance(importance_type="gain")
        total = float(gain.sum())
        self.fit_summary = {
            "dev_queries": int(len(cand)), "pairs": int(valid.sum()), "positives": int((label[valid] > 0).sum()),
            "queries_with_a_positive_candidate": int(((label > 0) & valid).any(axis=1).sum()),
            "feature_importance_gain": {f: round(float(g) / total, 6) if total > 0 else 0.0
                                        for f, g in zip(FEATURES, gain)},
            **({"model_file": self.p.model_file} if self.p.model_file is not None else {})}
        return self.fit_summary

    def _load(self, lightgbm):
        """The booster of ``model_file``, checked to be a model of these features (BenchError naming the key)."""
        where = f"retrievers.{self.name}.model_file={self.p.model_file}"
        try:
            model = lightgbm.Booster(model_file=self.p.model_file)
        except Exception as exc:  # noqa: BLE001 - LightGBM raises its own error for a missing or bad file
            raise BenchError(f"{where}: not a LightGBM model file ({' '.join(str(exc).split())[:200]})") from None
        if model.feature_name() != list(FEATURES):
            raise BenchError(f"{where}: a model of the features {model.feature_name()}, not {list(FEATURES)}")
        return model

    # -- SavesModel -------------------------------------------------------------------------------------------------
    def model_text(self) -> str | None:
        """The trained model as LightGBM's text format (``Booster.model_to_string``), None before training."""
        return None if self.model is None else self.model.model_to_string()

    # -- Retriever ------------------------------------------------------------------------------------------------
    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        if self.model is None:
            raise BenchError(f"{self.name}: not trained; it is trained on the dev split's qrels before it searches "
                             "(experiments/tuning.py train_on_dev)")
        cand, feats, (as_of, cos, bm25, window) = self._candidates(query_vectors, as_of, texts)
        valid = cand >= 0
        scores = np.full(cand.shape, -np.inf)
        if valid.any():
            scores[valid] = self.model.predict(feats[valid])
        ranked, top = rank_by_score(scores, k, candidates=np.where(valid, cand, 0))
        confidence = softmax_top1(np.nan_to_num(top[:, 0], nan=-np.inf), scores, valid) if top.shape[1] else \
            np.full(len(cand), np.nan)
        bounds, conf = ltr_bounds(self.model, self.corpus, self._versions, as_of, cos, bm25, window,
                                  min(self.p.depth, len(self.corpus)), ranked)
        return Run(self.name, ranked, top, confidence, bounds, conf)

    def describe(self) -> dict:
        return {"confidence": "softmax share of the top-1 among the query's candidate scores",
                "rule": f"LightGBM lambdarank over {len(FEATURES)} store features of the union of the "
                        f"{self.p.depth} best by cosine, by cosine in force and by BM25; trained on dev qrels",
                "features": list(FEATURES),
                "fit": self.fit_summary if self.fit_summary is not None else "not trained"}
