"""Temporal signal (SmartVector paper, four-signal score; reference ``_temporal_score``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np


@dataclass(frozen=True)
class TemporalParams:
    half_life_days: float = 30.0  # H in 2^(-age/H)
    expired_score: float = 0.05  # T outside the validity window
    POSITIVE: ClassVar[tuple[str, ...]] = ("half_life_days",)


def temporal_signal(created_at: np.ndarray, valid_from: np.ndarray, valid_to: np.ndarray, as_of: np.ndarray,
                    half_life_days: float = 30.0, expired_score: float = 0.05) -> np.ndarray:
    """Paper 2.C, four-signal scoring, Temporal ("penalizes vectors outside their validity window or aged beyond
    a half-life"); reference: 0.05 past the validity end, else 2^(-age/30), age from creation.

    T(v, t) = expired_score if t is outside v's validity window [valid_from, valid_to), else 2^(-age/H),
    with age = t - created_at in days (never negative) and H the half-life.

    Shapes: vector arrays (N,), ``as_of`` (Q,) -> (Q, N). The reference only checks the window's end;
    here a vector that is not yet valid at t (valid_from > t: announced, or from t's future) is outside too.
    """
    t = np.asarray(as_of, dtype=np.float64)[:, None]
    outside = (t >= valid_to[None, :]) | (t < valid_from[None, :])
    age = np.maximum(t - created_at[None, :], 0.0)
    return np.where(outside, expired_score, np.exp2(-age / half_life_days))
