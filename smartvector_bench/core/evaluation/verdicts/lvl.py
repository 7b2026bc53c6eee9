"""Claims 9-14: LiveVectorLake's published figures, restating the verdicts experiments/lvl_eval.py writes to
results/lvl_eval/lvl_eval.json with the test each rests on."""

from __future__ import annotations

from typing import Callable

from smartvector_bench.core.evaluation.verdicts.base import Verdict, _ci, _ms, _pct, not_measured


def _lvl(d: dict | None, name: str, test: str, threshold: str, figure: Callable[[dict], str]) -> Verdict:
    """Restate lvl_eval.json's verdict of ``claims.<name>`` with the test it rests on."""
    if d is None:
        return not_measured("missing lvl_eval/lvl_eval.json", "-", test, threshold, "-")
    c = d.get("claims", {}).get(name)
    if c is None:
        return not_measured(f"no {name} in lvl_eval/lvl_eval.json", "-", test, threshold, "-")
    rule = c.get("rule", "-")
    v = c.get("verdict")
    try:
        fig = figure(c)
    except (KeyError, TypeError):
        return not_measured(f"a figure of {name} is missing from lvl_eval/lvl_eval.json", "-", test, threshold,
                            rule)
    if v not in ("holds", "partly", "does not hold"):
        return not_measured(f"lvl_eval says {v or 'nothing'}", fig, test, threshold, rule)
    return Verdict(v, fig, test, threshold, None, rule)


def _n(d: dict | None, *path) -> int | None:
    x = d
    for k in path:
        if not isinstance(x, dict) or k not in x:
            return None
        x = x[k]
    return x if isinstance(x, int) else None


def lvl_reprocessing(d: dict | None) -> Verdict:
    n = _n(d, "reembedding", "all_steps", "n")
    test = (f"mean of the per-document re-processed shares over every update step{f' ({n} steps)' if n else ''}, "
            "95% bootstrap CI over documents")
    return _lvl(d, "reprocessing_share", test, "mean <= 15% (holds); CI lower bound <= 15% (partly)",
                lambda c: f"{_pct(c['ours_mean_per_document'])}{_ci(c['ours_ci'])} per document and version step")


def lvl_hot_latency(d: dict | None) -> Verdict:
    def fig(c):
        h = c["ours_with_embedding"]
        return (f"{_ms(h['p50'])} / {_ms(h['p95'])} / {_ms(h['p99'])} with the query embedding; "
                f"{_ms(c['ours_query_only']['p50'])} p50 for the index alone")

    n = _n(d, "claims", "hot_latency_ms", "ours_with_embedding", "n")
    test = (f"percentiles (np.quantile, linear) of {n or 'the'} hot-query timings (every query, every "
            "repetition); thresholds on the percentiles, no significance test")
    return _lvl(d, "hot_latency_ms", test, "p50 / p95 / p99 <= 65 / 110 / 145 ms (holds); p50 <= 65 ms (partly)",
                fig)


def lvl_cold_latency(d: dict | None) -> Verdict:
    n = _n(d, "claims", "cold_latency_ms", "ours_uncached_with_embedding", "n")
    test = (f"p50 (np.quantile, linear) of {n or 'the'} uncached as-of query timings (every query, every "
            "repetition); threshold on the percentile, no significance test")
    return _lvl(d, "cold_latency_ms", test, "p50 <= 1.2 s (holds); p50 <= 2 s (partly)",
                lambda c: f"{_ms(c['ours_uncached_with_embedding']['p50'])} p50 reading Delta per query, "
                          "embedding included")


def lvl_change_detection(d: dict | None) -> Verdict:
    def fig(c):
        return (f"must-embed precision / recall {_pct(c['ours_must_embed']['precision'])} / "
                f"{_pct(c['ours_must_embed']['recall'])}; class labels agree on {_pct(c['ours_class_agreement'])} "
                f"of positions; deletions P/R {_pct(c['ours_deletions']['precision'])} / "
                f"{_pct(c['ours_deletions']['recall'])}")

    return _lvl(d, "change_detection_accuracy", "exact counts against the ground truth over every position of "
                "every update (no sampling)", "precision = recall = 1 everywhere (holds); must-embed exact (partly)",
                fig)


def lvl_temporal_accuracy(d: dict | None) -> Verdict:
    n = _n(d, "temporal", "historical", "n")
    test = (f"top-1 over {n or 'the'} historical queries, 95% bootstrap CI (queries independent); threshold on the "
            "point estimate")
    return _lvl(d, "temporal_accuracy", test, "top-1 >= 99% (holds); >= 90% (partly)",
                lambda c: f"top-1 against the gold answer: historical {_pct(c['ours_historical_top1'])}"
                          f"{_ci(c.get('ours_historical_top1_ci'))}, current {_pct(c['ours_current_top1'])} (their "
                          "figure restates the as-of filter; that part is the leakage row)")


def lvl_temporal_leakage(d: dict | None) -> Verdict:
    return _lvl(d, "temporal_leakage", "exact count of returned rows whose validity window excludes the query's "
                "as_of (every returned row; no sampling)", "0 rows (holds)",
                lambda c: f"{_pct(c['ours'], 2)} of returned rows outside their window")


LVL_RULES = (lvl_reprocessing, lvl_hot_latency, lvl_cold_latency, lvl_change_detection, lvl_temporal_accuracy,
             lvl_temporal_leakage)
