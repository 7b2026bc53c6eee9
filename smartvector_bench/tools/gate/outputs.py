"""The rerun check of the experiments that write no run files (reembed_cost, feedback_loop, lvl_eval).

Their result JSON against the committed one, leaf by leaf, one row per top-level key (:func:`compare_results`);
the figures that follow from float32 rankings only on an exact host, elsewhere their per-query outcomes, like run
files (:func:`compare_outcomes`): lvl_eval's ``temporal.per_query`` and feedback_loop's
``feedback_loop_runs.jsonl``. Feedback chains the live system's rounds: once its near-tied top-1 flips within
rounding, the user's reaction may differ, so its later rounds are not compared, and the row says from which."""

from __future__ import annotations

import json
from pathlib import Path

from experiments.feedback_loop import OUTCOMES
from smartvector_bench.core.cli_errors import one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results import ResultError
from smartvector_bench.core.run import read_run_lines
from smartvector_bench.tools.gate.common import EXPERIMENTS, Row, read_result
from smartvector_bench.tools.gate.rankings import compare_line
from smartvector_bench.tools.gate.replay import leaves
from smartvector_bench.tools.gate.tolerances import RANKING_DERIVED, compared, same_value


def experiment_dir(root: Path, name: str) -> Path | None:
    """Where ``name``'s outputs are under ``root``: ``root/<name>/`` (a results root) or ``root`` itself (one
    run folder holding the experiment's result file). None if neither."""
    for cand in (root / name, root):
        if (cand / EXPERIMENTS[name].result_file).is_file():
            return cand
    return None


def compare_results(name: str, committed: Path, fresh: Path, exact: bool, how: str) -> list[Row]:
    """One row per top-level key of the committed result JSON of ``name``: the rerun's leaves equal (see the
    module docstring); a ranking-derived key on another host is one passing row that says where it is checked."""
    exp = EXPERIMENTS[name]
    try:
        a = read_result(name, committed / exp.result_file)
        b = read_result(name, fresh / exp.result_file)
    except ResultError as exc:
        return [Row(f"{name} {exp.result_file}", "readable", "ERROR", how, False, str(exc))]
    derived = RANKING_DERIVED.get(exp.kind)
    la = {p: v for p, v in leaves(a).items() if compared(p)}
    lb = {p: v for p, v in leaves(b).items() if compared(p)}
    rows = []
    for top in sorted({p.split(".", 1)[0] for p in la} | {p.split(".", 1)[0] for p in lb}):
        paths = sorted(p for p in set(la) | set(lb) if p.split(".", 1)[0] == top)
        if not exact and derived is not None and derived.search(top):
            rows.append(Row(f"{name} {exp.result_file}: {top}", "the committed figures", "not compared here",
                            how, True, "follows from float32 rankings: its per-query outcomes are compared"))
            continue
        if not exact and derived is not None:
            skip = [p for p in paths if derived.search(p)]
            paths = [p for p in paths if p not in skip]
        misses = [f"{p}: {lb.get(p, 'MISSING')!r}, committed {la.get(p, 'MISSING')!r}" for p in paths
                  if p not in la or p not in lb or not same_value(p, lb[p], la[p])]
        rows.append(Row(f"{name} {exp.result_file}: {top}", f"the committed {len(paths)} figures",
                        "equal" if not misses else f"{len(misses)} differ", how, not misses,
                        "; ".join(misses[:3]) + (" ..." if len(misses) > 3 else "")))
    return rows


LEARNS = "smartvector_live"  # the one system of feedback_loop whose store its own answers change


def _lvl_lines(folder: Path) -> dict[str, dict]:
    doc = json.loads((folder / EXPERIMENTS["lvl_eval"].result_file).read_text(encoding="utf-8"))
    return {str(r["query_id"]): r for r in doc["temporal"]["per_query"]}


def _feedback_lines(folder: Path) -> dict[str, dict]:
    return {str(rec["key"]): rec for _, rec in read_run_lines(folder / OUTCOMES)[1]}


def compare_outcomes(name: str, committed: Path, fresh: Path, exact: bool, how: str) -> list[Row]:
    kind = EXPERIMENTS[name].kind
    if kind not in ("lvl_eval", "feedback_loop"):
        return []
    what = "temporal.per_query" if kind == "lvl_eval" else OUTCOMES
    label = f"{name} {what}: ranked lists"
    try:
        a, b = (_lvl_lines(f) if kind == "lvl_eval" else _feedback_lines(f) for f in (committed, fresh))
    except (OSError, ValueError, KeyError, TypeError, BenchError) as exc:
        why = one_line(exc) if isinstance(exc, BenchError) else f"{type(exc).__name__}: {exc}"
        return [Row(label, "the committed ones", "ERROR", how, False, why)]
    misses = [f"{k}: not in the rerun" for k in a if k not in b] + [f"{k}: not committed" for k in b if k not in a]
    diverged: int | None = None  # the first round after which LEARNS's feedback may differ
    moved = 0
    for key in sorted((k for k in a if k in b), key=lambda k: (a[k].get("round", 0), k)):
        x, y = a[key], b[key]
        if diverged is not None and x.get("system") == LEARNS and x["round"] > diverged:
            continue
        changed, why = compare_line(x, y, exact)
        if not changed:
            continue
        moved += 1
        if why:
            misses.append(f"{key}: {why}")
        elif kind == "feedback_loop" and x.get("system") == LEARNS and x["ranked"][:1] != y["ranked"][:1]:
            diverged = x["round"] if diverged is None else min(diverged, x["round"])
    note = "; ".join(misses[:3])
    if not misses and diverged is not None:
        note = (f"{LEARNS}'s rounds after {diverged} not compared: a near-tied top-1 flipped within rounding in "
                f"round {diverged}, so the user's feedback, and the store, may differ from then on")
    got = "equal" if not moved else (f"{len(misses)} of {len(a)} differ" if misses else
                                     f"equal up to rounding ({moved} of {len(a)} move)")
    return [Row(label, "the committed ones", got, how, not misses, note)]
