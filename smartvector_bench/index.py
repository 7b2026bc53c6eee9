"""FAISS exact inner-product index over L2-normalised vectors (inner product = cosine)."""

from __future__ import annotations

import faiss
import numpy as np


class FlatIndex:
    def __init__(self, vectors: np.ndarray):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = vectors.shape[1]
        self._index = faiss.IndexFlatIP(self.dim)
        self._index.add(vectors)

    def __len__(self) -> int:
        return self._index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (Q, min(k, N)); ids are row numbers of the indexed vectors."""
        k = min(k, len(self))
        scores, ids = self._index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return scores.astype(np.float64), ids.astype(np.int64)

    def all_scores(self, queries: np.ndarray) -> np.ndarray:
        """Dense (Q, N) cosine matrix via an exhaustive FAISS search, scattered back to row order."""
        scores, ids = self.search(queries, len(self))
        out = np.full((len(queries), len(self)), -np.inf)
        np.put_along_axis(out, ids, scores, axis=1)
        return out
