"""The policy catalog: topics, each with five scopes; a family is one (topic, scope) pair. The topics are text
data in topics/*.json, loaded by :func:`data_gen.catalog.base.load_catalog`."""

from __future__ import annotations

from .base import Scope, Topic, load_catalog

TOPICS: tuple[Topic, ...]  # loaded on first use (module __getattr__ below)

__all__ = ["Scope", "Topic", "TOPICS"]


def __getattr__(name: str):
    # Read on first use rather than at import, so a broken catalog file reaches the command-line tools' one-line
    # error report (smartvector-gen, the checks) instead of failing their import with a traceback.
    if name == "TOPICS":
        topics = globals()["TOPICS"] = load_catalog()
        return topics
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
