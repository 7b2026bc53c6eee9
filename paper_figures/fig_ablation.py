"""Signal ablation: top-1 accuracy (test split) for each weights preset (``paper``, ``no_*`` drops one signal,
``only_*`` keeps one), one panel per system that uses the weights: bars are the mean over dataset seeds,
whiskers one sample standard deviation over seeds; the dashed line marks the ``paper`` preset. The baselines
in the sweep (plain_cosine, valid_cosine: they ignore the weights) get no panel of their own but a dotted
reference line in every panel, at their mean over seeds (of the ``paper`` preset's jobs if there are any).

Input: ``results/ablation/tidy.csv`` (column ``weights``). Output: ``fig_ablation.png`` / ``.pdf``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

try:
    from . import common as c
except ImportError:
    import common as c

from smartvector_bench.core.evaluation.metrics.names import TOP1
from smartvector_bench.core.results import TIDY

NAME = "fig_ablation"
INPUT = Path("ablation") / TIDY
PRESET = "weights"
REFERENCE = "paper"
REFERENCE_SYSTEMS = ("plain_cosine", "valid_cosine")  # ignore the weights: one value per seed, a line


def preset_order(names) -> list[str]:
    names = set(names)
    head = [REFERENCE] if REFERENCE in names else []
    no = sorted(n for n in names if n.startswith("no_"))
    only = sorted(n for n in names if n.startswith("only_"))
    return head + no + only + sorted(names - set(head) - set(no) - set(only))


def load(path: Path) -> pd.DataFrame:
    """The usable test rows: system, weights preset, dataset seed and top-1."""
    t = c.load_tidy(path, (PRESET,))
    c.require(t, PRESET)
    return t[["system", PRESET, "dataset_seed", TOP1]]


@c.styled
@c.figure(NAME, INPUT, load, empty=lambda d: d.empty)
def make(path: Path, values, out_dir: Path) -> c.Outcome:
    """Ablation bars per weights preset (test top-1, mean over seeds, whiskers sd)."""
    stats = values.groupby(["system", PRESET])[TOP1].agg(["mean", "std"]).fillna({"std": 0.0})  # sd 0: one seed
    everything = c.system_order(values["system"])
    col = c.colours(everything)
    systems = [s for s in everything if s not in REFERENCE_SYSTEMS] or everything  # baselines alone: panels
    lines = {}
    for s in everything:
        if s in REFERENCE_SYSTEMS and s not in systems:  # its paper preset's mean, else its mean over every job
            lines[s] = (stats.loc[(s, REFERENCE), "mean"] if (s, REFERENCE) in stats.index
                        else values.loc[values["system"] == s, TOP1].mean())
    presets = preset_order(set(values.loc[values["system"].isin(systems), PRESET]))
    ncols = min(3, len(systems))
    nrows = math.ceil(len(systems) / ncols)
    fig = c.new_figure(max(6.0, 3.3 * ncols + 0.9), (0.24 * len(presets) + 0.9) * nrows + 0.5)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    ys = list(range(len(presets)))[::-1]
    for i, s in enumerate(systems):
        ax = axes[i // ncols][i % ncols]
        mine = stats.reindex([(s, p) for p in presets])
        means, sds = mine["mean"].fillna(0.0).tolist(), mine["std"].fillna(0.0).tolist()
        ax.barh(ys, means, height=0.7, color=col[s], alpha=0.85, zorder=2)
        ax.errorbar(means, ys, xerr=sds, fmt="none", ecolor="black", elinewidth=0.8, capsize=2, zorder=3)
        for y, (m, sd) in zip(ys, mine[["mean", "std"]].itertuples(index=False)):  # the value right of the whisker
            ax.text((0.0 if math.isnan(m) else m + sd) + 0.015, y,
                    "n/a" if math.isnan(m) else f"{100 * m:.1f}% (\u00b1{100 * sd:.1f})", va="center", ha="left",
                    fontsize=6, zorder=4)
        if (s, REFERENCE) in stats.index:
            ax.axvline(stats.loc[(s, REFERENCE), "mean"], color="black", ls="--", lw=0.8, zorder=1)
        for name, v in lines.items():
            ax.axvline(v, color=col[name], ls=":", lw=1.4, zorder=1, label=f"{name} {100 * v:.1f}%")
        if lines:
            ax.legend(loc="lower right", frameon=True, framealpha=0.85, fontsize=6, handlelength=1.8)
        ax.set_xlim(0, 1)
        c.percent_axis(ax.xaxis)
        ax.set_title(s)
        ax.grid(axis="y", visible=False)
        ax.set_yticks(ys, presets if i % ncols == 0 else [""] * len(presets))
        if i + ncols >= len(systems):
            ax.set_xlabel("top-1 accuracy (test split)")
    for j in range(len(systems), nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    n = values["dataset_seed"].nunique()
    ref = f"; dotted: {', '.join(lines)} (ignore the weights)" if lines else ""
    fig.suptitle(f"Ablation of the retrieval signals by weights preset (test split)\nbars: mean over {n} "
                 f"seed{'s' if n != 1 else ''}; whiskers: \u00b11 sample sd over seeds\n"
                 f"dashed: {REFERENCE} preset{ref}")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
