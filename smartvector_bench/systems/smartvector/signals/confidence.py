"""Confidence engine (SmartVector paper, "Confidence Engine"; reference ``ConfidenceEngine``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np


@dataclass(frozen=True)
class ConfidenceParams:
    half_life_days: float = 30.0  # H in C_0 * 2^(-age/H)
    min_confidence: float = 0.01
    positive_boost: float = 0.03  # per acceptance
    negative_penalty: float = 0.08  # per correction: weighs more than an acceptance
    access_reinforcement: float = 0.01  # times ln(1 + access_count)
    dormant_threshold: float = 0.15
    POSITIVE: ClassVar[tuple[str, ...]] = ("half_life_days",)


def decayed_confidence(base: np.ndarray, age_days: np.ndarray, p: ConfidenceParams) -> np.ndarray:
    """Paper 2.C, Confidence Engine (1), exponential (Ebbinghaus) decay C_decayed = C_0 * 2^(-age/H), floored at
    the reference's c_min: max(c_min, C_0 * 2^(-age/H)); age is clamped at 0."""
    return np.maximum(p.min_confidence, base * np.exp2(-np.maximum(age_days, 0.0) / p.half_life_days))


def feedback_adjusted(confidence: np.ndarray, positive: np.ndarray, negative: np.ndarray,
                      p: ConfidenceParams) -> np.ndarray:
    """Paper 2.C, Confidence Engine (2), feedback reconsolidation (corrections weigh more); reference:
    C + b+ * positive - b- * negative (b+ 0.03, b- 0.08), clamped to [c_min, 1]."""
    return np.clip(confidence + p.positive_boost * positive - p.negative_penalty * negative, p.min_confidence, 1.0)


def access_reinforced(confidence: np.ndarray, access_count: np.ndarray, p: ConfidenceParams) -> np.ndarray:
    """Paper 2.C, Confidence Engine (3), capped logarithmic access reinforcement; reference:
    min(1, C + a * ln(1 + accesses)), a = 0.01."""
    return np.minimum(1.0, confidence + p.access_reinforcement * np.log1p(np.maximum(access_count, 0)))


def live_confidence(base: np.ndarray, created_at: np.ndarray, as_of: np.ndarray, positive: np.ndarray,
                    negative: np.ndarray, access_count: np.ndarray, p: ConfidenceParams) -> np.ndarray:
    """Paper 2.C, Confidence Engine (1) -> (2) -> (3): C(v, t) is the decay from creation (or the last
    validation) to t, then feedback, then access reinforcement (the reference's order).

    Vector arrays (N,), ``as_of`` (Q,) -> (Q, N).
    """
    age = np.asarray(as_of, dtype=np.float64)[:, None] - created_at[None, :]
    c = decayed_confidence(base[None, :], age, p)
    c = feedback_adjusted(c, positive[None, :], negative[None, :], p)
    return access_reinforced(c, access_count[None, :], p)


def is_dormant(confidence: np.ndarray, p: ConfidenceParams) -> np.ndarray:
    """Paper 2.B, Decay & Dormancy: below a threshold a vector is DORMANT; reference: live C < 0.15 (strict)."""
    return confidence < p.dormant_threshold
