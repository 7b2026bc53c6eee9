"""The four-signal score (SmartVector paper: Score = 0.35 S + 0.25 T + 0.25 C + 0.15 R)."""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

from smartvector_bench.core.errors import BenchError

SIGNALS = ("semantic", "temporal", "confidence", "relational")


@dataclass(frozen=True)
class Weights:
    semantic: float = 0.35
    temporal: float = 0.25
    confidence: float = 0.25
    relational: float = 0.15

    def total(self) -> float:
        return self.semantic + self.temporal + self.confidence + self.relational


def weights_from_config(cfg: dict, where: str) -> Weights:
    unknown = sorted(set(cfg) - set(SIGNALS))
    if unknown:
        raise BenchError(f"{where}.{unknown[0]}: unknown weight; allowed: {', '.join(SIGNALS)}")
    values = {}
    for name in SIGNALS:
        v = cfg.get(name, 0.0)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise BenchError(f"{where}.{name}={v!r}: must be a finite number >= 0")
        values[name] = float(v)
    w = Weights(**values)
    if w.total() <= 0:
        raise BenchError(f"{where}: at least one weight must be > 0")
    return w


def fuse(w: Weights, semantic: np.ndarray, temporal: np.ndarray, confidence: np.ndarray,
         relational: np.ndarray) -> np.ndarray:
    """Paper 2.C: Score = 0.35 Semantic + 0.25 Temporal + 0.25 Confidence + 0.15 Relational (also the
    sqlite-knowledge-graph spec's final_score, seed 003 "Four-signal retrieval score", with its weights).

    Convex combination normalised by the weight sum, so the score stays in [0, 1] when weights are
    changed or a signal is dropped (ablations renormalise). Cosine is clipped to [0, 1] first."""
    s = np.clip(semantic, 0.0, 1.0)
    return (w.semantic * s + w.temporal * temporal + w.confidence * confidence
            + w.relational * relational) / w.total()
