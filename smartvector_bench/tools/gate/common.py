"""What every part of the regression gate shares: where the results are, the experiments it knows (declared
once, in ``experiments/__init__.py``), how it reads their result files, its rows and how they are printed, its
exit codes and its bad-input error."""

from __future__ import annotations

from dataclasses import dataclass
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
EXPERIMENTS = RUNS  # the published single-run presets (results/<name>/, one result file each)


class BadInput(Exception):
    """Bad command line or input files: one line on stderr, exit code 2."""


def rel(p: Path) -> str:
    """``p`` relative to the repository when it is inside it (as messages show paths)."""
    try:
        return str(Path(p).resolve().relative_to(REPO))
    except ValueError:
        return str(p)


def read_result(name: str, path: Path) -> dict[str, Any]:
    """The result file of experiment ``name`` at ``path``, read through the result object of its kind (a file
    without the kind's shape raises ResultError naming the file and the key); a kind without one is only parsed."""
    cls = KINDS.get(EXPERIMENTS[name].kind)
    return read_json(path, rel(path)) if cls is None else cls.load(path, rel(path)).to_dict()


@dataclass
class Row:
    """One check: what, against what, the outcome, how it was compared, and why it failed."""
    metric: str
    expected: Any
    got: Any
    tolerance: str
    ok: bool
    note: str = ""
    file: str = ""     # the committed file a committed-check row is about


def fmt(x: Any, width: int = 48) -> str:
    s = f"{x:.6g}" if isinstance(x, float) else str(x)
    return s if len(s) <= width else s[: width - 3] + "..."


def render_table(rows: list[Row], verbose: bool) -> str:
    """``metric | expected | got | tolerance | verdict`` of the misses (every row when ``verbose``)."""
    cells = [(r.metric, fmt(r.expected), fmt(r.got), r.tolerance,
              ("PASS" if r.ok else "FAIL") + (f": {r.note}" if r.note and (not r.ok or verbose) else ""))
             for r in rows if verbose or not r.ok]
    lines = ["| metric | expected | got | tolerance | verdict |", "|---|---|---|---|---|"]
    return "\n".join(lines + ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in cells]) \
        if cells else ""


def committed_line(r: Row) -> str:
    where = f"{r.file}: " if r.file else ""
    return (f"{'PASS' if r.ok else 'FAIL'} {where}{r.metric}: expected {fmt(r.expected)}, got {fmt(r.got)}"
            + (f" ({r.tolerance}: {r.note})" if r.note else ""))


def committed_counts(rows: list[Row]) -> str:
    fails, kinds = sum(not r.ok for r in rows), [r.tolerance for r in rows]
    n_file, n_sum = kinds.count("file"), kinds.count("summary")
    return (f"{len(rows) - fails} passed, {fails} failed ({n_file} file checks, {len(rows) - n_file - n_sum} "
            f"replayed parts, {n_sum} sweep summaries and tables)")
