"""Metric formulas: small pure functions over numpy arrays (one value per query, or one per split)."""

from smartvector_bench.core.evaluation.metrics.bootstrap import bootstrap_ci, bootstrap_mean_ci
from smartvector_bench.core.evaluation.metrics.calibration import bin_index, ece
from smartvector_bench.core.evaluation.metrics.clustered import (
    cluster_bootstrap_ci, cluster_bootstrap_mean_ci, design_effect, minimum_detectable_difference,
    paired_cluster_permutation_test,
)
from smartvector_bench.core.evaluation.metrics.graded import ir_metrics
from smartvector_bench.core.evaluation.metrics.significance import mcnemar_exact
from smartvector_bench.core.evaluation.metrics.temporal import leakage_rate, leaked

__all__ = [
    "bin_index", "bootstrap_ci", "bootstrap_mean_ci", "cluster_bootstrap_ci", "cluster_bootstrap_mean_ci",
    "design_effect", "ece", "ir_metrics", "leakage_rate", "leaked", "mcnemar_exact",
    "minimum_detectable_difference", "paired_cluster_permutation_test",
]
