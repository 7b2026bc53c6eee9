"""Candidate pairs for consolidation from a vector index, and their recall against all pairs.

All-pairs consolidation compares every new vector with every vector in the pool (an N x N sparse product
for word Jaccard, an N x N cosine matrix for the semantic detector): quadratic time and, at 100K vectors,
memory. The candidate path instead asks a FAISS index for each vector's ``k`` nearest neighbours by inner
product (the vectors are L2-normalised float32, so inner product = cosine) and judges only those pairs.

Everything here is columnar: a pair set is two int64 arrays ``(i, j)`` with ``i < j``, unique and sorted
by ``(i, j)``; no per-pair Python objects. The search runs in blocks of ``block_rows`` query rows, so the
working set is ``block_rows * (k + 1)`` ids and scores on top of the index and the ``N * k`` pair keys.

``flat``: exact kNN (``IndexFlatIP``; ties at the k-th neighbour are broken by FAISS's order). Quadratic:
about 2.4 s at 10K and several minutes at 100K on 2 cores.
``ivf`` (the consolidation default): approximate (``IndexIVFFlat``, ``nlist = min(4 sqrt(N), N / 39)``
k-means lists, 10 iterations on a seeded sample of 20 points per list, ``nprobe = 8`` lists searched). At
100K (k = 20): build 2.8 s, search 6.2 s, 97.2% of the exact neighbours of 1,000 sampled rows found.
``hnsw``: approximate (``IndexHNSWFlat``, inner product); at 100K with M = 16, efConstruction = 40,
efSearch = 48: build 9.1 s, search 14.8 s, 95.2%. ivf and hnsw results can depend on FAISS's thread count.
``k >= N - 1`` returns every pair whatever the index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smartvector_bench.core.errors import BenchError

INDEXES = ("flat", "ivf", "hnsw")


def build_pair_index(vectors: np.ndarray, index: str = "flat", hnsw_m: int = 32, ef_construction: int = 200,
                     ef_search: int = 128, nprobe: int = 8, seed: int = 0):
    """A FAISS inner-product index over ``vectors`` (float32, contiguous)."""
    import faiss

    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n = x.shape[0]
    if index == "flat":
        idx = faiss.IndexFlatIP(x.shape[1])
    elif index == "ivf":
        nlist = max(1, min(int(4 * np.sqrt(n)), n // 39))
        idx = faiss.IndexIVFFlat(faiss.IndexFlatIP(x.shape[1]), x.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
        idx.cp.seed, idx.cp.niter = int(seed), 10
        idx.cp.min_points_per_centroid = 1  # no warning: 20 training points per list are enough here
        sample = np.random.default_rng(seed).choice(n, size=min(n, 20 * nlist), replace=False)
        idx.train(x[np.sort(sample)])
        idx.nprobe = min(int(nprobe), nlist)
    elif index == "hnsw":
        idx = faiss.IndexHNSWFlat(x.shape[1], int(hnsw_m), faiss.METRIC_INNER_PRODUCT)
        idx.hnsw.efConstruction = int(ef_construction)
        idx.hnsw.efSearch = int(ef_search)
    else:
        raise BenchError(f"candidate index {index!r}: unknown; allowed: {', '.join(INDEXES)}")
    idx.add(x)
    return idx


def sorted_unique(x: np.ndarray) -> np.ndarray:
    """``np.unique`` of an int64 array by sorting (numpy 2.4's hash-based unique is ~10x slower on millions of
    keys); the same sorted result."""
    x = np.sort(np.asarray(x).ravel())
    return x[np.r_[True, x[1:] != x[:-1]]] if x.size else x


class KeyUnion:
    """The sorted unique union of int64 key pieces, merged as they arrive (whenever the pieces waiting reach
    the merged size, and at least ``PIECES_MERGED`` keys): a key found in many pieces is held about once,
    not once per piece, so the peak is a few times the union instead of the sum of all pieces."""

    PIECES_MERGED = 1 << 22

    def __init__(self) -> None:
        self._merged = np.zeros(0, dtype=np.int64)
        self._waiting: list[np.ndarray] = []
        self._size = 0

    def add(self, piece: np.ndarray) -> None:
        self._waiting.append(np.asarray(piece, dtype=np.int64))
        self._size += len(piece)
        if self._size >= max(len(self._merged), self.PIECES_MERGED):
            self._merge()

    def _merge(self) -> None:
        key = np.concatenate([self._merged, *self._waiting])
        self._merged, self._waiting, self._size = None, [], 0  # the pieces go before the unique copy is made
        key.sort()  # in place: sorted_unique would sort a copy
        self._merged = key[np.r_[True, key[1:] != key[:-1]]] if key.size else key

    def result(self) -> np.ndarray:
        if self._waiting:
            self._merge()
        return self._merged


def _first_k_not_self(labels: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """From (B, k + 1) neighbour ids of ``rows``: each row's first ``k`` ids that are neither itself nor -1."""
    ok = (labels != rows[:, None]) & (labels >= 0)
    ok &= np.cumsum(ok, axis=1) <= k
    r, c = np.nonzero(ok)
    return rows[r], labels[r, c].astype(np.int64)


