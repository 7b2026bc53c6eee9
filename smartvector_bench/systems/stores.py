"""What the store-native systems share (``lancedb_valid``, ``chroma_valid``, ``milvus_valid``): the practitioner's
setup, where the chunks sit in a vector store with their validity window as the store's own typed columns and
each query is one filtered vector search with that query's ``as_of`` in the filter.

:class:`StoreRetriever` holds everything but the store: the settings section (``PARAMS``, unknown keys refused,
as valid_cosine), the dataset check (``require_in_force``, so ``dataset.metadata=created_only`` is served in
valid_cosine's degraded mode), a temporary folder for an embedded store, the per-query loop, the confidence, the
timings and the common part of ``describe()``. A store module implements :meth:`StoreRetriever._import` (its
library, imported at index time only), :meth:`StoreRetriever._open` (build the store and its index),
:meth:`StoreRetriever._query` (one query's rows and cosines) and :meth:`StoreRetriever._store_info`.

``describe()`` adds to the store's own report ``import_s`` (the library's import, paid once per process),
``index_s`` (open the store, add the rows, build its index), ``query_latency_ms`` (one search per query: n,
median, p95, max), ``tie_margin`` and ``checks``.

* **Filter.** In force at ``as_of`` is ``created_at <= as_of AND valid_from <= as_of < valid_to``
  (:func:`~smartvector_bench.systems.valid_cosine.in_force`), written in each store's filter language over the
  served corpus's three columns. Under ``created_only`` they hold the loader's defaults (``valid_from`` =
  ``created_at``, ``valid_to`` = +inf), so the filter is ``created_at <= as_of``, as valid_cosine's. A query with
  a non-finite ``as_of`` has nothing in force (``in_force``'s comparisons are all false there) and is not sent.
* **Ranking.** ``k + TIE_MARGIN`` hits are fetched and re-ranked by
  :func:`~smartvector_bench.core.run.rank_by_score` (score descending, ties to the lower corpus index, the rule
  valid_cosine follows), so exact ties at rank k are broken by the benchmark's rule, not the store's. Scores are
  the store's own, turned back into a cosine; confidence is the top-1 cosine clipped to [0, 1].
* **Checks** (``describe()["checks"]``): ``short_queries`` counts the queries that got fewer hits than
  ``min(k + TIE_MARGIN, chunks in force)`` (an ANN index under a restrictive filter does that; an exact search
  never), ``returned_outside_window`` the hits the filter should have excluded (always 0 unless the filter is
  wrong). Both are computed from the corpus after the store answered; neither changes a ranking.
* **Temporary store.** An embedded store lives in a new folder ``<name>-*`` under ``tempfile.gettempdir()`` (under
  ``smartvector-bench`` the job's ``<run>/.scratch/``), removed, after the store's clients are closed, by
  ``close()``, by the next ``index()``, on garbage collection and at interpreter exit (``weakref.finalize``), as
  livevectorlake's lake.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.core.settings import section
from smartvector_bench.systems.cosine_baseline import cosine_confidence
from smartvector_bench.systems.valid_cosine import IN_FORCE_FIELDS, in_force, require_in_force

TIE_MARGIN = 16  # extra hits fetched so ties at rank k are broken by our rule, not the store's
FLOAT64_MAX = float(np.finfo(np.float64).max)
RULE = "the store's filtered search over the chunks in force at as_of (created_at <= as_of, valid_from <= as_of < " \
       "valid_to, the store's own typed columns), ranked by cosine, ties to the lower corpus index"


def finite_times(values: np.ndarray) -> np.ndarray:
    """``values`` (float64 days) with +inf / -inf as +/- the largest float64, for a store that cannot hold an
    infinite number. Every comparison with a finite ``as_of`` keeps its truth value: an open ``valid_to`` (+inf)
    becomes a value above every finite time, a ``created_at`` "for all time" (-inf) one below. NaN is refused."""
    values = np.asarray(values, dtype=np.float64)
    if np.isnan(values).any():
        raise BenchError("a validity time is NaN; the store filter cannot compare it")
    return np.clip(values, -FLOAT64_MAX, FLOAT64_MAX)


def window_columns(corpus: Corpus) -> dict[str, np.ndarray]:
    """The served corpus's three window fields, float64 days since the epoch, row-aligned with it."""
    return {f: np.asarray(getattr(corpus, f), dtype=np.float64) for f in IN_FORCE_FIELDS}


def latency_ms(seconds: list[float]) -> dict:
    a = np.asarray(seconds, dtype=np.float64) * 1000
    if not len(a):
        return {"n": 0}
    return {"n": len(a), "median": round(float(np.median(a)), 4), "p95": round(float(np.quantile(a, 0.95)), 4),
            "max": round(float(a.max()), 4)}


def _release(closers: list[Callable[[], object]], folder: str | None) -> None:
    """The finalizer: close the store's clients (last opened first), then remove its temporary folder."""
    for close in reversed(closers):
        try:
            close()
        except Exception:  # noqa: BLE001, S110 - a store that fails to close must not keep its folder
            pass
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


