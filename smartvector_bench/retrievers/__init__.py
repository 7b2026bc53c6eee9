"""Retriever registry. Each module in this package registers one system with ``@register("name")``;
adding a system is one module here plus one ``conf/retriever/<name>.yaml``."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

from ..errors import BenchError
from .base import Retriever

REGISTRY: dict[str, Callable[[dict], Retriever]] = {}
_discovered = False


def register(name: str):
    def deco(factory):
        if name in REGISTRY:
            raise RuntimeError(f"retriever {name!r} registered twice")
        REGISTRY[name] = factory
        return factory
    return deco


def _discover() -> None:
    """Import every module of this package once (a module imported directly earlier is not enough)."""
    global _discovered
    if _discovered:
        return
    for mod in pkgutil.iter_modules(__path__):
        if mod.name != "base":
            importlib.import_module(f"{__name__}.{mod.name}")
    _discovered = True


def build_retriever(name: str, cfg: dict) -> Retriever:
    _discover()
    if name not in REGISTRY:
        raise BenchError(f"systems: unknown system {name!r}; allowed: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name](cfg)


def registered() -> list[str]:
    _discover()
    return sorted(REGISTRY)
