"""Contradiction sweep: top-1 accuracy (test split) against the share of families with injected rumors
(``dataset.contradiction_rate``), per system in the main table's order (plain_cosine, valid_cosine,
smartvector, livevectorlake, kg_smartvector, oracle in the preset): the line is the mean over dataset seeds,
the band the min-max over seeds. Baselines are dashed, the label-reading oracle (a ceiling) dotted.

Input: ``results/contradiction_sweep/tidy.csv``. Output: ``fig_contradiction_sweep.png`` / ``.pdf``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

try:
    from . import common as c
except ImportError:
    import common as c

from smartvector_bench.core.evaluation.metrics.names import TOP1
from smartvector_bench.core.results import TIDY

NAME = "fig_contradiction_sweep"
INPUT = Path("contradiction_sweep") / TIDY
RATE = "dataset.contradiction_rate"


def load(path: Path) -> pd.DataFrame:
    """The usable test rows: system, contradiction rate (a number), dataset seed and top-1."""
    t = c.load_tidy(path, (RATE,))
    return t.assign(**{RATE: c.numbers(t, RATE)})[["system", RATE, "dataset_seed", TOP1]]


@c.styled
@c.figure(NAME, INPUT, load, empty=lambda d: d.empty)
def make(path: Path, values, out_dir: Path) -> c.Outcome:
    """Top-1 (test) vs contradiction rate per system, mean over seeds with a min-max band."""
    stats = values.groupby(["system", RATE])[TOP1].agg(["mean", "min", "max"])  # sorted by rate per system
    systems = c.system_order(values["system"])
    col = c.colours(systems)
    fig = c.new_figure(6.8, 3.6)
    ax = fig.subplots()
    for s in systems:
        mine = stats.loc[s]
        xs = mine.index.tolist()
        ax.fill_between(xs, mine["min"].tolist(), mine["max"].tolist(), color=col[s], alpha=0.15, lw=0)
        ax.plot(xs, mine["mean"].tolist(), marker="o", ms=3, lw=1.3, color=col[s], ls=c.line_style(s),
                label=f"{s} (reads labels)" if s in c.CEILINGS else s)
    ax.set_ylim(0, 1)
    c.percent_axis(ax.yaxis)
    c.percent_axis(ax.xaxis)
    ax.set_xlabel("contradiction rate (share of families with injected rumors)")
    ax.set_ylabel("top-1 accuracy (test split)")
    n = values["dataset_seed"].nunique()
    styles = (["dashed: baselines"] if any(s in c.BASELINES for s in systems) else []) + (
        ["dotted: ceiling (reads labels)"] if any(s in c.CEILINGS for s in systems) else [])
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0),
              title="\n".join([f"line: mean over {n} seed{'s' if n != 1 else ''}", "band: min-max over seeds",
                                 *styles]))
    ax.set_title("Top-1 vs contradiction rate")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
