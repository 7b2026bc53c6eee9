"""A rerun's ranked lists against the committed ones: the rerun check of every experiment that writes run files.

Each query line of a rerun's ``run_<system>.jsonl`` is compared with the committed line of the same key (the
query id, or ``key`` when a file holds several lines per query). On an exact host (``tolerances.exact_host``)
the lines must be equal. Elsewhere a difference passes only when float rounding explains it
(``tolerances``): the same number of hits; every shared hit's score, and the confidence, within the score bound;
a change of order only between hits that may swap (near-tied in both runs, never exactly tied in both: the tie
rule orders those); a hit that leaves or enters only at the list's cut-off, near-tied with the lowest score and
with the hit it traded places with. The rules read scores, not positions, so they also hold for a system that
re-ranks its candidates by another key (recent_cosine): a candidate can only enter or leave at the cut-off.
A system whose scores jump with its inputs (rank fusion, trees: hybrid_valid, ltr) writes each hit's bounds
under rounding of its inputs into its lines (``Run.bounds``); those lines are compared within them
(:func:`bounded_diff`).

One row per run file; it names the first lines that differ beyond rounding."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from smartvector_bench.core.cli_errors import one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import read_run_lines
from smartvector_bench.tools.gate.common import Row
from smartvector_bench.tools.gate.tolerances import BOUNDS_SLACK, may_swap, score_bound


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _interval(pair, default: float) -> tuple[float, float]:
    """A stored [lo, hi] (null: unbounded on that side)."""
    lo, hi = (pair if isinstance(pair, list) and len(pair) == 2 else [default, default])
    return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))


def _inside(x: float, iv: tuple[float, float]) -> bool:  # slack: the bounds are computed in another order
    slack = BOUNDS_SLACK * max(1.0, abs(x))
    return iv[0] - slack <= x <= iv[1] + slack


def _confidence_interval(line: dict) -> tuple[float, float]:
    """A line's stored confidence bounds, else its confidence within the score bound."""
    c = _num(line.get("confidence"))
    stored = line.get("confidence_bounds")
    return _interval(stored, c) if stored else (c - score_bound(c, False), c + score_bound(c, False))


def bounded_diff(a: dict, b: dict) -> str | None:
    """:func:`line_diff` for lines that carry their own rounding bounds (``bounds``, ``confidence_bounds``: run
    schema 1.2, ``Run.bounds``), on another host: each run's values must lie within the other run's bounds, where
    it gives them (a line written before schema 1.2 is read through the other's only); two hits may change order
    only when their bounds overlap in every run that gives them, and never when exactly tied in both; a hit may
    leave (enter) the list only when it could score below every hit that stays (a hit without stored bounds: its
    score within the score bound)."""
    a_ids, b_ids = list(a.get("ranked") or []), list(b.get("ranked") or [])
    a_sc, b_sc = [_num(s) for s in a.get("scores") or []], [_num(s) for s in b.get("scores") or []]
    if len(a_ids) != len(b_ids):
        return f"{len(b_ids)} hits, committed {len(a_ids)}"
    if len(a_sc) != len(a_ids) or len(b_sc) != len(b_ids) or None in a_sc or None in b_sc \
            or len(set(a_ids)) != len(a_ids) or len(set(b_ids)) != len(b_ids):
        return "the lists differ, and one lacks a number per hit or holds a hit twice"

    def ivs(line: dict, ids: list, sc: list) -> dict:
        stored = line.get("bounds")
        return {c: _interval(stored[i], s) if stored else (s - score_bound(s, False), s + score_bound(s, False))
                for i, (c, s) in enumerate(zip(ids, sc))}

    ia, ib = ivs(a, a_ids, a_sc), ivs(b, b_ids, b_sc)
    sides = [iv for iv, line in ((ia, a), (ib, b)) if line.get("bounds") is not None]  # the runs that bound
    sa, sb = dict(zip(a_ids, a_sc)), dict(zip(b_ids, b_sc))
    ca, cb = _num(a.get("confidence")), _num(b.get("confidence"))
    if (ca is None) != (cb is None):
        return f"confidence {cb!r}, committed {ca!r}"
    if ca is not None:
        bounding = [t for t in ((cb, a, "committed"), (ca, b, "rerun")) if t[1].get("confidence_bounds")]
        for x, line, who in bounding or ((cb, a, "committed"),):
            if not _inside(x, iv := _confidence_interval(line)):
                return f"confidence {cb!r}, committed {ca!r}: outside the {who} run's bounds {list(iv)}"
    shared = [c for c in a_ids if c in sb]
    for c in shared:
        for x, iv, who in ((sb[c], ia, "committed"), (sa[c], ib, "rerun")):
            if any(iv is side for side in sides) and not _inside(x, iv[c]):
                return f"{c} scored {sb[c]!r}, committed {sa[c]!r}: outside the {who} run's bounds {list(iv[c])}"
    overlap = lambda u, v: u[0] <= v[1] and v[0] <= u[1]  # noqa: E731
    pos = {c: i for i, c in enumerate(b_ids)}
    for i, x in enumerate(shared):
        for y in shared[i + 1:]:
            if pos[y] < pos[x]:
                if sa[x] == sa[y] and sb[x] == sb[y]:
                    return f"{y} now ranks above {x}: exactly tied in both runs (the tie rule orders them)"
                if not all(overlap(iv[x], iv[y]) for iv in sides):
                    return f"{y} now ranks above {x}: scores {sa[y]!r} and {sa[x]!r}, bounds apart"
    for iv, mine, others, how in ((ia, a_ids, sb, "left"), (ib, b_ids, sa, "entered")):
        for c in (c for c in mine if c not in others):
            floor = min((iv[h][1] for h in shared), default=math.inf)
            if iv[c][0] > floor + BOUNDS_SLACK * max(1.0, abs(floor)):
                return f"{c} {how} the list, but its bounds {list(iv[c])} keep it above a hit that stayed"
    return None


def line_diff(a: dict, b: dict, exact: bool) -> str | None:
    """Why the rerun line ``b`` is not the committed line ``a`` up to float rounding (None when it is)."""
    a_ids, b_ids = list(a.get("ranked") or []), list(b.get("ranked") or [])
    a_sc, b_sc = [_num(s) for s in a.get("scores") or []], [_num(s) for s in b.get("scores") or []]
    ca, cb = _num(a.get("confidence")), _num(b.get("confidence"))
    if (a_ids, a_sc, ca) == (b_ids, b_sc, cb):
        return None
    if not exact and (a.get("bounds") is not None or b.get("bounds") is not None):
        return bounded_diff(a, b)
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
