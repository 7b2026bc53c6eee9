"""What ``ltr`` knows about a (query, candidate chunk) pair: only what a document store holds (text, source, times,
versions, edges) and the query's text and as_of. No label reaches these functions.

Features (:data:`FEATURES`, in column order):

- ``cosine``: exact cosine of query and chunk; ``cosine_gap``: the cosine minus the query's best candidate cosine;
- ``bm25``: the chunk's BM25 score for the query text; ``bm25_ratio``: it divided by the query's best (0 if none);
- ``authority``; ``source``: the source's code (a categorical feature: its index among the corpus's sorted sources);
- ``age_days``: as_of - created_at (negative: created after as_of);
- ``in_window``: created by as_of and valid_from <= as_of < valid_to;
- ``is_latest``: the chunk's version is the latest of its document among the versions created by as_of;
- ``version_count``: how many versions of its document were created by as_of;
- ``dep_out`` / ``dep_in``: the chunk's dependency out-degree (``depends_on``) and in-degree;
- ``length``: the chunk's text length in characters.
"""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems.valid_cosine import in_force

FEATURES = ("cosine", "cosine_gap", "bm25", "bm25_ratio", "authority", "source", "age_days", "in_window",
            "is_latest", "version_count", "dep_out", "dep_in", "length")
CATEGORICAL = ("source",)


class DocumentVersions:
    """Per document, its versions in order of creation, to answer "latest version and version count of this chunk's
    document among the versions created by t" for many (chunk, t) pairs at once (vectorised: one searchsorted)."""

    def __init__(self, corpus: Corpus):
        _, doc = np.unique(np.asarray(corpus.doc_id, dtype=str), return_inverse=True)
        created = np.asarray(corpus.created_at, dtype=np.float64)
        version = np.asarray(corpus.version, dtype=np.float64)
        self.doc = doc.astype(np.int64)
        # the distinct times, so a time becomes an integer rank and (document, time) one sortable integer key
        self.times = np.unique(created)
        self.span = len(self.times) + 1
        order = np.lexsort((version, created, self.doc))
        d, v = self.doc[order], version[order]
        self.key = d * self.span + np.searchsorted(self.times, created[order], side="right")
        self.start = np.searchsorted(d, np.arange(doc.max() + 1 if len(doc) else 0), side="left")
        self.latest = _group_cummax(v, d)  # running maximum version within each document
        _, vcode = np.unique(v, return_inverse=True)
        _, first = np.unique(d * (len(vcode) + 1) + vcode, return_index=True)
        seen = np.zeros(len(v), dtype=np.int64)
        seen[first] = 1  # each (document, version) counts once, at its earliest chunk
        self.count = _group_cumsum(seen, d)  # running count of distinct versions within each document
        self.version, self.created = version, created

    def at(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For chunk ``rows[i]`` at time ``t[i]``: whether it was created by ``t[i]`` and its version is the latest of
        its document created by then, and how many versions of its document were created by then (0 when none was)."""
        rows = np.asarray(rows, dtype=np.int64)
        d = self.doc[rows]
        q = d * self.span + np.searchsorted(self.times, np.asarray(t, dtype=np.float64), side="right")
        pos = np.searchsorted(self.key, q, side="right") - 1  # the last chunk of this document created by t
        has = pos >= self.start[d]
        safe = np.maximum(pos, 0)
        latest = np.where(has, self.latest[safe], -np.inf)
        count = np.where(has, self.count[safe], 0)
        t = np.asarray(t, dtype=np.float64)
        return has & (self.created[rows] <= t) & (self.version[rows] == latest), count


def _group_cummax(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarting at each new ``group`` (groups contiguous, increasing)."""
    if not len(values):
        return values.astype(np.float64)
    offset = (np.nanmax(np.abs(values)) + 1.0) * 2.0 * group  # lift each group above every earlier one
    return np.maximum.accumulate(values + offset) - offset


def _group_cumsum(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` restarting at each new ``group`` (groups contiguous, increasing)."""
    total = np.cumsum(values)
    start = np.r_[0, np.nonzero(group[1:] != group[:-1])[0] + 1] if len(group) else np.zeros(0, dtype=np.int64)
    before = np.zeros(len(values), dtype=np.int64)
    before[start] = total[start] - values[start]
    return total - np.maximum.accumulate(before)


def in_degree(corpus: Corpus) -> np.ndarray:
    """How many chunks list each chunk in ``depends_on``."""
    deps = corpus.depends_on.indices
    return np.bincount(deps[deps >= 0], minlength=len(corpus)).astype(np.float64)


def pair_features(corpus: Corpus, versions: DocumentVersions, cand: np.ndarray, as_of: np.ndarray,
                  cosine: np.ndarray, bm25: np.ndarray, window: np.ndarray | None = None) -> np.ndarray:
    """(Q, C, len(FEATURES)) float64 features of the candidates ``cand`` (Q, C; -1 = padding, whose rows are
    left 0), with ``cosine`` and ``bm25`` each (Q, C) aligned with ``cand``; ``window``: the caller's
    ``in_force(corpus, as_of)`` (Q, N) when it has it."""
    q, c = cand.shape
    valid = cand >= 0
    rows = np.where(valid, cand, 0)
    t = np.broadcast_to(np.asarray(as_of, dtype=np.float64).reshape(-1, 1), (q, c))
    best_cos = np.max(np.where(valid, cosine, -np.inf), axis=1, keepdims=True)
    best_bm25 = np.max(np.where(valid, bm25, 0.0), axis=1, keepdims=True)
    sources = np.unique(np.asarray(corpus.source, dtype=str))
    source = np.searchsorted(sources, np.asarray(corpus.source, dtype=str)).astype(np.float64)
    window = in_force(corpus, np.asarray(as_of, dtype=np.float64)) if window is None else window  # (Q, N)
    latest, count = versions.at(rows.ravel(), t.ravel())
    out = np.stack([
        cosine,
        cosine - best_cos,
        bm25,
        np.where(best_bm25 > 0, bm25 / np.where(best_bm25 > 0, best_bm25, 1.0), 0.0),
        np.asarray(corpus.authority, dtype=np.float64)[rows],
        source[rows],
        t - np.asarray(corpus.created_at, dtype=np.float64)[rows],
        np.take_along_axis(window, rows, axis=1).astype(np.float64),
        latest.reshape(q, c).astype(np.float64),
        count.reshape(q, c).astype(np.float64),
        corpus.depends_on.counts().astype(np.float64)[rows],
        in_degree(corpus)[rows],
        np.array([len(x) for x in corpus.texts], dtype=np.float64)[rows],
    ], axis=-1)
    out = np.where(np.isfinite(out), out, np.sign(np.nan_to_num(out)) * 1e9)  # open windows, missing times
    return np.where(valid[..., None], out, 0.0)
