"""Simulated time: ISO-8601 UTC strings in files, float64 days since the Unix epoch in arrays.

Days keep every formula (ages, half-lives) in the unit the paper uses; nothing here reads the wall clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
SECONDS_PER_DAY = 86400.0
# The range of times a dataset can hold: ISO-8601 (and our schema) writes the year with exactly four digits.
EARLIEST = datetime(1, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)


def parse_iso(text: str) -> datetime:
    """Parse an ISO-8601 timestamp; naive timestamps are rejected (every time here is UTC)."""
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no timezone; write it as UTC, e.g. 2024-01-31T00:00:00Z")
    return dt.astimezone(timezone.utc)


def format_iso(dt: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` with the year zero-padded to four digits (``%Y`` writes year 1 as ``1``, which
    no ISO-8601 parser, ours included, reads back)."""
    dt = dt.astimezone(timezone.utc)
    return f"{dt.year:04d}-{dt:%m-%dT%H:%M:%S}Z"


def days_to_latest(dt: datetime) -> float:
    """Days from ``dt`` to :data:`LATEST`: the longest span of generated dates that can start at ``dt``."""
    return (LATEST - dt).total_seconds() / SECONDS_PER_DAY


def to_days(dt: datetime) -> float:
    return (dt - EPOCH).total_seconds() / SECONDS_PER_DAY


def from_days(days: float) -> datetime:
    return EPOCH + timedelta(days=float(days))


def iso_to_days(text: str | None) -> float:
    """None (an open validity end) becomes +inf."""
    return np.inf if text is None else to_days(parse_iso(text))
