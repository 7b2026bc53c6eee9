"""Claims 4-6, the sweeps: robustness across contradiction rates, and the ablation of the four signals."""

from __future__ import annotations

import pandas as pd

from smartvector_bench.core.evaluation.verdicts.base import (
    ALPHA, MIN_SEEDS, Paired, SIGNALS, Verdict, _pct, format_p, holm, not_measured,
)
from smartvector_bench.core.evaluation.verdicts.pooled import _frame_problem, _perm_test, pooled_paired


ROBUST_RULE = ("per contradiction rate, smartvector vs plain_cosine pooled over seeds, Holm-adjusted over rates: "
               "holds: significantly above (adjusted p < 0.05) at every rate, smartvector's top-1 within 10 "
               "points from rate to rate and >= 50% at every rate; partly: significantly above at every rate; "
               "does not hold: otherwise; not measured: < 5 seeds at some rate")


def robust_across_contradiction(cs_df: pd.DataFrame | None, cs_summary: dict | None,
                                key: str = "dataset.contradiction_rate", *, min_seeds: int = MIN_SEEDS,
                                n_resamples: int = 10000, seed: int = 0) -> Verdict:
    """Claim 4: robust across contradiction rates (contradiction_sweep)."""
    threshold = ("Holm-adjusted p < 0.05 at every rate, range <= 10 points and min >= 50% (holds); adjusted "
                 "p < 0.05 at every rate (partly)")
    base_test = ("paired cluster sign-flip permutation of per-query top-1 per rate over (seed, family) test "
                 f"clusters pooled across >= {min_seeds} seeds, Holm over rates")
    problem = _frame_problem(cs_df, cs_summary, "contradiction_sweep")
    if problem:
        return not_measured(problem, "-", base_test, threshold, ROBUST_RULE)
    if key not in cs_df.columns:
        return not_measured(f"contradiction_sweep/queries.csv lacks the swept column {key}", "-", base_test,
                            threshold, ROBUST_RULE)
    rates = sorted(pd.to_numeric(cs_df[key]).dropna().unique())
    if not rates:
        return not_measured("no contradiction rates", "-", base_test, threshold, ROBUST_RULE)
    res = {}
    for rate in rates:
        r = pooled_paired(cs_df, "plain_cosine", "smartvector", "correct", group={key: float(rate)},
                          min_seeds=min_seeds, n_resamples=n_resamples, seed=seed)
        if r.reason:
            return not_measured(f"rate {rate:g}: {r.reason}", "-", base_test, threshold, ROBUST_RULE)
        res[float(rate)] = r
    adj = dict(zip(res, holm([r.p_value for r in res.values()])))
    sv = [r.mean_b for r in res.values()]
    pc = [r.mean_a for r in res.values()]
    above = all(r.diff > 0 and adj[k] < ALPHA for k, r in res.items())
    stable = max(sv) - min(sv) <= 0.10 + 1e-12
    verdict = "holds" if above and stable and min(sv) >= 0.5 else "partly" if above else "does not hold"
    n_seeds = min(r.n_seeds for r in res.values())
    test = (f"paired cluster sign-flip permutation of per-query top-1 at each of {len(res)} rates over "
            f"(seed, family) test clusters pooled across >= {n_seeds} seeds ({n_resamples} resamples, two-sided), "
            "Holm-adjusted over rates")
    n_sig = sum(r.diff > 0 and adj[k] < ALPHA for k, r in res.items())
    figure = (f"smartvector {_pct(min(sv))}-{_pct(max(sv))}, plain cosine {_pct(min(pc))}-{_pct(max(pc))} over "
              f"{len(res)} rates (pooled over seeds); significantly above at {n_sig} of {len(res)} rates "
              f"(largest Holm-adjusted p {format_p(max(adj.values()))})")
    return Verdict(verdict, figure, test, threshold, max(adj.values()), ROBUST_RULE)


TEMPORAL_RULE = ("smartvector top-1 on the ablation's weights presets, pooled over seeds: holds: dropping "
                 "temporal lowers top-1 significantly (paper vs no_temporal, p < 0.05) and no_temporal is "
                 "significantly below every other no_X (p < 0.05); partly: dropping temporal lowers top-1 "
                 "significantly but it is not the largest; does not hold: otherwise")


def _w(preset: str) -> dict:
    return {"weights": preset}


