"""The claims table's rows read from a results folder: each claim of the SmartVector paper (and of LiveVectorLake)
with the :class:`~smartvector_bench.core.evaluation.verdicts.Verdict` its rule gives on the stored results (no
experiment is re-run). ``paper_figures/claims.py`` renders them as Markdown, ``smartvector-report`` as HTML; both read
them here, so the two cannot disagree.

Each result file is read through its result class, so a present but malformed one raises ResultError naming the
file and the key; a missing one is None, which the rules turn into "not measured".
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from smartvector_bench.core.evaluation import verdicts as V
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.evaluation.paper_claims import PAPER_MAIN_TABLE
from smartvector_bench.core.results import FeedbackLoop, LvlEval, MainMetrics, ReembedCost, ResultFile, SweepSummary

Row = tuple[str, V.Verdict]  # (claim, its verdict)


def result(results: Path, folder: str, kind: type[ResultFile]):
    """``results/<folder>/<kind.FILE>`` loaded through its result class (validated: a malformed file raises
    ResultError naming the file and the key), or None when it is missing."""
    path = Path(results) / folder / kind.FILE
    return kind.load(path) if path.is_file() else None


def doc(res: ResultFile | None) -> dict | None:
    return None if res is None else res.to_dict()  # what the verdict rules and renderers take


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def queries(results: Path, preset: str):
    """A sweep's per-query outcomes (``<preset>/queries.csv``) and its summary, each None when missing."""
    path = Path(results) / preset / "queries.csv"
    df = pd.read_csv(path, dtype={"query_id": str, "family": str}) if path.is_file() else None
    return df, doc(result(results, preset, SweepSummary))


def main_claims(results: Path) -> list[Row]:
    """Top-1, stale rate and ECE: pooled over the seeds sweep's per-query outcomes (seed-42 runs quoted)."""
    df, summary = queries(results, "seeds")
    m, large = (doc(result(results, folder, MainMetrics)) for folder in ("main", "main_large"))
    pc, sv = PAPER_MAIN_TABLE["plain_cosine"], PAPER_MAIN_TABLE["smartvector"]
    return [
        (f"top-1 accuracy doubles over plain cosine RAG ({_pct(pc[M.TOP1])} -> {_pct(sv[M.TOP1])})",
         V.top1_doubles(df, summary, m, large)),
        (f"stale-answer rate falls ({_pct(pc[M.STALE_RATE])} -> {_pct(sv[M.STALE_RATE])})",
         V.stale_rate_falls(df, summary)),
        (f"calibration error (ECE) falls ({pc[M.ECE]:.3f} -> {sv[M.ECE]:.3f})", V.ece_falls(df, summary)),
    ]


def run_queries(results: Path, folder: str) -> pd.DataFrame | None:
    """A main run folder's per-query outcomes (its ``run_<system>.jsonl``) in queries.csv's shape: one job, the
    dataset's seed; None when its metrics.json is missing."""
    mm = result(results, folder, MainMetrics)
    if mm is None:
        return None
    rows = []
    for system in mm.systems:
        path = Path(results) / folder / f"run_{system}.jsonl"
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            q = json.loads(line)
            rows.append({"job": 0, "dataset_seed": mm.dataset.get("seed") or 0, "system": system,
                         "query_id": q["query_id"], "split": q["split"], "family": q.get("family"),
                         "confidence": q.get("confidence"),
                         **{f: None if q.get(f) is None else int(bool(q[f])) for f in ("correct", "stale", "rumor")}})
    return pd.DataFrame(rows) if rows else None


def real_claims(results: Path) -> list[V.Verdict]:
    """Claims 1-3 judged on the real facts' run (results/facts/), aligned with :func:`main_claims`."""
    df = run_queries(results, "facts")
    return [V.real_top1(df), V.real_stale(df), V.real_ece(df)]


def sweep_claims(results: Path) -> list[Row]:
    """Contradiction rates and the ablation, pooled over seeds from each sweep's queries.csv."""
    cs_df, cs_summary = queries(results, "contradiction_sweep")
    ab_df, ab_summary = queries(results, "ablation")
    return [("robust across contradiction rates 0-75% (55-65% vs a flat ~31%)",
             V.robust_across_contradiction(cs_df, cs_summary)),
            ("the temporal signal is the largest single contributor (ablation)",
             V.temporal_largest(ab_df, ab_summary)),
            ("removing the confidence signal raises accuracy", V.confidence_removal_raises(ab_df, ab_summary))]


def update_claims(results: Path) -> list[Row]:
    return [("a single-word edit re-embeds 1.0 chunk instead of 4.35 (-77%)",
             V.reembed_single_word(doc(result(results, "reembed_cost", ReembedCost)))),
            ("user feedback reconsolidates confidence and improves answers over time",
             V.feedback_improves(doc(result(results, "feedback_loop", FeedbackLoop))))]


LVL_CLAIMS = ("LiveVectorLake: 10-15% of content re-processed per update (vs 100%)",
              "LiveVectorLake: current queries p50 / p95 / p99 65 / 110 / 145 ms",
              "LiveVectorLake: as-of queries p50 1.2 s",
              "LiveVectorLake: 100% change-detection accuracy",
              "LiveVectorLake: 100% temporal accuracy",
              "LiveVectorLake: 0% temporal leakage")


def lvl_claims(results: Path) -> list[Row]:
    """LiveVectorLake's claims: verdicts and rules from experiments/lvl_eval.py, restated with their test."""
    d = doc(result(results, "lvl_eval", LvlEval))
    return [(claim, rule(d)) for claim, rule in zip(LVL_CLAIMS, V.LVL_RULES)]


def claim_rows(results: Path) -> list[Row]:
    """Every row of the claims table, in its order."""
    return main_claims(results) + sweep_claims(results) + update_claims(results) + lvl_claims(results)


def test_text(v: V.Verdict) -> str:
    """The test column: the test and the threshold it is judged by."""
    return f"{v.test}; {v.threshold}" if v.threshold else v.test
