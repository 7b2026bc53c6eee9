"""The policy catalog: topics, each with five scopes; a family is one (topic, scope) pair."""

from __future__ import annotations

from .base import Scope, Topic
from .topics_a import TOPICS as _A
from .topics_b import TOPICS as _B
from .topics_c import TOPICS as _C
from .topics_d import TOPICS as _D

TOPICS: tuple[Topic, ...] = _A + _B + _C + _D

__all__ = ["Scope", "Topic", "TOPICS"]
