"""Claims 1-3 on real data: the same rules as the seeds sweep's (main_table.py), judged on one run over real facts
that changed (experiment=facts, results/facts/), clusters = facts. The frame is the run files' per-query outcomes
in queries.csv's shape (core/evaluation/claims.py builds it); one dataset, so ``min_seeds=1``."""

from __future__ import annotations

import pandas as pd

from smartvector_bench.core.evaluation.verdicts.base import ALPHA, Paired, Verdict, _dci, _f3, _pct, not_measured
from smartvector_bench.core.evaluation.verdicts.main_table import ECE_RULE, STALE_RULE, TOP1_RULE
from smartvector_bench.core.evaluation.verdicts.pooled import _boot_test, _perm_test, pooled_bootstrap, pooled_paired

WHERE = "real facts"
MISSING = "missing facts/metrics.json"  # or a run folder without run files


def _tuned(df: pd.DataFrame, metric: str, n_resamples: int) -> str:
    """smartvector_tuned beside the judged system (fitted on dev; shown, not judged)."""
    t = pooled_paired(df, "plain_cosine", "smartvector_tuned", metric, min_seeds=1, n_resamples=n_resamples)
    return "" if t.reason else f"; smartvector_tuned (fitted on dev) {_pct(t.mean_b)} (p {t.p_value:.2g})"


def real_top1(df: pd.DataFrame | None, *, n_resamples: int = 10000, seed: int = 0) -> Verdict:
    threshold = "ratio >= 1.5 and p < 0.05 (holds); p < 0.05 (partly)"
    r = Paired(reason=MISSING) if df is None else pooled_paired(
        df, "plain_cosine", "smartvector", "correct", min_seeds=1, n_resamples=n_resamples, seed=seed)
    test = _perm_test(r, "top-1", WHERE, 1, n_resamples)
    if r.reason:
        return not_measured(r.reason, "-", test, threshold, TOP1_RULE)
    ratio = r.mean_b / r.mean_a if r.mean_a else float("inf")
    up = r.diff > 0 and r.p_value < ALPHA
    verdict = "holds" if up and ratio >= 1.5 else "partly" if up else "does not hold"
    figure = (f"{r.n} test queries, {r.n_clusters} facts: plain_cosine {_pct(r.mean_a)} -> smartvector "
              f"{_pct(r.mean_b)} ({100 * r.diff:+.1f} pts)" + _tuned(df, "correct", n_resamples))
    return Verdict(verdict, figure, test, threshold, r.p_value, TOP1_RULE)


def real_stale(df: pd.DataFrame | None, *, n_resamples: int = 10000, seed: int = 0) -> Verdict:
    threshold = "lower and p < 0.05 (holds); lower (partly)"
    r = Paired(reason=MISSING) if df is None else pooled_paired(
        df, "plain_cosine", "smartvector_soft", "stale", min_seeds=1, n_resamples=n_resamples, seed=seed)
    test = _perm_test(r, "stale answers", WHERE, 1, n_resamples)
    if r.reason:
        return not_measured(r.reason, "-", test, threshold, STALE_RULE)
    lower = r.diff < 0
    verdict = "holds" if lower and r.p_value < ALPHA else "partly" if lower else "does not hold"
    figure = (f"plain_cosine {_pct(r.mean_a)} -> smartvector_soft {_pct(r.mean_b)} ({100 * r.diff:+.1f} pts)"
              + _tuned(df, "stale", n_resamples))
    return Verdict(verdict, figure, test, threshold, r.p_value, STALE_RULE)


def real_ece(df: pd.DataFrame | None, *, n_boot: int = 1000, seed: int = 0) -> Verdict:
    threshold = "95% CI of each difference excludes 0; (a) and (b) (holds); one of them (partly)"
    if df is None:
        return not_measured(MISSING, "-", _boot_test("ECE, Platt ECE, AUROC", n_boot, 1),
                            threshold, ECE_RULE)
    args = dict(min_seeds=1, n_boot=n_boot, seed=seed)
    raw = pooled_bootstrap(df, "plain_cosine", "smartvector", "ece", **args)
    cal = pooled_bootstrap(df, "plain_cosine", "smartvector", "ece", calibrate="platt", **args)
    auc = pooled_bootstrap(df, "plain_cosine", "smartvector", "auroc", **args)
    reason = raw.reason or cal.reason or auc.reason
    test = _boot_test("ECE (10 bins), Platt-calibrated ECE (map fitted on dev), AUROC", n_boot, 1,
                      None if reason else 1)
    if reason:
        return not_measured(reason, "-", test, threshold, ECE_RULE)
    a, b = raw.lower, cal.lower or auc.higher
    verdict = "holds" if a and b else "partly" if a or b else "does not hold"
    figure = (f"ECE {_f3(raw.value_a)} -> {_f3(raw.value_b)}{_dci(raw.ci)}; Platt ECE {_f3(cal.value_a)} -> "
              f"{_f3(cal.value_b)}{_dci(cal.ci)}; AUROC {_f3(auc.value_a)} -> {_f3(auc.value_b)}{_dci(auc.ci)}")
    return Verdict(verdict, figure, test, threshold, None, ECE_RULE)
