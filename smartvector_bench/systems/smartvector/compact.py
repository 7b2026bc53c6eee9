"""Exact compact per-vector columns: a float64 column kept as small integer codes into the table of its
distinct values.

Most of the store's per-vector state takes few distinct values (seven authorities, a handful of ripple
penalties, feedback and access counts, creation days shared by a document's chunks, +inf for "not yet"), so
codes of one or two bytes replace eight, and every read gives back the very float64 the column was given:
the table holds the values themselves (keyed by their bit patterns, so -0.0, +-inf and NaN come back as they
went in). Nothing is rounded, so no score can change. A column whose distinct values would cost more than
plain float64 (codes + table >= 8 bytes a row) keeps plain float64.

:class:`ExactColumn` reads like a float64 array (indexing, slicing, numpy operators and ufuncs, ``np.asarray``)
and writes through ``col[key] = values`` (also ``col[i] += 1``), re-coding when a new value arrives.
:class:`Compact` is the descriptor the store declares its columns with: assigning an array to the attribute
encodes it. :class:`PackedRagged`: a CSR list (the dependency edges) in the fewest whole bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.lib.mixins import NDArrayOperatorsMixin

from smartvector_bench.core.csr import Ragged

_CODE_TYPES = (np.uint8, np.uint16, np.uint32)


def code_dtype(n_values: int) -> type:
    """The narrowest unsigned type indexing ``n_values`` table entries."""
    for t in _CODE_TYPES:
        if n_values <= np.iinfo(t).max + 1:
            return t
    return np.uint64


@njit(cache=True)
def _gather(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``table[codes]``: numpy's fancy indexing is several times slower for a small table (one thread: the
    loop runs at memory speed, threads only contend)."""
    out = np.empty(len(codes), dtype=table.dtype)
    for i in range(len(codes)):
        out[i] = table[codes[i]]
    return out


def _bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).view(np.int64)


class ExactColumn(NDArrayOperatorsMixin):
    """A 1-d float64 column stored as codes into its sorted distinct bit patterns (or plain float64 when that
    is smaller). Reads return float64 values equal bit for bit to the ones written."""

    __slots__ = ("_table", "_codes", "_raw")

    def __init__(self, values) -> None:
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"ExactColumn holds a 1-d column, got shape {values.shape}")
        self._raw: np.ndarray | None = None
        self._table = np.zeros(0, dtype=np.int64)  # distinct values' bit patterns, sorted
        self._codes = np.zeros(len(values), dtype=np.uint8)
        self._write(slice(None), values)

    # -- storage -------------------------------------------------------------------------------------------
    @property
    def coded(self) -> bool:
        """False once the column fell back to plain float64."""
        return self._raw is None

    @property
    def nbytes(self) -> int:
        """Resident bytes: the codes and the table (or the plain float64 array)."""
        return int(self._raw.nbytes if self._raw is not None else self._codes.nbytes + self._table.nbytes)

    def _write(self, key, values) -> None:
        v = np.asarray(values, dtype=np.float64)
        if self._raw is not None:
            self._raw[key] = v
            return
        bits = _bits(v).ravel()
        pos = np.searchsorted(self._table, bits)
        found = pos < len(self._table)
        found[found] = self._table[pos[found]] == bits[found]
        if not found.all():  # new values: merge them into the table and re-code the column
            table = np.union1d(self._table, bits[~found])
            n = len(self._codes)
            if table.nbytes + np.dtype(code_dtype(len(table))).itemsize * n >= 8 * n and n:
                self._raw = self.values() if len(self._table) else np.zeros(n)
                self._table, self._codes = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
                self._raw[key] = v
                return
            remap = np.searchsorted(table, self._table).astype(code_dtype(len(table)))
            self._codes = _gather(remap, self._codes) if len(self._table) else self._codes.astype(remap.dtype)
            self._table = table
            pos = np.searchsorted(table, bits)
        self._codes[key] = pos.reshape(v.shape).astype(self._codes.dtype, copy=False)

    # -- reading like an array -----------------------------------------------------------------------------
    def values(self) -> np.ndarray:
        """The whole column as a new float64 array."""
        if self._raw is not None:
            return self._raw.copy()
        return _gather(self._table.view(np.float64), self._codes)

    def map(self, fn) -> np.ndarray:
        """``fn(values())`` for an element-wise ``fn``, evaluated once per distinct value (the same
        operations on the same float64 values, so the same bits) and then gathered."""
        if self._raw is not None:
            return fn(self._raw.copy())
        return _gather(np.ascontiguousarray(fn(self._table.view(np.float64).copy()), dtype=np.float64),
                       self._codes)

    def __getitem__(self, key):
        if self._raw is not None:
            out = self._raw[key]
            return out.copy() if isinstance(out, np.ndarray) else out
        codes = self._codes[key]
        if isinstance(codes, np.ndarray) and codes.ndim == 1:  # whole columns and slices: the fast gather
            return _gather(self._table.view(np.float64), codes)
        return self._table[codes].view(np.float64)

    def __setitem__(self, key, values) -> None:
        self._write(key, values)

    def __array__(self, dtype=None, copy=None):
        out = self.values()
        return out if dtype is None else out.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(isinstance(o, ExactColumn) for o in kwargs.get("out", ())):
            raise TypeError("an ExactColumn is written with col[key] = values, not as a ufunc's out=")
        inputs = tuple(x.values() if isinstance(x, ExactColumn) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __len__(self) -> int:
        return len(self._raw) if self._raw is not None else len(self._codes)

    def __repr__(self) -> str:
        how = "float64" if self._raw is not None else f"{self._codes.dtype} codes, {len(self._table)} values"
        return f"ExactColumn({self.values()!r}, {how})"

    @property
    def shape(self) -> tuple[int]:
        return (len(self),)

    @property
    def ndim(self) -> int:
        return 1

    @property
    def size(self) -> int:
        return len(self)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float64)

    def tolist(self) -> list:
        return self.values().tolist()

    def copy(self) -> np.ndarray:
        return self.values()

    def astype(self, dtype, copy: bool = True) -> np.ndarray:
        return self.values().astype(dtype)


