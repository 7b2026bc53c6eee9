"""A run's reliability diagrams as one PNG (data: URI), from ``ece_bins`` of each system's test split in its
metrics.json: per confidence bin, the top-1 accuracy against the bin's mean confidence, the diagonal of perfect
calibration, and the ECE with its interval in the title. (paper_figures/fig_reliability.py draws the paper's
version of results/main; this one is drawn for any run folder, smaller.)"""

from __future__ import annotations

import base64
import io
import math

from smartvector_bench.core.evaluation.metrics import names as M

NCOLS = 4
SPLIT = "test"


def has_bins(metrics: dict, systems: list[str]) -> bool:
    return any(isinstance(metrics["systems"][s].get(SPLIT, {}).get("ece_bins"), dict) for s in systems)


def reliability_png(metrics: dict, systems: list[str]) -> bytes:
    from matplotlib.figure import Figure  # a bare Figure's savefig needs no pyplot, so no backend is chosen

    drawn = [s for s in systems if isinstance(metrics["systems"][s].get(SPLIT, {}).get("ece_bins"), dict)]
    nrows = math.ceil(len(drawn) / NCOLS)
    fig = Figure(figsize=(2.3 * NCOLS, 2.2 * nrows), dpi=90, layout="constrained")
    axes = fig.subplots(nrows, NCOLS, squeeze=False)
    for ax, system in zip(axes.flat, drawn):
        m = metrics["systems"][system][SPLIT]
        bins = m["ece_bins"]
        conf, acc = bins.get("mean_confidence") or [], bins.get("accuracy") or []
        pts = [(c, a) for c, a in zip(conf, acc) if c is not None and a is not None]
        edges = bins.get("edges") or []
        width = (edges[1] - edges[0]) if len(edges) > 1 else 0.1
        ax.plot([0, 1], [0, 1], color="#999999", linewidth=0.8, linestyle="--")
        if pts:
            ax.bar([c for c, _ in pts], [a for _, a in pts], width=width * 0.8, color="#4c78a8", alpha=0.8)
        lo, hi = m.get(M.ci(M.ECE)) or (None, None)
        ece = m.get(M.ECE)
        title = system if ece is None else f"{system}\nECE {ece:.3f}" + ("" if lo is None else f" [{lo:.3f}, {hi:.3f}]")
        ax.set_title(title, fontsize=7.5)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.tick_params(labelsize=6.5)
    for ax in list(axes.flat)[len(drawn):]:
        ax.set_visible(False)
    fig.supxlabel("mean top-1 confidence in the bin", fontsize=7.5)
    fig.supylabel("top-1 accuracy in the bin", fontsize=7.5)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
