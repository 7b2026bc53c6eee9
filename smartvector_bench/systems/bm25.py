"""BM25 keyword retrieval (the ``bm25s`` package, Lucene variant) over the chunk texts; the queries are the
``texts`` passed to ``search`` (embeddings are not used).

Two systems: ``bm25`` ranks every chunk; ``bm25_valid`` keeps only the chunks in force at the query's as_of
(``created_at <= as_of`` and ``valid_from <= as_of < valid_to``). Tokenisation: ``bm25s.tokenize`` (lower case,
English stopwords removed, no stemming). Chunks sharing no term with the query score 0 and are still ranked,
after the others (ties to the lower corpus index), so every query gets k results when k chunks are eligible.

Reported confidence: s1 / (s1 + s2) of the two best BM25 scores; 1.0 when there is one result or s2 = 0;
0.0 when s1 = 0 (no chunk shares a term with the query); NaN when there is no result.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import bm25s
import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.core.settings import section
from smartvector_bench.systems.valid_cosine import in_force, require_in_force

logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets its own logger to DEBUG on import


@dataclass(frozen=True)
class BM25Params:
    k1: float = 1.5  # term-frequency saturation
    b: float = 0.75  # length normalisation, in [0, 1]


def _tokens(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(list(texts), stopwords="english", return_ids=False, show_progress=False)


def margin_confidence(top: np.ndarray) -> np.ndarray:
    """s1 / (s1 + s2) of the two best scores (NaN = no result); 1.0 with one result or s2 = 0; 0.0 if s1 = 0."""
    q = top.shape[0]
    s1 = top[:, 0] if top.shape[1] else np.full(q, np.nan)
    s2 = top[:, 1] if top.shape[1] > 1 else np.full(q, np.nan)
    s2 = np.where(np.isnan(s2), 0.0, s2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(s2 > 0, s1 / (s1 + s2), 1.0)
    return np.where(np.isnan(s1), np.nan, np.where(s1 > 0, ratio, 0.0))


def query_texts(system: str, texts: list[str] | None, as_of: np.ndarray) -> np.ndarray:
    """For a system that reads the query texts: ``as_of`` as a float array, after checking there is one text per
    as_of time (a one-line error naming the system otherwise)."""
    if texts is None:
        raise BenchError(f"{system}: needs the query texts (search(..., texts=[...]))")
    as_of = np.asarray(as_of, dtype=np.float64).reshape(-1)
    if len(texts) != len(as_of):
        raise BenchError(f"{system}: {len(texts)} query texts for {len(as_of)} as_of times")
    return as_of


class BM25:
    """``bm25``: every chunk is a candidate."""

    valid = False

    def __init__(self, name: str = "bm25", **params):
        self.name = name
        self.p = section(BM25Params, params, f"retrievers.{name}")
        if self.p.b > 1.0:
            raise BenchError(f"retrievers.{name}.b={self.p.b!r}: must be in [0, 1]")

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        self.corpus = corpus
        tokens = _tokens(corpus.texts)
        self._bm25 = None  # a corpus without a single term: every chunk scores 0 (bm25s cannot index it)
        if any(tokens):
            self._bm25 = bm25s.BM25(k1=self.p.k1, b=self.p.b)
            self._bm25.index(tokens, show_progress=False)

    def _scores(self, texts: list[str]) -> np.ndarray:
        """(Q, N) float64 BM25 scores (0 where a chunk shares no term with the query)."""
        n = len(self.corpus)
        out = np.zeros((len(texts), n), dtype=np.float64)
        if self._bm25 is None:
            return out
        for i, toks in enumerate(_tokens(texts)):
            ids = self._bm25.get_tokens_ids(list(toks))
            ids = [t for t in ids if t != self._bm25.vocab_dict.get("")]  # the package's empty-document token
            if ids:
                out[i] = self._bm25.get_scores_from_ids(ids)
        return out

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        as_of = query_texts(self.name, texts, as_of)
        scores = self._scores(texts)
        if self.valid:
            scores = np.where(in_force(self.corpus, as_of), scores, -np.inf)
        ranked, top = rank_by_score(scores, k)
        return Run(self.name, ranked, top, margin_confidence(top))

    def describe(self) -> dict:
        where = "the chunks in force at as_of" if self.valid else "every chunk"
        return {"confidence": "s1 / (s1 + s2) of the two best BM25 scores (1.0 with one result or s2 = 0; "
                              "0.0 when s1 = 0; NaN with no result)",
                "rule": f"BM25 (bm25s, k1={self.p.k1}, b={self.p.b}, English stopwords) over {where}; "
                        "zero-score chunks ranked last, ties to the lower index"}


class BM25Valid(BM25):
    """``bm25_valid``: only the chunks in force at the query's as_of are candidates."""

    valid = True

    def __init__(self, name: str = "bm25_valid", **params):
        super().__init__(name, **params)

    def check_dataset(self, corpus: Corpus) -> None:
        require_in_force(self.name, corpus, "it keeps the chunks in force at as_of")
