"""Metric formulas: small pure functions over numpy arrays (one value per query, or one per split)."""

from .bootstrap import bootstrap_ci, bootstrap_mean_ci
from .calibration import bin_index, ece
from .ranking import correct_at_1, in_sets, reciprocal_rank, recall_at_k
from .significance import mcnemar_exact
from .temporal import leakage_rate, leaked

__all__ = [
    "bin_index", "bootstrap_ci", "bootstrap_mean_ci", "correct_at_1", "ece", "in_sets", "leakage_rate", "leaked",
    "mcnemar_exact", "recall_at_k", "reciprocal_rank",
]
