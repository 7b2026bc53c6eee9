"""Paired significance tests between two systems judged on the same queries."""

from __future__ import annotations

import numpy as np
from scipy.stats import binom


def mcnemar_exact(a_correct: np.ndarray, b_correct: np.ndarray) -> dict:
    """Exact two-sided McNemar test (binomial test on the discordant pairs).

    ``b`` = queries A gets right and B gets wrong, ``c`` = A wrong and B right; under H0 each discordant
    pair is a fair coin, so ``p = min(1, 2 * Binom(b + c, 0.5).cdf(min(b, c)))``, and ``p = 1.0`` when there
    is no discordant pair. ``n`` is the number of paired queries (concordant ones included).
    Returns plain Python ``{"p_value": float, "b": int, "c": int, "n": int}``.
    """
    a = np.asarray(a_correct, dtype=bool)
    b_ = np.asarray(b_correct, dtype=bool)
    if a.ndim != 1 or a.shape != b_.shape:
        raise ValueError(f"a_correct and b_correct must be 1-D of the same length; got {a.shape} and {b_.shape}")
    b = int(np.count_nonzero(a & ~b_))
    c = int(np.count_nonzero(~a & b_))
    p = 1.0 if b + c == 0 else min(1.0, 2.0 * float(binom.cdf(min(b, c), b + c, 0.5)))
    return {"p_value": p, "b": b, "c": c, "n": int(a.shape[0])}
