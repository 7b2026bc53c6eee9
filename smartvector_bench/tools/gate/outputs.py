"""The rerun check of the experiments that write no run files (reembed_cost, feedback_loop, lvl_eval): the
rerun's result JSON against the committed one, leaf by leaf (``tolerances``: what is never compared, the few
absolute bounds), one row per top-level key. The figures that follow from float32 rankings are compared only on
an exact host; elsewhere their per-query outcomes are (``outcomes``), so a near-tied top-1 flipped by another
CPU is not a regression."""

from __future__ import annotations

from pathlib import Path

from smartvector_bench.core.results import ResultError
from smartvector_bench.tools.gate.common import EXPERIMENTS, read_result
from smartvector_bench.tools.gate.replay import leaves
from smartvector_bench.tools.gate.report import Row
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
