"""Systems are plug-ins: any importable class whose instances satisfy :class:`~.base.Retriever` (a
``typing.Protocol``), named by ``_target_`` in its ``conf/retriever/<name>.yaml`` (``# @package
retrievers.<name>``) beside its parameters. :func:`build_retriever` is the one place a system is built
(``hydra.utils.instantiate``); adding an in-tree system is one module here plus one yaml, and an outside
package plugs in the same way with one yaml on the config search path (``--config-dir DIR``,
``hydra.searchpath``; see smartvector_bench/systems/discovery.py).

The constructor gets the yaml's keys as keyword arguments, and the configured name as ``name=`` when it has a
``name`` parameter (so a variant such as ``smartvector_soft`` names its own keys in errors). It checks its own
parameters and loads nothing (every configured system is built once to validate the config); data-dependent
needs go in ``check_dataset`` (:class:`~.base.ChecksDataset`).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.base import Retriever

TARGET = "_target_"
_METHODS = ("index", "search", "describe")


def _reason(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def locate(target: object, where: str):
    """The object a dotted ``_target_`` names (the longest importable module prefix, then attributes)."""
    if not isinstance(target, str) or not target.strip() or any(not p.isidentifier() for p in target.split(".")):
        raise BenchError(f"{where}.{TARGET}={target!r}: must be a dotted path package.module.Class")
    parts = target.split(".")
    obj, found = None, 0
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj, found = importlib.import_module(name), i
            break
        except ModuleNotFoundError as exc:
            if exc.name is not None and not name.startswith(exc.name) and not exc.name.startswith(name):
                raise BenchError(f"{where}.{TARGET}={target}: cannot be imported ({_reason(exc)})") from None
            continue  # this prefix is not a module: try a shorter one
        except Exception as exc:  # noqa: BLE001 - the module itself fails to import: its error, on one line
            raise BenchError(f"{where}.{TARGET}={target}: cannot be imported ({_reason(exc)})") from None
    if obj is None:
        raise BenchError(f"{where}.{TARGET}={target}: cannot be imported (no module named {parts[0]!r})")
    for attr in parts[found:]:
        if not hasattr(obj, attr):
            raise BenchError(f"{where}.{TARGET}={target}: cannot be imported ({'.'.join(parts[:found])!r} has no "
                             f"attribute {attr!r})")
        obj, found = getattr(obj, attr), found + 1
    return obj


def _check_class(cls, where: str) -> None:
    label = getattr(cls, "__qualname__", repr(cls))
    if not inspect.isclass(cls):
        raise BenchError(f"{where}: {label} is not a class (a system is a class satisfying the Retriever protocol)")
    missing = [m for m in _METHODS if not callable(getattr(cls, m, None))]
    if missing:
        raise BenchError(f"{where}: {label} does not satisfy the Retriever protocol (missing {', '.join(missing)})")


def _check_parameters(cls, params: Mapping, where: str) -> bool:
    """Keys the constructor cannot take, before calling it; returns whether it takes ``name``."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):  # no signature to read (a builtin): let the call decide
        return False
    kinds = {p.name: p.kind for p in sig.parameters.values()}
    takes_any = inspect.Parameter.VAR_KEYWORD in kinds.values()
    named = {n for n, k in kinds.items()
             if k in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    if "name" in params:
        raise BenchError(f"{where}.name: reserved (the system's name is its key under retrievers)")
    if not takes_any:
        unknown = [k for k in params if k not in named]
        if unknown:
            allowed = sorted(named - {"name"})
            raise BenchError(f"{where}.{unknown[0]}: unknown parameter of {cls.__qualname__}; allowed: "
                             f"{', '.join(allowed) if allowed else 'none'}")
    required = [p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty
                and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
                and p.name != "name" and p.name not in params]
    if required:
        raise BenchError(f"{where}.{required[0]}: missing; {cls.__qualname__} requires it")
    return "name" in named


def build_retriever(name: str, node: Mapping) -> Retriever:
    """Build the system configured at ``retrievers.<name>`` from its config ``node`` (``_target_`` plus
    parameters). Every error is one :class:`BenchError` line naming the key."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    where = f"retrievers.{name}"
    if not isinstance(node, Mapping):
        raise BenchError(f"{where}={node!r}: must be a config section")
    if "kind" in node and TARGET not in node:
        raise BenchError(f"{where}.kind: replaced by {TARGET} (the class, e.g. "
                         f"{TARGET}: smartvector_bench.systems.{name}.ClassName); see README 'Add a retriever'")
    if TARGET not in node:
        raise BenchError(f"{where}.{TARGET}: missing; name the system's class (package.module.Class)")
    cls = locate(node[TARGET], where)
    _check_class(cls, where)
    params = {k: v for k, v in node.items() if k != TARGET}
    extra = {"name": name} if _check_parameters(cls, params, where) else {}
    try:
        # _recursive_=False: a parameter is data for the class, never another object to build.
        system = instantiate({TARGET: node[TARGET], **params}, _convert_="all", _recursive_=False, **extra)
    except InstantiationException as exc:
        cause = exc.__cause__
        if isinstance(cause, BenchError):
            raise cause from None
        raise BenchError(f"{where}: {cls.__qualname__}(...) failed: "
                         f"{_reason(cause) if cause is not None else ' '.join(str(exc).split())}") from None
    if not isinstance(system, Retriever):
        missing = [m for m in ("name", *_METHODS) if not hasattr(system, m)]
        raise BenchError(f"{where}: {cls.__qualname__} does not satisfy the Retriever protocol "
                         f"(missing {', '.join(missing)})")
    return system


def configured(retrievers: Mapping | None) -> list[str]:
    """The configured systems: every ``retrievers.<name>`` with a ``_target_``, in config order."""
    return [n for n, node in (retrievers or {}).items() if isinstance(node, Mapping) and TARGET in node]
