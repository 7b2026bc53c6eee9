"""What every part of the regression gate shares: where the results are, the experiments it knows (declared
once, in ``experiments/__init__.py``), its exit codes and its bad-input error."""

from __future__ import annotations

from pathlib import Path

from experiments import RUNS

PROG = "smartvector-regress"
REPO = Path(__file__).resolve().parents[3]
RESULTS_DIR = REPO / "results"
EXPECTED = RESULTS_DIR / "expected.json"
EXIT_MISS, EXIT_BAD_INPUT = 1, 2
# The published single-run presets (results/<name>/, one result file each), in the expected file's order.
EXPERIMENTS = RUNS


class BadInput(Exception):
    """Bad command line or input files: one line on stderr, exit code 2."""


def rel(p: Path) -> str:
    """``p`` relative to the repository when it is inside it (as messages show paths)."""
    try:
        return str(Path(p).resolve().relative_to(REPO))
    except ValueError:
        return str(p)
