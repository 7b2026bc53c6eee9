"""Contradiction detectors for the ConsolidationAgent, interchangeable behind one small protocol.

``reference``: the SmartVector reference's heuristic: same topic (word-set Jaccard > topic_threshold) and
different claim (difflib character ratio < content_threshold); pairs from the same document version skipped.

``semantic``: embedding cosine >= similarity_threshold (same subject) and disagreement on the stated value:
both texts state numbers and share none of them. Versions of one document are lineage, not contradictions,
so pairs from the same document are skipped.
"""

from __future__ import annotations

import difflib
import itertools
import re
from dataclasses import dataclass
from typing import Protocol

import cydifflib
import numpy as np
import pandas as pd
from scipy import sparse

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems.smartvector.candidates import sorted_unique

_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


class Detector(Protocol):
    name: str

    def pairs(self, new: np.ndarray, pool: np.ndarray) -> list[tuple[int, int, dict]]:
        """Contradicting (i, j, detail) with i in ``new`` and j in ``pool`` (i != j, each pair once)."""
        ...

    def pairs_from(self, i: np.ndarray, j: np.ndarray) -> list[tuple[int, int, dict]]:
        """Contradicting (lo, hi, detail) among the given pairs (unique unordered pairs, i != j), in the given
        order: the same judgement as ``pairs`` on each pair; ``judge(i[m], j[m], v[m])`` of ``m, v = gate(i, j)``."""
        ...

    def gate(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mask, values): the pairs that may contradict (same topic / subject) and their measure, pair by pair
        (so the pairs can be gated in chunks: only the few that pass are then held and judged)."""
        ...

    def judge(self, i: np.ndarray, j: np.ndarray, values: np.ndarray) -> list[tuple[int, int, dict]]:
        """Contradicting (lo, hi, detail) among gated pairs, in the given order."""
        ...


def word_sets_matrix(texts: list[str], block: int = 1 << 14) -> sparse.csr_matrix:
    """Binary (N, vocabulary) matrix of lower-cased whitespace tokens (the reference's word sets). Columns
    are numbered in order of first appearance; per block of texts, tokens are hashed by pandas.factorize and
    only the block's distinct words meet the Python dict (a dict step per token costs ~20 s at 1M texts).
    A block's token lists are Python strings (~100 MB per 2^16 texts), hence the small blocks."""
    vocab: dict[str, int] = {}
    rows, cols = [], []  # per block: words per text, their columns
    for s in range(0, len(texts), block):
        tokens = [t.lower().split() for t in texts[s:s + block]]
        counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        codes, uniques = pd.factorize(np.fromiter(itertools.chain.from_iterable(tokens), dtype=object,
                                                  count=int(counts.sum())))
        ids = np.fromiter((vocab.setdefault(w, len(vocab)) for w in uniques), dtype=np.int64, count=len(uniques))
        key = sorted_unique(np.repeat(np.arange(s, s + len(tokens), dtype=np.int64), counts) << 32 | ids[codes])
        rows.append(np.bincount((key >> 32) - s, minlength=len(tokens)))
        cols.append((key & 0xFFFFFFFF).astype(np.int32))  # each (row, word) once, sorted: a set per text
    indptr = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(rows) if rows else indptr[1:], out=indptr[1:])
    indices = np.concatenate(cols) if cols else np.zeros(0, np.int32)
    del cols  # before the data array: the pieces and the whole are not held together with it
    return sparse.csr_matrix((np.ones(len(indices), dtype=np.float32), indices, indptr),
                             shape=(len(texts), max(1, len(vocab))))


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


def jaccard_of(words: sparse.csr_matrix, i: np.ndarray, j: np.ndarray, block: int = 1 << 16,
               sizes: np.ndarray | None = None) -> np.ndarray:
    """Word-set Jaccard of the given pairs (row-wise sparse intersection, no N x N product); the same float32
    values as :func:`jaccard_between` gives for those pairs, whatever the ``block`` (~60 MB of row copies per
    2^16 pairs). ``sizes``: the rows' word counts, ``words.sum(axis=1)`` (given by callers that ask per chunk)."""
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    sizes = np.asarray(words.sum(axis=1)).ravel() if sizes is None else sizes
    out = np.empty(len(i), dtype=np.result_type(words.dtype, sizes.dtype))
    for s in range(0, len(i), block):
        a, b = i[s:s + block], j[s:s + block]
        inter = np.asarray(words[a].multiply(words[b]).sum(axis=1)).ravel().astype(words.dtype)
        with np.errstate(invalid="ignore", divide="ignore"):  # two empty word sets: nan, never > threshold
            out[s:s + block] = inter / (sizes[a] + sizes[b] - inter)
    return out


