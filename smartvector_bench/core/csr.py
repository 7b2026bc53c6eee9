"""Ragged integer lists (depends_on, stale ids, rumor ids) as CSR arrays: no per-row Python objects."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ragged:
    """Row ``i`` is ``indices[indptr[i]:indptr[i + 1]]``."""

    indptr: np.ndarray  # (n_rows + 1,) int64
    indices: np.ndarray  # (nnz,) int64

    @classmethod
    def from_lists(cls, rows: list[list[int]]) -> "Ragged":
        counts = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        flat = [x for r in rows for x in r]
        return cls(indptr, np.asarray(flat, dtype=np.int64))

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    def row(self, i: int) -> np.ndarray:
        return self.indices[self.indptr[i] : self.indptr[i + 1]]

    def counts(self) -> np.ndarray:
        return np.diff(self.indptr)

    def row_ids(self) -> np.ndarray:
        """Row number of every stored element (same length as ``indices``)."""
        return np.repeat(np.arange(self.n_rows, dtype=np.int64), self.counts())

    def contains(self, values: np.ndarray) -> np.ndarray:
        """``out[i] = values[i] in row(i)``, vectorised."""
        values = np.asarray(values, dtype=np.int64)
        hit = self.indices == values[self.row_ids()]
        return np.bincount(self.row_ids()[hit], minlength=self.n_rows) > 0

    def take(self, rows: np.ndarray) -> "Ragged":
        """The sub-list of the given rows, in the given order."""
        rows = np.asarray(rows, dtype=np.int64)
        return Ragged.from_lists([self.row(int(r)).tolist() for r in rows])
