"""A fact against its repository's history: the paragraphs that state it (:func:`statements`), the timeline those
paragraphs give (:func:`derive`), and the check of the fact file's timeline against it (:func:`check_timeline`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from smartvector_bench.core.errors import BenchError

from ..git_history import History
from .spec import Fact, Period


@dataclass(frozen=True)
class Statement:
    chunk: int      # index into history.chunks
    value: str      # canonical
    primary: bool   # in one of the fact's paths


@dataclass(frozen=True)
class Span:
    """[start, end) in epoch seconds (end None: to the tip and beyond), where the fact's own paths state
    ``value`` and nothing else (None: no value, or several)."""

    start: int
    end: int | None
    value: str | None

    def holds(self, t: int) -> bool:
        return self.start <= t and (self.end is None or t < self.end)


def day(t: int):
    return datetime.fromtimestamp(t, tz=timezone.utc).date()


def home_documents(fact: Fact, history: History) -> set[str]:
    """The documents ``fact`` lives in: every document that had a paragraph under one of its paths (a document
    keeps its id through renames, and an unchanged paragraph keeps the path it was written under)."""
    paths = set(fact.paths)
    return {c.doc_id for c in history.chunks if c.path in paths}


def statements(fact: Fact, history: History) -> list[Statement]:
    """Every paragraph version of the history that states ``fact``: in its own documents (primary, whatever path
    they had then) and, when ``fact.elsewhere``, in any other document."""
    out = []
    docs = home_documents(fact, history)
    for i, c in enumerate(history.chunks):
        primary = c.doc_id in docs
        if not primary and not fact.elsewhere:
            continue
        value = fact.extract(c.text)
        if value is not None:
            out.append(Statement(i, value, primary))
    return out


def derive(fact: Fact, history: History, stated: list[Statement]) -> list[Span]:
    """The timeline the fact's own paths give: from the first paragraph that states it, the values stated by the
    primary paragraphs in force, merged into maximal spans of one value (None: none or several)."""
    primary = [(history.chunks[s.chunk], s.value) for s in stated if s.primary]
    if not primary:
        where = ", ".join(fact.paths)
        raise BenchError(f"{fact.where}: value: the value pattern{' and context' if fact.context else ''} match no "
                         f"paragraph of {where} in the history (check the paths and the pattern)")
    events = sorted({c.valid_from for c, _ in primary} | {c.valid_to for c, _ in primary if c.valid_to is not None})
    spans: list[Span] = []
    for k, t in enumerate(events):
        values = {v for c, v in primary if c.valid_from <= t and (c.valid_to is None or t < c.valid_to)}
        value = next(iter(values)) if len(values) == 1 else None
        end = events[k + 1] if k + 1 < len(events) else None
        if spans and spans[-1].value == value:
            spans[-1] = Span(spans[-1].start, end, value)
        else:
            spans.append(Span(t, end, value))
    return spans


def as_periods(spans: list[Span]) -> list[Period]:
    return [Period(day(s.start), s.value) for s in spans]


def show(periods) -> str:
    """A timeline in one line, as the fact file would write it."""
    return "; ".join(f"{p.start} {'none' if p.value is None else repr(p.value)}" for p in periods)


def check_timeline(fact: Fact, spans: list[Span]) -> None:
    """The fact file's timeline must be the history's: the same values in the same order, each from the UTC day
    the history's span starts. BenchError naming the fact and the first period that differs."""
    derived = as_periods(spans)
    for k, (want, got) in enumerate(zip(fact.timeline, derived), 1):
        if want != got:
            raise BenchError(f"{fact.where}: timeline[{k}] (from {want.start}, value "
                             f"{'null' if want.value is None else repr(want.value)}): the history gives from "
                             f"{got.start}, value {'null' if got.value is None else repr(got.value)}; the history's "
                             f"timeline: {show(derived)}")
    if len(fact.timeline) != len(derived):
        extra = derived[len(fact.timeline)] if len(derived) > len(fact.timeline) else None
        what = (f"the history has a period {len(fact.timeline) + 1} (from {extra.start}, value "
                f"{'null' if extra.value is None else repr(extra.value)})" if extra else
                f"the history has {len(derived)} periods")
        raise BenchError(f"{fact.where}: timeline: {len(fact.timeline)} periods, but {what}; the history's "
                         f"timeline: {show(derived)}")
