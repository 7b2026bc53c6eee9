"""Contradiction detectors for the ConsolidationAgent, interchangeable behind one small protocol.

``reference``: the SmartVector reference's heuristic: same topic (word-set Jaccard > topic_threshold) and
different claim (difflib character ratio < content_threshold); pairs from the same document version skipped.

``semantic``: embedding cosine >= similarity_threshold (same subject) and disagreement on the stated value:
both texts state numbers and share none of them. Versions of one document are lineage, not contradictions,
so pairs from the same document are skipped.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import sparse

from .dataset import Corpus

_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


class Detector(Protocol):
    name: str

    def pairs(self, new: np.ndarray, pool: np.ndarray) -> list[tuple[int, int, dict]]:
        """Contradicting (i, j, detail) with i in ``new`` and j in ``pool`` (i != j, each pair once)."""
        ...


def word_sets_matrix(texts: list[str]) -> sparse.csr_matrix:
    """Binary (N, vocabulary) matrix of lower-cased whitespace tokens (the reference's word sets)."""
    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, text in enumerate(texts):
        for w in set(text.lower().split()):
            rows.append(i)
            cols.append(vocab.setdefault(w, len(vocab)))
    data = np.ones(len(rows), dtype=np.float32)
    return sparse.csr_matrix((data, (rows, cols)), shape=(len(texts), max(1, len(vocab))))


def jaccard_between(words: sparse.csr_matrix, rows: np.ndarray, cols: np.ndarray, threshold: float,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, jaccard) for i in ``rows``, j in ``cols``, i != j, with Jaccard > threshold."""
    if len(rows) == 0 or len(cols) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    inter = (words[rows] @ words[cols].T).tocoo()
    sizes = np.asarray(words.sum(axis=1)).ravel()
    i, j = rows[inter.row], cols[inter.col]
    jac = inter.data / (sizes[i] + sizes[j] - inter.data)
    keep = (jac > threshold) & (i != j)
    return i[keep], j[keep], jac[keep]


def jaccard_pairs(words: sparse.csr_matrix, threshold: float, mask: np.ndarray | None = None,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, jaccard) for i < j with Jaccard > threshold, among rows where ``mask`` is true."""
    idx = np.arange(words.shape[0]) if mask is None else np.nonzero(mask)[0]
    i, j, jac = jaccard_between(words, idx, idx, threshold)
    keep = i < j
    return i[keep], j[keep], jac[keep]


def content_similarity(a: str, b: str) -> float:
    """difflib SequenceMatcher ratio on lower-cased text (the reference's character similarity)."""
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


def _unique_pairs(i: np.ndarray, j: np.ndarray, *extra: np.ndarray):
    """Each unordered pair once (first occurrence kept), as (lo, hi)."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    _, first = np.unique(np.stack([lo, hi], axis=1), axis=0, return_index=True) if len(lo) else (None, [])
    first = np.sort(np.asarray(first, dtype=np.int64))
    return (lo[first], hi[first], *(e[first] for e in extra))


@dataclass
class ReferenceDetector:
    corpus: Corpus
    topic_threshold: float = 0.3
    content_threshold: float = 0.4
    name: str = "reference"

    def __post_init__(self) -> None:
        self.words = word_sets_matrix(self.corpus.texts)
        self.doc_version = np.array([f"{d}\0{v}" for d, v in zip(self.corpus.doc_id, self.corpus.version)],
                                    dtype=object)

    def pairs(self, new: np.ndarray, pool: np.ndarray) -> list[tuple[int, int, dict]]:
        i, j, jac = jaccard_between(self.words, np.asarray(new), np.asarray(pool), self.topic_threshold)
        i, j, jac = _unique_pairs(i, j, jac)
        out = []
        for a, b, x in zip(i.tolist(), j.tolist(), jac.tolist()):
            if self.doc_version[a] == self.doc_version[b]:
                continue
            sim = content_similarity(self.corpus.texts[a], self.corpus.texts[b])
            if sim < self.content_threshold:
                out.append((a, b, {"jaccard": round(x, 4), "char_similarity": round(sim, 4)}))
        return out


def stated_values(text: str) -> frozenset[float]:
    """The numbers a text states, as values: "1,000" is 1000 and "2.0" equals "2"."""
    return frozenset(float(x.replace(",", "")) for x in _NUMBER.findall(text))


@dataclass
class SemanticDetector:
    corpus: Corpus
    vectors: np.ndarray  # (N, dim) L2-normalised, row-aligned with the corpus
    similarity_threshold: float = 0.6
    name: str = "semantic"

    def __post_init__(self) -> None:
        self.values = [stated_values(t) for t in self.corpus.texts]

    def pairs(self, new: np.ndarray, pool: np.ndarray) -> list[tuple[int, int, dict]]:
        new, pool = np.asarray(new, dtype=np.int64), np.asarray(pool, dtype=np.int64)
        if len(new) == 0 or len(pool) == 0:
            return []
        sims = self.vectors[new] @ self.vectors[pool].T
        r, c = np.nonzero(sims >= self.similarity_threshold)
        i, j, s = _unique_pairs(new[r], pool[c], sims[r, c])
        out = []
        for a, b, x in zip(i.tolist(), j.tolist(), s.tolist()):
            if a == b or self.corpus.doc_id[a] == self.corpus.doc_id[b]:
                continue
            va, vb = self.values[a], self.values[b]
            if va and vb and not (va & vb):
                out.append((a, b, {"cosine": round(float(x), 4), "values": [sorted(va), sorted(vb)]}))
        return out
