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

import inspect
import logging
from collections.abc import Mapping

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.base import Retriever

TARGET = "_target_"
_METHODS = ("index", "search", "describe")


def _reason(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _why(exc: BaseException, target: str) -> str:
    """One line for why Hydra's ``get_object`` could not import ``target`` (its own message spans three lines)."""
    cause = exc.__cause__ or exc
    if isinstance(cause, ModuleNotFoundError) and cause.name and f"{target}.".startswith(f"{cause.name}."):
        parent, _, attr = cause.name.rpartition(".")
        return f"no module named {attr!r}" if not parent else f"{parent!r} has no attribute {attr!r}"
    return _reason(cause)


def locate(target: object, where: str):
    """The object a dotted ``_target_`` names, found by Hydra's public ``hydra.utils.get_object``. Its error is a
    multi-line ImportError that it also logs; here it is one BenchError line naming the key, and nothing is logged."""
    if not isinstance(target, str) or not target.strip() or any(not p.isidentifier() for p in target.split(".")):
        raise BenchError(f"{where}.{TARGET}={target!r}: must be a dotted path package.module.Class")
    from hydra.utils import get_object

    log = logging.getLogger("hydra.utils")
    quiet, log.disabled = log.disabled, True
    try:
        return get_object(target)
    except Exception as exc:  # noqa: BLE001 - any import failure, the module's own included: one line
        raise BenchError(f"{where}.{TARGET}={target}: cannot be imported ({_why(exc, target)})") from None
    finally:
        log.disabled = quiet


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
