"""``python -m smartvector_bench.tools.scale profile -n 1000000`` (build time and peak RSS of one synthetic
build) and ``python -m smartvector_bench.tools.scale compare -n 10000 [--fit]`` (real vs synthetic statistics)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.tools.scale.build import scale_dataset
from smartvector_bench.tools.scale.stats import (
    compare_real_synthetic, fit_synthetic, render_comparison, similarity_stats,
)


def proc_status_mb(field: str) -> float | None:
    """This process's ``field`` of /proc/self/status (VmRSS, VmHWM) in MB; None where it cannot be read."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _proc_status_mb(key: str) -> float:
    mb = proc_status_mb(key)
    return float("nan") if mb is None else mb


def profile(n_vectors: int, seed: int = 0) -> dict:
    """Build time and memory of one synthetic build; run it in a fresh process for a clean peak RSS."""
    scale_dataset(258, seed=seed)  # base dataset, model and base vectors (memoised), not part of the build
    rss0 = _proc_status_mb("VmRSS")
    t = time.perf_counter()
    d = scale_dataset(n_vectors, seed=seed)
    wall = time.perf_counter() - t
    return {"n_vectors": n_vectors, "n_blocks": d.n_blocks, "n_queries": len(d.queries),
            "build_s": round(wall, 2), "timings_s": d.info["timings_s"],
            "rss_before_build_mb": round(rss0, 1), "rss_after_build_mb": round(_proc_status_mb("VmRSS"), 1),
            "peak_rss_mb": round(_proc_status_mb("VmHWM"), 1),
            "vectors_mb": round((d.corpus_vectors.nbytes + d.query_vectors.nbytes) / 2**20, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m smartvector_bench.tools.scale")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("profile", help="build time and peak RSS of a synthetic build")
    p.add_argument("-n", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("compare", help="similarity statistics, real MiniLM vs synthetic")
    c.add_argument("-n", type=int, default=10_000)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--alpha", type=float, default=None)
    c.add_argument("--beta", type=float, default=None)
    c.add_argument("--sigma", type=float, default=None)
    c.add_argument("--fit", action="store_true", help="grid-search alpha, beta and sigma first")
    c.add_argument("--fit-seeds", type=int, nargs="+", default=[0, 1, 2])
    c.add_argument("--json", type=str, default=None, help="also write the statistics to this file")
    args = ap.parse_args(argv)
    if args.cmd == "profile":
        print(json.dumps(profile(args.n, args.seed), indent=2))
        return 0
    fit = None
    if args.fit:
        real = {seed: similarity_stats(scale_dataset(args.n, seed=seed, vectors="real")) for seed in args.fit_seeds}
        fit = fit_synthetic(real, args.n)
        args.alpha, args.beta, args.sigma = fit["alpha"], fit["beta"], fit["sigma"]
        print("fit (best 10):")
        for g in fit["grid"][:10]:
            print(f"  loss {g['loss']:.5f}  alpha {g['alpha']}  beta {g['beta']}  sigma {g['sigma']}")
    cmp = compare_real_synthetic(args.n, args.seed, args.alpha, args.beta, args.sigma)
    print(render_comparison(cmp))
    if args.json:
        atomic_write_json(args.json, {**cmp, "fit": fit})
    return 0


