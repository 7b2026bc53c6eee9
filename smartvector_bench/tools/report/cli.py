"""``smartvector-report PATH [-o OUT.html]``: the HTML report of a run folder, a sweep folder or results/.

OUT defaults to ``PATH/report.html``. Bad input (a path that is none of the three, a malformed result file) is
one line on stderr naming the file and the key, exit 2; the page is written atomically (temp file, rename)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from smartvector_bench.core.atomic import atomic_write_text
from smartvector_bench.core.cli_errors import EXIT_BAD_INPUT, one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.report import model as report_model
from smartvector_bench.tools.report import page

PROG = "smartvector-report"
OUT_NAME = "report.html"


def build(path: Path) -> str:
    """The page of ``path`` as one HTML string."""
    model, data = report_model.page_model(path)
    return page.render(model, data)


def write(path: Path, out: Path | None = None) -> Path:
    out = Path(out) if out is not None else Path(path) / OUT_NAME
    atomic_write_text(out, build(Path(path)))
    return out


def run(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("path", help="a run folder, a sweep folder or results/")
    ap.add_argument("-o", "--out", help=f"the HTML file to write (default: PATH/{OUT_NAME})")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        out = write(Path(args.path), args.out)
    except BenchError as exc:
        print(f"{PROG}: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:  # the output folder is not writable, a result file not readable
        print(f"{PROG}: error: {exc.filename or args.out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    size = out.stat().st_size
    print(f"wrote {out} ({size / 1e6:.2f} MB) in {time.perf_counter() - start:.1f} s")
    return 0


def main() -> None:
    sys.exit(run())
