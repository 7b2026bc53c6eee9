"""Feedback loop: top-1 accuracy (test split, held out from feedback) over simulated time, per system, with
each round's 95% bootstrap interval as a band; day 0 is the dataset's first query time.

Input: ``results/feedback_loop/feedback_loop.csv``. Output: ``fig_feedback_loop.png`` / ``.pdf``.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from . import common as c
except ImportError:
    import common as c

NAME = "fig_feedback_loop"
INPUT = Path("feedback_loop") / "feedback_loop.csv"
SPLIT = "test"
COLUMNS = ("round", "days_from_now", "system", "split", "top1", "top1_lo", "top1_hi")


def load(path: Path) -> dict[str, list[tuple[float, float, float, float]]]:
    t = c.load_csv(path, COLUMNS)
    series: dict[str, list] = {}
    for r in t.where(split=SPLIT):
        c.group(series, r["system"], (t.num(r, "days_from_now"), t.num(r, "top1"),
                                      t.num(r, "top1_lo", allow_none=True), t.num(r, "top1_hi", allow_none=True)))
    return {s: sorted(v) for s, v in series.items()}


@c.styled
def make(results_dir: Path, out_dir: Path) -> c.Outcome:
    """Top-1 over simulated time per system (test split) with per-round intervals."""
    path = Path(results_dir) / INPUT
    if (skipped := c.missing_input(NAME, path)) is not None:
        return skipped
    series = load(path)
    if not series:
        return c.skip(NAME, f"no rows with split={SPLIT} in {path}")
    systems = c.system_order(series)
    col = c.colours(systems)
    fig = c.new_figure(7.0, 3.6)
    ax = fig.subplots()
    for s in systems:
        pts = series[s]
        x = [p[0] for p in pts]
        ax.fill_between(x, [p[2] for p in pts], [p[3] for p in pts], color=col[s], alpha=0.15, lw=0, zorder=1)
        ax.plot(x, [p[1] for p in pts], marker="o", ms=2.5, lw=1.3, color=col[s], label=s, zorder=2)
    ax.axvline(0, color="black", lw=0.8, ls=":", zorder=0)
    ax.annotate("first query time", (0, 0.98), xycoords=("data", "axes fraction"), xytext=(-2, 0),
                textcoords="offset points", fontsize=6.5, va="top", ha="right", rotation=90)
    ax.set_ylim(0, 1)
    c.percent_axis(ax.yaxis)
    ax.set_xlabel("simulated time (days from the first query time)")
    ax.set_ylabel("top-1 accuracy (test split)")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0),
              title="band: 95% bootstrap\ninterval per round")
    ax.set_title("Feedback loop: held-out top-1 over simulated time")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
