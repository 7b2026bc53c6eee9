"""LiveVectorLake's evaluation redone with ground truth: the share of each document's paragraphs re-embedded per
version step (box per step, the paper's claimed 10-15% shaded), and the query latency with the query embedding
included, as a cumulative distribution over every query and repetition (the paper's p50 claims dashed).

Input: ``results/lvl_eval/lvl_eval.json`` (``reembedding.per_document``, ``reembedding.by_step``,
``latency.samples``). Output: ``fig_lvl_eval.png`` / ``.pdf``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

try:
    from . import common as c
except ImportError:
    import common as c

from smartvector_bench.core.results import LvlEval
from smartvector_bench.core.results.base import check, check_type, get_path

NAME = "fig_lvl_eval"
INPUT = Path("lvl_eval") / LvlEval.FILE
SERIES = {"hot": "hot (current)", "cold_cached": "cold, table cached (historical)",
          "cold_uncached": "cold, scan per query (historical)"}
CLAIMED_SHARE = (10.0, 15.0)  # % re-processed per update, the paper's abstract and Table II
CLAIMED_P50_MS = {"hot": 65.0, "cold": 1200.0}  # Table III


def load(path: Path) -> dict:
    r = LvlEval.load(path)
    where = str(path)
    steps = get_path(r.reembedding, ("by_step",), where, dict, field="reembedding")
    rows = get_path(r.reembedding, ("per_document",), where, list, field="reembedding")
    shares = {s: [] for s in steps}
    for i, row in enumerate(rows):
        at = f"reembedding.per_document[{i}]"
        step = get_path(row, ("step",), where, field=at)
        check(step in shares, where, f"{at}.step", f"{step!r} is not one of reembedding.by_step's steps")
        share = row.get("share")  # absent or null: a document the step did not re-embed into a share
        check_type(share, float, where, f"{at}.share", allow_none=True)
        if share is not None:
            shares[step].append(100 * share)
    latency = {}
    for series in SERIES:
        samples = get_path(r.latency, ("samples", series, "with_embedding_s"), where, list, field="latency")
        try:
            ms = np.sort(np.asarray(samples, dtype=float).reshape(-1) * 1000.0)
        except (TypeError, ValueError):
            raise c.FigureInputError(f"{path}: latency.samples.{series}.with_embedding_s: expected numbers") from None
        latency[series] = ms
    return {"shares": shares, "latency": latency}


@c.styled
@c.figure(NAME, INPUT, load)
def make(path: Path, d, out_dir: Path) -> c.Outcome:
    """Re-embedding share per version step and the latency distribution per tier."""
    fig = c.new_figure(10.0, 3.6)
    ax1, ax2 = fig.subplots(1, 2)
    steps = list(d["shares"])
    ax1.axhspan(*CLAIMED_SHARE, color=c.PAPER_COLOUR, alpha=0.2, label="paper: 10-15%", zorder=1)
    ax1.boxplot([d["shares"][s] for s in steps], showmeans=True, zorder=2)
    ax1.set_xticks(range(1, len(steps) + 1), [f"{s}\n(n={len(d['shares'][s])})" for s in steps])
    top = max([CLAIMED_SHARE[1]] + [max(v) for v in d["shares"].values() if v])
    ax1.set_ylim(-2, top * 1.2)  # room above the whiskers for the legend
    ax1.set_ylabel("paragraphs re-embedded (% of the new version)")
    ax1.set_title("Re-embedding share per document and version step")
    ax1.legend(frameon=False, loc="upper center")
    for i, (series, label) in enumerate(SERIES.items()):
        ms = d["latency"][series]
        if len(ms):
            ax2.plot(ms, np.arange(1, len(ms) + 1) / len(ms), color=c.EXTRA_COLOURS[i % 6], label=label)
    for tier, ms in CLAIMED_P50_MS.items():
        ax2.axvline(ms, color=c.PAPER_COLOUR, ls="--", lw=0.8)
        ax2.annotate(f"paper p50 {tier}", (ms, 0.05), xytext=(3, 0), textcoords="offset points", fontsize=6.5,
                     color=c.PAPER_COLOUR, rotation=90, va="bottom")
    ax2.set_xscale("log")
    ax2.set_xlim(right=max([1e4] + [float(ms[-1]) * 3 for ms in d["latency"].values() if len(ms)]))
    ax2.set_xlabel("ms, query embedding included (log)")
    ax2.set_ylabel("share of queries x repetitions")
    ax2.set_title("Query latency")
    ax2.legend(loc="center right", framealpha=1.0)
    fig.suptitle("LiveVectorLake's claims on an lvl_corpus with ground truth (experiment=lvl_eval)")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
