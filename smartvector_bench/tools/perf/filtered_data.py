"""The data of the filtered-ANN case (:mod:`.filtered_ann`): the scale data's vectors as documents, each with a
chain of versions of which only the latest is in force, and the exact filtered top-k every system is judged by.

Why chains: a store searched approximately and filtered afterwards loses in-force chunks when superseded
near-duplicates crowd them out of its top-k' (Graphiti PR #1804: 52.7% of fact-search candidates on a production
graph were invalidated). That needs a document's versions to be close to one another, so version ``j + 1`` is a
perturbation of version ``j`` whose cosine with it is exactly ``VERSION_COS``: the mean cosine of a policy fact
and its predecessor in the base dataset with real MiniLM vectors (``scale.stats.REAL_STATS_10K``). With V versions
per document the superseded share at "now" is ``1 - 1/V`` (V = 2, 10, 100: 50%, 90%, 99%).

Documents: the first ``N / V`` rows of the scale data (the first M rows of a scale build are a build of M rows,
so the roots are ``scale_dataset(N / V)``'s vectors, teams and near-copies included) are the first versions.
Rows are laid out in a seeded random order (a store appends versions as they are written, interleaved across
documents; an order with the in-force rows together would flatter bitmaps and column-range pruning).

Times (days): version j of document d is valid over ``[j + u_d, j + 1 + u_d)``, ``u_d`` seeded in [0, 1), the
latest open-ended; ``now = V`` (every latest version in force, nothing else). The filter every system gets is the
as-of predicate ``valid_from <= t AND valid_to > t`` (``t = now``), not a precomputed flag, since a store has to
evaluate that predicate at query time.

Queries: perturbations of a seeded sample of rows, half of them in force (a question on the current text), half
superseded (a question phrased like an older version), each with cosine ``QUERY_COS`` to its row: the base
dataset's mean cosine of a query and its gold chunk (real MiniLM).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import faiss
import numpy as np

from smartvector_bench.tools.scale.columns import CHUNK_ROWS, seeded_rng
from smartvector_bench.tools.scale.stats import REAL_STATS_10K

K = 10
VERSION_COS = REAL_STATS_10K["fact_versions_cos"]  # consecutive versions of a fact, real MiniLM (0.8865)
QUERY_COS = REAL_STATS_10K["gold_cos"]  # a query and its gold chunk, real MiniLM (0.6940)
OPEN = 1e18  # valid_to of a version in force, for the stores whose filter columns refuse inf


@dataclass
class Versioned:
    vectors: np.ndarray  # (N, d) float32, L2-normalised
    doc: np.ndarray  # (N,) int64 document of each row
    version: np.ndarray  # (N,) int64: 0 .. V-1, V-1 the latest
    valid_from: np.ndarray  # (N,) float64 days
    valid_to: np.ndarray  # (N,) float64 days, OPEN for the latest version
    queries: np.ndarray  # (Q, d) float32, L2-normalised
    query_row: np.ndarray  # (Q,) int64: the row each query perturbs
    versions: int
    now: float

    def __len__(self) -> int:
        return len(self.vectors)

    def in_force(self, t: float | None = None) -> np.ndarray:
        """(N,) bool: the as-of predicate at ``t`` (default: now)."""
        t = self.now if t is None else float(t)
        return (self.valid_from <= t) & (self.valid_to > t)

    @property
    def superseded_share(self) -> float:
        return 1.0 - 1.0 / self.versions

    @property
    def label(self) -> str:
        """The ``vectors`` column of this data's rows (the superseded share, as the consolidation case names
        its other datasets ``synthetic:<name>``)."""
        return f"synthetic:superseded={self.superseded_share:g}"

    def supersedes(self) -> np.ndarray:
        """(N,) row of each row's previous version, -1 for a first version."""
        row_of = np.empty((len(self) // self.versions, self.versions), dtype=np.int64)
        row_of[self.doc, self.version] = np.arange(len(self))
        prev = np.full(len(self), -1, dtype=np.int64)
        later = self.version > 0
        prev[later] = row_of[self.doc[later], self.version[later] - 1]
        return prev


def perturb(x: np.ndarray, cos: float, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors whose cosine with each row of ``x`` is exactly ``cos``: ``x`` plus a random direction
    orthogonal to it, of length ``sqrt(1 / cos^2 - 1)``, normalised."""
    g = rng.standard_normal(x.shape, dtype=np.float32)
    g -= np.einsum("ij,ij->i", g, x)[:, None] * x
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    y = x + np.float32(math.sqrt(1.0 / cos ** 2 - 1.0)) * g
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    return y


def versioned_data(roots: np.ndarray, versions: int, n_queries: int, seed: int = 0,
                   version_cos: float = VERSION_COS, query_cos: float = QUERY_COS) -> Versioned:
    """``len(roots)`` documents of ``versions`` versions each (see the module docstring); seeded."""
    if versions < 2:
        raise ValueError(f"versions={versions}: must be >= 2 (a superseded share above 0)")
    roots = np.ascontiguousarray(roots, dtype=np.float32)
    n_docs, dim = roots.shape
    n = n_docs * versions
    rng = seeded_rng(seed, "filtered_ann", versions, n_docs)
    pos = rng.permutation(n)  # row of (document d, version j) is pos[j * n_docs + d]
    out = np.empty((n, dim), dtype=np.float32)
    doc, version = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    cur = roots.copy()
    for j in range(versions):
        rows = pos[j * n_docs:(j + 1) * n_docs]
        if j:  # in groups, so the noise temporaries stay small at 1M
            for lo in range(0, n_docs, CHUNK_ROWS):
                cur[lo:lo + CHUNK_ROWS] = perturb(cur[lo:lo + CHUNK_ROWS], version_cos, rng)
        out[rows], doc[rows], version[rows] = cur, np.arange(n_docs), j
    start = rng.random(n_docs)
    valid_from = version + start[doc]
    valid_to = np.where(version == versions - 1, OPEN, valid_from + 1.0)
    # half the queries on in-force rows, half on superseded ones
    live = np.nonzero(version == versions - 1)[0]
    old = np.nonzero(version < versions - 1)[0]
    half = n_queries // 2
    query_row = np.concatenate([rng.choice(live, size=half, replace=half > len(live)),
                                rng.choice(old, size=n_queries - half, replace=n_queries - half > len(old))])
    query_row = query_row[rng.permutation(n_queries)]
    queries = perturb(out[query_row], query_cos, rng)
    return Versioned(out, doc, version, valid_from, valid_to, queries, query_row, int(versions), float(versions))


class ExactFiltered:
    """The ground truth and the latency baseline: FAISS ``IndexFlatIP`` over the in-force vectors only (as a
    store keeping a second, exact index of what is in force would), ids mapped back to rows."""

    def __init__(self, vectors: np.ndarray, mask: np.ndarray):
        self.rows = np.nonzero(mask)[0]
        self.index = faiss.IndexFlatIP(vectors.shape[1])
        self.index.add(np.ascontiguousarray(vectors[self.rows], dtype=np.float32))

    def search(self, queries: np.ndarray, k: int = K) -> np.ndarray:
        """(Q, k) rows of the exact filtered top-k by inner product, best first (-1 where fewer are in force)."""
        _, ids = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), min(k, len(self.rows)))
        out = np.full((len(queries), k), -1, dtype=np.int64)
        out[:, :ids.shape[1]] = np.where(ids >= 0, self.rows[np.maximum(ids, 0)], -1)
        return out


def first_in_force(ids: np.ndarray, mask: np.ndarray, k: int = K) -> np.ndarray:
    """(Q, k): the first k ids of each row of ``ids`` (ranked, -1 padded) that are in force (the post-filter),
    -1 where fewer are."""
    ok = (ids >= 0) & mask[np.maximum(ids, 0)]
    rank = np.cumsum(ok, axis=1) - 1
    out = np.full((len(ids), k), -1, dtype=np.int64)
    r, c = np.nonzero(ok & (rank < k))
    out[r, rank[r, c]] = ids[r, c]
    return out


def recall_at_k(found: np.ndarray, truth: np.ndarray, k: int = K) -> np.ndarray:
    """(Q,) share of each query's exact top-k (``truth``, -1 padded) among the first k ids of ``found``
    (order inside the top k does not count; a repeated id counts once)."""
    out = np.empty(len(truth))
    for i, (f, t) in enumerate(zip(found[:, :k], truth[:, :k])):
        t = t[t >= 0]
        out[i] = len(np.intersect1d(f[f >= 0], t)) / len(t) if len(t) else 1.0
    return out


def short_of(found: np.ndarray, k: int = K) -> int:
    """How many queries got fewer than k results (in force, once a post-filter has run)."""
    return int(((found[:, :k] >= 0).sum(axis=1) < k).sum())
