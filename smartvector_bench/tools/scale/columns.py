"""Column helpers of the scale build: seeded random streams per purpose, and ragged (CSR) columns tiled,
gathered and re-indexed block by block, with interned string columns (one string object per distinct value)."""

from __future__ import annotations

import zlib

import numpy as np
from numpy.dtypes import StringDType

from smartvector_bench.core.csr import Ragged

# Vectors and similarity products are made in groups of about this many rows, so temporaries stay small.
CHUNK_ROWS = 65_536


def seeded_rng(seed: int, *purpose: str | int) -> np.random.Generator:
    key = [int(seed)] + [zlib.crc32(p.encode()) if isinstance(p, str) else int(p) for p in purpose]
    return np.random.default_rng(key)


def tile_ragged(r: Ragged, n_blocks: int, n_rows: int, stride: int) -> Ragged:
    """``r`` repeated ``n_blocks`` times, block b's values shifted by ``b * stride``, first ``n_rows`` rows."""
    counts = np.tile(r.counts(), n_blocks)[:n_rows]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    shift = np.repeat(np.arange(n_blocks, dtype=np.int64) * stride, len(r.indices))
    indices = (np.tile(r.indices, n_blocks) + shift)[: indptr[-1]]
    return Ragged(indptr, indices)


def gather_ragged(r: Ragged, rows: np.ndarray, shift: np.ndarray) -> Ragged:
    """Rows ``rows`` of ``r`` (in that order), row k's values plus ``shift[k]``."""
    counts = r.counts()[rows]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    pos = np.repeat(r.indptr[rows] - indptr[:-1], counts) + np.arange(indptr[-1], dtype=np.int64)
    return Ragged(indptr, r.indices[pos] + np.repeat(shift, counts))


def interned(base_values: np.ndarray, suffixes: np.ndarray, block: np.ndarray, base_row: np.ndarray) -> np.ndarray:
    """Object array ``base_values[base_row] + suffixes[block]`` with one string object per distinct value."""
    uniq, code = np.unique(base_values.astype(str), return_inverse=True)
    table = np.strings.add(np.asarray(uniq, dtype=StringDType())[None, :], suffixes[:, None]).astype(object)
    return table[block, code[base_row]]


def suffixed(base_values: np.ndarray, suffixes: np.ndarray, block: np.ndarray, base_row: np.ndarray) -> np.ndarray:
    """``interned`` for a family column: ``""`` (a chunk of no family) stays ``""`` in every block."""
    out = interned(base_values, suffixes, block, base_row)
    out[(base_values == "")[base_row]] = ""
    return out



def remap_ragged(r: Ragged, rows: np.ndarray, new_of_old: np.ndarray) -> Ragged:
    """Rows ``rows`` of ``r`` (in that order), every value ``v`` replaced by ``new_of_old[v]``."""
    t = gather_ragged(r, rows, np.zeros(len(rows), dtype=np.int64))
    return Ragged(t.indptr, new_of_old[t.indices] if len(t.indices) else t.indices)

