"""The metadata-regime table: test top-1 by system x ``dataset.metadata`` regime, pooled over seeds, from a regimes
sweep (``smartvector-bench -m experiment=regimes``; conf/experiment/regimes.yaml).

    python -m smartvector_bench.tools.sweeps.regimes multirun/regimes --out results/regimes

Reads every job folder of the sweep (``SWEEP/<job>/metrics.json`` and its ``run_<system>.jsonl``): the regime is
metrics.json's ``dataset.metadata.regime`` (absent: ``full``), the seed its ``dataset.seed``, and each query's
correctness, split and family come from the run file (``core/run/__init__.py`` ``write_run_jsonl``). Each non-full cell
gives its drop from ``full`` and a paired cluster permutation test (``core.evaluation.metrics``
``paired_cluster_permutation_test``): each query is paired with the same query under ``full`` in the job of the
same seed, and the clusters are the (seed, family) pairs. A system that a regime leaves out (its check refuses the
served corpus) has an empty cell. Writes ``OUT/regimes.md`` and ``OUT/regimes.csv``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from smartvector_bench.core.atomic import atomic_write_text
from smartvector_bench.core.dataset.regimes import REGIMES
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.metrics import paired_cluster_permutation_test
from smartvector_bench.core.report import ordered

PROG = "python -m smartvector_bench.tools.sweeps.regimes"
COLUMNS = ("system", "regime", "n_queries", "n_seeds", "top1", "drop", "n_paired", "n_clusters", "p_value")


def _run_rows(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()[1:]  # line 1: the _meta header
    return [{k: q.get(k) for k in ("query_id", "split", "family", "correct")} for q in map(json.loads, lines) if q]


def query_outcomes(sweep_dir: str | Path) -> pd.DataFrame:
    """One row per job x system x query: seed, regime, system, query_id, split, cluster, correct (0/1). Jobs
    without a metrics.json (failed, still running) are left out; two complete jobs with the same seed and regime
    are refused (the table would not know which to pair)."""
    root = Path(sweep_dir)
    if not root.is_dir():
        raise BenchError(f"{root}: not a folder (give a regimes sweep folder, e.g. multirun/regimes)")
    records, seen = [], {}
    for mpath in sorted(root.glob("*/metrics.json")):
        m = json.loads(mpath.read_text(encoding="utf-8"))
        ds = m.get("dataset") or {}
        regime, seed = (ds.get("metadata") or {}).get("regime", "full"), ds.get("seed")
        if (seed, regime) in seen:
            raise BenchError(f"{mpath.parent}: a second job with dataset.seed={seed} and dataset.metadata={regime} "
                             f"(the first: {seen[(seed, regime)]}); keep one")
        seen[(seed, regime)] = mpath.parent
        for system in sorted(m.get("systems") or {}):
            run = mpath.parent / f"run_{system}.jsonl"
            if not run.is_file():
                raise BenchError(f"{run}: missing; the table reads each query's outcome from the run files")
            for q in _run_rows(run):
                family = q["family"] if q["family"] is not None else q["query_id"]
                records.append({"seed": seed, "regime": regime, "system": system, "query_id": q["query_id"],
                                "split": q["split"], "cluster": f"{seed}\0{family}",
                                "correct": int(bool(q["correct"]))})
    if not records:
        raise BenchError(f"{root}: no job folder with a metrics.json and its run files")
    return pd.DataFrame.from_records(records)


def outcomes_from_queries_csv(path: str | Path) -> pd.DataFrame:
    """:func:`query_outcomes`'s frame from a published sweep's ``queries.csv`` (one row per job x system x query,
    with the swept ``dataset.metadata`` column; absent: every job is ``full``), so the table regenerates from
    ``results/`` alone."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path}: not found (publish the regimes sweep first)")
    q = pd.read_csv(path, dtype={"query_id": str, "family": str, "split": str, "system": str})
    missing = [c for c in ("dataset_seed", "system", "query_id", "split", "correct") if c not in q.columns]
    if missing:
        raise BenchError(f"{path}: column {missing[0]!r} missing")
    regime = q["dataset.metadata"].astype(str) if "dataset.metadata" in q.columns else pd.Series("full", index=q.index)
    family = q["family"].where(q["family"].notna(), q["query_id"]) if "family" in q.columns else q["query_id"]
    seed = q["dataset_seed"].astype(int)
    return pd.DataFrame({"seed": seed, "regime": regime, "system": q["system"], "query_id": q["query_id"],
                         "split": q["split"], "cluster": seed.astype(str) + "\0" + family.astype(str),
                         "correct": q["correct"].astype(int)})


