"""The generated ``best`` section of docs/findings.md (``make claims``): per published dataset, the best system that
reads no label (highest test top-1; the label-reading ceilings of ``common.CEILINGS`` left out), its interval, and
its paired cluster permutation test against window + cosine (``valid_cosine``), the verdicts' reference.

Single runs (main, main_large, handbook, facts) are read from ``<folder>/metrics.json`` (point and cluster-bootstrap
interval) and their run files (``core.evaluation.claims.run_queries``: per-query outcomes, families as clusters); the
seeds sweep from ``seeds/queries.csv`` (clusters: seed x family). Both tests are the verdicts' own
:func:`~smartvector_bench.core.evaluation.verdicts.pooled.pooled_paired`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from paper_figures.common import CEILINGS
from smartvector_bench.core.evaluation.claims import result, run_queries
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results import MainMetrics
from smartvector_bench.core.evaluation.verdicts.pooled import pooled_paired

REFERENCE = "valid_cosine"
RUNS = (("main", "default profile, seed 42"), ("main_large", "large profile"), ("handbook", "18F handbook history"),
        ("facts", "real facts that changed"))
N_RESAMPLES = 10000


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _paired(results: Path, folder: str, best: str) -> str:
    p = pooled_paired(run_queries(results, folder), REFERENCE, best, "correct", min_seeds=1, n_resamples=N_RESAMPLES)
    if p.reason:
        return f"paired test not measured ({p.reason})"
    return f"{100 * p.diff:+.1f} points over {REFERENCE} (paired cluster permutation p = {p.p_value:.3g})"


def _run_line(results: Path, folder: str, what: str) -> str:
    mm = result(results, folder, MainMetrics)
    if mm is None:
        return f"| {folder} ({what}) | not measured (missing {folder}/{MainMetrics.FILE}) | | |"
    test = {s: v["test"] for s, v in mm.systems.items() if "test" in v and s not in CEILINGS}
    scored = {s: t[M.TOP1] for s, t in test.items() if t.get(M.TOP1) is not None}
    if not scored:
        return f"| {folder} ({what}) | not measured (no system's test top-1) | | |"
    best = max(sorted(scored), key=lambda s: (scored[s], s == REFERENCE))  # ties: the reference, then by name
    ties = [s for s in sorted(scored) if s != best and scored[s] == scored[best]]
    best_text = best + (f" (tied: {', '.join(ties)})" if ties else "")
    ci = test[best].get(M.ci(M.TOP1)) or [None, None]
    interval = f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci[0] is not None else ""
    ref = scored.get(REFERENCE)
    paired = "it is the reference" if best == REFERENCE else _paired(results, folder, best)
    return f"| {folder} ({what}) | {best_text} | {_pct(scored[best])}{interval} | {_pct(ref)} | {paired} |"


def _seeds_line(results: Path) -> str:
    path = results / "seeds" / "queries.csv"
    if not path.is_file():
        return "| seeds (default profile, 5 seeds pooled) | not measured (missing seeds/queries.csv) | | | |"
    df = pd.read_csv(path)
    test = df[(df["split"] == "test") & ~df["system"].isin(CEILINGS)]
    mean = test.groupby("system")["correct"].mean()
    best = max(sorted(mean.index), key=lambda s: (mean[s], s == REFERENCE))
    ties = [s for s in sorted(mean.index) if s != best and mean[s] == mean[best]]
    if best == REFERENCE:
        paired = "it is the reference"
    else:
        p = pooled_paired(df, REFERENCE, best, "correct", n_resamples=N_RESAMPLES)
        paired = (f"not measured ({p.reason})" if p.reason else
                  f"{100 * p.diff:+.1f} points over {REFERENCE} (pooled paired cluster permutation p = "
                  f"{p.p_value:.3g}, {p.n_seeds} seeds, {p.n_clusters} clusters)")
    seeds = sorted(set(test["dataset_seed"].astype(int)))
    return (f"| seeds (default profile, seeds {', '.join(map(str, seeds))} pooled) | "
            f"{best}{' (tied: ' + ', '.join(ties) + ')' if ties else ''} | {_pct(float(mean[best]))} "
            f"| {_pct(float(mean.get(REFERENCE, np.nan)))} | {paired} |")


def _all_missing(results: Path) -> str | None:
    """The one "not measured" line when no published run is there (nothing to pick from)."""
    files = [f"{folder}/{MainMetrics.FILE}" for folder, _ in RUNS]
    if any((results / f).is_file() for f in files) or (results / "seeds" / "queries.csv").is_file():
        return None
    return f"not measured (missing {', '.join(files)})\n"


def best_section(results: Path) -> str:
    if (missing := _all_missing(results)) is not None:
        return missing
    out = ["| dataset | best system reading no label | its test top-1 [95% cluster interval] | "
           f"{REFERENCE} | paired test |", "|---|---|---|---|---|"]
    out.append(_run_line(results, *RUNS[0]))
    out.append(_seeds_line(results))
    out += [_run_line(results, *r) for r in RUNS[1:]]
    return "\n".join(out) + "\n"


ANATOMY_SYSTEMS = ("valid_cosine", "valid_authority", "hybrid_valid", "ltr", "smartvector", "smartvector_tuned",
                   "kg_smartvector", "oracle")  # the rows of the anatomy tables: the window, the new baselines, SV


def anatomy_section(results: Path) -> str:
    """Why each system's test top-1 is wrong, per published single run (table.md's own renderer), for the window,
    the practitioner's baselines, SmartVector and the ceiling."""
    from smartvector_bench.core.report import anatomy_not_measured, anatomy_table, has_anatomy

    if (missing := _all_missing(results)) is not None:
        return missing
    out = []
    for folder, what in RUNS:
        mm = result(results, folder, MainMetrics)
        if mm is None:
            out.append(f"**{folder}** ({what}): not measured (missing {folder}/{MainMetrics.FILE})\n")
            continue
        m = mm.to_dict()
        if not has_anatomy(m):
            out.append(f"**{folder}** ({what}): not measured (its metrics.json predates the error anatomy)\n")
            continue
        m = {**m, "systems": {s: v for s, v in m["systems"].items() if s in ANATOMY_SYSTEMS}}
        note = anatomy_not_measured(m)
        out.append(f"**{folder}** ({what}; `results/{folder}/metrics.json`, test split, "
                   f"{m['systems'][next(iter(m['systems']))]['test']['n_queries']} queries):\n\n{anatomy_table(m)}\n"
                   + (f"\n{note}\n" if note else ""))
    return "\n".join(out)


def regimes_section(results: Path, folder: str) -> str:
    """The metadata-regime table of a published regimes sweep (``results/<folder>/queries.csv``), rendered by the
    sweep tool's own code (``smartvector_bench/tools/sweeps/regimes.py``)."""
    from smartvector_bench.tools.sweeps import regimes

    path = results / folder / "queries.csv"
    if not path.is_file():
        return f"not measured (missing {folder}/queries.csv)\n"
    table = regimes.regime_table(regimes.outcomes_from_queries_csv(path), n_permutations=N_RESAMPLES)
    return f"`results/{folder}/`: " + regimes.markdown(table)


def sections(results: Path) -> dict[str, str]:
    return {"best": best_section(results), "anatomy": anatomy_section(results), "regimes": regimes_section(results, "regimes"),
            "regimes_facts": regimes_section(results, "regimes_facts")}
