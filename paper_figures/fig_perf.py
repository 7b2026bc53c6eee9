"""Performance at scale (``make bench``): left, batch search time against N for the systems of the search case
(one query batch for all; median over repetitions, whiskers p05-p95), log-log; right, single-query latency p50 with p95 / p99 marks at the largest
size every system was run.

Input: ``results/perf/summary.csv`` (synthetic vectors). Output: ``fig_perf.png`` / ``fig_perf.pdf``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

try:
    from . import common as c
except ImportError:
    import common as c

NAME = "fig_perf"
INPUT = Path("perf") / "summary.csv"
COLUMNS = ("case", "system", "n_vectors", "vectors", "metric", "median", "p05", "p95", "p99")
ORDER = ("faiss_flat", "faiss_hnsw", "smartvector_exhaustive", "smartvector_exhaustive_numpy", "smartvector_rerank",
         "smartvector_rerank_hnsw", "livevectorlake_current", "livevectorlake_asof", "kg_smartvector", "smartvector",
         "smartvector_ref")
SAME_BATCH = ORDER[:6]  # the search case: one query batch for all of them (peers run their own query sets)
PALETTE = ("#4c72b0", "#8fb0d8", "#c44e52", "#e8a0a2", "#dd8452", "#f0b27a", "#55a868", "#8fcf9c", "#8172b3", "#937860",
           "#7f7f7f")


def _order(names) -> list[str]:
    return sorted(names, key=lambda s: (ORDER.index(s) if s in ORDER else len(ORDER), s))


def load(path: Path) -> tuple[dict, dict]:
    """({system: [(N, median, p05, p95)] sorted} of the search case's batch times, {system: {N: (p50, p95, p99)}}
    of the single-query latencies), synthetic vectors only."""
    t = c.load_csv(path, COLUMNS)
    t = t[t["vectors"] == "synthetic"]
    t = t.assign(n_vectors=c.numbers(t, "n_vectors").astype(int))
    b = t[(t["case"] == "search_batch") & (t["metric"] == "batch_s") & t["system"].isin(SAME_BATCH)]
    b = b.assign(**{k: c.numbers(b, k) for k in ("median", "p05", "p95")})
    lat = t[(t["metric"] == "query_ms") & t["case"].isin(("search_latency", "asof_latency"))]
    lat = lat.assign(**{k: c.numbers(lat, k) for k in ("median", "p95", "p99")})
    batch = {s: sorted(g[["n_vectors", "median", "p05", "p95"]].itertuples(index=False, name=None))
             for s, g in b.groupby("system")}
    latency = {s: {n: (m, p95, p99) for n, m, p95, p99 in g[["n_vectors", "median", "p95", "p99"]].itertuples(
        index=False, name=None)} for s, g in lat.groupby("system")}
    return batch, latency


@c.styled
@c.figure(NAME, INPUT, load)
def make(path: Path, loaded, out_dir: Path) -> c.Outcome:
    """Batch search time against N, and single-query latency, per system."""
    batch, latency = loaded
    if not batch and not latency:
        return c.skip(NAME, f"{path}: no synthetic search rows")
    fig = c.new_figure(9.6, 3.6)
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1]})
    colour = {s: PALETTE[ORDER.index(s)] if s in ORDER else "#333333" for s in set(batch) | set(latency)}
    for s in _order(batch):
        pts = batch[s]
        xs = [p[0] for p in pts]
        ys = [p[1] for p in pts]
        err = [[max(0.0, p[1] - p[2]) for p in pts], [max(0.0, p[3] - p[1]) for p in pts]]
        ax1.errorbar(xs, ys, yerr=err, marker="o", ms=3.5, lw=1.2, capsize=2, color=colour[s], label=s)
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("vectors (N)")
    ax1.set_ylabel("seconds per query batch (median, p05-p95)")
    ax1.set_title("Batch search time (the same query batch for every system)")
    ax1.legend(frameon=False, loc="upper left")
    systems = _order(latency)
    ys = list(range(len(systems)))
    for y, s in zip(ys, systems):
        n = max(latency[s])
        p50, p95, p99 = latency[s][n]
        ax2.barh(y, p50, color=colour[s], zorder=2)
        ax2.plot([p95], [y], marker="|", ms=9, color="black", zorder=3)
        ax2.plot([p99], [y], marker="x", ms=4, color="black", zorder=3)
        ax2.text(p99 * 1.15 if p99 > 0 else 0.001, y, f"{p50:.3g} ms @ {n:,}", va="center", fontsize=6.5)
    ax2.set_yticks(ys, systems)
    ax2.invert_yaxis()
    ax2.set_xscale("log")
    lo = min([latency[s][max(latency[s])][0] for s in systems if latency[s][max(latency[s])][0] > 0] + [0.01])
    hi = max([latency[s][max(latency[s])][2] for s in systems] + [1.0])
    ax2.set_xlim(lo / 2, hi * 12 if not math.isnan(hi) else 10)
    ax2.set_xlabel("ms per query (bar p50, | p95, x p99), largest N run")
    ax2.set_title("Single-query latency")
    ax2.grid(axis="y", visible=False)
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