def outcomes(source: str | Path) -> pd.DataFrame:
    """A sweep folder's job folders (``multirun/regimes``) or a published sweep (``results/regimes``: its
    ``queries.csv``)."""
    source = Path(source)
    if (source / "queries.csv").is_file() and not any(source.glob("*/metrics.json")):
        return outcomes_from_queries_csv(source / "queries.csv")
    return query_outcomes(source)


def regime_table(df: pd.DataFrame, split: str = "test", n_permutations: int = 10000, seed: int = 0) -> pd.DataFrame:
    """Per system and regime (the regimes in :data:`REGIMES` order): top-1 pooled over seeds, and for a non-full
    regime its paired drop from ``full`` (mean over the queries present under both) and the permutation p-value."""
    d = df[df["split"] == split]
    regimes = [r for r in REGIMES if r in set(d["regime"])] + sorted(set(d["regime"]) - set(REGIMES))
    rows = []
    for system in list(dict.fromkeys(d["system"])):
        mine = d[d["system"] == system]
        full = mine[mine["regime"] == "full"][["seed", "query_id", "cluster", "correct"]]
        for regime in regimes:
            g = mine[mine["regime"] == regime]
            if g.empty:
                continue
            row = {"system": system, "regime": regime, "n_queries": len(g), "n_seeds": g["seed"].nunique(),
                   "top1": round(float(g["correct"].mean()), 6), "drop": None, "n_paired": None,
                   "n_clusters": None, "p_value": None}
            if regime != "full" and not full.empty:
                pair = full.merge(g[["seed", "query_id", "correct"]], on=["seed", "query_id"],
                                  suffixes=("_full", ""))
                if len(pair):
                    test = paired_cluster_permutation_test(pair["correct_full"].to_numpy(bool),
                                                           pair["correct"].to_numpy(bool),
                                                           pair["cluster"].to_numpy(object),
                                                           n_resamples=n_permutations, seed=seed)
                    row.update(drop=round(float(np.mean(pair["correct"] - pair["correct_full"])), 6),
                               n_paired=int(len(pair)), n_clusters=int(test["n_clusters"]),
                               p_value=round(float(test["p_value"]), 6))
            rows.append(row)
    return pd.DataFrame(rows, columns=list(COLUMNS), dtype=object)  # ints stay ints, None an empty cell


def _cell(r) -> str:
    text = f"{100 * r.top1:.1f}%"
    if r.drop is not None and not pd.isna(r.drop):
        text += f" ({100 * r.drop:+.1f}, p={r.p_value:.3g})"
    return text


def markdown(table: pd.DataFrame, split: str = "test") -> str:
    """System rows x regime columns; each non-full cell: top-1 (change from full in points, p-value); an empty
    cell: the regime left the system out."""
    regimes = list(dict.fromkeys(table["regime"]))
    seeds = sorted(set(table["n_seeds"].tolist()))
    lines = [f"{split} top-1 by metadata regime (dataset.metadata), pooled over seeds "
             f"({'/'.join(map(str, seeds))} per cell); in brackets: the paired change from full in points and the "
             "cluster permutation p-value (clusters: seed x family). Empty: the regime left the system out.", "",
             "| system | " + " | ".join(regimes) + " |", "|---" * (len(regimes) + 1) + "|"]
    for system in ordered(set(table["system"])):  # the main table's order
        cells = {r.regime: _cell(r) for r in table[table["system"] == system].itertuples()}
        lines.append(f"| {system} | " + " | ".join(cells.get(g, "") for g in regimes) + " |")
    return "\n".join(lines) + "\n"


def write_table(sweep_dir: str | Path, out: str | Path, split: str = "test", n_permutations: int = 10000,
                seed: int = 0) -> pd.DataFrame:
    table = regime_table(outcomes(sweep_dir), split, n_permutations, seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "regimes.csv", table.to_csv(index=False, na_rep="", lineterminator="\n"))
    atomic_write_text(out / "regimes.md", markdown(table, split))
    return table


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog=PROG, description="Test top-1 by system x metadata regime from a regimes sweep")
    ap.add_argument("sweep_dir", help="the sweep folder (e.g. multirun/regimes) or its published copy (results/regimes)")
    ap.add_argument("--out", required=True, help="folder for regimes.md and regimes.csv")
    ap.add_argument("--split", default="test", choices=("dev", "test"))
    ap.add_argument("--n-permutations", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo permutations")
    args = ap.parse_args(argv)
    try:
        table = write_table(args.sweep_dir, args.out, args.split, args.n_permutations, args.seed)
    except BenchError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        sys.exit(2)
    print(markdown(table, args.split), end="")


if __name__ == "__main__":
    main()
