"""The metric names of every result file, declared once: the evaluator's keys in metrics.json, the columns of a
sweep's tidy.csv and the feedback loop's series all spell them through these constants.

A metric with an interval is stored as ``<name>`` beside ``<name>_ci`` ([lo, hi]); tables flatten the interval
to ``<name>_lo`` / ``<name>_hi`` (:func:`ci`, :func:`lo`, :func:`hi`).
"""

from __future__ import annotations

TOP1 = "top1"                    # the top-1 chunk is the right one in force at the query's as-of time
STALE_RATE = "stale_rate"        # the top-1 chunk is a superseded version of the right one
RUMOR_RATE = "rumor_rate"        # the top-1 chunk is an injected rumor
ECE = "ece"                      # expected calibration error of the top-1 confidence
MRR_AT_10 = "mrr_at_10"
RECALL_AT_5 = "recall_at_5"
NDCG_AT_10 = "ndcg_at_10"
LEAKAGE_AT_10 = "leakage_at_10"  # share of the top 10 not valid at the as-of time (needs validity windows)
BRIER = "brier"                  # Brier score of the top-1 confidence against correct@1
AUROC = "auroc"                  # how well the top-1 confidence separates correct from wrong answers
VERSION_ACCURACY = "version_accuracy"  # P(top-1 correct | the top-1 chunk is of the query's family)
ANATOMY = "anatomy"              # a split's wrong top-1s by class (core/evaluation/metrics/anatomy.py)

N_QUERIES = "n_queries"
N_FAMILIES = "n_families"
MCNEMAR_P = "mcnemar_p"
PERMUTATION_P = "permutation_p"
P_VALUES = (MCNEMAR_P, PERMUTATION_P)

# Every metric of a metrics.json split stored with its interval, in the order of tidy.csv's columns.
CI_METRICS = (TOP1, STALE_RATE, RUMOR_RATE, ECE, MRR_AT_10, RECALL_AT_5, NDCG_AT_10, LEAKAGE_AT_10)
# The ones every split has (leakage needs the dataset's validity windows).
ALWAYS = tuple(m for m in CI_METRICS if m != LEAKAGE_AT_10)
# What the sweep summaries and the feedback loop's rounds report.
SUMMARY_METRICS = (TOP1, STALE_RATE, RUMOR_RATE, ECE)


def ci(name: str) -> str:
    return f"{name}_ci"


def lo(name: str) -> str:
    return f"{name}_lo"


def hi(name: str) -> str:
    return f"{name}_hi"


def calibrated(name: str) -> str:
    """The test-split figure after a calibration map fitted on dev (``metrics.json``'s ``calibration``)."""
    return f"{name}_calibrated"


# lvl_eval.json spells its rank metrics with the cut-off it was judged at: "mrr@10", "recall@10".
def mrr_at(k: int) -> str:
    return f"mrr@{k}"


def recall_at(k: int) -> str:
    return f"recall@{k}"
