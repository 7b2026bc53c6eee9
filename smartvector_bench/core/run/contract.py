"""The retriever output contract, and the guard around every call into a retriever.

A system is any importable class (in-tree or an outside package), so the harness trusts none of them: every
``search`` result is checked by :func:`check_search` before it is scored or written, ``describe`` and
``contradiction_detection`` by :func:`check_info`, ``hit_signals`` by :func:`check_signals`, and every call runs
inside :func:`retriever_call`. Each failure is one :class:`RetrieverFault` line naming the system, the call and,
for a ranking, the query and the rule (exit 2 through the entry points' BenchError handling).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from smartvector_bench.core.atomic import dumps_json
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import SIGNAL_KEYS, Run
from smartvector_bench.core.scratch import Terminated

MAX_REASON = 300  # characters of a retriever's own exception message kept in the line


class RetrieverFault(BenchError):
    """A retriever raised, exited, or returned something outside the contract. Unlike a BenchError from
    ``check_dataset`` (the dataset cannot serve it, so ``systems: all`` leaves it out), this stops the run."""


def _num(x) -> str:
    return format(float(x), ".6g")


def _a(value) -> str:
    """``value``'s type with its article: "a dict", "an int64"."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > MAX_REASON:
        text = text[:MAX_REASON] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def retriever_call(system: str, call: str) -> Iterator[None]:
    """Run one call into a retriever: any exception, or ``sys.exit``, becomes one line naming ``system`` and
    ``call``. A BenchError keeps its message (prefixed with ``systems: <system>.<call>:`` unless it names the
    system already). The harness's own :class:`~smartvector_bench.core.scratch.Terminated` (SIGTERM) and
    KeyboardInterrupt pass unchanged."""
    try:
        yield
    except Terminated:
        raise
    except BenchError as exc:
        if re.search(rf"(?<![\w.]){re.escape(system)}(?![\w])", str(exc)):
            raise
        raise BenchError(f"systems: {system}.{call}: {' '.join(str(exc).split())}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a plug-in's bug or exit, not ours
        # no "from": the retriever's traceback stays as __context__ (shown with HYDRA_FULL_ERROR=1) while the
        # one-line message, which follows __cause__ only, stays one line
        raise RetrieverFault(f"systems: {system}.{call} raised {_reason(exc)}")  # noqa: B904


def _array(value, field: str, kinds: str, what: str, fail) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise fail(f"Run.{field} is {_a(value)}, not a numpy array")
    if value.dtype.kind not in kinds:
        raise fail(f"Run.{field} has dtype {value.dtype}; it must hold {what}")
    return value


def _bounds(out: Run, shape: tuple, fail) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The run's optional rounding bounds (``Run.bounds``, ``Run.confidence_bounds``) as float64, shapes checked."""
    got = []
    for field, want in (("bounds", (*shape, 2)), ("confidence_bounds", (shape[0], 2))):
        value = getattr(out, field, None)
        if value is not None:
            value = _array(value, field, "iuf", "real numbers", fail).astype(np.float64)
            if value.shape != want:
                raise fail(f"Run.{field} has shape {value.shape}; expected {want}")
        got.append(value)
    return got[0], got[1]


def check_search(system: str, out: object, query_ids: Sequence[str], k: int, n_corpus: int,
                 ordered: bool = True, call: str = "search") -> Run:
    """``out``, a retriever's answer to ``len(query_ids)`` queries, checked against the contract and returned as
    a new :class:`Run` named ``system`` (ids int64, scores and confidence float64). The rules, in order:

    - a :class:`Run` whose ``ranked`` and ``scores`` have shape ``(n_queries, <= k)`` and ``confidence``
      ``(n_queries,)``; ids integers, scores and confidence real numbers;
    - per query, at each rank: an id in ``[0, n_corpus)``, or ``-1`` padding with a NaN score and no hit after
      it; no id twice; a finite score; with ``ordered``, no score above the one at the rank before;
    - confidence in [0, 1]; NaN only for a query with no hit.

    RetrieverFault naming the first query (in batch order) that breaks a rule, its rank and the rule."""
    where = f"systems: {system}.{call} broke the output contract"

    def fail(what: str) -> RetrieverFault:
        return RetrieverFault(f"{where}: {what}")

    if not isinstance(out, Run):
        raise fail(f"returned {_a(out)}, not a {Run.__module__}.Run")
    n_q = len(query_ids)
    ranked = _array(out.ranked, "ranked", "iu", "integer corpus rows", fail)
    scores = _array(out.scores, "scores", "iuf", "real numbers", fail)
    conf = _array(out.confidence, "confidence", "iuf", "real numbers", fail)
    if ranked.ndim != 2 or ranked.shape[0] != n_q or ranked.shape[1] > k:
        raise fail(f"Run.ranked has shape {ranked.shape}; expected ({n_q}, <= {k}): one row per query, at most "
                   f"k={k} ranks")
    if scores.shape != ranked.shape:
        raise fail(f"Run.scores has shape {scores.shape}; expected {ranked.shape}, the shape of Run.ranked")
    if conf.shape != (n_q,):
        raise fail(f"Run.confidence has shape {conf.shape}; expected ({n_q},): one per query")

    # Ranges first, on the ids as given (an unsigned or wide id must not wrap when converted).
    bad_range = ranked >= n_corpus if ranked.dtype.kind == "u" else (ranked < -1) | (ranked >= n_corpus)
    ids = np.where(bad_range, -2, ranked).astype(np.int64)
    s = scores.astype(np.float64)
    c = conf.astype(np.float64)
    pad, hit = ids == -1, ids >= 0
    hit_from = np.logical_or.accumulate(hit[:, ::-1], axis=1)[:, ::-1]  # a hit at this rank or later
    pad_early = pad & np.pad(hit_from[:, 1:], ((0, 0), (0, 1)))
    pad_score = pad & ~np.isnan(s)
    # a repeat: equal to the id before it in the row's stable sort by id (so the later rank is flagged)
    order = np.argsort(np.where(hit, ids, -1 - np.arange(ids.shape[1])), axis=1, kind="stable")
    by_id = np.take_along_axis(ids, order, axis=1)
    again = np.zeros_like(hit)
    np.put_along_axis(again, order[:, 1:], (by_id[:, 1:] == by_id[:, :-1]) & (by_id[:, 1:] >= 0), axis=1)
    not_finite = hit & ~np.isfinite(s)
    rises = np.zeros_like(hit)
    if ordered:
        rises[:, 1:] = hit[:, 1:] & hit[:, :-1] & (s[:, 1:] > s[:, :-1])
    rules = [bad_range, pad_early, pad_score, again, not_finite, rises]
    entry_bad = np.logical_or.reduce(rules)
    has_hit = hit.any(axis=1)
    in_unit = (c >= 0) & (c <= 1)
    conf_bad = np.where(has_hit, ~in_unit, ~(in_unit | np.isnan(c)))
    row_bad = entry_bad.any(axis=1) | conf_bad
    if not row_bad.any():
        return Run(system, ids, s, c, *_bounds(out, ranked.shape, fail))

    q = int(np.argmax(row_bad))
    head = f"query {query_ids[q]}"
    if not entry_bad[q].any():
        n_hits = int(hit[q].sum())
        if np.isnan(c[q]):
            raise fail(f"{head}: confidence nan with {n_hits} hit(s); NaN is allowed only for a query with no hit")
        raise fail(f"{head}: confidence {_num(c[q])} is outside [0, 1]")
    r = int(np.argmax(entry_bad[q]))
    rule = next(i for i, m in enumerate(rules) if m[q, r])
    at = f"rank {r + 1}"
    if rule == 0:
        raise fail(f"{head}: id {int(ranked[q, r])} at {at} is out of range [0, {n_corpus})")
    if rule == 1:
        nxt = r + 1 + int(np.argmax(hit[q, r + 1:]))
        raise fail(f"{head}: padding -1 at {at} comes before a hit (id {ids[q, nxt]} at rank {nxt + 1}); -1 "
                   f"may only pad the end of a ranking")
    if rule == 2:
        raise fail(f"{head}: padding -1 at {at} has score {_num(s[q, r])}; padding takes a NaN score")
    if rule == 3:
        first = int(np.argmax(ids[q] == ids[q, r]))
        raise fail(f"{head}: id {ids[q, r]} at {at} repeats rank {first + 1}; ids must be unique per query")
    if rule == 4:
        raise fail(f"{head}: score {_num(s[q, r])} at {at} (id {ids[q, r]}) is not finite")
    raise fail(f"{head}: score {_num(s[q, r])} at {at} is above {_num(s[q, r - 1])} at rank {r}; scores must "
               f"not increase down the ranking")


def _json_problem(value) -> tuple[str, str] | None:
    """(where, what) of the first value in ``value`` that a result file cannot hold, or None. Depth first
    without recursion (a hostile value may nest deeper than the interpreter's stack); a container reached again
    below itself is a cycle, one reached again elsewhere is fine (JSON writes it twice)."""
    stack: list = [(value, "")]
    inside: set[int] = set()
    while stack:
        v, path = stack.pop()
        if path is None:  # leaving container v
            inside.discard(v)
            continue
        if v is None or isinstance(v, (bool, int, str)):
            continue
        if isinstance(v, float):
            if not np.isfinite(v):
                return path, f"{_num(v)} (NaN and infinity are not JSON)"
            continue
        if not isinstance(v, (dict, list, tuple)):
            return path, _a(v)
        if id(v) in inside:
            return path, "a container that holds itself"
        inside.add(id(v))
        stack.append((id(v), None))
        if isinstance(v, dict):
            bad = [key for key in v if not isinstance(key, str)]
            if bad:
                return path, f"keyed by {bad[0]!r} (keys must be strings)"
            stack.extend((v[key], f"{path}[{key!r}]") for key in reversed(list(v)))
        else:
            stack.extend((x, f"{path}[{i}]") for i, x in reversed(list(enumerate(v))))
    return None


def check_info(system: str, call: str, value: object) -> dict:
    """``value``, what ``describe`` or ``contradiction_detection`` returned for metrics.json's ``system_info``:
    a dict with string keys that JSON holds as it is (no NaN or infinity). RetrieverFault naming the first bad
    key otherwise."""
    where = f"systems: {system}.{call}"
    if not isinstance(value, dict):
        raise RetrieverFault(f"{where} returned {_a(value)}, not a dict (metrics.json's "
                             f"system_info.{system})")
    problem = _json_problem(value)
    if problem is None:
        try:
            dumps_json(value)
        except (TypeError, ValueError, RecursionError) as exc:  # what the walk does not foresee
            problem = ("", f"not JSON ({_reason(exc)})")
    if problem is not None:
        path, what = problem
        raise RetrieverFault(f"{where} returned a dict metrics.json cannot hold: {call}(){path} is {what}; allowed: "
                             f"dict with string keys, list, string, finite number, bool, null")
    return value


def check_signals(system: str, value: object, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """``value``, what ``hit_signals`` returned for the run file: each signal of :data:`SIGNAL_KEYS` as a real
    (Q, k) array aligned with the ranking (``shape``); returned as float64 arrays."""
    where = f"systems: {system}.hit_signals broke the output contract"
    names = list(SIGNAL_KEYS.values())
    if not isinstance(value, dict):
        raise RetrieverFault(f"{where}: returned {_a(value)}, not a dict of {', '.join(names)}")
    out = {}
    for name in names:
        v = value.get(name)
        if not isinstance(v, np.ndarray) or v.dtype.kind not in "iuf" or v.shape != shape:
            got = "missing" if v is None else (f"a {v.dtype} array of shape {v.shape}" if isinstance(v, np.ndarray)
                                               else _a(v))
            raise RetrieverFault(f"{where}: {name!r} is {got}; expected a real array of shape {shape}, aligned "
                                 f"with the ranking")
        out[name] = v.astype(np.float64)
    return out
