"""What every generator shares: seeded random streams, opaque ids, the catalog's families and the range of dates
a dataset can hold.

A module of its own so that the generators (``generator``, ``lvl_corpus``, ``git_history``) import it and not
each other."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.timeutil import EARLIEST, LATEST, days_to_latest, format_iso, parse_iso

from . import catalog
from .catalog.base import Scope, Topic


def seeded_rng(seed: int, *purpose: str) -> np.random.Generator:
    """An independent, stable random stream per (seed, purpose...): changing one knob leaves the other draws."""
    key = [seed] + [zlib.crc32(p.encode()) for p in purpose]
    return np.random.default_rng(key)


class OpaqueIds:
    """Opaque ids: a prefix and random hex from ``rng``, unique among the ids this object gave out (an id says
    nothing about its chunk)."""

    def __init__(self, rng: np.random.Generator):
        self._rng = rng
        self._seen: set[str] = set()

    def new(self, prefix: str) -> str:
        while True:
            cid = f"{prefix}{int(self._rng.integers(16 ** 10)):010x}"
            if cid not in self._seen:
                self._seen.add(cid)
                return cid


@dataclass(frozen=True)
class FamilySpec:
    topic: Topic
    scope: Scope
    index: int  # position of the scope within its topic: picks the family's own templates

    @property
    def key(self) -> str:
        return f"{self.topic.key}.{self.scope.key}"

    @property
    def title(self) -> str:
        return f"{self.topic.title}: {self.scope.title}"


def catalog_families() -> list[FamilySpec]:
    return [FamilySpec(t, s, j) for t in catalog.TOPICS for j, s in enumerate(t.scopes)]


DATE_SPAN_DAYS = math.floor(days_to_latest(EARLIEST))  # 0001-01-01 to 9999-12-31: the longest span of dates


def check_span(start: str, key: str, value: int, per_unit: float = 1.0, extra: float = 0.0, given: str = "",
               low: int = 1) -> None:
    """``dataset.start`` parses, and the generator's latest timestamp, ``start + extra + value * per_unit`` days
    (``value`` is ``dataset.<key>``, at least ``low``; ``given`` names the other keys in the sum), stays within
    the years 0001..9999, which an ISO timestamp writes with four digits. One line names the keys and what is
    allowed."""
    try:
        begin = parse_iso(str(start))
    except (ValueError, OverflowError) as exc:
        raise BenchError(f"dataset.start={start}: {exc}; allowed: an ISO-8601 time with a timezone from "
                         f"{format_iso(EARLIEST)} to {format_iso(LATEST)}") from None
    span = extra + value * per_unit
    if span <= days_to_latest(begin):
        return

    def most(room: float) -> int:
        return math.floor((room - extra) / per_unit)

    full = DATE_SPAN_DAYS
    if span > full:  # too long from any start
        allowed = f"allowed: {low}..{most(full)}" if most(full) >= low else "too long"
        raise BenchError(f"dataset.{key}={value}: {allowed}{f' with {given}' if given else ''} (the generated dates "
                         f"span {span:.0f} days; they must fit in the {full} from 0001-01-01 to "
                         "9999-12-31, the years an ISO timestamp writes with four digits)")
    alt = f", or dataset.{key} <= {most(days_to_latest(begin))}" if most(days_to_latest(begin)) >= low else ""
    raise BenchError(f"dataset.start={start}: with dataset.{key}={value}{f' and {given}' if given else ''} the "
                     f"generated dates run past {format_iso(LATEST)} (the last four-digit year); allowed: "
                     f"dataset.start <= {format_iso(LATEST - timedelta(days=span))}{alt}")


def weighted_choice(rng: np.random.Generator, weights: dict[str, float]) -> str:
    """One name drawn with probability proportional to its weight (names in sorted order: a stable draw)."""
    names = sorted(weights)
    p = np.array([weights[n] for n in names], dtype=float)
    return names[int(rng.choice(len(names), p=p / p.sum()))]
