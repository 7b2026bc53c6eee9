"""FAISS inner-product indexes over L2-normalised vectors (inner product = cosine).

``FlatIndex`` is exact; ``HNSWIndex`` (graph search, approximate) has the same API. Both report their memory
(``nbytes``) for the metadata-to-index ratio and expose the stored vectors without a copy (``stored``), so a
caller that re-ranks candidates needs no second copy of the vectors.
"""

from __future__ import annotations

import faiss
import numpy as np


class FlatIndex:
    kind = "flat"

    def __init__(self, vectors: np.ndarray):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = vectors.shape[1]
        self._index = faiss.IndexFlatIP(self.dim)
        self._index.add(vectors)

    def __len__(self) -> int:
        return self._index.ntotal

    @property
    def exact(self) -> bool:
        """True when ``search`` returns the exact top-k (every row left out scores at most the k-th)."""
        return True

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

    def dense_scores(self, queries: np.ndarray) -> np.ndarray:
        """(Q, N) float64 cosines in row order, from one BLAS product with the stored vectors (no copy, no sort).

        Equal to ``all_scores`` to float32 rounding (FAISS's own BLAS call blocks the sum differently: the two
        differ by up to ~1e-6); SmartVector's scoring and its audit use this one, so they agree bit for bit."""
        q = np.ascontiguousarray(queries, dtype=np.float32)
        return (q @ self.stored().T).astype(np.float64)

    def _exact_index(self):
        return self._index

    def stored(self) -> np.ndarray:
        """(N, dim) float32 read-only view of the vectors FAISS stores (no copy; valid while the index lives)."""
        flat = self._exact_index()
        view = faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * self.dim).reshape(flat.ntotal, self.dim)
        view.flags.writeable = False
        return view

    def nbytes(self) -> int:
        """Memory of the stored vectors: ntotal * dim * 4."""
        return int(self._index.ntotal) * self.dim * 4


class HNSWIndex(FlatIndex):
    """FAISS ``IndexHNSWFlat`` (inner product): approximate top-k, same API as :class:`FlatIndex`.

    ``ef_search`` is raised to k on a search for k results (HNSW cannot return more than efSearch).
    ``all_scores`` stays exact (it reads every stored vector), so exhaustive scoring does not depend on the
    graph.
    """

    kind = "hnsw"

    def __init__(self, vectors: np.ndarray, m: int = 32, ef_construction: int = 200, ef_search: int = 128):
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = vectors.shape[1]
        self.m, self.ef_construction, self.ef_search = int(m), int(ef_construction), int(ef_search)
        self._index = faiss.IndexHNSWFlat(self.dim, self.m, faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = self.ef_construction
        self._index.hnsw.efSearch = self.ef_search
        self._index.add(vectors)

    @property
    def exact(self) -> bool:
        return False

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (Q, min(k, N)); a slot the graph search did not fill has id -1, score -inf."""
        k = min(k, len(self))
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(self.ef_search, k)
        scores, ids = self._index.search(np.ascontiguousarray(queries, dtype=np.float32), k, params=params)
        scores = scores.astype(np.float64)
        ids = ids.astype(np.int64)
        scores[ids < 0] = -np.inf
        return scores, ids

    def _exact_index(self):
        return faiss.downcast_index(self._index.storage)  # the graph's flat storage: no second copy

    def all_scores(self, queries: np.ndarray) -> np.ndarray:
        """Exact (Q, N) cosines, from the graph's flat storage."""
        scores, ids = self._exact_index().search(np.ascontiguousarray(queries, dtype=np.float32), len(self))
        out = np.full((len(queries), len(self)), -np.inf)
        np.put_along_axis(out, ids.astype(np.int64), scores.astype(np.float64), axis=1)
        return out

    def nbytes(self) -> int:
        """Stored vectors plus the graph's links (neighbour ids, int32) and per-level offsets."""
        hnsw = self._index.hnsw
        links = faiss.vector_to_array(hnsw.neighbors).nbytes
        offsets = faiss.vector_to_array(hnsw.offsets).nbytes
        levels = faiss.vector_to_array(hnsw.levels).nbytes
        return super().nbytes() + int(links + offsets + levels)


def build_index(vectors: np.ndarray, kind: str = "flat", hnsw_m: int = 32, hnsw_ef_construction: int = 200,
                hnsw_ef_search: int = 128) -> FlatIndex:
    if kind == "flat":
        return FlatIndex(vectors)
    if kind == "hnsw":
        return HNSWIndex(vectors, hnsw_m, hnsw_ef_construction, hnsw_ef_search)
    raise ValueError(f"index={kind}: unknown; allowed: flat, hnsw")
