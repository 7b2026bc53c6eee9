"""What every generator shares: seeded random streams, opaque ids and the catalog's families.

A module of its own so that the generators (``generator``, ``lvl_corpus``, ``git_history``) import it and not
each other."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

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
