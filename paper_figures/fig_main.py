"""Main comparison (test split): top-1, stale rate, rumor rate and ECE per system (the baselines, the SmartVector
family, the peers, the metadata filter and the label-reading oracle, in the main table's order) with 95% cluster
bootstrap intervals over policy families, and the SmartVector paper's claimed values
(``smartvector_bench.core.evaluation.paper_claims``) as markers. The oracle's bars are hatched: it reads labels/, a
ceiling.

Input: ``results/main/metrics.json``. Output: ``fig_main.png`` / ``fig_main.pdf``. ``fig_main_large.py`` draws
the same chart from ``results/main_large/metrics.json`` (:func:`draw`).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

try:
    from . import common as c
except ImportError:  # run as a script: paper_figures/ is on sys.path
    import common as c

from smartvector_bench.core.evaluation import paper_claims
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results import MainMetrics

NAME = "fig_main"
INPUT = Path("main") / MainMetrics.FILE
SPLIT = "test"
PANELS = ((M.TOP1, "top-1 accuracy", True), (M.STALE_RATE, "stale rate", True),
          (M.RUMOR_RATE, "rumor rate", True), (M.ECE, "ECE", False))


def load(path: Path) -> tuple[list[str], dict, tuple[int | None, int | None], str | None, dict[str, str], str]:
    """(systems in order, {system: {metric: (value, lo, hi)}}, (queries, families), dataset name or None,
    {metric: why it was not measured}, what the whiskers are)."""
    m = MainMetrics.load(path)
    systems = c.main_systems(m, path, SPLIT)
    data = {s: {key: c.main_metric(m, path, s, SPLIT, key) for key, _, _ in PANELS} for s in systems}
    name = m.dataset.get("name")
    why = {key: r for key, _, _ in PANELS if (r := c.not_measured(m, systems, SPLIT, key))}
    return (systems, data, c.split_counts(m, path, systems, SPLIT), name if isinstance(name, str) else None, why,
            c.interval_words(m))


def draw(path: Path, out_dir: Path, name: str, title: str) -> c.Outcome:
    """The main-comparison chart of the metrics.json at ``path`` as ``<name>.png`` / ``.pdf``."""
    if (skipped := c.missing_input(name, path)) is not None:
        return skipped
    systems, data, (n, n_fam), dataset, why, whisk = load(path)
    fig = c.new_figure(10.0, 0.36 * len(systems) + 1.6)
    axes = fig.subplots(1, len(PANELS), sharey=True)
    ys = list(range(len(systems)))[::-1]  # first system at the top
    col = c.colours(systems)
    claims = paper_claims.PAPER_MAIN_TABLE
    claimed = False
    for ax, (key, label, pct) in zip(axes, PANELS):
        vals = [data[s][key][0] for s in systems]
        lo = [data[s][key][1] for s in systems]
        hi = [data[s][key][2] for s in systems]
        bars = [0.0 if math.isnan(v) else v for v in vals]
        for y, s, v in zip(ys, systems, bars):
            ax.barh([y], [v], height=0.62, color=col[s], alpha=0.85, hatch=c.hatch(s), edgecolor="white",
                    lw=0.0, zorder=2)
        ax.errorbar(bars, ys, xerr=c.whiskers(bars, lo, hi), fmt="none", ecolor="black", elinewidth=0.9,
                    capsize=2.5, zorder=3)
        for y, s in zip(ys, systems):
            claim = claims.get(s, {}).get(key)
            if claim is not None:
                ax.plot([claim], [y], marker="D", ms=5.5, mfc="white", mec=c.PAPER_COLOUR, mew=1.4, ls="none",
                        zorder=4, label="paper's claim" if not claimed else None)
                claimed = True
        top = max([v for v in vals + hi if not math.isnan(v)] + [0.0])
        for s in systems:
            claim = claims.get(s, {}).get(key)
            top = max(top, claim if claim is not None else 0.0)
        xmax = min(1.05, top * 1.25 + 0.04) if pct else top * 1.25 + 0.04
        ax.set_xlim(0, xmax)
        for y, s, v, h in zip(ys, systems, vals, hi):  # the value, right of the bar or its whisker
            at = 0.0 if math.isnan(v) else (v if math.isnan(h) else max(v, h))
            claim = claims.get(s, {}).get(key)
            close = claim is not None and at <= claim < at + 0.16 * xmax  # raised above the claim's marker
            blank = c.NOT_MEASURED if key in why else "n/a"
            ax.annotate(blank if math.isnan(v) else (f"{100 * v:.1f}%" if pct else f"{v:.3f}"),
                        (at, y), xytext=(3, 7 if close else 0), textcoords="offset points",
                        va="center", ha="left", fontsize=6.5, zorder=5)
        ax.set_title(f"{label}: {c.NOT_MEASURED}" if key in why else label)
        if pct:
            c.percent_axis(ax.xaxis)
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(ys, systems)
    handles, labels = [], []
    for ax in axes:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    handles, labels = handles[:1], labels[:1]
    ceilings = [s for s in systems if s in c.CEILINGS]
    if ceilings:
        from matplotlib.patches import Patch

        handles.append(Patch(facecolor=col[ceilings[0]], alpha=0.85, hatch=c.CEILING_HATCH, edgecolor="white",
                             lw=0.0))
        labels.append(f"{', '.join(ceilings)}: reads the labels (a ceiling, not a deployable system)")
    if handles:
        fig.legend(handles, labels, loc="outside lower right", frameon=False, ncols=len(handles))
    counts = c.count_phrase(n, n_fam)
    where = f" ({dataset})" if dataset else ""
    fig.suptitle(f"{title}{where}, test split{', ' + counts if counts else ''}\nwhiskers: {whisk}")
    if why:  # the stored reasons, once: a bar of 0 would read as measured
        labels_of = {key: label for key, label, _ in PANELS}
        fig.text(0.01, 0.005, f"{c.NOT_MEASURED}: " + "; ".join(f"{labels_of[k]} ({r})" for k, r in why.items()),
                 fontsize=6.5, ha="left", va="bottom")
    return c.save(fig, out_dir, name)


@c.styled
def make(results_dir: Path, out_dir: Path) -> c.Outcome:
    """Main comparison on the test split, with the paper's claims as markers."""
    return draw(Path(results_dir) / INPUT, out_dir, NAME, "Main comparison")


if __name__ == "__main__":
    sys.exit(c.cli(make))
