"""How far a float32 score may move on another CPU, and what that does to ranks: the noise model the regression
gate (``tools/gate/tolerances.py``) compares reruns with, here so that systems whose scores are not continuous in
their inputs (rank fusion, trees) can say which values their run could take elsewhere (``Run.bounds``).

Every score a system ranks by is a float32 cosine of two unit MiniLM vectors (d = 384), a BM25 sum of float32 terms,
or computed from those in float64. Another CPU moves such a score by at most :func:`score_noise`:
``SCORE_NOISE * max(1, |s|)`` with ``SCORE_NOISE = (2 EMBED_ULPS + LAMBDA sqrt(d)) eps``; the derivation and the
measurements are in ``tools/gate/tolerances.py``. Two scores may then change order only when within the sum of
their noises (each moved towards the other).
"""

from __future__ import annotations

import math

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)  # 2^-23: float32's unit of the last place at 1
DIM = 384                                # all-MiniLM-L6-v2's dimension
EMBED_ULPS = 16                          # |v_this - v_other| <= 16 eps for a unit vector (9 measured)
LAMBDA = 8.0                             # P(a dot product's error > LAMBDA sqrt(d) u) < 2 d e^-32 = 1e-11
SCORE_NOISE = (2 * EMBED_ULPS + LAMBDA * math.sqrt(DIM)) * EPS32


def score_noise(scores) -> np.ndarray:
    """How far each score may move on another CPU (elementwise; +inf for a non-finite score)."""
    s = np.asarray(scores, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(s), SCORE_NOISE * np.maximum(1.0, np.abs(s)), np.inf)


def rank_bounds(row: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks that items scored ``values`` could take on another CPU within ``row`` (one query's scores over
    the corpus, -inf = excluded, the items themselves included): (best, worst). An item may pass another only when
    their scores are within their two noises; an exact tie here may break either way there. ``values`` must be
    finite members of ``row``."""
    finite = np.sort(row[np.isfinite(row)])                      # ascending
    v = np.asarray(values, dtype=np.float64)
    # the pair's noise, bounded by twice the larger score's: generous by at most a factor (1 + 2 noise)
    reach = 2.0 * SCORE_NOISE * np.maximum(1.0, np.abs(v) + 2.0 * score_noise(v)) * (1.0 + 1e-9)
    above_surely = len(finite) - np.searchsorted(finite, v + reach, side="right")
    above_maybe = len(finite) - np.searchsorted(finite, v - reach, side="left")  # itself included
    return above_surely + 1, above_maybe