def jaccard_pairs(words: sparse.csr_matrix, threshold: float, mask: np.ndarray | None = None,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, jaccard) for i < j with Jaccard > threshold, among rows where ``mask`` is true."""
    idx = np.arange(words.shape[0]) if mask is None else np.nonzero(mask)[0]
    i, j, jac = jaccard_between(words, idx, idx, threshold)
    keep = i < j
    return i[keep], j[keep], jac[keep]


def content_similarity_spec(a: str, b: str) -> float:
    """difflib SequenceMatcher ratio on lower-cased text (the reference's character similarity): the
    specification :func:`content_similarity` computes."""
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


def content_similarity(a: str, b: str) -> float:
    """:func:`content_similarity_spec` by cydifflib, difflib's algorithm in C (about 14x faster on this
    corpus's pairs; the same ratios, autojunk included: tests/test_content_similarity.py)."""
    return cydifflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


# difflib's autojunk heuristic (drop characters that are "popular" in b) applies when len(b) >= this.
AUTOJUNK_MIN = 200
JUDGE_CHUNK = 1 << 15  # gated pairs judged at a time: their CharTable is <= 2^16 rows x 2 x 199 code points


class CharTable:
    """Lower-cased texts as two padded code-point matrices (first and last ``width`` characters, right- and
    left-aligned), built without a Python loop over rows, for vectorised common-prefix / suffix lengths.

    ``ratio_lower_bound`` gives a lower bound of ``content_similarity`` that is exact to use: with no junk
    function and ``len(b) < AUTOJUNK_MIN`` (no autojunk), difflib's first matching block is a longest common
    substring, so the matched characters M >= max(common prefix, common suffix) and ratio = 2 M / (la + lb)
    >= 2 max(p, s) / (la + lb). Where autojunk applies the bound is 0 (unknown).
    """

    def __init__(self, texts: list[str], width: int = AUTOJUNK_MIN - 1, block: int = 1 << 12):
        low = [t.lower() for t in texts]
        n = len(low)
        self.lengths = np.fromiter((len(t) for t in low), dtype=np.int64, count=n)
        self.width = w = int(min(width, self.lengths.max(initial=0)))
        wide = any(max(t, default="\0") > "\uffff" for t in low)
        dtype = np.uint32 if wide else np.uint16
        self.head = np.zeros((n, w), dtype=dtype)
        self.tail = np.zeros((n, w), dtype=dtype)
        for s in range(0, n if w else 0, block):  # blocks of rows bound the temporaries (int64 per code point)
            lengths = self.lengths[s:s + block]
            codes = np.frombuffer("".join(low[s:s + block]).encode("utf-32-le"), dtype=np.uint32)
            if not codes.size:
                continue
            starts = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=starts[1:])
            row = np.repeat(np.arange(len(lengths)), lengths)
            pos = np.arange(codes.size) - starts[row]
            rpos = lengths[row] - 1 - pos
            h, t = pos < w, rpos < w
            self.head[s + row[h], pos[h]] = codes[h]
            self.tail[s + row[t], rpos[t]] = codes[t]  # tail[r, 0] is the last character

    def _common(self, mat: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        eq = mat[a] == mat[b]
        run = np.where(eq.all(axis=1), mat.shape[1], np.argmin(eq, axis=1))
        return np.minimum(run, np.minimum(self.lengths[a], self.lengths[b]))

    def ratio_lower_bound(self, a: np.ndarray, b: np.ndarray, block: int = 1 << 16) -> np.ndarray:
        """Lower bound of ``content_similarity(texts[a], texts[b])`` per pair (0 where not provable)."""
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        out = np.zeros(len(a))
        if self.width == 0:
            return out
        for s in range(0, len(a), block):
            x, y = a[s:s + block], b[s:s + block]
            m = np.maximum(self._common(self.head, x, y), self._common(self.tail, x, y))
            total = self.lengths[x] + self.lengths[y]
            lb = np.where(total > 0, 2.0 * m / np.maximum(total, 1), 1.0)
            out[s:s + block] = np.where(self.lengths[y] < AUTOJUNK_MIN, lb, 0.0)
        return out


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
        self.sizes = np.asarray(self.words.sum(axis=1)).ravel()  # as jaccard_of computes them, once
        # one code per (document, version), in order of first row: the pair of the two columns' codes as one
        # int64 (no per-row key strings: ~100 MB at 1M)
        doc = pd.factorize(np.asarray(self.corpus.doc_id, dtype=object))[0].astype(np.int64)
        version, versions = pd.factorize(np.asarray(self.corpus.version))
        self.doc_version_code = pd.factorize(doc * max(1, len(versions)) + version)[0].astype(np.int64)

    def pairs(self, new: np.ndarray, pool: np.ndarray) -> list[tuple[int, int, dict]]:
        i, j, jac = jaccard_between(self.words, np.asarray(new), np.asarray(pool), self.topic_threshold)
        i, j, jac = _unique_pairs(i, j, jac)
        return self._judge(i, j, jac)

    def pairs_from(self, i: np.ndarray, j: np.ndarray) -> list[tuple[int, int, dict]]:
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        keep, jac = self.gate(i, j)
        return self.judge(i[keep], j[keep], jac[keep])

    def gate(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Same topic: word Jaccard above ``topic_threshold`` (and i != j); the Jaccard."""
        jac = jaccard_of(self.words, i, j, sizes=self.sizes)
        return (jac > self.topic_threshold) & (i != j), jac

    def judge(self, i: np.ndarray, j: np.ndarray, jac: np.ndarray) -> list[tuple[int, int, dict]]:
        return self._judge(np.minimum(i, j), np.maximum(i, j), jac)

    def _judge(self, i: np.ndarray, j: np.ndarray, jac: np.ndarray, chunk: int = JUDGE_CHUNK,
               ) -> list[tuple[int, int, dict]]:
        """Same topic already established: different document version and difflib ratio < content_threshold.
        Pairs whose exact lower bound of the ratio reaches the threshold are not contradictions and skip
        difflib; the ratio is computed for the rest (the result is the same as computing it for every pair).
        ``chunk`` pairs at a time: the bound's table covers one chunk's rows (the bound of a pair does not
        depend on the other rows of the table), not every row gated at 1M (~200 MB)."""
        keep = self.doc_version_code[i] != self.doc_version_code[j]
        i, j, jac = i[keep], j[keep], jac[keep]
        texts = self.corpus.texts
        out = []
        for s in range(0, len(i), max(1, int(chunk))):
            a, b, x = i[s:s + chunk], j[s:s + chunk], jac[s:s + chunk]
            rows, at = np.unique(np.r_[a, b], return_inverse=True)
            chars = CharTable([texts[r] for r in rows.tolist()])
            undecided = chars.ratio_lower_bound(at[:len(a)], at[len(a):]) < self.content_threshold
            for p, q, v in zip(a[undecided].tolist(), b[undecided].tolist(), x[undecided].tolist()):
                sim = content_similarity(texts[p], texts[q])
                if sim < self.content_threshold:
                    out.append((p, q, {"jaccard": round(v, 4), "char_similarity": round(sim, 4)}))
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
        return self._judge(i, j, s)

    def pairs_from(self, i: np.ndarray, j: np.ndarray, block: int = 1 << 16) -> list[tuple[int, int, dict]]:
        """Row-wise cosines of the given pairs (may differ from the matrix product in the last float32 bit)."""
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        keep, sims = self.gate(i, j, block)
        return self.judge(i[keep], j[keep], sims[keep])

    def gate(self, i: np.ndarray, j: np.ndarray, block: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
        """Same subject: row-wise cosine at least ``similarity_threshold`` (each row's dot product on its own,
        whatever the block); the cosines."""
        sims = np.empty(len(i), dtype=self.vectors.dtype)
        for s in range(0, len(i), block):
            sims[s:s + block] = np.einsum("ij,ij->i", self.vectors[i[s:s + block]], self.vectors[j[s:s + block]])
        return sims >= self.similarity_threshold, sims

    def judge(self, i: np.ndarray, j: np.ndarray, sims: np.ndarray) -> list[tuple[int, int, dict]]:
        return self._judge(np.minimum(i, j), np.maximum(i, j), sims)

    def _judge(self, i: np.ndarray, j: np.ndarray, s: np.ndarray) -> list[tuple[int, int, dict]]:
        out = []
        for a, b, x in zip(i.tolist(), j.tolist(), s.tolist()):
            if a == b or self.corpus.doc_id[a] == self.corpus.doc_id[b]:
                continue
            va, vb = self.values[a], self.values[b]
            if va and vb and not (va & vb):
                out.append((a, b, {"cosine": round(float(x), 4), "values": [sorted(va), sorted(vb)]}))
        return out
