"""The gate's checks of a main run file's per-hit fields (run file format 1.1: the query's text and as_of, one
label per hit, the four-signal systems' signals); a 1.0 file has none and gets none of these rows.

The labels are recomputed here from the dataset's judgments (an id in the graded qrels is ``correct``, else in
the stale set ``stale``, else in the rumour set ``rumor``, else ``other``), not by the evaluator that wrote them.
The signals of a system whose score is the four-signal fusion must fuse, with the run's configured weights, to its
scores (:func:`fusion_rows`)."""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.cli_errors import one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import SIGNAL_KEYS, check_run_row
from smartvector_bench.systems.kg_smartvector.retriever import DEFAULT_WEIGHTS as KG_WEIGHTS
from smartvector_bench.systems.smartvector.signals.fusion import fuse, weights_from_config
from smartvector_bench.tools.gate.recompute import Judgments
from smartvector_bench.tools.gate.report import Row, invariant

# _target_ -> its weights when the config gives none: the systems whose run score is exactly
# fusion.fuse(weights, signals) (SmartVector.score's ``score``, the status policy touching only the rank key;
# KGSmartVector._block's ``final``). SmartVector has no default: its weights come from the `weights` group.
FUSED = {"smartvector_bench.systems.smartvector.retriever.SmartVector": None,
         "smartvector_bench.systems.kg_smartvector.retriever.KGSmartVector": KG_WEIGHTS}
# scores and signals are rounded to 6 decimals and the cosine is float32's: a few 1e-6 at most
FUSION_TOL = 1e-5

REQUIRED_1_1 = ("text", "as_of", "labels")


def _label(cid: str, qid: str, j: Judgments) -> str:
    if cid in j.qrels.get(qid, {}):
        return "correct"
    return "stale" if cid in j.stale.get(qid, set()) else "rumor" if cid in j.rumor.get(qid, set()) else "other"


def _row(metric: str, run_file: str, bad: list[str], expected: str, note: str) -> Row:
    r = invariant(metric, expected, f"{len(bad)} differ", not bad, ("e.g. " + ", ".join(bad[:5])) if bad else note)
    r.file = run_file
    return r


def run_file_rows(out_name: str, system: str, meta: dict | None, run_rows: list[dict],
                  judgments: Judgments | None) -> list[Row]:
    """Rows for ``run_<system>.jsonl``'s 1.1 fields: each line's fields well formed (and present, when ``_meta``
    says 1.1), the rank-1 label equal to the line's correct / stale / rumor flags, and every label equal to the
    dataset's judgment of that hit (when the judgments are at hand)."""
    run_file = f"run_{system}.jsonl"
    base = f"{out_name} {run_file}"
    v11 = (meta or {}).get("run_schema_version") == "1.1"
    if not v11 and not any(k in r for r in run_rows for k in ("labels", "signals")):
        return []
    malformed = []
    for r in run_rows:
        qid = str(r.get("query_id"))
        err = check_run_row(r) or next((f"no '{k}'" for k in REQUIRED_1_1 if v11 and k not in r), None)
        if err:
            malformed.append(f"{qid}: {err}")
    rows = [_row(f"{base}: per-hit fields", run_file, malformed, "0 malformed",
                 "text, as_of, one label (and signal) per ranked hit")]
    labelled = [r for r in run_rows if isinstance(r.get("labels"), list) and len(r["labels"]) == len(r["ranked"])]
    flags = [str(r.get("query_id")) for r in labelled
             if [bool(r.get(f)) for f in ("correct", "stale", "rumor")] != [r["labels"][:1] == [f]
                                                                          for f in ("correct", "stale", "rumor")]]
    rows.append(_row(f"{base}: rank-1 labels", run_file, flags, "0 differing from the correct/stale/rumor flags",
                     "labels[0] against the line's flags"))
    if judgments is not None:
        differ = [f"{r.get('query_id')} rank {n}" for r in labelled
                  for n, (cid, lab) in enumerate(zip(r["ranked"], r["labels"]), 1)
                  if lab != _label(cid, str(r.get("query_id")), judgments)]
        rows.append(_row(f"{base}: hit labels", run_file, differ, "0 differing from the recomputed",
                         "each hit against the dataset's qrels, stale and rumour sets"))
    return rows


def fusion_rows(out_name: str, system: str, run_rows: list[dict], retriever_cfg: dict | None) -> list[Row]:
    """One row for ``run_<system>.jsonl``'s signals: every hit's scores equal to ``fuse`` of its signals with the
    weights of ``retriever_cfg`` (metrics.json ``provenance.config.retrievers.<system>``) within
    :data:`FUSION_TOL`. None for a file without signals; not checked (an ok row saying so) for a system whose
    score is not that fusion."""
    lines = [r for r in run_rows if isinstance(r.get("signals"), dict) and check_run_row(r) is None]
    if not lines:
        return []
    run_file, metric = f"run_{system}.jsonl", f"{out_name} run_{system}.jsonl: fused signals"
    target = (retriever_cfg or {}).get("_target_")
    if target not in FUSED:
        r = invariant(metric, "== scores (four-signal systems)", "not checked", True,
                      f"retrievers.{system}._target_={target!r}: its score is not the four-signal fusion")
        r.file = run_file
        return [r]
    raw = retriever_cfg.get("weights")
    try:
        w = weights_from_config(dict(FUSED[target] if raw is None else raw),
                                f"provenance.config.retrievers.{system}.weights")
    except (BenchError, TypeError, ValueError) as exc:
        r = invariant(metric, "== scores", "no weights", False, one_line(exc))
        r.file = run_file
        return [r]
    differ = []
    for rec in lines:
        scores = rec.get("scores") or []
        for n, score in enumerate(scores, 1):
            vals = {name: rec["signals"][key][n - 1] for key, name in SIGNAL_KEYS.items()}
            if score is None or any(v is None for v in vals.values()):
                differ.append(f"{rec['query_id']} rank {n}: a null score or signal")
                continue
            fused = float(fuse(w, **{name: np.float64(v) for name, v in vals.items()}))
            if not abs(fused - score) <= FUSION_TOL:
                differ.append(f"{rec['query_id']} rank {n}: score {score}, fused {fused:.6f}")
    return [_row(metric, run_file, differ, f"0 hits whose score differs from the fused signals by > {FUSION_TOL:g}",
                 f"weights {w.semantic:g} / {w.temporal:g} / {w.confidence:g} / {w.relational:g} from "
                 f"provenance.config.retrievers.{system}")]
