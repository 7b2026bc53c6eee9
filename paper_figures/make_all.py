"""Regenerate every paper figure from ``results/`` alone (``make figures``).

Runs each figure script's ``make(results_dir, out_dir)`` in a fixed order and prints what was made and what was
skipped (a missing input file). Exit code 0 unless a present input file is malformed (1; every other figure
is still made) or the command line is wrong (2).

    python paper_figures/make_all.py [--results results] [--out paper_figures/figures]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

try:
    from . import common as c
except ImportError:
    import common as c

FIGURES = ("fig_main", "fig_main_large", "fig_facts", "fig_reliability", "fig_leakage", "fig_shortcut_audit", "fig_reembed_cost",
           "fig_feedback_loop", "fig_contradiction_sweep", "fig_ablation", "fig_seeds", "fig_half_life", "fig_perf",
           "fig_lvl_eval", "fig_filtered_ann")


def module(name: str):
    return importlib.import_module(f"{__package__}.{name}" if __package__ else name)


def make_all(results_dir: Path, out_dir: Path, figures=FIGURES) -> tuple[list[c.Outcome], list[tuple[str, str]]]:
    """Every figure: (outcomes of the figures made or skipped, [(figure, error)] for malformed inputs)."""
    outcomes, errors = [], []
    for name in figures:
        try:
            outcomes.append(module(name).make(Path(results_dir), Path(out_dir)))
        except c.ResultError as e:  # a malformed input: its result class's or a figure's own check
            print(f"{name}: ERROR, malformed input: {e}", file=sys.stderr, flush=True)
            errors.append((name, str(e)))
    return outcomes, errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Regenerate every paper figure from results/ alone.")
    ap.add_argument("--results", default=str(c.DEFAULT_RESULTS), help="results folder (default: results/)")
    ap.add_argument("--out", default=str(c.DEFAULT_OUT), help="output folder (default: paper_figures/figures/)")
    args = ap.parse_args(argv)
    outcomes, errors = make_all(Path(args.results), Path(args.out))
    made = [o for o in outcomes if o.skipped is None]
    skipped = [o for o in outcomes if o.skipped is not None]
    print(f"\nmade {len(made)} figure(s):")
    for o in made:
        print(f"  {o.figure}: " + ", ".join(c.rel(f) for f in o.files))
    print(f"skipped {len(skipped)} figure(s):")
    for o in skipped:
        print(f"  {o.figure}: {o.skipped}")
    if errors:
        print(f"failed {len(errors)} figure(s), malformed input:")
        for name, err in errors:
            print(f"  {name}: {err}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
