"""Re-embedding cost: mean chunks re-embedded per edit, by edit type and update strategy (whiskers: 95%
bootstrap intervals over edits), and for single-word edits by the edited document's size in chunks, with the
paper's claim (``paper_claim`` in the same file: full re-embedding of a ~4.35-chunk document vs 1 chunk
surgically) drawn at the largest size group.

Input: ``results/reembed_cost/reembed_cost.json``. Output: ``fig_reembed_cost.png`` / ``.pdf``.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from . import common as c
except ImportError:
    import common as c

from smartvector_bench.core.results import ReembedCost
from smartvector_bench.core.results.base import get_path

NAME = "fig_reembed_cost"
INPUT = Path("reembed_cost") / ReembedCost.FILE
STRATEGY_ORDER = ("full", "cdc", "surgical")
EDIT_ORDER = ("single_word", "sentence", "paragraph_insert", "paragraph_delete", "revert")
STRATEGY_COLOURS = {"full": "#7f7f7f", "cdc": "#2ca02c", "surgical": "#1f77b4"}


def _ordered(names, preferred) -> list[str]:
    names = set(names)
    head = [n for n in preferred if n in names]
    return head + sorted(names - set(head) - {"all"}) + (["all"] if "all" in names else [])


def _size_key(label: str) -> tuple[int, str]:
    digits = "".join(ch for ch in label if ch.isdigit())
    return (int(digits) if digits else 10**9, label)


def _cost(summary, path: Path, key: str) -> tuple[float, float, float]:
    """(mean, lo, hi) chunks re-embedded of one group of edits; None as NaN (no bar or whisker)."""
    mean = get_path(summary, ("chunks_reembedded_mean",), str(path), float, allow_none=True, field=key)
    ci = c.floats(get_path(summary, ("chunks_reembedded_ci",), str(path), field=key), path,
                  f"{key}.chunks_reembedded_ci", length=2)
    return (c.or_nan(mean), *ci)


def load(path: Path) -> dict:
    r = ReembedCost.load(path)  # validates strategies.<s>.by_edit_type / single_word_by_document_chunks
    names = _ordered(r.strategies, STRATEGY_ORDER)
    by_type, by_size = {}, {}
    for s in names:
        for group, out in (("by_edit_type", by_type), ("single_word_by_document_chunks", by_size)):
            for k, summary in r.strategies[s][group].items():
                out[s, k] = _cost(summary, path, f"strategies.{s}.{group}.{k}")
        for k, summary in r.strategies[s]["single_word_by_document_chunks"].items():
            by_size[s, k] += (summary.get("n_edits"),)
    n_by_type = {k: v for k, v in r.edits["by_type"].items() if isinstance(v, int)}  # for labels
    return {"strategies": names, "by_type": by_type, "by_size": by_size, "claim": r.paper_claim,
            "n_by_type": n_by_type}


def _bars(ax, groups: list[str], strategies: list[str], table: dict, labels: list[str]) -> None:
    n = len(strategies)
    w = 0.8 / n
    for i, s in enumerate(strategies):
        xs = [g + (i - (n - 1) / 2) * w for g in range(len(groups))]
        rows = [table.get((s, k), (float("nan"),) * 3) for k in groups]
        vals = [0.0 if v[0] != v[0] else v[0] for v in rows]
        ax.bar(xs, vals, width=w * 0.95, color=STRATEGY_COLOURS.get(s, c.EXTRA_COLOURS[i % 6]), label=s, zorder=2)
        ax.errorbar(xs, vals, yerr=c.whiskers(vals, [v[1] for v in rows], [v[2] for v in rows]), fmt="none",
                    ecolor="black", elinewidth=0.8, capsize=2, zorder=3)
    ax.set_xticks(range(len(groups)), labels)
    ax.grid(axis="x", visible=False)


@c.styled
@c.figure(NAME, INPUT, load)
def make(path: Path, d, out_dir: Path) -> c.Outcome:
    """Chunks re-embedded per edit by edit type and strategy, and single-word cost by document size."""
    strategies = d["strategies"]
    types = _ordered({t for _, t in d["by_type"]}, EDIT_ORDER)
    sizes = sorted({k for _, k in d["by_size"]}, key=_size_key)
    fig = c.new_figure(10.0, 3.6)
    ax1, ax2 = fig.subplots(1, 2, width_ratios=[max(len(types), 1), max(len(sizes), 1) + 0.8])
    n_types = dict(d["n_by_type"])
    if "all" not in n_types and n_types:
        n_types["all"] = sum(n_types.values())
    tlabels = [t.replace("_", "\n") + (f"\n(n={n_types[t]})" if t in n_types else "") for t in types]
    _bars(ax1, types, strategies, d["by_type"], tlabels)
    ax1.set_ylabel("chunks re-embedded per edit (mean)")
    ax1.set_title("By edit type")
    if sizes:
        slabels = []
        for k in sizes:
            ns = {d["by_size"][s, k][3] for s in strategies if (s, k) in d["by_size"]}
            n = ns.pop() if len(ns) == 1 else None
            slabels.append(f"{k} chunk{'s' if k != '1' else ''}" + (f"\n(n={n})" if n is not None else ""))
        _bars(ax2, sizes, strategies, d["by_size"], slabels)
        claim = d["claim"]
        if claim.get("full") is not None or claim.get("surgical") is not None:
            x = len(sizes) - 1
            first = True
            for key, marker in (("full", "D"), ("surgical", "v")):
                v = claim.get(key)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    ax2.plot([x + 0.5], [v], marker=marker, ms=5.5, mfc="white", mec=c.PAPER_COLOUR, mew=1.3,
                             ls="none", zorder=4, label=None)
                    ax2.annotate(f"paper: {key} {v:g}", (x + 0.5, v), xytext=(5, 0), textcoords="offset points",
                                 fontsize=6.5, color=c.PAPER_COLOUR, va="center")
                    first = False
            if not first:
                ax2.set_xlim(-0.6, len(sizes) + 0.5)
        ax2.set_title("Single-word edits, by size of the edited document")
        ax2.legend(title="strategy", frameon=False, loc="upper left")
        ax2.set_xlabel("document size before the edit")
    else:
        ax2.text(0.5, 0.5, "no single-word edits in the file", ha="center", va="center", transform=ax2.transAxes)
        ax2.set_axis_off()
    if not sizes:
        ax1.legend(title="strategy", frameon=False, loc="upper left")
    fig.suptitle("Re-embedding cost per document edit (mean; whiskers: 95% bootstrap interval over edits)")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