class Compact:
    """Descriptor of an :class:`ExactColumn` attribute: ``obj.name = array`` stores it encoded."""

    def __set_name__(self, owner, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj, objtype=None):
        return self if obj is None else getattr(obj, self.slot)

    def __set__(self, obj, value) -> None:
        setattr(obj, self.slot, value if isinstance(value, ExactColumn) else ExactColumn(value))


def narrow_ids(values: np.ndarray, limit: int) -> np.ndarray:
    """Row numbers (``-1`` allowed) below ``limit`` as int32 while they fit, else int64."""
    return np.asarray(values, dtype=np.int32 if limit < 2**31 else np.int64)


@dataclass(frozen=True)
class PackedRagged:
    """A :class:`Ragged` in the fewest whole bytes, exactly: row lengths in the narrowest unsigned type, and
    each index as the little-endian bytes the largest row number needs (3 bytes below 2^24 rows, where int32
    takes 4). ``unpack`` gives the int64 Ragged every reader is written for (transient)."""

    counts: np.ndarray  # (n_rows,) uint8 / uint16 / uint32 / uint64
    packed: np.ndarray  # (nnz, width) uint8

    @classmethod
    def pack(cls, r: Ragged) -> "PackedRagged":
        counts = r.counts()
        counts = counts.astype(code_dtype(int(counts.max(initial=0)) + 1))
        idx = np.asarray(r.indices, dtype="<u8")
        width = max(1, (int(idx.max(initial=0)).bit_length() + 7) // 8)
        return cls(counts, np.ascontiguousarray(idx.view(np.uint8).reshape(-1, 8)[:, :width]))

    def unpack(self) -> Ragged:
        indptr = np.zeros(len(self.counts) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=indptr[1:])
        buf = np.zeros((len(self.packed), 8), dtype=np.uint8)
        buf[:, : self.packed.shape[1]] = self.packed
        return Ragged(indptr, buf.view("<u8").ravel().astype(np.int64))

    @property
    def n_rows(self) -> int:
        return len(self.counts)

    @property
    def nnz(self) -> int:
        return len(self.packed)

    @property
    def nbytes(self) -> int:
        return int(self.counts.nbytes + self.packed.nbytes)
