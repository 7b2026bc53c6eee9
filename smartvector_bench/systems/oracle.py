"""Oracle: a ceiling that reads the ground-truth labels (the only system that does: it is
:class:`~.base.ReadsLabels`).

The harness calls ``index(corpus, vectors, serve_time)``, then ``index_labels(chunk_family, chunk_kind)`` (one
family key and one kind per corpus row, "" for none), and passes ``query_family=`` (aligned with the query
batch) to ``search``.

It is the ceiling of what metadata can tell: it knows which chunks state the query's fact (family and kind
``statement`` from the labels, so no other section or policy competes), and ranks those by the trust
metadata alone. What it cannot know is which statement is current when an authoritative source lags or a
less authoritative one is ahead: only time can tell those apart.

Rule: among the chunks in force at the query's as_of (``created_at <= as_of`` and
``valid_from <= as_of < valid_to``) whose family equals the query's family and that are statements (when
kinds are given), the most authoritative
(``corpus.authority`` descending) comes first, cosine breaking ties (then the lower corpus index); after them,
to fill k, every other chunk in force at as_of by cosine (then the lower index). A query whose family is ""
has no same-family chunk (a chunk with no family is never the query's family). Reported confidence: the
top-1 cosine clipped to [0, 1] (NaN when nothing is in force).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.index import FlatIndex
from smartvector_bench.core.run import Run
from smartvector_bench.core.settings import section
from smartvector_bench.systems.base import require_fields
from smartvector_bench.systems.cosine_baseline import cosine_confidence
from smartvector_bench.systems.valid_cosine import in_force


@dataclass(frozen=True)
class OracleParams:
    pass  # no settings; the section still rejects unknown keys


class Oracle:
    name = "oracle"
    rank_key = "the query's family first"  # RanksByKey: the score is the cosine

    def __init__(self, name: str = "oracle", **params):
        self.name = name
        self.p = section(OracleParams, params, f"retrievers.{name}")
        self._chunk_family: np.ndarray | None = None
        self._statement: np.ndarray | None = None

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        self.corpus = corpus
        self._index = FlatIndex(vectors)
        self._chunk_family = None  # labels belong to one corpus: index_labels must follow

    def check_dataset(self, corpus: Corpus) -> None:
        """The labels/ folder is the harness's check (ReadsLabels); here the metadata the rule ranks by."""
        require_fields(self.name, corpus, ("created_at", "valid_from", "valid_to", "authority"),
                       "it ranks the statements in force at as_of by authority")

    def index_labels(self, chunk_family: np.ndarray, chunk_kind: np.ndarray | None = None) -> None:
        fam = np.asarray(chunk_family, dtype=object).reshape(-1)
        if len(fam) != len(self.corpus):
            raise BenchError(f"oracle: {len(fam)} chunk families for {len(self.corpus)} corpus rows")
        self._chunk_family = fam
        if chunk_kind is None:
            self._statement = np.ones(len(fam), dtype=bool)
        else:
            kind = np.asarray(chunk_kind, dtype=object).reshape(-1)
            if len(kind) != len(fam):
                raise BenchError(f"oracle: {len(kind)} chunk kinds for {len(fam)} corpus rows")
            self._statement = (kind == "statement") | (kind == "")  # "": a dataset that labels no kinds

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, query_family: np.ndarray | None = None, **labels) -> Run:
        if query_family is None or self._chunk_family is None:
            raise BenchError("oracle: needs the ground-truth labels (index_labels(chunk_family) after index(), "
                             "and search(..., query_family=...)); it is the only system that reads them")
        qf = np.asarray(query_family, dtype=object).reshape(-1)
        as_of = np.asarray(as_of, dtype=np.float64).reshape(-1)
        if len(qf) != len(as_of):
            raise BenchError(f"oracle: {len(qf)} query families for {len(as_of)} queries")
        c = self.corpus
        n = len(c)
        cos = self._index.all_scores(query_vectors)
        ok = in_force(c, as_of)
        same = (ok & (qf[:, None] == self._chunk_family[None, :]) & (qf[:, None] != "")
                & self._statement[None, :])
        group = np.where(same, 0, np.where(ok, 1, 2))  # same family, other in force, excluded
        auth = np.where(same, -c.authority[None, :].astype(np.float64), 0.0)
        idx = np.broadcast_to(np.arange(n, dtype=np.int64), cos.shape)
        # lexsort sorts by the last key first: group, then authority (same family only), cosine, index.
        order = np.lexsort((idx, -cos, auth, group), axis=1)[:, :k]
        ranked = np.take_along_axis(idx, order, axis=1).astype(np.int64)
        top = np.take_along_axis(cos, order, axis=1).astype(np.float64)
        dropped = np.take_along_axis(group, order, axis=1) == 2
        ranked[dropped], top[dropped] = -1, np.nan
        if ranked.shape[1] < k:
            pad = k - ranked.shape[1]
            ranked = np.pad(ranked, ((0, 0), (0, pad)), constant_values=-1)
            top = np.pad(top, ((0, 0), (0, pad)), constant_values=np.nan)
        return Run(self.name, ranked, top, cosine_confidence(ranked, top))

    def describe(self) -> dict:
        return {"confidence": "top-1 cosine clipped to [0, 1]",
                "rule": "reads the ground-truth labels: among the statements (kind) of the query's family (family) "
                        "in force at as_of, the most authoritative first (cosine breaks ties); then every other "
                        "chunk in force at as_of by cosine",
                "reads_labels": True}
