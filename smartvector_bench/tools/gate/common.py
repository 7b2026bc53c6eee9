"""What every part of the regression gate shares: where the results are, the experiments it knows (declared
once, in ``experiments/__init__.py``), how it reads their result files, its exit codes and its bad-input error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from experiments import RUNS
from smartvector_bench.core.results import KINDS
from smartvector_bench.core.results.base import read_json

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


def read_result(name: str, path: Path) -> dict[str, Any]:
    """The result file of experiment ``name`` at ``path`` as its JSON document, read through the result object of
    the experiment's kind (``smartvector_bench.core.results.KINDS``: validated, so a file without the shape of
    its kind raises ResultError naming the file, as ``rel`` shows it, and the key). A kind without a result
    object (shortcut_audit) is only parsed."""
    cls = KINDS.get(EXPERIMENTS[name].kind)
    if cls is None:
        return read_json(path, rel(path))
    return cls.load(path, rel(path)).to_dict()
