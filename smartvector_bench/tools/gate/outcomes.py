"""The per-query outcomes of the experiments without run files, compared like run files (``rankings.line_diff``):
lvl_eval's ``temporal.per_query`` (each query's lake rows and cosines) and feedback_loop's
``feedback_loop_runs.jsonl`` (each round's top two hits per system and query). On a host whose rounding differs
these replace the figures computed from them (``tolerances.RANKING_DERIVED``).

Feedback makes the live system's rounds depend on each other: once a near-tied top-1 of a query that gives
feedback flips (within rounding), the user's reaction differs and every later round of that system may too. Its
later rounds are then not compared, and the row says from which round; on an exact host every round is."""

from __future__ import annotations

import json
from pathlib import Path

from experiments.feedback_loop import OUTCOMES
from smartvector_bench.core.cli_errors import one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import read_run_lines
from smartvector_bench.tools.gate.common import EXPERIMENTS
from smartvector_bench.tools.gate.rankings import line_diff
from smartvector_bench.tools.gate.report import Row

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
        if line_diff(x, y, True) is None:
            continue
        moved += 1
        why = line_diff(x, y, exact)
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
