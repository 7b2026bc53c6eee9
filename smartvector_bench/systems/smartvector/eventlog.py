"""An append-only log of flat records (dicts) kept as columnar batches.

The store's event log and penalty ledger grow by millions of records at 100K vectors (every detected edge and
every ripple penalty is one), far too many to keep as Python dicts (~0.5 KB each). Bulk writers add a batch
of records as columns (``add_columns``: numpy arrays, or a scalar shared by the batch); single records
(``append``) stay dicts. Reading is unchanged: iterating yields the same dicts, with the same keys in the same
order and the same Python values (``tolist``), so the audit trail reads as before.

``nullable`` keys store None as NaN in a batch (the ledger's ``lifted_at``), so ``lift`` can set them in place.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np


@dataclass
class _Batch:
    n: int
    columns: dict  # key -> ndarray of length n, or a scalar shared by every record

    def records(self, nullable: tuple[str, ...]) -> Iterator[dict]:
        keys = list(self.columns)
        cols = []
        for key in keys:
            v = self.columns[key]
            if isinstance(v, np.ndarray):
                values = v.tolist()
                if key in nullable:
                    values = [None if x != x else x for x in values]  # NaN -> None
                cols.append(values)
            else:
                cols.append(None)
        scalars = [self.columns[k] for k in keys]
        for i in range(self.n):
            yield {k: (s if c is None else c[i]) for k, s, c in zip(keys, scalars, cols)}

    def record(self, i: int, nullable: tuple[str, ...]) -> dict:
        out = {}
        for key, v in self.columns.items():
            x = (v[i] if v.dtype == object else v[i].item()) if isinstance(v, np.ndarray) else v
            out[key] = None if key in nullable and x != x else x
        return out

    def nbytes(self) -> int:
        return sum(v.nbytes for v in self.columns.values() if isinstance(v, np.ndarray))


class ColumnLog:
    """List-like, append-only: ``append``, ``extend``, ``add_columns``, ``len``, iteration, ``==``, ``index``."""

    def __init__(self, nullable: Iterable[str] = ()):
        self._segments: list = []  # list[dict] (single records) or _Batch, in append order
        self._n = 0
        self.nullable = tuple(nullable)

    # -- writing --------------------------------------------------------------------------------------------------
    def append(self, record: dict) -> None:
        if not self._segments or not isinstance(self._segments[-1], list):
            self._segments.append([])
        self._segments[-1].append(record)
        self._n += 1

    def extend(self, records: Iterable[dict]) -> None:
        for r in records:
            self.append(r)

    def add_columns(self, n: int, **columns) -> None:
        """``n`` records whose ``key`` is ``columns[key][i]`` (a 1-D array or list of length n) or
        ``columns[key]`` (anything else: the same value for all). Keys keep the given order."""
        if n <= 0:
            return
        cols = {}
        for key, v in columns.items():
            if isinstance(v, (np.ndarray, list)):
                a = np.asarray(v, dtype=object if isinstance(v, list) and v and isinstance(v[0], str) else None)
                if a.shape != (n,):
                    raise ValueError(f"column {key!r} has shape {a.shape}, expected ({n},)")
                if key in self.nullable:
                    a = a.astype(np.float64)  # None -> NaN needs a float column
                elif a.dtype.kind == "i" and a.itemsize > 4 and (a.min() >= -2**31 and a.max() < 2**31):
                    a = a.astype(np.int32)  # row numbers, depths: half the bytes, the same Python ints back
                cols[key] = a
            else:
                cols[key] = v
        self._segments.append(_Batch(n, cols))
        self._n += n

    def lift(self, key: str, match: dict, value) -> list:
        """Set nullable ``key`` to ``value`` on every record that has it None and equals ``match`` on the given
        keys, in log order; returns those records (as dicts, after the change)."""
        changed = []
        for seg in self._segments:
            if isinstance(seg, list):
                for r in seg:
                    if r[key] is None and all(r[k] == v for k, v in match.items()):
                        r[key] = value
                        changed.append(r)
                continue
            col = seg.columns[key]
            hit = np.isnan(col) if isinstance(col, np.ndarray) else np.full(seg.n, col is None)
            for k, v in match.items():
                c = seg.columns[k]
                hit &= (c == v) if isinstance(c, np.ndarray) else (c == v)
            rows = np.nonzero(hit)[0]
            if len(rows):
                if not isinstance(col, np.ndarray):
                    col = seg.columns[key] = np.full(seg.n, np.nan)
                col[rows] = value
                changed.extend(seg.record(i, self.nullable) for i in rows.tolist())
        return changed

    # -- reading --------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[dict]:
        for seg in self._segments:
            if isinstance(seg, list):
                yield from seg
            else:
                yield from seg.records(self.nullable)

    def count(self, key: str) -> dict:
        """How many records have each value of ``key`` (a batch with a shared value counts in one step)."""
        out: dict = {}
        for seg in self._segments:
            if isinstance(seg, list):
                for r in seg:
                    out[r[key]] = out.get(r[key], 0) + 1
            elif isinstance(seg.columns[key], np.ndarray):
                for v, c in zip(*np.unique(seg.columns[key], return_counts=True)):
                    v = v.item() if hasattr(v, "item") else v
                    out[v] = out.get(v, 0) + int(c)
            else:
                out[seg.columns[key]] = out.get(seg.columns[key], 0) + seg.n
        return out

    def column(self, key: str, where: dict) -> np.ndarray:
        """``key`` of every record that equals ``where`` on its keys, in log order, as one array."""
        parts = []
        for seg in self._segments:
            if isinstance(seg, list):
                parts.append(np.asarray([r[key] for r in seg if all(r[k] == v for k, v in where.items())]))
                continue
            hit = np.ones(seg.n, dtype=bool)
            for k, v in where.items():
                c = seg.columns[k]
                hit &= (c == v) if isinstance(c, np.ndarray) else np.full(seg.n, c == v)
            c = seg.columns[key]
            parts.append(c[hit] if isinstance(c, np.ndarray) else np.full(int(hit.sum()), c))
        parts = [p for p in parts if p.size]
        return np.concatenate(parts) if parts else np.zeros(0)

    def __eq__(self, other) -> bool:
        if isinstance(other, (ColumnLog, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def index(self, record: dict) -> int:
        for i, r in enumerate(self):
            if r == record:
                return i
        raise ValueError("record not in the log")

    def __repr__(self) -> str:
        return f"ColumnLog({self._n} records, {len(self._segments)} segments)"

    def nbytes(self) -> int:
        """Bytes held: the batches' arrays, plus the single records (dict, keys shared, values) and pointers."""
        total = sum(seg.nbytes() for seg in self._segments if isinstance(seg, _Batch))
        for seg in self._segments:
            if isinstance(seg, list):
                total += 8 * len(seg) + sum(sys.getsizeof(r) + sum(sys.getsizeof(v) for v in r.values())
                                            for r in seg)
        return total
