"""Which systems a run composes: every ``retriever/*.yaml`` on the config search path, with no list to keep.

conf/config.yaml's defaults say ``retriever: all``; ``retriever/all`` is not a file but a node of Hydra's
ConfigStore whose own defaults list names every retriever config found, so composing it loads them all (each
yaml's ``# @package retrievers.<name>`` header puts it in place). The in-tree systems come first in the table
order (:data:`TABLE_ORDER`), any other one after them, sorted by name. ``systems=[a,b]`` chooses
which run; the CLI refuses any other ``retriever`` choice (smartvector_bench/tools/cli.py), so every run's
config holds every system.

* Importing :mod:`smartvector_bench` registers ``all`` for the repository's conf/ (so ``compose()`` in tests,
  perf and notebooks composes every in-tree system).
* The CLI (smartvector_bench/tools/cli.py) re-registers it before Hydra starts, from the search path the command
  line gives: conf/ (or ``--config-path``), any ``--config-dir DIR`` and ``hydra.searchpath=[file://DIR,
  pkg://...]`` overrides (``get_group_options`` of the config loader of Hydra's public ``initialize_config_dir``).
  That is how a retriever from an outside package plugs in: one yaml in ``DIR/retriever/``.

Nothing is added to the command line: job folder names (``hydra.job.override_dirname``), the recorded
``.hydra/overrides.yaml`` that regress and sweep resumes replay, and every result stay what they were. In a
multirun every job composes from the same node (the joblib, Ray and Submitit launchers hand Hydra's singletons,
the ConfigStore among them, to their workers).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
from collections.abc import Iterable
from pathlib import Path

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.report import table_order

GROUP = "retriever"
ALL = "all"
# The main table's order (conf/table_order.yaml); a system not listed there follows them, by name.
TABLE_ORDER = table_order.SYSTEM_ORDER


def ordered(names: Iterable[str]) -> list[str]:
    return table_order.ordered(set(names) - {ALL})


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
    and ``hydra.searchpath``), in table order. A relative ``config_path`` is relative to ``calling_module``'s
    folder, as for ``@hydra.main``. Raises what Hydra raises for a bad search path or override."""
    path = Path(config_path or CONF_DIR)
    if not path.is_absolute():
        path = Path(importlib.util.find_spec(calling_module).origin).parent / path
    found = set(_group_options(path, config_name, list(overrides)))
    if config_dir is not None:  # one more folder on the search path: its options join the others
        found |= set(_group_options(Path(config_dir), None, []))
    return ordered(found)


@contextlib.contextmanager
def config_loader(config_dir: str | Path):
    """Hydra's config loader for the search path of ``initialize_config_dir(config_dir)`` (its public API); a
    Hydra already initialized (a test's, for instance) is put back after."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    gh = GlobalHydra.instance()
    saved = gh.hydra
    gh.clear()
    try:
        with initialize_config_dir(config_dir=str(Path(config_dir).resolve()), version_base=None):
            yield GlobalHydra.instance().config_loader()
    finally:
        if saved is not None:
            GlobalHydra.instance().clear()
            GlobalHydra.instance().initialize(saved)


def _group_options(config_dir: Path, config_name: str | None, overrides: list[str]) -> list[str]:
    """``retriever`` options on ``config_dir``'s search path, with ``hydra.searchpath`` from the primary config
    and the overrides."""
    with config_loader(config_dir) as loader:
        return loader.get_group_options(GROUP, config_name=config_name, overrides=overrides)


def _hydra_argv() -> argparse.ArgumentParser:
    """The flags of a ``@hydra.main`` command line (``--hydra-help``), to read its search path and overrides."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    for flags in (("--help", "-h"), ("--hydra-help",), ("--version",), ("--resolve",), ("--run", "-r"),
                  ("--multirun", "-m"), ("--shell-completion", "-sc")):
        parser.add_argument(*flags, action="store_true")
    for flags in (("--cfg", "-c"), ("--package", "-p"), ("--config-path", "-cp"), ("--config-name", "-cn"),
                  ("--config-dir", "-cd"), ("--experimental-rerun",)):
        parser.add_argument(*flags)
    parser.add_argument("--info", "-i", nargs="?", const="all")
    parser.add_argument("overrides", nargs="*")
    return parser


def from_argv(argv: list[str], config_path: str = CONF_DIR, config_name: str = "config") -> list[str] | None:
    """:func:`on_search_path` for a ``@hydra.main`` app's command line; None when Hydra will refuse the command
    line itself (it then reports it, once)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            args = _hydra_argv().parse_args(argv)
    except (SystemExit, argparse.ArgumentError):
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
