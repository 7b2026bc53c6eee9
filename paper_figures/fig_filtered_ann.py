"""Filtered ANN with most vectors superseded (``make bench``, case ``filtered_ann``): recall@10 of the exact
filtered top-10 against the share of vectors superseded (50%, 90%, 99%: 2, 10, 100 versions per document), one
line per system (and per k', the candidates it asks for before the filter), one panel per size. The grey
``faiss_hnsw_unfiltered (no filter)`` line is the HNSW graph's own recall against the unfiltered exact top-10:
what the graph loses on this data before any filter.

Input: ``results/perf/filtered_ann.csv`` (a store not run at a size has no recall there and draws no line).
Output: ``fig_filtered_ann.png`` / ``fig_filtered_ann.pdf``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

try:
    from . import common as c
except ImportError:
    import common as c

NAME = "fig_filtered_ann"
INPUT = Path("perf") / "filtered_ann.csv"
COLUMNS = ("system", "k_prime", "n_vectors", "superseded_share", "recall_at_10")
FAMILIES = ("faiss_flat", "faiss_hnsw_unfiltered", "faiss_hnsw_post", "faiss_hnsw_idselector", "lancedb_prefilter",
            "lancedb_postfilter", "milvus_lite", "chroma", "smartvector_rerank")
PALETTE = ("#333333", "#aaaaaa", "#4c72b0", "#8172b3", "#55a868", "#8fcf9c", "#dd8452", "#c44e52", "#1f77b4")
DASHES = ("-", "--", ":", "-.")  # the k' of a family, smallest first
MARKERS = ("o", "s", "^", "D")


def _x(share: float) -> float:
    """Position of a superseded share: -log10(1 - share), so 50%, 90%, 99% sit at 0.3, 1, 2 (log of V)."""
    return -math.log10(1.0 - share)


def load(path: Path) -> dict[int, dict[tuple[str, str], list[tuple[float, float]]]]:
    """{N: {(system, k'): [(superseded share, recall@10)] by share}} of the rows that have a recall."""
    t = c.load_csv(path, COLUMNS)
    c.require(t, "system", "n_vectors")
    t = t[(t["recall_at_10"] != "") & (t["superseded_share"] != "")]
    t = t.assign(n_vectors=c.numbers(t, "n_vectors").astype(int), share=c.numbers(t, "superseded_share"),
                 recall=c.numbers(t, "recall_at_10"))
    out: dict[int, dict] = {}
    for (n, system, knob), g in t.groupby(["n_vectors", "system", "k_prime"], sort=True):
        out.setdefault(int(n), {})[(system, knob)] = sorted(zip(g["share"], g["recall"]))
    return out


def _key(line: tuple[str, str]) -> tuple:
    system, knob = line
    num = int(knob.split("=")[-1]) if knob else -1
    return (FAMILIES.index(system) if system in FAMILIES else len(FAMILIES), system, num)


@c.styled
@c.figure(NAME, INPUT, load)
def make(path: Path, data, out_dir: Path) -> c.Outcome:
    """recall@10 of the exact filtered top-10 against the superseded share, per system and size."""
    if not data:
        return c.skip(NAME, f"{path}: no rows with a recall")
    sizes = sorted(data)
    fig = c.new_figure(4.2 * len(sizes) + 2.2, 3.8)
    axes = fig.subplots(1, len(sizes), squeeze=False, sharey=True)[0]
    lines = sorted({line for n in sizes for line in data[n]}, key=_key)
    knobs: dict[str, list[str]] = {}
    for system, knob in lines:
        knobs.setdefault(system, []).append(knob)
    handles = {}
    for ax, n in zip(axes, sizes):
        for line in lines:
            if line not in data[n]:
                continue
            system, knob = line
            i = FAMILIES.index(system) if system in FAMILIES else len(FAMILIES) - 1
            j = knobs[system].index(knob) % len(DASHES)
            pts = data[n][line]
            label = system + (f" k'={knob}" if knob and not knob.startswith("ef") else f" {knob}" if knob else "")
            if system == "faiss_hnsw_unfiltered":  # the graph's own recall: no filter, unfiltered exact top-10
                label += " (no filter)"
            (h,) = ax.plot([_x(s) for s, _ in pts], [r for _, r in pts], ls=DASHES[j], marker=MARKERS[j], ms=3.5,
                           lw=1.2, color=PALETTE[i], label=label)
            handles.setdefault(label, h)
        shares = sorted({s for pts in data[n].values() for s, _ in pts})
        ax.set_xticks([_x(s) for s in shares], [f"{s:.0%}" for s in shares])
        ax.set_xlabel("vectors superseded at as_of (versions per document: 1 / (1 - share))")
        ax.set_title(f"N = {n:,} vectors")
        ax.set_ylim(-0.02, 1.04)
    axes[0].set_ylabel("recall@10 of the exact filtered top-10")
    fig.legend(list(handles.values()), list(handles), loc="outside right upper", frameon=False, fontsize=6.5)
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