def knn_pairs(vectors: np.ndarray, k: int, index: str = "flat", block_rows: int = 8192, hnsw_m: int = 32,
              ef_construction: int = 200, ef_search: int | None = None, nprobe: int = 8,
              ) -> tuple[np.ndarray, np.ndarray]:
    """Unique unordered pairs ``(i, j)``, ``i < j``, such that j is among i's ``k`` nearest neighbours by
    inner product or i among j's (self excluded). ``k >= N - 1`` gives every pair (with the flat index).

    Searched in blocks of ``block_rows`` vectors; ``ef_search`` (hnsw) defaults to ``max(128, 2 k)``.
    """
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n = x.shape[0]
    if k < 1 or n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    if k >= n - 1:
        return all_pairs(n)
    idx = build_pair_index(x, index, hnsw_m, ef_construction, ef_search or max(128, 2 * k), nprobe)
    keys = []
    for start in range(0, n, block_rows):
        rows = np.arange(start, min(n, start + block_rows), dtype=np.int64)
        _, labels = idx.search(x[start:rows[-1] + 1], k + 1)
        i, j = _first_k_not_self(labels, rows, k)
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        keys.append(sorted_unique(lo * n + hi))  # dedupe per block to keep the pieces small
    key = sorted_unique(np.concatenate(keys))
    return key // n, key % n


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair ``(i, j)``, ``i < j``, of ``n`` items (for tests and small N only)."""
    i, j = np.triu_indices(n, k=1)
    return i.astype(np.int64), j.astype(np.int64)


# Candidate pairs oriented and tested at a time (select_oriented): its temporaries are ~8 MB int64 arrays
# instead of arrays over every candidate pair (~10M at 1M vectors).
ORIENT_CHUNK = 1 << 20


def _oriented_keys(lo: np.ndarray, hi: np.ndarray, is_new: np.ndarray, in_pool: np.ndarray, n: int) -> np.ndarray:
    """Sorted keys ``i * n + j`` of the pairs of ``(lo, hi)`` with ``i`` new and ``j`` in the pool (see orient)."""
    fwd = is_new[lo] & in_pool[hi]  # lo is the new endpoint (preferred: the scan reaches lo first)
    bwd = ~fwd & is_new[hi] & in_pool[lo]
    key = np.concatenate([lo[fwd], hi[bwd]]).astype(np.int64) * n  # i * n + j sorts as (i, j), one array
    key += np.concatenate([hi[fwd], lo[bwd]])
    del fwd, bwd
    key.sort()
    return key


def orient(lo: np.ndarray, hi: np.ndarray, new: np.ndarray, pool: np.ndarray, n: int,
           ) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs restricted to one endpoint in ``new`` and the other in ``pool`` (bool masks or index
    arrays over ``n`` items), returned as ``(i, j)`` with ``i`` in new and ``j`` in pool, each unordered pair
    once, ordered as the all-pairs scan visits them: by ``i`` then ``j``, where ``i`` is the smaller
    endpoint when both orientations qualify."""
    key = _oriented_keys(lo, hi, _mask(new, n), _mask(pool, n), n)
    return key // n, key % n


def select_oriented(lo: np.ndarray, hi: np.ndarray, new: np.ndarray, pool: np.ndarray, n: int, test,
                    chunk: int = ORIENT_CHUNK) -> tuple[np.ndarray, ...]:
    """The pairs ``(i, j)`` of ``orient(lo, hi, new, pool, n)`` that pass ``test``, in orient's order, without
    orienting every pair at once: ``chunk`` candidate pairs at a time are oriented and given to ``test(i, j)``,
    which returns a bool mask, or ``(mask, values)`` (then the kept pairs' values come third). ``test`` must
    judge each pair on its own (the result is then the same for every ``chunk``); only kept pairs are held."""
    is_new, in_pool = _mask(new, n), _mask(pool, n)
    keys, vals = [], []
    for s in range(0, len(lo), max(1, int(chunk))) or [0]:  # no pairs: one empty test still says what it gives
        key = _oriented_keys(lo[s:s + chunk], hi[s:s + chunk], is_new, in_pool, n)
        got = test(key // n, key % n)
        mask, v = got if isinstance(got, tuple) else (got, None)
        keys.append(key[mask])
        if v is not None:
            vals.append(v[mask])
    key = np.concatenate(keys)
    order = np.argsort(key, kind="stable")  # chunks interleave in (i, j): both orientations occur in each
    key = key[order]
    out = (key // n, key % n)
    if vals:
        return (*out, np.concatenate(vals)[order])
    return out


def _mask(x: np.ndarray, n: int) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == bool:
        return x
    m = np.zeros(n, dtype=bool)
    m[x.astype(np.int64)] = True
    return m


# -- recall against all pairs ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Recall:
    """How a candidate-path result set compares with the all-pairs one."""

    found: int  # in both
    missed: int  # all-pairs only
    extra: int  # candidate path only

    @property
    def total(self) -> int:
        return self.found + self.missed

    @property
    def recall(self) -> float:
        return self.found / self.total if self.total else 1.0


def pair_keys(a: np.ndarray, b: np.ndarray, unordered: bool = True) -> np.ndarray:
    """Unique int64 keys of pairs (unordered: ``(a, b)`` and ``(b, a)`` are one)."""
    a, b = np.asarray(a, dtype=np.int64).ravel(), np.asarray(b, dtype=np.int64).ravel()
    if unordered:
        a, b = np.minimum(a, b), np.maximum(a, b)
    if not a.size:
        return np.zeros(0, dtype=np.int64)
    if (a < 0).any() or (b < 0).any() or max(int(a.max()), int(b.max())) >= 2 ** 31:
        raise ValueError("pair_keys: ids must be in [0, 2^31)")
    return sorted_unique((a << 31) | b)


def recall(reference: tuple[np.ndarray, np.ndarray], candidate: tuple[np.ndarray, np.ndarray],
           unordered: bool = True) -> Recall:
    """found / missed / extra of ``candidate`` pairs against ``reference`` pairs (each as ``(a, b)`` arrays;
    duplicates count once)."""
    ref, got = pair_keys(*reference, unordered=unordered), pair_keys(*candidate, unordered=unordered)
    found = int(np.intersect1d(ref, got, assume_unique=True).size)
    return Recall(found=found, missed=int(ref.size) - found, extra=int(got.size) - found)
