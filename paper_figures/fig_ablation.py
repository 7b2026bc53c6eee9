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

try:
    from . import common as c
except ImportError:
    import common as c

NAME = "fig_ablation"
INPUT = Path("ablation") / "tidy.csv"
PRESET = "weights"
REFERENCE = "paper"
REFERENCE_SYSTEMS = ("plain_cosine", "valid_cosine")  # ignore the weights: one value per seed, a line


def preset_order(names) -> list[str]:
    names = set(names)
    head = [REFERENCE] if REFERENCE in names else []
    no = sorted(n for n in names if n.startswith("no_"))
    only = sorted(n for n in names if n.startswith("only_"))
    return head + no + only + sorted(names - set(head) - set(no) - set(only))


def load(path: Path) -> tuple[dict, set]:
    t = c.load_tidy(path, (PRESET,))
    values: dict = {}
    seeds = set()
    for r in t.rows:
        if not r[PRESET]:
            raise c.FigureInputError(f"{path}:{r['_line']}: column {PRESET}: missing value")
        c.group(values, (r["system"], r[PRESET]), t.num(r, "top1"))
        seeds.add(r["dataset_seed"])
    return values, seeds


@c.styled
def make(results_dir: Path, out_dir: Path) -> c.Outcome:
    """Ablation bars per weights preset (test top-1, mean over seeds, whiskers sd)."""
    path = Path(results_dir) / INPUT
    if (skipped := c.missing_input(NAME, path)) is not None:
        return skipped
    values, seeds = load(path)
    if not values:
        return c.skip(NAME, f"no usable rows (status complete/skipped, split test) in {path}")
    everything = c.system_order({s for s, _ in values})
    col = c.colours(everything)
    systems = [s for s in everything if s not in REFERENCE_SYSTEMS] or everything  # baselines alone: panels
    lines = {}
    for s in everything:
        if s in REFERENCE_SYSTEMS and s not in systems:
            rows = values.get((s, REFERENCE)) or [v for (s2, _), vs in sorted(values.items()) if s2 == s for v in vs]
            lines[s] = c.mean_sd(rows)[0]
    presets = preset_order({p for s, p in values if s in systems})
    ncols = min(3, len(systems))
    nrows = math.ceil(len(systems) / ncols)
    fig = c.new_figure(max(6.0, 3.3 * ncols + 0.9), (0.24 * len(presets) + 0.9) * nrows + 0.5)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    ys = list(range(len(presets)))[::-1]
    for i, s in enumerate(systems):
        ax = axes[i // ncols][i % ncols]
        stats = [c.mean_sd(values[s, p]) if (s, p) in values else (math.nan, math.nan) for p in presets]
        means = [0.0 if math.isnan(m) else m for m, _ in stats]
        sds = [0.0 if math.isnan(sd) else sd for _, sd in stats]
        ax.barh(ys, means, height=0.7, color=col[s], alpha=0.85, zorder=2)
        ax.errorbar(means, ys, xerr=sds, fmt="none", ecolor="black", elinewidth=0.8, capsize=2, zorder=3)
        for y, (m, sd) in zip(ys, stats):  # the value right of the whisker
            ax.text((0.0 if math.isnan(m) else m + sd) + 0.015, y,
                    "n/a" if math.isnan(m) else f"{100 * m:.1f}% (\u00b1{100 * sd:.1f})", va="center", ha="left",
                    fontsize=6, zorder=4)
        if (s, REFERENCE) in values:
            ax.axvline(c.mean_sd(values[s, REFERENCE])[0], color="black", ls="--", lw=0.8, zorder=1)
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
    n = len(seeds)
    ref = f"; dotted: {', '.join(lines)} (ignore the weights)" if lines else ""
    fig.suptitle(f"Ablation of the retrieval signals by weights preset (test split)\nbars: mean over {n} "
                 f"seed{'s' if n != 1 else ''}; whiskers: \u00b11 sample sd over seeds\n"
                 f"dashed: {REFERENCE} preset{ref}")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
