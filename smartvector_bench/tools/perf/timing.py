"""Timing and the tidy row every perf case emits.

A *row* is one measured repetition: ``case`` (what is measured), ``system``, ``n_vectors``, ``vectors``
(synthetic | real), ``metric`` (e.g. ``batch_s``, ``query_ms``, ``bytes``), ``rep`` (repetition, -1 for a
value measured once), ``value`` and ``unit``. Every repetition is kept; :func:`timing_stats` gives medians and
spreads; ratios are taken between systems of the same run (:mod:`.runner`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np


def release_memory() -> bool:
    """Collect garbage and return the allocator's free pages to the OS (glibc ``malloc_trim(0)``, every arena):
    called between cases and before each memory measurement, so that the heap an earlier case freed but glibc
    kept does not count in a later case's RSS (T5m). Live objects are untouched. False where there is no glibc."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, looked up once (``find_library`` runs ``ldconfig``); None where there is none."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim by hand
        return None


@dataclass(frozen=True)
class Row:
    case: str
    system: str
    n_vectors: int
    vectors: str
    metric: str
    rep: int
    value: float
    unit: str
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def repeat(fn: Callable[[], object], reps: int, warmup: int = 1) -> list[float]:
    """Wall seconds of ``reps`` calls of ``fn`` after ``warmup`` untimed ones (garbage collector paused)."""
    for _ in range(warmup):
        fn()
    out = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    finally:
        if enabled:
            gc.enable()
    return out


def rows(case: str, system: str, n: int, vectors: str, metric: str, values, unit: str, note: str = "") -> list[Row]:
    """One row per repetition; a single value gets rep -1."""
    values = list(np.atleast_1d(np.asarray(values, dtype=np.float64)))
    if len(values) == 1:
        return [Row(case, system, int(n), vectors, metric, -1, float(values[0]), unit, note)]
    return [Row(case, system, int(n), vectors, metric, i, float(v), unit, note) for i, v in enumerate(values)]


def timing_stats(values) -> dict:
    """median, p5, p95, min, max, IQR and count of repeated measurements."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return {"median": float("nan"), "p05": float("nan"), "p95": float("nan"), "min": float("nan"),
                "max": float("nan"), "iqr": float("nan"), "n": 0}
    q05, q25, q50, q75, q95 = np.percentile(x, [5, 25, 50, 75, 95])
    return {"median": float(q50), "p05": float(q05), "p95": float(q95), "min": float(x.min()),
            "max": float(x.max()), "iqr": float(q75 - q25), "n": int(x.size)}


def per_query_latency(fn: Callable[[slice], object], n: int) -> np.ndarray:
    """Seconds of ``fn(slice(i, i + 1))`` (one query per call) for i < n, after one warm-up call: the latency
    distribution (p50 / p95 / p99) that a caller issuing one query at a time sees."""
    if n <= 0:
        return np.zeros(0)
    fn(slice(0, 1))
    out = np.empty(n)
    for i in range(n):
        t = time.perf_counter()
        fn(slice(i, i + 1))
        out[i] = time.perf_counter() - t
    return out
