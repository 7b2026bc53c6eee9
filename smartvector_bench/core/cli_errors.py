"""Turn bad input into one clear line on stderr and exit 2, for every console script (a BenchProblems, which
lists several problems found in one pass, into one line per problem).

:func:`reports_bad_input` wraps the work a Hydra task does; :func:`hydra_entry` wraps the Hydra app itself, so
errors raised before the task runs (an unknown key, a missing config group option, an override that does not
parse, a run folder Hydra cannot create) get the same one line and exit 2 instead of Hydra's multi-line message
and exit 1.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
import traceback
from pathlib import Path

from omegaconf.errors import OmegaConfBaseException

from smartvector_bench.core.errors import BenchError, BenchProblems

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1
_OMEGACONF_DETAIL = ("object_type=", "reference_type=", "full_key:")


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` (and of its cause) on one line: Hydra and OmegaConf spread theirs over several."""
    parts, seen = [], set()
    e: BaseException | None = exc
    while e is not None and len(parts) < 3:
        raw = str(e).split("Config search path:")[0].splitlines()  # Hydra's search path: noise here
        lines, items = [], []
        for ln in raw + [""]:
            if ln.startswith("\t") and ln.strip():  # Hydra's indented option lists
                items.append(ln.strip())
                continue
            if items:
                lines[-1:] = [f"{lines[-1] if lines else ''} {', '.join(items)}".strip()]
                items = []
            if ln.strip():
                lines.append(ln.strip())
        main = [ln for ln in lines if not ln.startswith(_OMEGACONF_DETAIL)]
        key = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("full_key:")]
        text = " ".join(main) + (f" (key: {key[0]})" if key and key[0] else "")
        if text and text not in seen:
            parts.append(text)
            seen.add(text)
        e = e.__cause__
    return "; ".join(parts) or type(exc).__name__


def shown(exc: BaseException) -> str:
    """What an entry point prints for ``exc``: a :class:`BenchProblems` keeps its lines (a heading, then one
    line per problem, each with its fix); anything else is :func:`one_line`."""
    return str(exc) if isinstance(exc, BenchProblems) else one_line(exc)


def hydra_folder_error(exc: BaseException) -> str | None:
    """The one line for an OSError that Hydra itself raised before the task ran (creating the run or sweep
    folder, writing ``.hydra/`` or the job log: the innermost frame outside the standard library is Hydra's),
    naming the key that chose the folder; None for any other error."""
    if not isinstance(exc, OSError) or exc.filename is None:
        return None
    stdlib = sysconfig.get_paths()["stdlib"]
    files = [Path(f.f_code.co_filename) for f, _ in traceback.walk_tb(exc.__traceback__)]
    own = [p.parts for p in files if not str(p).startswith(stdlib) or {"site-packages", "dist-packages"} & set(p.parts)]
    if not own or not {"hydra", "hydra_plugins"} & set(own[-1]):
        return None
    sweep = any(a in ("-m", "--multirun") or a.replace(" ", "") == "hydra.mode=MULTIRUN" for a in sys.argv[1:])
    key = "hydra.sweep.dir" if sweep else "hydra.run.dir"
    return f"{key}: cannot write {exc.filename}: {exc.strerror or type(exc).__name__}; choose a folder you can write"


def reports_bad_input(prog: str):
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (BenchError, OmegaConfBaseException) as exc:  # e.g. a missing mandatory value (out_dir=???)
                print(f"{prog}: error: {shown(exc)}", file=sys.stderr)
                sys.exit(EXIT_BAD_INPUT)
        return inner
    return wrap


def hydra_entry(prog: str, hydra_main):
    """A console-script ``main`` around a ``@hydra.main`` function: every bad-input error, Hydra's composition
    errors included, is one line on stderr and exit 2; an unexpected error is one line and exit 1 (set
    ``HYDRA_FULL_ERROR=1`` for its traceback)."""
    from hydra.errors import HydraException

    @functools.wraps(hydra_main)
    def main() -> None:
        previous = os.environ.get("HYDRA_FULL_ERROR")
        wants_traceback = bool(previous)
        # Hydra then re-raises instead of printing its own report, so the errors reach the handlers below.
        os.environ["HYDRA_FULL_ERROR"] = "1"
        try:
            try:
                hydra_main()
            finally:
                if previous is None:
                    os.environ.pop("HYDRA_FULL_ERROR", None)
                else:
                    os.environ["HYDRA_FULL_ERROR"] = previous
        except (BenchError, OmegaConfBaseException, HydraException) as exc:
            if wants_traceback:
                raise
            where = getattr(exc, "override", None)  # OverrideParseException: name the override itself
            print(f"{prog}: error: {f'override {where!r}: ' if where else ''}{shown(exc)}", file=sys.stderr)
            sys.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            print(f"{prog}: interrupted", file=sys.stderr)
            sys.exit(130)
        except Exception as exc:  # noqa: BLE001 - a bug, not bad input: still one line, with how to see more
            if wants_traceback:
                raise
            if folder := hydra_folder_error(exc):  # e.g. hydra.run.dir=/proc/x: bad input, not a bug
                print(f"{prog}: error: {folder}", file=sys.stderr)
                sys.exit(EXIT_BAD_INPUT)
            print(f"{prog}: internal error: {type(exc).__name__}: {one_line(exc)} "
                  "(rerun with HYDRA_FULL_ERROR=1 for the traceback)", file=sys.stderr)
            sys.exit(EXIT_INTERNAL)
    return main
