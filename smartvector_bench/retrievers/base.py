"""The retriever protocol: index a corpus at a simulated time, then search query batches, each judged at
its own ``as_of`` time."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..dataset import Corpus
from ..run import Run


class Retriever(Protocol):
    name: str

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        """Ingest the corpus (vectors row-aligned with it) and prepare to serve from ``serve_time`` on
        (simulated days; consolidation runs there)."""
        ...

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        """Rank the corpus for each query; ``as_of[q]`` is the time the answer must hold at. ``texts`` are the
        query texts, for systems that do not work on embeddings (e.g. keyword overlap). ``labels`` is empty
        except for a system that declares ``reads_labels = True`` (the oracle, a ceiling): the harness then
        calls its ``index_labels(chunk_family, chunk_kind)`` after ``index`` and passes ``query_family=``.
        Every other system must ignore unknown keyword arguments."""
        ...

    def describe(self) -> dict:
        """What this system did beyond the config (e.g. consolidation summary), for metrics.json."""
        ...