class StoreRetriever:
    """A version-aware retriever served by a vector store's filtered search; see the module docstring."""

    name: str
    PARAMS: ClassVar[type]

    def __init__(self, name: str | None = None, **params):
        self.name = type(self).name if name is None else name
        self.p = self.settings(params, f"retrievers.{self.name}")
        self._cleanup: weakref.finalize | None = None
        self.store_folder: Path | None = None  # the embedded store's temporary folder, while it exists
        self._ready = False
        self._timing: dict = {}

    def settings(self, params: dict, where: str):
        """The checked settings section (a store module adds checks ``section`` cannot make)."""
        return section(self.PARAMS, params, where)

    def check_dataset(self, corpus: Corpus) -> None:
        require_in_force(self.name, corpus, "its store filter keeps the chunks in force at as_of")

    # -- the store's side ------------------------------------------------------------------------------------

    def _import(self) -> None:
        """Import the store's library (here, not at the top of the module: a run without this system never pays
        for it); timed apart from the index as ``import_s``."""
        raise NotImplementedError

    def _open(self, vectors: np.ndarray, window: dict[str, np.ndarray]) -> None:
        """Build the store from ``vectors`` (float32, row-aligned with the corpus) and the window columns
        (float64 days; +inf where a window is open), and its index; store ids must map back to corpus rows."""
        raise NotImplementedError

    def _query(self, vector: np.ndarray, as_of: float, n: int) -> tuple[np.ndarray, np.ndarray]:
        """One filtered search at a finite ``as_of``: up to ``n`` (corpus rows, cosines), best first."""
        raise NotImplementedError

    def _store_info(self) -> dict:
        """The store, its version, mode and parameters, the column encoding (for ``describe()``)."""
        raise NotImplementedError

    def temp_folder(self) -> tuple[Path, list[Callable[[], object]]]:
        """A new temporary folder for an embedded store, and the list its clients' ``close`` go in: the
        finalizer calls them before it removes the folder. They must not refer to ``self``."""
        closers: list[Callable[[], object]] = []
        path = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self._cleanup = weakref.finalize(self, _release, closers, str(path))
        self.store_folder = path
        return path, closers

    def closers(self) -> list[Callable[[], object]]:
        """For a store outside our folders (a server): the list of its closers, no folder removed."""
        closers: list[Callable[[], object]] = []
        self._cleanup = weakref.finalize(self, _release, closers, None)
        return closers

    def close(self) -> None:
        """Close the store; a temporary folder is removed."""
        self._ready = False
        self.store_folder = None
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None

    # -- the retriever protocol ------------------------------------------------------------------------------

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        self.close()  # a previous index()'s store is no longer reachable
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if len(vectors) != len(corpus):
            raise BenchError(f"{self.name}: {len(vectors)} vectors for {len(corpus)} chunks")
        self.corpus = corpus
        start = time.perf_counter()
        self._import()
        self._timing = {"import_s": round(time.perf_counter() - start, 4)}  # _open may add phases (ann_index_s)
        start = time.perf_counter()
        self._open(vectors, window_columns(corpus))
        self._timing["index_s"] = round(time.perf_counter() - start, 4)
        self._latency: list[float] = []
        self._checks = {"short_queries": 0, "returned_outside_window": 0}
        self._ready = True

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **_ignored) -> Run:
        if not self._ready:
            raise BenchError(f"{self.name}: search() before index()")
        fetch = k + TIE_MARGIN
        queries = np.ascontiguousarray(query_vectors, dtype=np.float32)
        as_of = np.asarray(as_of, dtype=np.float64).reshape(-1)
        scores = np.full((len(queries), fetch), -np.inf)
        cand = np.zeros((len(queries), fetch), dtype=np.int64)
        for q in range(len(queries)):
            t = float(as_of[q])
            if not math.isfinite(t):
                continue  # nothing is in force (see the module docstring)
            start = time.perf_counter()
            rows, cos = self._query(queries[q], t, fetch)
            self._latency.append(time.perf_counter() - start)
            rows, cos = np.asarray(rows, dtype=np.int64)[:fetch], np.asarray(cos, dtype=np.float64)[:fetch]
            scores[q, :len(rows)], cand[q, :len(rows)] = cos, rows
            keep = in_force(self.corpus, np.array([t]))[0]
            self._checks["short_queries"] += int(len(rows) < min(fetch, int(keep.sum())))
            self._checks["returned_outside_window"] += int(np.count_nonzero(~keep[rows]))
        ranked, top = rank_by_score(scores, k, candidates=cand)
        return Run(self.name, ranked, top, cosine_confidence(ranked, top))

    def describe(self) -> dict:
        out = {"confidence": "top-1 cosine clipped to [0, 1]", "rule": RULE, **self._store_info()}
        if self._ready:
            out.update({**self._timing, "query_latency_ms": latency_ms(self._latency), "tie_margin": TIE_MARGIN,
                        "checks": dict(self._checks)})
        return out
