"""Temporal leakage@10 per system (test split, the main table's order), the share of returned top-10 chunks whose
validity window does not contain the query's as-of time: over all queries (with its 95% cluster bootstrap
interval over policy families) and over the ``historical`` queries (point estimate; the file holds no leakage
interval for categories). The label-reading oracle (a ceiling) is marked on
its tick label.

Input: ``results/main/metrics.json``. Output: ``fig_leakage.png`` / ``fig_leakage.pdf``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

try:
    from . import common as c
except ImportError:
    import common as c

from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results import MainMetrics
from smartvector_bench.core.results.base import get_path

NAME = "fig_leakage"
INPUT = Path("main") / MainMetrics.FILE
SPLIT = "test"
CATEGORY = "historical"


def load(path: Path) -> tuple[list[str], dict]:
    m = MainMetrics.load(path)
    systems = c.main_systems(m, path, SPLIT)
    if why := c.not_measured(m, systems, SPLIT, M.LEAKAGE_AT_10):  # nothing to draw: no bar may read as 0
        return systems, {"not_measured": why}, c.split_counts(m, path, systems, SPLIT), c.interval_words(m, one=True)
    data = {}
    for s in systems:
        value, lo, hi = c.main_metric(m, path, s, SPLIT, M.LEAKAGE_AT_10)
        at = f"systems.{s}.{SPLIT}"
        hist = get_path(m.split(s, SPLIT), ("by_category", CATEGORY, M.LEAKAGE_AT_10), str(path), float,
                        allow_none=True, field=at)
        data[s] = {"all": value, "ci": (lo, hi), CATEGORY: c.or_nan(hist)}
    return systems, data, c.split_counts(m, path, systems, SPLIT), c.interval_words(m, one=True)


def _label(ax, x: float, v: float, top: float) -> None:
    """The value as text just above the bar or its whisker (``top``)."""
    ax.text(x, (0 if math.isnan(top) else top) + 0.015, "n/a" if math.isnan(v) else f"{100 * v:.1f}%",
            ha="center", va="bottom", fontsize=6.5)


@c.styled
@c.figure(NAME, INPUT, load)
def make(path: Path, loaded, out_dir: Path) -> c.Outcome:
    """Temporal leakage@10 per system, overall and historical queries (test split)."""
    systems, data, (n, n_fam), whisk = loaded
    if "not_measured" in data:
        return c.skip(NAME, f"leakage@10 {c.NOT_MEASURED} ({data['not_measured']})")
    fig = c.new_figure(max(5.0, 0.8 * len(systems) + 1.8), 3.6)
    ax = fig.subplots()
    xs = list(range(len(systems)))
    w = 0.38
    col = c.colours(systems)
    allv = [data[s]["all"] for s in systems]
    hist = [data[s][CATEGORY] for s in systems]
    lo = [data[s]["ci"][0] for s in systems]
    hi = [data[s]["ci"][1] for s in systems]
    zero = [0.0 if math.isnan(v) else v for v in allv]
    ax.bar([x - w / 2 for x in xs], zero, width=w, color=[col[s] for s in systems], zorder=2)
    ax.errorbar([x - w / 2 for x in xs], zero, yerr=c.whiskers(zero, lo, hi), fmt="none", ecolor="black",
                elinewidth=0.9, capsize=2.5, zorder=3)
    ax.bar([x + w / 2 for x in xs], [0.0 if math.isnan(v) else v for v in hist], width=w,
           color=[col[s] for s in systems], alpha=0.45, hatch="///", edgecolor="#333333", lw=0.5, zorder=2)
    for x, a, h, up in zip(xs, allv, hist, hi):
        _label(ax, x - w / 2, a, max(a, up) if not math.isnan(up) else a)
        _label(ax, x + w / 2, h, h)
    ax.set_xticks(xs, [f"{s}\n(reads labels)" if s in c.CEILINGS else s for s in systems], rotation=20, ha="right")
    top = max([v for v in allv + hist + hi if not math.isnan(v)] + [0.05])
    ax.set_ylim(0, min(1.12, top * 1.15 + 0.03))
    c.percent_axis(ax.yaxis)
    ax.set_ylabel("leakage@10 (share of top-10 chunks\noutside their validity window)")
    ax.grid(axis="x", visible=False)
    from matplotlib.patches import Patch

    fig.legend(handles=[Patch(facecolor="#555555", label=f"all test queries (whiskers: {whisk})"),
                       Patch(facecolor="#cccccc", hatch="///", edgecolor="#333333", lw=0.5,
                             label=f"{CATEGORY} queries only")], loc="outside lower center", frameon=False, ncols=2)
    counts = c.count_phrase(n, n_fam)
    ax.set_title(f"Temporal leakage@10, test split{' (' + counts + ')' if counts else ''}")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
