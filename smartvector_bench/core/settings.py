"""Typed config sections: a dataclass per section, built from a config dict with every key, type, range and
choice checked at once, so a bad value fails before any work, naming the full key."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, get_type_hints

from smartvector_bench.core.errors import BenchError


def choice(default: str, *allowed: str):
    """A string field restricted to ``allowed`` (the default first)."""
    return dataclasses.field(default=default, metadata={"choices": (default, *allowed)})


def section(cls, values: dict | None, where: str, nested: dict[str, Any] | None = None):
    """Build ``cls`` from ``values``. Numbers must be finite and >= 0 (fields named in ``cls.POSITIVE`` > 0,
    fields in the ``cls.MINIMUM`` mapping >= their minimum, fields in ``cls.MAXIMUM`` <= their maximum),
    ints must be ints (10.7 is not truncated), booleans booleans, choice fields one of their choices. ``nested``
    holds already-built sub-sections (their keys are skipped here)."""
    values = dict(values or {})
    nested = dict(nested or {})
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise BenchError(f"{where}.{unknown[0]}: unknown key; allowed: {', '.join(sorted(fields))}")
    out = {}
    for name, value in values.items():
        if name in nested:
            continue
        key = f"{where}.{name}={value!r}"
        kind = hints[name]
        minimum = getattr(cls, "MINIMUM", {}).get(name)
        maximum = getattr(cls, "MAXIMUM", {}).get(name)
        positive = name in getattr(cls, "POSITIVE", ()) and minimum is None
        bound = f">= {minimum}" if minimum is not None else "> 0" if positive else ">= 0"
        if maximum is not None:  # the whole allowed range, as one interval when it has a least value
            low = minimum if minimum is not None else int(positive) if kind is int else None
            bound = f"in [{low}, {maximum}]" if low is not None else f"{bound} and <= {maximum}"
        if kind is bool:
            if not isinstance(value, bool):
                raise BenchError(f"{key}: must be true or false")
        elif kind is int:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise BenchError(f"{key}: must be an integer {bound}")
        elif kind is float:
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
                raise BenchError(f"{key}: must be a finite number {bound}")
            value = float(value)
        elif kind is str:
            choices = fields[name].metadata.get("choices")
            if not isinstance(value, str):
                raise BenchError(f"{key}: must be a string" + (f"; allowed: {', '.join(choices)}" if choices else ""))
            if choices and value not in choices:
                raise BenchError(f"{where}.{name}={value}: unknown; allowed: {', '.join(choices)}")
        if ((positive and not value > 0) or (minimum is not None and not value >= minimum)
                or (maximum is not None and not value <= maximum)):
            raise BenchError(f"{key}: must be {'an integer' if kind is int else 'a finite number'} {bound}")
        out[name] = value
    out.update(nested)
    return cls(**out)
