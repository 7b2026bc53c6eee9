"""Feedback loop: top-1 accuracy over simulated time per system. The main series is the test split (families held
out from feedback), solid, with each round's 95% cluster bootstrap interval over families as a band; the dev
split (the families whose answers got the feedback, in sample) is drawn dashed, without a band, if the file has
it. Day 0 is the dataset's first query time.

Input: ``results/feedback_loop/feedback_loop.csv``. Output: ``fig_feedback_loop.png`` / ``.pdf``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

try:
    from . import common as c
except ImportError:
    import common as c

from smartvector_bench.core.evaluation.metrics.names import TOP1, hi, lo

NAME = "fig_feedback_loop"
INPUT = Path("feedback_loop") / "feedback_loop.csv"
SPLIT = "test"  # held out from feedback: the main series
IN_SAMPLE = "dev"  # gave the feedback: dashed, for reference
COLUMNS = ("round", "days_from_now", "system", "split", TOP1, lo(TOP1), hi(TOP1))


def load(path: Path) -> dict[str, dict[str, list[tuple[float, float, float, float]]]]:
    """{split: {system: [(days, top1, lo, hi)] sorted by days}} for the test and dev splits."""
    t = c.load_csv(path, COLUMNS)
    t = t[t["split"].isin((SPLIT, IN_SAMPLE))]
    points = pd.DataFrame({"split": t["split"], "system": t["system"], "days": c.numbers(t, "days_from_now"),
                           TOP1: c.numbers(t, TOP1), "lo": c.numbers(t, lo(TOP1), allow_none=True),
                           "hi": c.numbers(t, hi(TOP1), allow_none=True)}).sort_values(["days", TOP1, "lo", "hi"])
    return {split: {system: list(g[["days", TOP1, "lo", "hi"]].itertuples(index=False, name=None))
                    for system, g in points[points["split"] == split].groupby("system")}
            for split in (SPLIT, IN_SAMPLE)}


@c.styled
@c.figure(NAME, INPUT, load)
def make(path: Path, data, out_dir: Path) -> c.Outcome:
    """Top-1 over simulated time per system: test split with per-round intervals, dev split dashed."""
    series, in_sample = data[SPLIT], data[IN_SAMPLE]
    if not series:
        return c.skip(NAME, f"no rows with split={SPLIT} in {path}")
    systems = c.system_order(series)
    col = c.colours(c.system_order(set(series) | set(in_sample)))
    fig = c.new_figure(7.4, 3.8)
    ax = fig.subplots()
    for s in systems:
        pts = series[s]
        x = [p[0] for p in pts]
        ax.fill_between(x, [p[2] for p in pts], [p[3] for p in pts], color=col[s], alpha=0.15, lw=0, zorder=1)
        ax.plot(x, [p[1] for p in pts], marker="o", ms=2.5, lw=1.3, color=col[s], label=s, zorder=3)
    dashed = [s for s in c.system_order(in_sample) if s in series]  # only systems of the main series
    for s in dashed:
        pts = in_sample[s]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], ls="--", lw=0.9, color=col[s], alpha=0.8, zorder=2)
    ax.axvline(0, color="black", lw=0.8, ls=":", zorder=0)
    ax.annotate("first query time", (0, 0.98), xycoords=("data", "axes fraction"), xytext=(-2, 0),
                textcoords="offset points", fontsize=6.5, va="top", ha="right", rotation=90)
    ax.set_ylim(0, 1)
    c.percent_axis(ax.yaxis)
    ax.set_xlabel("simulated time (days from the first query time)")
    ax.set_ylabel("top-1 accuracy")
    handles, labels = ax.get_legend_handles_labels()
    if dashed:
        from matplotlib.lines import Line2D

        handles += [Line2D([], [], color="#333333", lw=1.3, marker="o", ms=2.5),
                    Line2D([], [], color="#333333", lw=0.9, ls="--")]
        labels += [f"{SPLIT} split (held out)", f"{IN_SAMPLE} split (gave the\nfeedback, in sample)"]
    ax.legend(handles, labels, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0),
              title=f"band: 95% cluster bootstrap\ninterval over families\nper round ({SPLIT} split)")
    ax.set_title(f"Feedback loop: held-out ({SPLIT}) top-1 over simulated time"
                 + (f"; dashed: {IN_SAMPLE}, in sample" if dashed else ""))
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
