"""Seed variation: top-1 accuracy (test split) per dataset seed and system (the main table's order, baselines
first, the label-reading oracle last): one dot per seed, a bar at the mean over seeds (labelled, with the
sample sd).

Input: ``results/seeds/tidy.csv``. Output: ``fig_seeds.png`` / ``fig_seeds.pdf``.
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

NAME = "fig_seeds"
INPUT = Path("seeds") / TIDY
SEED = "dataset_seed"


def _seed_key(seed: str):
    try:
        return (0, float(seed), seed)
    except ValueError:
        return (1, 0.0, seed)


def load(path: Path) -> pd.DataFrame:
    """Test top-1 per system and dataset seed (the mean of the seed's rows, if it has several)."""
    t = c.load_tidy(path)
    c.require(t, SEED)
    return t.groupby(["system", SEED], sort=False)[TOP1].mean().reset_index()


@c.styled
@c.figure(NAME, INPUT, load, empty=lambda d: d.empty)
def make(path: Path, data, out_dir: Path) -> c.Outcome:
    """Per-seed top-1 per system (test split), dots and the mean."""
    systems = c.system_order(data["system"])
    seeds = sorted(set(data[SEED]), key=_seed_key)
    stats = data.groupby("system")[TOP1].agg(["mean", "std", "max"]).fillna({"std": 0.0})  # sd 0 for one seed
    col = c.colours(systems)
    fig = c.new_figure(max(5.0, 0.8 * len(systems) + 2.0), 3.6)
    ax = fig.subplots()
    k = len(seeds)
    offsets = {sd: (i - (k - 1) / 2) * (0.5 / max(k - 1, 1)) for i, sd in enumerate(seeds)}  # fixed, not random
    markers = "osD^vP*Xh<>p"
    for x, s in enumerate(systems):
        per_seed = dict(data.loc[data["system"] == s, [SEED, TOP1]].itertuples(index=False))
        for j, sd in enumerate(seeds):
            if sd in per_seed:
                ax.plot([x + offsets[sd]], [per_seed[sd]], ls="none", marker=markers[j % len(markers)], ms=4,
                        mfc="none", mec=col[s], mew=1.0, zorder=3)
        m, sd_, top = stats.loc[s]
        ax.hlines(m, x - 0.32, x + 0.32, color="black", lw=1.6, zorder=4)
        ax.annotate(f"{100 * m:.1f}% ({100 * sd_:.1f})", (x, top), xytext=(0, 5),
                    textcoords="offset points",
                    ha="center", va="bottom", fontsize=6.5, zorder=5)
    for j, sd in enumerate(seeds):  # legend: marker per seed
        ax.plot([], [], ls="none", marker=markers[j % len(markers)], ms=4, mfc="none", mec="#333333",
                label=f"seed {sd}")
    ax.plot([], [], color="black", lw=1.6, label="mean (sd)")
    ax.set_xticks(range(len(systems)), [f"{s}\n(reads labels)" if s in c.CEILINGS else s for s in systems],
                  rotation=20, ha="right")
    ax.set_xlim(-0.6, len(systems) - 0.4)
    ax.set_ylim(0, 1)
    c.percent_axis(ax.yaxis)
    ax.set_ylabel("top-1 accuracy (test split)")
    ax.grid(axis="x", visible=False)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=6.5)
    ax.set_title(f"Top-1 per dataset seed ({k} seed{'s' if k != 1 else ''})")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
