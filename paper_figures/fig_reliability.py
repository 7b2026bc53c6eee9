"""Reliability diagrams (test split), one panel per system in the main table's order (baselines, the SmartVector
family, the peers, the metadata filter, the label-reading oracle): per confidence bin, the accuracy of the
top-1 answer against the bin's mean reported confidence, with the bin counts and the diagonal of perfect
calibration; the panel title gives the ECE with its 95% cluster bootstrap interval over policy families. Where
the results hold a calibration map fitted on dev (``calibration.<system>.platt``), the same test queries after
the map are drawn over it (black crosses at each calibrated bin's mean confidence and accuracy) and the title
adds the calibrated ECE: raw ECE mixes the score's scale with how well it ranks; the calibrated one does not.

Input: ``results/main/metrics.json`` (``ece_bins``, ``calibration``). Output: ``fig_reliability.png`` / ``fig_reliability.pdf``.
"""

from __future__ import annotations

import math
import sys
from itertools import pairwise
from pathlib import Path

try:
    from . import common as c
except ImportError:
    import common as c

from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results import MainMetrics
from smartvector_bench.core.results.base import get_path

NAME = "fig_reliability"
INPUT = Path("main") / MainMetrics.FILE
CALIBRATION = "platt"  # the map drawn over the raw bins
SPLIT = "test"
NCOLS = 4


def load(path: Path) -> tuple[list[str], dict]:
    m = MainMetrics.load(path)
    systems = c.main_systems(m, path, SPLIT)
    data = {}
    for s in systems:
        at = f"systems.{s}.{SPLIT}.ece_bins"
        bins = get_path(m.split(s, SPLIT), ("ece_bins",), str(path), dict, field=f"systems.{s}.{SPLIT}")
        edges = c.floats(bins.get("edges"), path, f"{at}.edges", allow_none=False)
        nb = len(edges) - 1
        if nb < 1 or any(b <= a for a, b in pairwise(edges)):
            raise c.FigureInputError(f"{path}: {at}.edges: expected increasing bin edges")
        ece, ece_lo, ece_hi = c.main_metric(m, path, s, SPLIT, M.ECE)
        data[s] = {
            "edges": edges,
            "counts": c.floats(bins.get("counts"), path, f"{at}.counts", length=nb, allow_none=False),
            "accuracy": c.floats(bins.get("accuracy"), path, f"{at}.accuracy", length=nb),
            "conf": c.floats(bins.get("mean_confidence"), path, f"{at}.mean_confidence", length=nb),
            "ece": ece, "ece_ci": (ece_lo, ece_hi), "calibrated": None,
        }
        cal = (m.calibration.get(s) or {}).get(CALIBRATION)
        if cal is not None:
            at = f"calibration.{s}.{CALIBRATION}"
            cbins = get_path(cal, ("bins_calibrated",), str(path), dict, field=at)
            data[s]["calibrated"] = {
                "accuracy": c.floats(cbins.get("accuracy"), path, f"{at}.bins_calibrated.accuracy", length=nb),
                "conf": c.floats(cbins.get("mean_confidence"), path, f"{at}.bins_calibrated.mean_confidence",
                                 length=nb),
                "ece": c.or_nan(get_path(cal, ("ece_calibrated",), str(path), float, allow_none=True, field=at))}
    return systems, data, c.split_counts(m, path, systems, SPLIT), c.interval_words(m, one=True)


@c.styled
@c.figure(NAME, INPUT, load)
def make(path: Path, loaded, out_dir: Path) -> c.Outcome:
    """Reliability diagram per system (test split)."""
    systems, data, (n, n_fam), whisk = loaded
    ncols = min(NCOLS, len(systems))
    nrows = math.ceil(len(systems) / ncols)
    fig = c.new_figure(3.0 * ncols + 0.4, 2.9 * nrows + 0.5)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    col = c.colours(systems)
    for i, s in enumerate(systems):
        ax = axes[i // ncols][i % ncols]
        d = data[s]
        edges = d["edges"]
        lo_e, hi_e = edges[0], edges[-1]
        ax.plot([lo_e, hi_e], [lo_e, hi_e], ls="--", lw=0.8, color="black", zorder=1, label="perfect calibration")
        for (a, b), n, acc, conf in zip(pairwise(edges), d["counts"], d["accuracy"], d["conf"]):
            if n <= 0:
                continue
            if not math.isnan(acc):
                ax.bar(a, acc, width=b - a, align="edge", color=col[s], alpha=0.35, edgecolor=col[s], lw=0.6,
                       zorder=2)
            if not (math.isnan(acc) or math.isnan(conf)):
                ax.plot([conf], [acc], marker="o", ms=3.5, color=col[s], zorder=3)
            ax.text((a + b) / 2, 1.03, f"{int(n)}", ha="center", va="bottom", fontsize=6, color="#555555",
                    zorder=4)
        cal = d["calibrated"]
        if cal is not None:
            pts = [(x, y) for x, y in zip(cal["conf"], cal["accuracy"]) if not (math.isnan(x) or math.isnan(y))]
            if pts:
                ax.plot(*zip(*pts), ls=":", lw=0.8, marker="x", ms=4, color="black", zorder=5,
                        label=f"after {CALIBRATION} (dev-fitted)")
        ece, (elo, ehi) = d["ece"], d["ece_ci"]
        name = f"{s} (reads labels)" if s in c.CEILINGS else s
        title = f"{name}\nECE {ece:.3f}" if not math.isnan(ece) else f"{name}\nECE n/a"
        if not (math.isnan(elo) or math.isnan(ehi)):
            title += f" [{elo:.3f}, {ehi:.3f}]"
        if cal is not None and not math.isnan(cal["ece"]):
            title += f"; {CALIBRATION} {cal['ece']:.3f}"
        ax.set_title(title)
        ax.set_xlim(lo_e, hi_e)
        ax.set_ylim(0, 1.1)
        ax.set_aspect("equal", adjustable="box")
    for j in range(len(systems), nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    for i in range(len(systems)):
        ax = axes[i // ncols][i % ncols]
        if i % ncols == 0:
            ax.set_ylabel("accuracy of top-1")
        if i + ncols >= len(systems):  # nothing drawn below it
            ax.set_xlabel("mean reported confidence")
    counts = c.count_phrase(n, n_fam)
    fig.suptitle(f"Reliability, test split{' (' + counts + ')' if counts else ''}: bars = bin accuracy, dots at "
                 "the bin's mean confidence, grey numbers on top = queries per bin; dashed = perfect calibration\n"
                 f"black crosses = the same queries after a {CALIBRATION} map fitted on dev (its ECE last in the "
                 f"title); ECE in brackets: {whisk}", fontsize=8.5)
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
