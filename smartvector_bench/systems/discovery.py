"""Which systems a run composes: every ``retriever/*.yaml`` on the config search path, with no list to keep.

conf/config.yaml's defaults say ``retriever: all``; ``retriever/all`` is not a file but a node of Hydra's
ConfigStore whose own defaults list names every retriever config found, so composing it loads them all (each
yaml's ``# @package retrievers.<name>`` header puts it in place). The in-tree systems come first in the table
order (:data:`TABLE_ORDER`), any other one after them, sorted by name. A user's ``retriever=[a,b]`` replaces
``all`` as any group override does.

* Importing :mod:`smartvector_bench` registers ``all`` for the repository's conf/ (so ``compose()`` in tests,
  perf and notebooks composes every in-tree system).
* The CLI (smartvector_bench/tools/cli.py) re-registers it before Hydra starts, from the search path the command
  line gives: conf/ (or ``--config-path``), any ``--config-dir DIR`` and ``hydra.searchpath=[file://DIR,
  pkg://...]`` overrides (Hydra's own config loader, ``get_group_options``). That is how a retriever from an
  outside package plugs in: one yaml in ``DIR/retriever/``.

Nothing is added to the command line: job folder names (``hydra.job.override_dirname``), the recorded
``.hydra/overrides.yaml`` that regress and sweep resumes replay, and every result stay what they were. In a
multirun every job composes from the same node (the joblib, Ray and Submitit launchers hand Hydra's singletons,
the ConfigStore among them, to their workers).
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable
from pathlib import Path

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.report import SYSTEM_ORDER

GROUP = "retriever"
ALL = "all"
# The main table's order (README, docs/systems.md); a system not listed here follows them, by name.
TABLE_ORDER = SYSTEM_ORDER


def ordered(names: Iterable[str]) -> list[str]:
    names = set(names) - {ALL}
    return [n for n in TABLE_ORDER if n in names] + sorted(names - set(TABLE_ORDER))


def in_tree(conf_dir: str | Path = CONF_DIR) -> list[str]:
    """The retriever configs of one config folder (``<conf_dir>/retriever/*.yaml``), in table order."""
    return ordered(p.stem for p in (Path(conf_dir) / GROUP).glob("*.yaml"))


def register(names: Iterable[str]) -> list[str]:
    """Make ``retriever/all`` compose these retriever configs (table order); returns the order."""
    from hydra.core.config_store import ConfigStore

    names = ordered(names)
    # package _global_: the node itself holds nothing (each retriever yaml names its own package)
    ConfigStore.instance().store(group=GROUP, name=ALL, node={"defaults": names}, package="_global_",
                                 provider="smartvector_bench")
    return names


def on_search_path(config_path: str | None = CONF_DIR, config_name: str | None = "config",
                   overrides: Iterable[str] = (), config_dir: str | None = None,
                   calling_module: str = "smartvector_bench.tools.cli") -> list[str]:
    """Every retriever config Hydra would find for this command line (the primary config's folder, ``--config-dir``
    and ``hydra.searchpath``), in table order. Raises what Hydra raises for a bad search path or override."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_automatic_config_search_path
    from hydra.core.config_search_path import SearchPathQuery

    search_path = create_automatic_config_search_path(None, calling_module, config_path)
    if config_dir is not None:  # as hydra._internal.utils.run_hydra adds it
        search_path.prepend(provider="command-line", path=f"file://{os.path.abspath(config_dir)}",
                            anchor=SearchPathQuery(provider="schema"))
    loader = ConfigLoaderImpl(config_search_path=search_path)
    return ordered(loader.get_group_options(GROUP, config_name=config_name, overrides=list(overrides)))


def from_argv(argv: list[str], config_path: str = CONF_DIR, config_name: str = "config") -> list[str] | None:
    """:func:`on_search_path` for a ``@hydra.main`` app's command line; None when Hydra will refuse the command
    line itself (it then reports it, once)."""
    from hydra._internal.utils import get_args_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            args = get_args_parser().parse_args(argv)
    except SystemExit:
        return None
    try:
        return on_search_path(args.config_path or config_path, args.config_name or config_name, args.overrides,
                              args.config_dir)
    except Exception:  # noqa: BLE001 - a bad override or search path: Hydra reports it when it composes
        return None


def register_from_argv(argv: list[str], config_path: str = CONF_DIR, config_name: str = "config") -> list[str]:
    """The CLI's step before Hydra starts: register ``retriever/all`` for this command line's search path."""
    names = from_argv(argv, config_path, config_name)
    return register(names if names is not None else in_tree(config_path))
