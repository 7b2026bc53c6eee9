"""Half-life sensitivity: heatmap of top-1 accuracy (test split, mean over dataset seeds) over the temporal
signal's half-life (x) and the confidence decay's half-life (y), one panel per system in the sweep. If the
sweep did not vary the confidence half-life (no column for it), the heatmap has a single row.

Input: ``results/half_life/tidy.csv`` (column ``retrievers.smartvector.temporal.half_life_days`` and, if
swept, ``retrievers.smartvector.confidence.half_life_days``). Output: ``fig_half_life.png`` / ``.pdf``.
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

NAME = "fig_half_life"
INPUT = Path("half_life") / TIDY
TEMPORAL = "retrievers.smartvector.temporal.half_life_days"
CONFIDENCE = "retrievers.smartvector.confidence.half_life_days"


def load(path: Path) -> tuple[pd.DataFrame, bool]:
    """The usable test rows (system, the half-lives as numbers, dataset seed, top-1) and whether the confidence
    half-life was swept (a column of its own); if not, its column is NaN."""
    t = c.load_tidy(path, (TEMPORAL,))
    has_conf = CONFIDENCE in t.columns
    t = t.assign(**{TEMPORAL: c.numbers(t, TEMPORAL), CONFIDENCE: c.numbers(t, CONFIDENCE) if has_conf else math.nan})
    return t[["system", TEMPORAL, CONFIDENCE, "dataset_seed", TOP1]], has_conf


@c.styled
@c.figure(NAME, INPUT, load, empty=lambda d: d[0].empty)
def make(path: Path, loaded, out_dir: Path) -> c.Outcome:
    """Heatmap of test top-1 over the two half-lives."""
    values, has_conf = loaded
    means = values.groupby(["system", TEMPORAL, CONFIDENCE], dropna=False)[TOP1].mean()
    systems = c.system_order(values["system"])
    xs = sorted(set(values[TEMPORAL]))
    ys = sorted(set(values[CONFIDENCE])) if has_conf else [math.nan]
    ncols = min(3, len(systems))
    nrows = math.ceil(len(systems) / ncols)
    cell = 0.55
    fig = c.new_figure(max(4.2, (cell * len(xs) + 1.3) * ncols + 0.9), (cell * len(ys) + 1.3) * nrows + 0.4)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    image = None
    for i, s in enumerate(systems):
        ax = axes[i // ncols][i % ncols]
        grid = means[s].unstack(TEMPORAL).reindex(index=ys, columns=xs).to_numpy().tolist()  # rows: confidence
        image = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto",
                          interpolation="nearest")
        for yi, row in enumerate(grid):
            for xi, v in enumerate(row):
                ax.text(xi, yi, "-" if math.isnan(v) else f"{100 * v:.1f}", ha="center", va="center", fontsize=6.5,
                        color="black" if not math.isnan(v) and v > 0.55 else "white")
        ax.set_xticks(range(len(xs)), [c.fmt_key(x) for x in xs])
        ax.set_yticks(range(len(ys)), [c.fmt_key(y) for y in ys] if has_conf else ["(not swept)"])
        ax.set_xlabel("temporal half-life (days)")
        if i % ncols == 0:
            ax.set_ylabel("confidence half-life (days)")
        ax.grid(False)
        ax.set_title(s)
    for j in range(len(systems), nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    if image is not None:
        cb = fig.colorbar(image, ax=axes, shrink=0.9)
        cb.set_label("top-1 accuracy (test split)")
        c.percent_axis(cb.ax.yaxis)
    n = values["dataset_seed"].nunique()
    fig.suptitle(f"Half-life sensitivity: top-1 (%, mean over {n} seed{'s' if n != 1 else ''})")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
