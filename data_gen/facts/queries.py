"""The queries of a fact set: each fact's hand-written questions asked as of the tip (current wordings) and as of
a date inside each of its past periods (historical wordings, ``{date}`` filled in), with graded relevant chunks
and stale chunks from the statements in force, or existing, at that time."""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

from smartvector_bench.core.errors import BenchError

from ..git_history import History
from ..git_history.queries import _content_words
from .spec import Fact
from .timeline import Span, Statement

GRADE_HOME, GRADE_ELSEWHERE = 2, 1  # the value in force, stated in the fact's own document / in another one


@dataclass
class FactQuery:
    text: str
    fact: Fact
    category: str                                 # current | historical
    as_of: int
    query_time: int
    relevant: list[tuple[str, int]]               # (chunk id, grade)
    stale: list[str]
    value: str                                    # the value in force at as_of (for the docs' samples)
    group: str = ""                               # the split unit
    split: str = ""
    id: str = ""
    overlap: float = 0.0                          # share of the question's content words in its home paragraph
    home_text: str = field(default="", repr=False)

    @property
    def family(self) -> str:  # what data_gen.splits.assign_family_splits groups by
        return self.group


def _utc(t: int) -> datetime:
    return datetime.fromtimestamp(t, tz=timezone.utc)


def _stamp(d: datetime) -> int:
    return int(d.replace(tzinfo=timezone.utc).timestamp())


def name_a_date(span: Span, end: int, rng: np.random.Generator) -> tuple[str, int] | None:
    """A date inside ``span`` (ending at ``end``) as a person names it, and the as_of it stands for: a whole
    calendar month inside the span ("in March 2018", as of the 15th at noon UTC), else a whole day ("on 3 March
    2018", as of noon); None when the span holds no whole day."""
    start = _utc(span.start)
    months = []
    y, m = start.year, start.month
    first = datetime(y, m, 1, tzinfo=timezone.utc)
    if first < start:
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    while True:
        lo = datetime(y, m, 1, tzinfo=timezone.utc)
        hi = lo + timedelta(days=calendar.monthrange(y, m)[1])
        if _stamp(hi) > end:
            break
        months.append((y, m))
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    if months:
        y, m = months[int(rng.integers(len(months)))]
        return f"in {calendar.month_name[m]} {y}", _stamp(datetime(y, m, 15, 12))
    d0 = datetime(start.year, start.month, start.day, tzinfo=timezone.utc)
    if d0 < start:
        d0 += timedelta(days=1)
    days = []
    while _stamp(d0 + timedelta(days=1)) <= end:
        days.append(d0)
        d0 += timedelta(days=1)
    if not days:
        return None
    d = days[int(rng.integers(len(days)))]
    return f"on {d.day} {calendar.month_name[d.month]} {d.year}", _stamp(d + timedelta(hours=12))


def fill(question: str, phrase: str) -> str:
    return question.replace("{date}", phrase).replace("{Date}", phrase[:1].upper() + phrase[1:])


def judge(history: History, stated: list[Statement], value: str, t: int) -> tuple[list[tuple[str, int]], list[str]]:
    """(relevant (chunk id, grade), stale chunk ids) at ``t`` for a fact whose value in force is ``value``:
    relevant = its statements in force at t that state ``value`` (grade 2 in its own paths, 1 elsewhere); stale =
    its statements created by t that state another value (superseded, or a page that contradicts another)."""
    relevant, stale = [], []
    for s in stated:
        c = history.chunks[s.chunk]
        if c.valid_from > t:
            continue
        if s.value == value:
            if c.valid_to is None or t < c.valid_to:
                relevant.append((c.id, GRADE_HOME if s.primary else GRADE_ELSEWHERE))
        else:
            stale.append(c.id)
    return sorted(relevant, key=lambda r: (-r[1], r[0])), sorted(stale)


def overlap(question: str, paragraph: str) -> float:
    """Share of the question's content words (no stopwords, no digits, the date left out) found in the
    paragraph."""
    words = set(_content_words(fill(question, "")))
    return len(words & set(_content_words(paragraph))) / len(words) if words else 0.0


def distinct_first(periods: list[tuple[Span, object]], n: int) -> list[tuple[Span, object]]:
    """The first ``n`` of ``periods`` (latest first) taking each distinct value's first period before any value's
    second."""
    seen: set[str] = set()
    first = [p for p in periods if not (p[0].value in seen or seen.add(p[0].value))]
    return (first + [p for p in periods if p not in first])[:n]


def fact_queries(fact: Fact, history: History, stated: list[Statement], spans: list[Span], tip: int,
                 max_historical: int, rng: np.random.Generator) -> list[FactQuery]:
    """Current wordings as of ``tip`` when the fact is stated there; each historical wording in turn, as of a
    named date inside up to ``max_historical`` past periods of one value: the latest period of each distinct
    value first (latest first), then the others."""
    out = []

    def ask(text: str, category: str, t: int, value: str) -> None:
        relevant, stale = judge(history, stated, value, t)
        if not relevant:
            raise BenchError(f"{fact.where}: questions: {text!r} has no relevant chunk as of {_utc(t):%Y-%m-%d}")
        home = next((history.chunks[s.chunk].text for s in stated if s.primary and history.chunks[s.chunk].id ==
                     relevant[0][0]), "")
        out.append(FactQuery(text, fact, category, t, tip, relevant, stale, value, overlap=overlap(text, home),
                             home_text=home))

    last = spans[-1]
    if fact.current_questions:
        if last.value is None:
            raise BenchError(f"{fact.where}: questions: a current question, but the fact is not stated at the tip "
                             f"(its last period, from {_utc(last.start):%Y-%m-%d}, has no single value); ask it "
                             "with {date} instead")
        for q in fact.current_questions:
            ask(q, "current", tip, last.value)
    past = [s for s in spans if s.value is not None and s.end is not None][::-1]  # latest first
    wordings = fact.historical_questions
    if wordings and not past:
        raise BenchError(f"{fact.where}: questions: a {{date}} question, but the history has no past period of one "
                         "value to ask it in")
    if not wordings:
        return out
    # Every past period that holds a nameable date; then each distinct value once (its latest period) before any
    # value twice, so a value split by a short gap (a page moved out of the glob and back) is not asked twice
    # while an older value goes unasked.
    named = [(s, d) for s in past if (d := name_a_date(s, s.end, rng)) is not None]
    for k, (span, (phrase, t)) in enumerate(distinct_first(named, max_historical)):
        ask(fill(wordings[k % len(wordings)], phrase), "historical", t, span.value)
    return out


def check_not_copied(queries: list[FactQuery], texts: list[str]) -> None:
    """No question may be a substring of any chunk (case and whitespace folded): questions are written, not
    copied."""
    folded = [" ".join(t.lower().split()) for t in texts]
    for q in queries:
        probe = " ".join(q.text.lower().rstrip("?.! ").split())
        hit = next((t for t in folded if probe in t), None)
        if hit is not None:
            raise BenchError(f"{q.fact.where}: questions: {q.text!r} is copied from a paragraph ({hit[:80]!r}...); "
                             "write the question as a person would ask it")
