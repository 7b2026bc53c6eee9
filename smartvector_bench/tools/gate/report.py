"""The gate's rows and how they are printed: the ``metric | expected | got | tolerance | verdict`` table of the
misses (every row with ``--verbose``) and the committed check's one line per file check, value or invariant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Row:
    metric: str
    expected: Any
    got: Any
    tolerance: str
    ok: bool
    note: str = ""
    file: str = ""     # set on the committed-results rows: the file the row is about
    line: str = ""     # the committed line's text after the file, when not "<metric> expected X, committed Y"


def invariant(metric: str, expected: str, got: Any, ok: bool, note: str = "") -> Row:
    return Row(metric, expected, got, "invariant", bool(ok), note)


def fmt(x: Any, width: int = 48) -> str:
    if isinstance(x, float):
        s = f"{x:.6g}"
    elif isinstance(x, list):
        s = "[" + ", ".join(fmt(i, 12) for i in x) + "]"
    else:
        s = str(x)
    return s if len(s) <= width else s[: width - 3] + "..."


def render_table(rows: list[Row], verbose: bool) -> str:
    shown = rows if verbose else [r for r in rows if not r.ok]
    head = ("metric", "expected", "got", "tolerance", "verdict")
    cells = [(r.metric, fmt(r.expected), fmt(r.got), r.tolerance,
              ("PASS" if r.ok else "FAIL") + (f": {r.note}" if r.note and (not r.ok or verbose) else ""))
             for r in shown]
    if not cells:
        return ""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in cells]
    return "\n".join(lines)


def committed_line(r: Row) -> str:
    if r.line:
        return f"{'PASS' if r.ok else 'FAIL'} {r.file}: {r.line}"
    how = ": ".join(t for t in (r.tolerance if r.tolerance != "file" else "", r.note) if t)
    return (f"{'PASS' if r.ok else 'FAIL'} {r.file}: {r.metric} expected {fmt(r.expected)}, committed "
            f"{fmt(r.got)}" + (f" ({how})" if how else ""))


def committed_counts(rows: list[Row]) -> str:
    fails = sum(not r.ok for r in rows)
    kinds = [r.tolerance for r in rows]
    n_file, n_sum = kinds.count("file"), kinds.count("summary")
    return (f"{len(rows) - fails} passed, {fails} failed ({n_file} file checks, {len(rows) - n_file - n_sum} "
            f"replayed parts, {n_sum} sweep summary values recomputed from tidy.csv)")
