"""Turn bad input into one clear line on stderr and a non-zero exit, for every console script."""

from __future__ import annotations

import functools
import sys

from omegaconf.errors import OmegaConfBaseException

from .errors import BenchError

EXIT_BAD_INPUT = 2


def reports_bad_input(prog: str):
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except BenchError as exc:
                print(f"{prog}: error: {exc}", file=sys.stderr)
                sys.exit(EXIT_BAD_INPUT)
            except OmegaConfBaseException as exc:  # e.g. a missing mandatory value (out_dir=???)
                print(f"{prog}: error: {exc}", file=sys.stderr)
                sys.exit(EXIT_BAD_INPUT)
        return inner
    return wrap
