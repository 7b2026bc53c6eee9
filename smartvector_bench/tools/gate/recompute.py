"""The gate's own recomputation of main's metrics from the run files and the dataset's judgments.

A second, small implementation of the evaluator's definitions, deliberately not calling them: stale and
rumour rates, ECE and its bins, MRR@10, recall@5, nDCG@10, Brier and AUROC, per split and per category, from
each run file's ranked ids and confidences (see the comment below for every convention and tolerance)."""

from __future__ import annotations

import bisect
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from data_gen.params import params_from_config
from data_gen.writer import write_dataset
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.metrics import names as M
from smartvector_bench.tools.gate.paths import bad_number
from smartvector_bench.tools.gate.report import Row, fmt, invariant

SPLITS = ("dev", "test")


@dataclass
class Judgments:
    """The dataset's judgments by id, for the gate's own recomputation: ``qrels[qid]`` = {chunk id: grade >= 1}
    (``Queries.relevant`` / ``grades``), ``stale[qid]`` / ``rumor[qid]`` = chunk ids (the labels)."""
    qrels: dict[str, dict[str, int]]
    stale: dict[str, set[str]]
    rumor: dict[str, set[str]]

    @property
    def relevant(self) -> dict[str, set[str]]:
        return {qid: set(j) for qid, j in self.qrels.items()}


def _judgments_of(ds) -> Judgments:
    q, ids = ds.queries, ds.corpus.ids

    def sets(rag) -> dict[str, set[str]]:
        return {qid: {ids[int(r)] for r in rag.row(i)} for i, qid in enumerate(q.ids)}

    qrels = {qid: {ids[int(r)]: int(g) for r, g in zip(q.relevant.row(i), q.grades.row(i))}
             for i, qid in enumerate(q.ids)}
    return Judgments(qrels, sets(q.stale), sets(q.rumor))


def load_judgments(folder: Path, metrics: dict) -> tuple[Judgments | None, str]:
    """The dataset's judgments (graded qrels, stale and rumour sets), from the run's dataset folder or, failing
    that, the dataset regenerated from the recorded config (checked against the recorded sha256). (None, why)
    if neither is possible."""
    want = (metrics.get("dataset") or {}).get("sha256")
    candidates = [folder / "dataset"]
    recorded = (metrics.get("dataset") or {}).get("path")
    if recorded:
        candidates.append(Path(recorded))
    for cand in candidates:
        if (cand / "manifest.json").is_file():
            try:
                ds = load_dataset(cand)
            except Exception:  # noqa: BLE001 - an unreadable folder: try the next source
                continue
            if ds.sha256 == want:
                return _judgments_of(ds), f"qrels from {cand}"
    ds_cfg = (((metrics.get("provenance") or {}).get("config") or {}).get("dataset")) or {}
    if not ds_cfg or ds_cfg.get("path"):
        return None, "no dataset folder; gold from the run files' correct flags"
    try:
        with tempfile.TemporaryDirectory(prefix="svb-regress-ds-") as tmp:
            write_dataset(params_from_config(dict(ds_cfg)), Path(tmp) / "ds")
            ds = load_dataset(Path(tmp) / "ds")
    except Exception as exc:  # noqa: BLE001 - reported, the check falls back to the correct flags
        return None, f"could not regenerate the dataset ({exc}); gold from the run files' correct flags"
    if ds.sha256 != want:
        return None, (f"regenerated dataset sha256 {ds.sha256[:12]} != recorded {str(want)[:12]}; gold from "
                      "the run files' correct flags")
    return _judgments_of(ds), "qrels from the dataset regenerated from the config"


# -- independent recomputation of main's metrics from the run files -----------------------------------------------
#
# A second, small implementation of the evaluator's definitions (smartvector_bench/core/evaluator.py and
# metrics/calibration.py), deliberately not calling them, applied to what the run files record (ranked ids,
# confidence) and the dataset's judgments (regenerated from its seed, checked against its sha256):
#
# * correct / stale / rumour: the ranked top-1 id is in the query's graded qrels (grade >= 1) / stale set /
#   rumour set; a query with no result is none of them. The run file's own flags must equal these too.
# * ECE: ``n_bins`` equal-width bins ``[i/n, (i+1)/n)``, the last one closed (1.0 lands in bin n-1); a missing
#   confidence (null) is 0.0; ``sum_b |n_b * acc_b - n_b * conf_b| / N``; accuracy / mean confidence are None in
#   an empty bin. Per bin: count, accuracy and mean confidence.
# * MRR@10, recall@5, nDCG@10: ``ir_measures`` with the ``pytrec_eval`` provider pinned, over the graded qrels
#   and the run file's first 10 ids, each given the score ``10 - rank`` (distinct and decreasing, so trec_eval's
#   re-sort by score keeps the stored order); RR is trec_eval's ``recip_rank`` on that truncated run. A query
#   with no result or no relevant chunk scores 0.
#
# Every value is compared with the stored one EXACTLY at the stored precision (6 decimals: the evaluator rounds
# with round(x, 6)), ``by_category`` too, with one exception: the evaluator computed ECE and the bins' mean
# confidence from full-precision confidences, while the run file keeps them rounded to 6 decimals (run.py), so
# those two are recomputed only to within CONFIDENCE_TOL = 1e-6 (5e-7 from the run file's rounding of every
# confidence, which averages to at most 5e-7, plus 5e-7 from the stored value's own rounding; 34 of the
# committed values differ by exactly one unit in the 6th decimal). Bin counts and accuracies are exact. A
# confidence written exactly on an interior bin edge is binned as written (BM25's confidences sit on 0.1, 0.2,
# ... exactly); a continuous one within 5e-7 of an edge could have been binned on the other side: a count miss
# then says how many confidences of the split sit on an edge.

