"""The perf cases in one table: what each profile section (``conf/bench_profile/*.yaml``) runs on one scale
dataset of each of its sizes. The runner (:mod:`.runner`) walks the table for a whole profile; ``main`` runs
one case from the command line:

    python -m smartvector_bench.tools.perf.cases {consolidation,ripple,lvl,kg,reference} -n N [--reps R]
        [--n-latency L] [--origins O] [--kg-max-entities M] [-k K] [--all-pairs] [--pairs distinct knn]
        [--datasets versioned_policies_large] [--json FILE]

prints its summary (median, p95, p99 per system and metric) and optionally writes every row as JSON.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import asdict

from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.tools.perf.consolidation import DEFAULT_K, bench_consolidation, dataset_config
from smartvector_bench.tools.perf.filtered_ann import bench_filtered_ann
from smartvector_bench.tools.perf.lvl_ingest import bench_lvl_ingest
from smartvector_bench.tools.perf.peers import bench_kg, bench_livevectorlake
from smartvector_bench.tools.perf.reference import bench_reference
from smartvector_bench.tools.perf.ripple import bench_ripple
from smartvector_bench.tools.perf.search import run_search
from smartvector_bench.tools.perf.summary import summary_rows
from smartvector_bench.tools.perf.timing import Row
from smartvector_bench.tools.scale import ScaleData, scale_dataset


def search_consolidation(s: dict, n: int) -> dict | None:
    """How the search case's smartvector consolidates before serving: all pairs (the default config) up to
    ``all_pairs_max_size``, ANN candidate pairs up to ``consolidation_max_size``, none above (the candidate
    search dominates the consolidation there and costs more than the whole rest of the profile; see
    docs/operations.md, Performance)."""
    if n > int(s["consolidation_max_size"]):
        return {"enabled": False}
    if n > int(s["all_pairs_max_size"]):
        return {"candidates": int(s["consolidation_k"])}
    return None


def search_case(data: ScaleData, s: dict, n: int, progress: Callable[[str], None]) -> list[Row]:
    """The ``search`` section on one dataset: every search system on the same query batch."""
    return run_search(data, reps=int(s["reps"]), n_latency=int(s["n_latency"]), candidates=int(s["candidates"]),
                      hnsw=dict(s["hnsw"]), consolidation=search_consolidation(s, n), exhaustive=bool(s["exhaustive"]),
                      hnsw_enabled=n <= int(s["hnsw_max_size"]), progress=progress)


def consolidation_ks(c: dict, n: int, pairs: str = "distinct") -> list[int]:
    """The candidate counts run at size n: ``k`` (a number, or one per generator: ``{distinct: 10, knn: 20}``),
    plus ``recall_k`` at the all-pairs size (where the pairs the candidates miss are measured; the all-pairs
    run is shared)."""
    k = c.get("k")
    ks = [int((k.get(pairs) if isinstance(k, dict) else k) or DEFAULT_K)]
    if n == int(c["all_pairs_size"]):
        ks += [int(k) for k in c.get("recall_k") or [] if int(k) not in ks]
    return ks


def consolidation_runs(c: dict, n: int) -> list[tuple[str, int]]:
    """(candidate generator, k) run at size n: every generator of ``pairs`` (default ``distinct``) with
    :func:`consolidation_ks`; ``knn`` only up to ``knn_max_size`` (its crowded lists grow with the number of
    copies of a text: hundreds of seconds and many GB at 1M)."""
    cap = c.get("knn_max_size")
    return [(p, k) for p in c.get("pairs") or ["distinct"] if not (p == "knn" and cap is not None and n > int(cap))
            for k in consolidation_ks(c, n, p)]


def consolidation_reps(c: dict, n: int) -> int:
    """``reps``, or ``reps_above`` (``{size: reps}``: the reps of the largest size bound below n)."""
    above = {int(s): int(r) for s, r in (c.get("reps_above") or {}).items() if n > int(s)}
    return above[max(above)] if above else int(c["reps"])


def _consolidation(d: ScaleData, c: dict, n: int, cfg: dict) -> list[Row]:
    """The section on the default dataset at size n and, at the all-pairs size, on each base dataset of
    ``datasets`` too (rows labelled ``synthetic:<name>``), each against its own all-pairs run."""
    reps, at_all_pairs = consolidation_reps(c, n), n == int(c["all_pairs_size"])
    out = [row for p, k in consolidation_runs(c, n)
           for row in bench_consolidation(d, reps=reps, k=k, all_pairs=at_all_pairs, pairs=p)]
    for name in (c.get("datasets") or []) if at_all_pairs else []:
        other = scale_dataset(n, seed=int(cfg.get("seed", 0)), n_queries=len(d.queries),
                              dataset_cfg=dataset_config(name))
        out += [row for p, k in consolidation_runs(c, n)
                for row in bench_consolidation(other, reps=reps, k=k, all_pairs=True, pairs=p,
                                               vectors=f"synthetic:{name}")]
    return out


def _ripple(d: ScaleData, c: dict, n: int, cfg: dict) -> list[Row]:
    return bench_ripple(d, n_origins=int(c["n_origins"]), seed=int(cfg.get("seed", 0)),
                        kg_max_entities=c.get("kg_max_entities"))


def _lvl(d: ScaleData, c: dict, n: int, cfg: dict) -> list[Row]:
    return bench_livevectorlake(d, reps=int(c["reps"]), n_latency=int(c["n_latency"]))


def _kg(d: ScaleData, c: dict, n: int, cfg: dict) -> list[Row]:
    return bench_kg(d, reps=int(c["reps"]), n_latency=int(c["n_latency"]))


def _reference(d: ScaleData, c: dict, n: int, cfg: dict) -> list[Row]:
    return bench_reference(d, n_queries=int(c["n_queries"]), reps=int(c["reps"]),
                           candidates=int(cfg["search"]["candidates"]))


# The cases after ``search``, in the order the runner runs them: (profile section, what it runs on one dataset
# of one of its sizes, given the section, that size and the whole profile config).
CASES: dict[str, Callable[[ScaleData, dict, int, dict], list[Row]]] = {
    "consolidation": _consolidation,
    "ripple": _ripple,
    "lvl": _lvl,
    "lvl_ingest": bench_lvl_ingest,
    "kg": _kg,
    "reference": _reference,
    "filtered_ann": bench_filtered_ann,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m smartvector_bench.tools.perf.cases")
    ap.add_argument("case", choices=tuple(CASES))
    ap.add_argument("-n", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-queries", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n-latency", type=int, default=200)
    ap.add_argument("--origins", type=int, default=1000, help="ripple: origins per store")
    ap.add_argument("--kg-max-entities", type=int, default=None, help="ripple: cap on the SQLite store's size")
    ap.add_argument("-k", type=int, default=DEFAULT_K, help="consolidation: ANN candidate neighbours")
    ap.add_argument("--all-pairs", action="store_true", help="consolidation: also all pairs, and what k misses")
    ap.add_argument("--pairs", nargs="+", default=["distinct"], help="consolidation: candidate generators")
    ap.add_argument("--datasets", nargs="*", default=[], help="consolidation: other base datasets (with --all-pairs)")
    ap.add_argument("--candidates", type=int, default=20, help="reference: certified re-rank candidates")
    ap.add_argument("--json", default=None, help="also write every row to this file")
    a = ap.parse_args(argv)
    section = {"reps": a.reps, "n_latency": a.n_latency, "n_origins": a.origins, "kg_max_entities": a.kg_max_entities,
               "n_queries": a.n_queries, "k": a.k, "all_pairs_size": a.n if a.all_pairs else -1,
               "pairs": a.pairs, "datasets": a.datasets}
    cfg = {"seed": a.seed, "search": {"candidates": a.candidates}}
    out = CASES[a.case](scale_dataset(a.n, seed=a.seed, n_queries=a.n_queries), section, a.n, cfg)
    if a.json:
        atomic_write_json(a.json, [asdict(r) for r in out])
    for s in summary_rows(out):
        print(f"{s['case']:<15} {s['system']:<24} {s['n_vectors']:>7} {s['metric']:<20} median {s['median']:.4g}  "
              f"p95 {s['p95']:.4g}  p99 {s['p99']:.4g}  n {s['n']}  {s['unit']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
