"""A rerun's ranked lists against the committed ones: the rerun check of every experiment that writes run files.

Each query line of a rerun's ``run_<system>.jsonl`` is compared with the committed line of the same key (the
query id, or ``key`` when a file holds several lines per query). On an exact host (``tolerances.exact_host``)
the lines must be equal. Elsewhere a difference passes only when float rounding explains it
(``tolerances``): the same number of hits; every shared hit's score, and the confidence, within the score bound;
a change of order only between hits that may swap (near-tied in both runs, never exactly tied in both: the tie
rule orders those); a hit that leaves or enters only at the list's cut-off, near-tied with the lowest score and
with the hit it traded places with. The rules read scores, not positions, so they also hold for a system that
re-ranks its candidates by another key (recent_cosine): a candidate can only enter or leave at the cut-off.

One row per run file; it names the first lines that differ beyond rounding."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from smartvector_bench.core.cli_errors import one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import read_run_lines
from smartvector_bench.tools.gate.common import Row
from smartvector_bench.tools.gate.tolerances import may_swap, score_bound


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def line_diff(a: dict, b: dict, exact: bool) -> str | None:
    """Why the rerun line ``b`` is not the committed line ``a`` up to float rounding (None when it is)."""
    a_ids, b_ids = list(a.get("ranked") or []), list(b.get("ranked") or [])
    a_sc, b_sc = [_num(s) for s in a.get("scores") or []], [_num(s) for s in b.get("scores") or []]
    ca, cb = _num(a.get("confidence")), _num(b.get("confidence"))
    if (a_ids, a_sc, ca) == (b_ids, b_sc, cb):
        return None
    if exact:  # the first difference: ids, then scores, then the confidence
        what, x, y = next(t for t in (("ranked", a_ids, b_ids), ("scores", a_sc, b_sc), ("confidence", [ca], [cb]))
                          if t[1] != t[2])
        i = next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), min(len(x), len(y)))
        return f"{what} at {i + 1}: {y[i] if i < len(y) else None!r}, committed {x[i] if i < len(x) else None!r} (exact host)"
    if len(a_ids) != len(b_ids):
        return f"{len(b_ids)} hits, committed {len(a_ids)}"
    if len(a_sc) != len(a_ids) or len(b_sc) != len(b_ids) or None in a_sc or None in b_sc:
        return "the lists differ, and one lacks a number per hit: no evidence of a tie"
    if (ca is None) != (cb is None) or (ca is not None and abs(ca - cb) > score_bound(ca, exact)):
        return f"confidence {cb!r}, committed {ca!r}"
    if a_ids == b_ids:  # the same hits in the same order (a list may hold one text twice): only the scores moved
        i = next((i for i, (x, y) in enumerate(zip(a_sc, b_sc)) if abs(x - y) > score_bound(x, exact)), None)
        return None if i is None else f"{a_ids[i]} at rank {i + 1} scored {b_sc[i]!r}, committed {a_sc[i]!r}"
    if len(set(a_ids)) != len(a_ids) or len(set(b_ids)) != len(b_ids):
        return "the lists differ in order, and one holds a hit twice: no evidence of a tie"
    sa, sb = dict(zip(a_ids, a_sc)), dict(zip(b_ids, b_sc))
    for cid in (c for c in a_ids if c in sb):
        if abs(sa[cid] - sb[cid]) > score_bound(sa[cid], exact):
            return f"{cid} scored {sb[cid]!r}, committed {sa[cid]!r}"
    shared = [c for c in a_ids if c in sb]
    pos = {c: i for i, c in enumerate(b_ids)}
    for i, x in enumerate(shared):
        for y in shared[i + 1:]:
            if pos[y] < pos[x] and not may_swap((sa[x], sa[y]), (sb[x], sb[y]), exact):
                tie = " (exactly tied: the tie rule orders them)" if sa[x] == sa[y] and sb[x] == sb[y] else ""
                return f"{y} now ranks above {x}: scores {sa[y]!r} and {sa[x]!r}{tie}"
    left, entered = [c for c in a_ids if c not in sb], [c for c in b_ids if c not in sa]
    for cid, s, lowest, how in [*((c, sa[c], min(a_sc), "left") for c in left),
                                *((c, sb[c], min(b_sc), "entered") for c in entered)]:
        if s - lowest > 2 * score_bound(s, exact):
            return f"{cid} {how} the list at score {s!r}, above its cut-off {lowest!r}"
    for x, y in zip(sorted(sa[c] for c in left), sorted(sb[c] for c in entered)):
        if abs(x - y) > 2 * score_bound(x, exact):
            return f"a hit scored {x!r} left the list for one scored {y!r}: not tied"
    return None


def compare_line(a: dict, b: dict, exact: bool) -> tuple[bool, str | None]:
    """(whether the line moved at all, why beyond rounding or None); the bounded rules only for a moved line."""
    why = line_diff(a, b, True)
    return why is not None, why if exact or why is None else line_diff(a, b, False)


@dataclass
class FileDiff:
    """One run file of a rerun against the committed one."""
    n_lines: int = 0
    n_moved: int = 0                       # lines that differ at all (within rounding or not)
    unexplained: list[str] = field(default_factory=list)
    error: str | None = None


def _lines(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for lineno, rec in read_run_lines(path)[1]:
        key = str(rec.get("key", rec.get("query_id"))) if isinstance(rec, dict) else None
        if key is None or key in out:
            raise BenchError(f"{path}:{lineno}: not a JSON object, or a second line for its query")
        out[key] = rec
    return out


def diff_file(committed: Path, fresh: Path, exact: bool) -> FileDiff:
    d = FileDiff()
    try:
        a, b = _lines(committed), _lines(fresh)
    except BenchError as exc:
        d.error = one_line(exc)
        return d
    d.n_lines = len(a)
    d.unexplained = [f"{q}: not in the rerun" for q in a if q not in b] + [f"{q}: not committed" for q in b if q not in a]
    for q in (q for q in a if q in b):
        moved, why = compare_line(a[q], b[q], exact)
        d.n_moved += moved
        d.unexplained += [f"{q}: {why}"] if why else []
    return d


def compare_folders(label: str, committed: Path, fresh: Path, exact: bool, how: str) -> list[Row]:
    """One row per run file (``run_*.jsonl``) of either folder: the rerun's ranked lists against the committed."""
    names = sorted({p.name for f in (committed, fresh) for p in f.glob("run_*.jsonl")})
    if not names:
        return [Row(f"{label}: run files", "at least one", "none", how, False, f"no run_*.jsonl in {committed}")]
    rows = []
    for name in names:
        metric = f"{label} {name}: ranked lists"
        if not (committed / name).is_file() or not (fresh / name).is_file():
            rows.append(Row(metric, "in both runs", "MISSING", how, False,
                            f"not written by the {'rerun' if (committed / name).is_file() else 'committed run'}"))
            continue
        d = diff_file(committed / name, fresh / name, exact)
        got = ("ERROR" if d.error else f"{len(d.unexplained)} of {d.n_lines} lines differ" if d.unexplained else
               f"equal up to rounding ({d.n_moved} of {d.n_lines} lines move)" if d.n_moved else "equal")
        rows.append(Row(metric, "the committed ones", got, how, not d.error and not d.unexplained,
                        d.error or "; ".join(d.unexplained[:3])))
    return rows