RECOMPUTED_DECIMALS = 6
RECOMPUTED_METRICS = (M.STALE_RATE, M.RUMOR_RATE, M.ECE, M.MRR_AT_10, M.RECALL_AT_5, M.NDCG_AT_10)
RECOMPUTED_CATEGORY_METRICS = (M.TOP1, *RECOMPUTED_METRICS)
IR_CUTOFF = 10
CONFIDENCE_TOL = 1e-6
SCORE_METRICS = (M.BRIER, M.AUROC)  # issue 14's calibration metrics, recomputed when metrics.json has them
CONFIDENCE_KEYS = (M.ECE, "mean_confidence", M.BRIER, M.AUROC)  # compared within CONFIDENCE_TOL


def recompute_ece(confidence: list[float], correct: list[bool], n_bins: int = 10) -> tuple[float, dict]:
    """ECE and its bins (counts, accuracy, mean_confidence; None for an empty bin), the calibration module's
    convention reimplemented; raises ValueError on a confidence outside [0, 1] or no queries."""
    if not confidence:
        raise ValueError("no queries")
    edges = [i / n_bins for i in range(n_bins + 1)]
    counts, sum_conf, sum_acc = [0] * n_bins, [0.0] * n_bins, [0.0] * n_bins
    for c, ok in zip(confidence, correct):
        c = float(c)
        if not 0.0 <= c <= 1.0:  # also NaN
            raise ValueError(f"confidence {c!r} outside [0, 1]")
        b = min(bisect.bisect_right(edges, c) - 1, n_bins - 1)
        counts[b] += 1
        sum_conf[b] += c
        sum_acc[b] += 1.0 if ok else 0.0
    value = sum(abs(a - s) for a, s in zip(sum_acc, sum_conf)) / len(confidence)
    return value, {"n_bins": n_bins, "edges": edges, "counts": counts,
                   "accuracy": [a / n if n else None for a, n in zip(sum_acc, counts)],
                   "mean_confidence": [s / n if n else None for s, n in zip(sum_conf, counts)]}


def _score_confidences(confidence: list) -> list[float]:
    """The raw top-1 confidences as the calibration metrics take them: None or NaN counts as 0.0."""
    out = []
    for c in confidence:
        c = 0.0 if c is None else float(c)
        out.append(0.0 if math.isnan(c) else c)
    return out


def recompute_brier(confidence: list, correct: list[bool]) -> float:
    """Brier score: the mean squared error of the confidences against correctness (1/0)."""
    conf = _score_confidences(confidence)
    if not conf:
        raise ValueError("no queries")
    return math.fsum((c - (1.0 if ok else 0.0)) ** 2 for c, ok in zip(conf, correct)) / len(conf)


def recompute_auroc(confidence: list, correct: list[bool]) -> float | None:
    """AUROC of confidence against correctness as the Mann-Whitney U of the correct queries' average ranks
    (ties count half); None when the queries hold one class."""
    from scipy.stats import rankdata

    conf = _score_confidences(confidence)
    pos = [bool(ok) for ok in correct]
    n_pos, n_neg = sum(pos), len(pos) - sum(pos)
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(conf, method="average")
    u = math.fsum(r for r, ok in zip(ranks, pos) if ok) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def auroc_bounds(confidence: list, correct: list[bool]) -> tuple[float, float] | None:
    """The range of AUROCs the full-precision confidences can have, given their 6-decimal rounding in the run
    file: rounding is monotone, so a strict order survives it and only rounded ties hide an order. Every
    tied (correct, wrong) pair counted against (low) or for (high) the correct query; None with one class."""
    import numpy as np

    conf = np.asarray(_score_confidences(confidence), dtype=np.float64)
    pos = np.asarray([bool(ok) for ok in correct], dtype=bool)
    neg_sorted = np.sort(conf[~pos])
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    below = np.searchsorted(neg_sorted, conf[pos], side="left").sum()
    at_or_below = np.searchsorted(neg_sorted, conf[pos], side="right").sum()
    return float(below) / (n_pos * n_neg), float(at_or_below) / (n_pos * n_neg)


