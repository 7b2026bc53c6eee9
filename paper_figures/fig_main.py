"""Main comparison (test split): top-1, stale rate, rumour rate and ECE per system with 95% bootstrap intervals,
and the SmartVector paper's claimed values (``smartvector_bench.paper_claims``) as markers.

Input: ``results/main/metrics.json``. Output: ``fig_main.png`` / ``fig_main.pdf``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

try:
    from . import common as c
except ImportError:  # run as a script: paper_figures/ is on sys.path
    import common as c

from smartvector_bench import paper_claims  # the paper's numbers, read at call time, never typed here

NAME = "fig_main"
INPUT = Path("main") / "metrics.json"
SPLIT = "test"
PANELS = (("top1", "top-1 accuracy", True), ("stale_rate", "stale rate", True),
          ("rumor_rate", "rumour rate", True), ("ece", "ECE", False))


def load(path: Path) -> tuple[list[str], dict, int | None]:
    m = c.load_json(path)
    systems = c.main_systems(m, path, SPLIT)
    data = {}
    for s in systems:
        data[s] = {}
        for key, _, _ in PANELS:
            keys = ("systems", s, SPLIT)
            data[s][key] = (c.get_num(m, path, *keys, key), *c.get_interval(m, path, *keys, f"{key}_ci"))
    n = {c.get(m, path, "systems", s, SPLIT).get("n_queries") for s in systems}
    return systems, data, (n.pop() if len(n) == 1 else None)


@c.styled
def make(results_dir: Path, out_dir: Path) -> c.Outcome:
    """Main comparison on the test split, with the paper's claims as markers."""
    path = Path(results_dir) / INPUT
    if (skipped := c.missing_input(NAME, path)) is not None:
        return skipped
    systems, data, n = load(path)
    fig = c.new_figure(10.0, 0.42 * len(systems) + 1.5)
    axes = fig.subplots(1, len(PANELS), sharey=True)
    ys = list(range(len(systems)))[::-1]  # first system at the top
    col = c.colours(systems)
    claims = paper_claims.PAPER_MAIN_TABLE
    claimed = False
    for ax, (key, label, pct) in zip(axes, PANELS):
        vals = [data[s][key][0] for s in systems]
        lo = [data[s][key][1] for s in systems]
        hi = [data[s][key][2] for s in systems]
        ax.barh(ys, vals, height=0.62, color=[col[s] for s in systems], alpha=0.85, zorder=2)
        ax.errorbar(vals, ys, xerr=c.whiskers(vals, lo, hi), fmt="none", ecolor="black", elinewidth=0.9,
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
            at = v if math.isnan(h) else max(v, h)
            claim = claims.get(s, {}).get(key)
            close = claim is not None and at <= claim < at + 0.16 * xmax  # raised above the claim's marker
            ax.annotate("n/a" if math.isnan(v) else (f"{100 * v:.1f}%" if pct else f"{v:.3f}"),
                        (at, y), xytext=(3, 7 if close else 0), textcoords="offset points",
                        va="center", ha="left", fontsize=6.5, zorder=5)
        ax.set_title(label)
        if pct:
            c.percent_axis(ax.xaxis)
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(ys, systems)
    handles, labels = [], []
    for ax in axes:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    if handles:
        fig.legend(handles[:1], labels[:1], loc="outside lower right", frameon=False)
    suffix = f", n = {n} queries" if n else ""
    fig.suptitle(f"Main comparison, test split{suffix}; whiskers: 95% bootstrap intervals over queries")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