def temporal_largest(ab_df: pd.DataFrame | None, ab_summary: dict | None, system: str = "smartvector", *,
                     min_seeds: int = MIN_SEEDS, n_resamples: int = 10000, seed: int = 0) -> Verdict:
    """Claim 5: the temporal signal is the largest single contributor (ablation)."""
    threshold = "p < 0.05 for the drop and for each no_temporal vs no_X comparison (holds); for the drop (partly)"
    base_test = (f"paired cluster sign-flip permutations of per-query top-1 ({system}; weights presets paired on "
                 f"(seed, query), (seed, family) test clusters, >= {min_seeds} seeds): paper vs no_temporal, "
                 "no_X vs no_temporal")
    problem = _frame_problem(ab_df, ab_summary, "ablation")
    if problem:
        return not_measured(problem, "-", base_test, threshold, TEMPORAL_RULE)
    kw = dict(min_seeds=min_seeds, n_resamples=n_resamples, seed=seed)
    drops = {}
    for sig in SIGNALS:
        r = pooled_paired(ab_df, system, system, "correct", group=(_w("paper"), _w(f"no_{sig}")), **kw)
        if r.reason:
            return not_measured(r.reason, "-", base_test, threshold, TEMPORAL_RULE)
        drops[sig] = r
    vs = {}
    for sig in SIGNALS:
        if sig != "temporal":
            vs[sig] = pooled_paired(ab_df, system, system, "correct", group=(_w(f"no_{sig}"), _w("no_temporal")),
                                    **kw)
    t = drops["temporal"]
    test = (f"paired cluster sign-flip permutations of per-query top-1 ({system}; presets paired on (seed, query); "
            f"{t.n_clusters} (seed, family) test clusters over {t.n_seeds} seeds; {n_resamples} resamples): paper "
            "vs no_temporal, and no_X vs no_temporal for the other signals")
    dropped = t.diff < 0 and t.p_value < ALPHA
    largest = all(r.diff < 0 and r.p_value < ALPHA for r in vs.values())
    verdict = "holds" if dropped and largest else "partly" if dropped else "does not hold"
    p = max([t.p_value] + [r.p_value for r in vs.values()]) if verdict == "holds" else t.p_value
    figure = (f"{system} top-1 with all four signals {_pct(t.mean_a)} ({t.n_seeds} seeds pooled); change when one "
              "is dropped: " + ", ".join(f"{k} {100 * r.diff:+.1f} pts (p {format_p(r.p_value)})"
                                         for k, r in drops.items())
              + "; no_temporal vs " + ", ".join(f"no_{k} {100 * r.diff:+.1f} pts (p {format_p(r.p_value)})"
                                                 for k, r in vs.items()))
    return Verdict(verdict, figure, test, threshold, p, TEMPORAL_RULE)


CONFIDENCE_RULE = ("smartvector, weights paper vs no_confidence, pooled over >= 5 seeds: holds: top-1 higher "
                   "without confidence with paired p < 0.05; partly: higher, p >= 0.05; does not hold: not higher")


def confidence_removal_raises(ab_df: pd.DataFrame | None, ab_summary: dict | None, system: str = "smartvector", *,
                              min_seeds: int = MIN_SEEDS, n_resamples: int = 10000, seed: int = 0) -> Verdict:
    """Claim 6: removing the confidence signal raises accuracy (ablation, paper vs no_confidence)."""
    threshold = "higher and p < 0.05 (holds); higher (partly)"
    problem = _frame_problem(ab_df, ab_summary, "ablation")
    r = Paired(reason=problem) if problem else pooled_paired(
        ab_df, system, system, "correct", group=(_w("paper"), _w("no_confidence")), min_seeds=min_seeds,
        n_resamples=n_resamples, seed=seed)
    test = _perm_test(r, f"top-1 ({system}, weights paper vs no_confidence paired on (seed, query))", "ablation",
                      min_seeds, n_resamples)
    if r.reason:
        return not_measured(r.reason, "-", test, threshold, CONFIDENCE_RULE)
    higher = r.diff > 0
    verdict = "holds" if higher and r.p_value < ALPHA else "partly" if higher else "does not hold"
    figure = (f"{r.n_seeds} seeds pooled: {_pct(r.mean_a)} with it, {_pct(r.mean_b)} without "
              f"({100 * r.diff:+.1f} pts)")
    return Verdict(verdict, figure, test, threshold, r.p_value, CONFIDENCE_RULE)