def recompute_ir(run_rows: list[dict], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """``{query_id: {"mrr_at_10", "recall_at_5", "ndcg_at_10"}}`` for every run row, via ir_measures'
    pytrec_eval provider (see above)."""
    import ir_measures

    measures = {ir_measures.RR: M.MRR_AT_10, ir_measures.R @ 5: M.RECALL_AT_5,
                ir_measures.nDCG @ IR_CUTOFF: M.NDCG_AT_10}
    run: dict[str, dict[str, float]] = {}
    for r in run_rows:
        qid, docs = str(r.get("query_id")), list(r.get("ranked") or [])[:IR_CUTOFF]
        scored: dict[str, float] = {}
        for rank, did in enumerate(docs):
            did = str(did)
            if did in scored:  # a repeated id keeps its rank as a never-relevant placeholder
                did = f"__duplicate_rank_{rank}__"
            scored[did] = float(IR_CUTOFF - rank)
        if scored and qrels.get(qid):
            run[qid] = scored
    judged = {qid: dict(j) for qid, j in qrels.items() if j and qid in run}
    out = {str(r.get("query_id")): {m: 0.0 for m in measures.values()} for r in run_rows}
    if run:
        for metric in ir_measures.pytrec_eval.iter_calc(list(measures), judged, run):
            if metric.query_id in out:
                out[metric.query_id][measures[metric.measure]] = float(metric.value)
    return out


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


def _recompute_point(rows: list[dict], outcome: dict[str, dict], n_bins: int) -> dict:
    """The point metrics of some run rows from their recomputed per-query outcomes."""
    o = [outcome[str(r.get("query_id"))] for r in rows]
    conf = [0.0 if r.get("confidence") is None else r["confidence"] for r in rows]
    out = {M.TOP1: _mean([x["correct"] for x in o]), M.STALE_RATE: _mean([x["stale"] for x in o]),
           M.RUMOR_RATE: _mean([x["rumor"] for x in o])}
    for key in (M.MRR_AT_10, M.RECALL_AT_5, M.NDCG_AT_10):
        if all(key in x for x in o):
            out[key] = _mean([x[key] for x in o])
    try:
        out[M.ECE], out["ece_bins"] = recompute_ece(conf, [x["correct"] for x in o], n_bins)
    except ValueError as exc:
        out["ece_error"] = str(exc)
    raw = [r.get("confidence") for r in rows]
    if raw:
        out[M.BRIER] = recompute_brier(raw, [x["correct"] for x in o])
        out[M.AUROC] = recompute_auroc(raw, [x["correct"] for x in o])
        out["auroc_bounds"] = auroc_bounds(raw, [x["correct"] for x in o])
    return out


def _same6(stored: Any, value: Any, tol: float = 0.0) -> bool:
    if value is None or stored is None:
        return stored is None and value is None
    if bad_number(stored) is not None:
        return False
    if tol:
        return abs(float(stored) - float(value)) <= tol + 1e-12
    return stored == round(float(value), RECOMPUTED_DECIMALS)


def _recomputed_row(metric: str, stored: Any, value: Any, how: str) -> Row:
    shown = "None" if value is None else fmt(round(float(value), RECOMPUTED_DECIMALS))
    tol = CONFIDENCE_TOL if metric.rsplit(".", 2)[-1] in CONFIDENCE_KEYS or \
        metric.rsplit(".", 2)[-2] in CONFIDENCE_KEYS else 0.0
    ok = _same6(stored, value, tol)
    why = f"|diff| > {tol:g} (confidences are 6-decimal in the run file)" if tol else \
        f"differs at {RECOMPUTED_DECIMALS} decimals"
    return invariant(metric, f"recomputed {shown}", stored, ok, how if ok else f"{how}; {why}")


def recompute_rows(out_name: str, system: str, per_split: dict, run_rows: list[dict],
                   judgments: Judgments | None) -> list[Row]:
    """Rows comparing ``systems.<system>`` of a main metrics.json with the gate's own recomputation from
    ``run_<system>.jsonl`` (and the dataset's judgments; without them, from the run file's flags)."""
    base, run_file = f"{out_name}.systems.{system}", f"run_{system}.jsonl"
    rows: list[Row] = []
    outcome: dict[str, dict] = {}
    if judgments is not None:
        ir = recompute_ir(run_rows, judgments.qrels)
        unknown = []
        for r in run_rows:
            qid = str(r.get("query_id"))
            if qid not in judgments.qrels:
                unknown.append(qid)
            top = (r.get("ranked") or [None])[0]
            outcome[qid] = {"correct": top is not None and top in judgments.qrels.get(qid, {}),
                            "stale": top is not None and top in judgments.stale.get(qid, set()),
                            "rumor": top is not None and top in judgments.rumor.get(qid, set()), **ir[qid]}
        how = f"recomputed from {run_file} and the dataset's judgments"
        if unknown:
            r = invariant(f"{out_name} {run_file}: query ids", "all in the dataset", f"{len(unknown)} unknown", False,
                     ", ".join(unknown[:5]))
            r.file = run_file
            rows.append(r)
    else:
        for r in run_rows:
            outcome[str(r.get("query_id"))] = {k: bool(r.get(k)) for k in ("correct", "stale", "rumor")}
        how = f"recomputed from {run_file}'s correct/stale/rumor flags (no dataset)"
    for split in SPLITS:
        s = per_split.get(split) if isinstance(per_split, dict) else None
        judged = [r for r in run_rows if r.get("split") == split]
        if not isinstance(s, dict) or not judged:
            continue  # reported by the invariants above (missing split, n_queries against the run file)
        p = f"{base}.{split}"
        if judgments is not None:
            for flag in ("correct", "stale", "rumor"):
                differ = [str(r.get("query_id")) for r in judged
                          if bool(r.get(flag)) != outcome[str(r.get("query_id"))][flag]]
                row = invariant(f"{out_name} {run_file}: {split} {flag} flags", "0 differing from the recomputed",
                           f"{len(differ)} differ", not differ,
                           ("e.g. " + ", ".join(differ[:5]) if differ else "top-1 id against the dataset's "
                            + {"correct": "graded qrels", "stale": "stale sets", "rumor": "rumour sets"}[flag]))
                row.file = run_file
                rows.append(row)
        bins = s.get("ece_bins") if isinstance(s.get("ece_bins"), dict) else {}
        n_bins = bins.get("n_bins") if isinstance(bins.get("n_bins"), int) and bins.get("n_bins") > 0 else 10
        point = _recompute_point(judged, outcome, n_bins)
        for key in RECOMPUTED_METRICS + SCORE_METRICS:
            if key == M.AUROC and key in s and point.get("auroc_bounds") is not None and s[key] is not None:
                # rank-based: the run file's 6-decimal rounding can tie two confidences the evaluator told apart
                lo, hi = point["auroc_bounds"]
                ok = bad_number(s[key]) is None and lo - CONFIDENCE_TOL <= float(s[key]) <= hi + CONFIDENCE_TOL
                rows.append(invariant(f"{p}.{M.AUROC}", f"recomputed in [{lo:.6f}, {hi:.6f}]", s[key], ok,
                                 f"{how}; the interval spans the orders the run file's rounded ties allow"))
            elif key in s and key in point:
                rows.append(_recomputed_row(f"{p}.{key}", s[key], point[key], how))
        if "ece_error" in point:
            rows.append(invariant(f"{p}.{M.ECE}", "recomputable", "ERROR", False, f"{run_file}: {point['ece_error']}"))
        else:
            rb = point["ece_bins"]
            for key in ("edges", "counts", "accuracy", "mean_confidence"):
                stored = bins.get(key)
                if not isinstance(stored, list) or len(stored) != len(rb[key]):
                    rows.append(invariant(f"{p}.ece_bins.{key}", f"{len(rb[key])} values", stored, False,
                                     "missing or of another length"))
                    continue
                for i, (st, v) in enumerate(zip(stored, rb[key])):
                    if key == "counts":
                        ok = st == v and isinstance(st, int) and not isinstance(st, bool)
                        on_edge = sum(1 for r in judged if r.get("confidence") in rb["edges"][1:-1])
                        rows.append(invariant(f"{p}.ece_bins.counts.{i}", f"recomputed {v}", st, ok, how if ok else
                                         f"{how}; {on_edge} confidence(s) of the split on an interior bin edge"))
                    else:
                        rows.append(_recomputed_row(f"{p}.ece_bins.{key}.{i}", st, v, how))
        cats = s.get("by_category")
        if isinstance(cats, dict):
            for cat, cm in cats.items():
                sel = [r for r in judged if r.get("category") == cat]
                if not sel or not isinstance(cm, dict):
                    rows.append(invariant(f"{p}.by_category.{cat}", f"{split} queries of category {cat} in {run_file}",
                                     0, False, "no such queries in the run file"))
                    continue
                cpoint = _recompute_point(sel, outcome, n_bins)
                for key in RECOMPUTED_CATEGORY_METRICS:
                    if key in cm and key in cpoint:
                        rows.append(_recomputed_row(f"{p}.by_category.{cat}.{key}", cm[key], cpoint[key], how))
    return rows
