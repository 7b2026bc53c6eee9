"""Shared pieces of the figure scripts: a fixed style, a deterministic atomic save, checked reads of the result
objects the JSON inputs load as (``smartvector_bench.core.results``) and a validating CSV loader.

Every figure script has ``make(results_dir, out_dir) -> Outcome``:

* a missing input file is not an error: the figure is skipped and one line naming the file is printed;
* a present but malformed input (bad JSON, a missing key or column, a non-numeric value) raises
  :class:`~smartvector_bench.core.results.ResultError` (from the file's result class, or its subclass
  :class:`FigureInputError` from the reads here), whose message names the file and the key or column;
* otherwise the figure is written as ``<name>.png`` and ``<name>.pdf`` into ``out_dir``, each atomically
  (temp file in the same folder, then rename), with the same bytes on every run: fixed style, size and dpi,
  no timestamps or software versions in the metadata, a fixed SVG hash salt, inputs sorted.
"""

from __future__ import annotations

import functools
import io
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import matplotlib
import pandas as pd

matplotlib.use("Agg")

from matplotlib.figure import Figure  # after selecting the backend
from smartvector_bench.core.evaluation import measured
from smartvector_bench.core.report import table_order
from smartvector_bench.core.atomic import atomic_write_bytes
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results import MainMetrics, ResultError
from smartvector_bench.core.results.base import check, check_type
from smartvector_bench.core.results.sweep import USABLE as USABLE_STATUS

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS = REPO / "results"
DEFAULT_OUT = Path(__file__).resolve().parent / "figures"

DPI = 200
STYLE = {
    "svg.hashsalt": "smartvector-bench",
    "font.family": "DejaVu Sans",  # ships with matplotlib: the same glyphs on every machine
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "legend.fontsize": 7.5,
    "legend.title_fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "pdf.fonttype": 42,
    "path.simplify": False,
}
PNG_METADATA = {"Software": None}
PDF_METADATA = {"CreationDate": None, "ModDate": None, "Producer": "smartvector-bench paper_figures",
                "Creator": "smartvector-bench paper_figures"}

# Systems in the order of the main table (conf/table_order.yaml: the baselines, the SmartVector family, the peers,
# then the label-reading ceiling); the feedback loop's live and frozen SmartVector follow. Unknown names come after
# these, sorted. Baselines (no SmartVector signal) are dashed; a ceiling (reads labels/, so not a retriever one
# could deploy) is dotted and hatched.
SYSTEM_ORDER = (*table_order.SYSTEM_ORDER, *table_order.TABLE["feedback_loop"])
BASELINES, CEILINGS = table_order.BASELINES, table_order.CEILINGS
CEILING_HATCH = "////"
PALETTE = {"plain_cosine": "#7f7f7f", "bm25": "#bcbd22", "bm25_valid": "#637939", "valid_cosine": "#17becf",
           "recent_cosine": "#e377c2", "valid_authority": "#17a589", "hybrid_valid": "#b5cf6b", "ltr": "#e7298a",
           "lancedb_valid": "#5254a3", "chroma_valid": "#fdae6b", "milvus_valid": "#9edae5",
           "smartvector": "#1f77b4", "smartvector_soft": "#6baed6",
           "smartvector_tuned": "#08519c",
           "smartvector_ref": "#9467bd", "smartvector_ref_soft": "#c5b0d5",
           "livevectorlake": "#2ca02c", "kg_smartvector": "#ff7f0e", "metadata_filter": "#8c564b",
           "oracle": "#393b79", "smartvector_live": "#1f77b4", "smartvector_frozen": "#aec7e8"}
EXTRA_COLOURS = ("#843c39", "#7b4173", "#3182bd", "#31a354", "#756bb1", "#e6550d")
PAPER_COLOUR = "#d62728"
# The interval of every per-query metric in metrics.json (and the feedback loop's rounds): a cluster bootstrap
# that resamples whole policy families, since the queries of one family are not independent.
CLUSTER_CI = "95% cluster bootstrap intervals over families"
CLUSTER_CI_ONE = "95% cluster bootstrap interval over families"
# ... and when the run has no families (metrics.json's dataset.clusters): each query is its own cluster.
QUERY_CI = "95% bootstrap intervals over queries (no families: each query its own cluster)"
QUERY_CI_ONE = "95% bootstrap interval over queries (no families: each query its own cluster)"
NOT_MEASURED = measured.TEXT  # a bar's label where metrics.json stores null with a reason


class FigureInputError(ResultError):
    """A present input file is malformed; the message names the file and the key or column. A JSON input's own
    validation (its result class) raises the base class, ResultError, with the same kind of message."""


@dataclass(frozen=True)
class Outcome:
    figure: str
    files: tuple[Path, ...] = ()
    skipped: str | None = None  # why the figure was not made (a missing input), else None


# -- order, colours --------------------------------------------------------------------------------------------

def system_order(names) -> list[str]:
    return table_order.ordered(names, SYSTEM_ORDER)


def line_style(name: str) -> str:
    """Line style of a system in line plots: baselines dashed, the ceiling dotted, the rest solid."""
    return "--" if name in BASELINES else (":" if name in CEILINGS else "-")


def hatch(name: str) -> str | None:
    """Bar hatch: the label-reading ceiling is hatched, so it is not read as a deployable system."""
    return CEILING_HATCH if name in CEILINGS else None


def colours(names) -> dict[str, str]:
    out, extra = {}, iter(EXTRA_COLOURS * 10)
    for n in names:
        out[n] = PALETTE.get(n) or next(extra)
    return out


# -- skipping --------------------------------------------------------------------------------------------------

def skip(figure: str, reason: str) -> Outcome:
    print(f"{figure}: skipped, {reason}", flush=True)
    return Outcome(figure, (), reason)


def missing_input(figure: str, *paths: Path) -> Outcome | None:
    """The Outcome of a skip if any of ``paths`` is not a file, else None."""
    for p in paths:
        if not Path(p).is_file():
            return skip(figure, f"missing input {p}")
    return None


NO_USABLE_ROWS = "no usable rows (status complete/skipped, split test) in {path}"


def figure(name: str, rel: str, load: Callable[[Path], Any], empty: Callable[[Any], bool] | None = None,
           why: str = NO_USABLE_ROWS):
    """A figure script's ``make(results_dir, out_dir)`` from its drawing function ``draw(path, data, out_dir)``:
    the one preamble of every script. The figure is skipped when its input ``results_dir/rel`` is missing, or when
    ``empty(data)`` says the loaded data holds nothing to draw (``why``, with ``{path}``, says so)."""
    def wrap(draw: Callable[[Path, Any, Path], Outcome]) -> Callable[[Path, Path], Outcome]:
        @functools.wraps(draw)
        def make(results_dir: Path, out_dir: Path) -> Outcome:
            path = Path(results_dir) / rel
            if (skipped := missing_input(name, path)) is not None:
                return skipped
            data = load(path)
            if empty is not None and empty(data):
                return skip(name, why.format(path=path))
            return draw(path, data, out_dir)
        return make
    return wrap


# -- numbers ---------------------------------------------------------------------------------------------------

def as_float(value, where: str, allow_none: bool = False) -> float:
    """A JSON / CSV value as float; None (or an empty cell) -> NaN only if ``allow_none``."""
    if value is None or (isinstance(value, str) and value.strip() == ""):
        if allow_none:
            return math.nan
        raise FigureInputError(f"{where}: missing value")
    if isinstance(value, bool):
        raise FigureInputError(f"{where}: expected a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise FigureInputError(f"{where}: expected a number, got {value!r}") from None
    if math.isnan(x) and not allow_none:
        raise FigureInputError(f"{where}: missing value (NaN)")
    return x


def or_nan(value) -> float:
    """A number already checked to be a number or None (a result class's validation), None as NaN."""
    return math.nan if value is None else float(value)


def fmt_key(value: float) -> str:
    """A swept numeric value as a short label (0.25, 30, 1e-05)."""
    return f"{value:g}"


# -- result files ----------------------------------------------------------------------------------------------
# A JSON input is loaded through its result class (smartvector_bench.core.results: MainMetrics.load, ...), which
# validates it; what a figure reads beyond that validation is checked here, with the same ResultError message
# (``<file>: <dotted key>: <what>``).

def floats(value, path: Path, key: str, length: int | None = None, allow_none: bool = True) -> list[float]:
    """A JSON list of numbers (of ``length`` items if given); None entries are NaN only if ``allow_none``."""
    if not isinstance(value, list) or (length is not None and len(value) != length):
        want = "a list" if length is None else f"a list of {length}"
        raise FigureInputError(f"{path}: {key}: expected {want}, got {value!r}")
    return [as_float(x, f"{path}: {key}", allow_none=allow_none) for x in value]


def main_systems(m: MainMetrics, path: Path, split: str = "test") -> list[str]:
    """The systems of a metrics.json in the main table's order; each must have ``split``."""
    for name, per_split in m.systems.items():
        check(split in per_split, str(path), f"systems.{name}.{split}", "missing")
    return system_order(m.systems)


def main_metric(m: MainMetrics, path: Path, system: str, split: str, name: str) -> tuple[float, float, float]:
    """(value, lo, hi) of a metric through ``MainMetrics.metric`` / ``interval``; None is NaN (no bar or whisker).
    A metric the split lacks (leakage needs the dataset's validity windows) is malformed for a figure drawing it."""
    at = f"systems.{system}.{split}"
    check(name in m.split(system, split), str(path), f"{at}.{name}", "missing")
    lo, hi = m.interval(system, split, name)
    where = f"{path}: {at}.{M.ci(name)}"
    return (as_float(m.metric(system, split, name), f"{path}: {at}.{name}", allow_none=True),
            as_float(lo, where, allow_none=True), as_float(hi, where, allow_none=True))


def interval_words(m: MainMetrics, one: bool = False) -> str:
    """What a run's whiskers are: the cluster bootstrap over families, or over queries when it has none."""
    if measured.CLUSTERS in m.dataset:
        return QUERY_CI_ONE if one else QUERY_CI
    return CLUSTER_CI_ONE if one else CLUSTER_CI


def not_measured(m: MainMetrics, systems, split: str, key: str) -> str | None:
    """The stored reason ``key`` was not measured on ``split`` (the dataset's: the same for every system)."""
    return next((why for s in systems if (why := measured.reason(m.split(s, split), key))), None)


def split_counts(m: MainMetrics, path: Path, systems, split: str = "test") -> tuple[int | None, int | None]:
    """(queries, families) of ``split`` if every system agrees, else None for that count; ``n_families`` is
    optional (files before v2 have none), a present non-integer count is malformed."""
    out = []
    for key in (M.N_QUERIES, M.N_FAMILIES):
        values = set()
        for s in systems:
            v = m.split(s, split).get(key)
            check_type(v, int, str(path), f"systems.{s}.{split}.{key}", allow_none=True)
            values.add(v)
        out.append(values.pop() if len(values) == 1 else None)
    return out[0], out[1]


def count_phrase(n_queries: int | None, n_families: int | None) -> str:
    """"n = 70 queries in 6 families" (or less, with what is known)."""
    if not n_queries:
        return ""
    return f"n = {n_queries} queries" + (f" in {n_families} families" if n_families else "")


# -- CSV -------------------------------------------------------------------------------------------------------

def load_csv(path: Path, required: tuple[str, ...] | list[str]) -> pd.DataFrame:
    """A CSV with a header as a DataFrame of stripped strings (an empty cell is ""), indexed by each row's line in
    the file (for messages; ``attrs["path"]`` is the file); blank lines are left out. Every ``required`` column
    must be present (FigureInputError names the first missing); a row with more fields than the header is
    malformed too."""
    path = Path(path)
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False, encoding="utf-8")
    except UnicodeDecodeError as e:
        raise FigureInputError(f"{path}: not UTF-8 text ({e})") from None
    except pd.errors.EmptyDataError:
        raise FigureInputError(f"{path}: empty file (no header)") from None
    except pd.errors.ParserError as e:
        raise FigureInputError(f"{path}: {e}") from None
    df.columns = [str(h).strip() for h in df.columns]
    for col in required:
        if col not in df.columns:
            raise FigureInputError(f"{path}: missing column {col!r} (columns: {', '.join(df.columns)})")
    df = df.apply(lambda column: column.str.strip()).set_axis(df.index + 2)
    df = df[(df != "").any(axis=1)]
    df.attrs["path"] = path
    return df


def numbers(df: pd.DataFrame, column: str, allow_none: bool = False) -> pd.Series:
    """A column of :func:`load_csv` as floats; the first bad cell raises FigureInputError naming file, line and
    column (an empty cell is NaN only if ``allow_none``)."""
    where = f"{df.attrs['path']}:{{}}: column {column}"
    return pd.Series([as_float(v, where.format(line), allow_none=allow_none) for line, v in df[column].items()],
                     index=df.index, dtype=float)


def require(df: pd.DataFrame, *columns: str) -> None:
    """Every cell of ``columns`` is non-empty, else FigureInputError naming file, line and column."""
    for col in columns:
        empty = df.index[df[col] == ""]
        if len(empty):
            raise FigureInputError(f"{df.attrs['path']}:{empty[0]}: column {col}: missing value")


TIDY_BASE = ("status", "system", "split", "dataset_seed", M.TOP1)


def load_tidy(path: Path, extra: tuple[str, ...] = (), split: str = "test") -> pd.DataFrame:
    """A sweep's tidy.csv restricted to usable rows (status complete / skipped) of ``split``, ``top1`` as floats."""
    t = load_csv(path, TIDY_BASE + tuple(extra))
    t = t[t["status"].isin(USABLE_STATUS) & (t["split"] == split)]
    return t.assign(**{M.TOP1: numbers(t, M.TOP1)})


# -- drawing and saving ----------------------------------------------------------------------------------------

def new_figure(width: float, height: float) -> Figure:
    """A Figure outside pyplot (no global state). Call it inside a :func:`styled` function."""
    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def styled(fn):
    """Run ``fn`` (drawing and saving) under the fixed style, whatever the caller's rcParams are."""
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context():
            matplotlib.rcdefaults()
            matplotlib.rcParams.update(STYLE)
            return fn(*args, **kwargs)
    return functools.wraps(fn)(wrapper)


def atomic_write(path: Path, data: bytes) -> None:
    atomic_write_bytes(path, data)


def render(fig: Figure, fmt: str) -> bytes:
    buf = io.BytesIO()
    meta = PNG_METADATA if fmt == "png" else PDF_METADATA
    fig.savefig(buf, format=fmt, dpi=DPI, metadata=meta)
    return buf.getvalue()


def save(fig: Figure, out_dir: Path, name: str) -> Outcome:
    """Write ``<name>.png`` and ``<name>.pdf`` into ``out_dir`` atomically; both are rendered before either is
    written, so a failure leaves the previous pair in place."""
    out_dir = Path(out_dir)
    with matplotlib.rc_context({"svg.hashsalt": STYLE["svg.hashsalt"]}):
        blobs = {fmt: render(fig, fmt) for fmt in ("png", "pdf")}
    files = []
    for fmt, data in blobs.items():
        p = out_dir / f"{name}.{fmt}"
        atomic_write(p, data)
        files.append(p)
    return Outcome(name, tuple(files), None)


def percent_axis(axis) -> None:
    from matplotlib.ticker import PercentFormatter

    axis.set_major_formatter(PercentFormatter(1.0, decimals=0))


def whiskers(values, los, his) -> list[list[float]]:
    """Asymmetric error-bar lengths for ``errorbar``; a missing bound gives a zero-length whisker."""
    lower = [0.0 if math.isnan(lo) else max(0.0, v - lo) for v, lo in zip(values, los)]
    upper = [0.0 if math.isnan(hi) else max(0.0, hi - v) for v, hi in zip(values, his)]
    return [lower, upper]


# -- command line ----------------------------------------------------------------------------------------------

def cli(make, argv: list[str] | None = None) -> int:
    """``python paper_figures/fig_x.py [--results DIR] [--out DIR]``: 0 made or skipped, 2 malformed input."""
    import argparse

    ap = argparse.ArgumentParser(description=(make.__module__ or "figure") + ": " + (make.__doc__ or "").strip())
    ap.add_argument("--results", default=str(DEFAULT_RESULTS), help="results folder (default: results/)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="output folder (default: paper_figures/figures/)")
    args = ap.parse_args(argv)
    try:
        outcome = make(Path(args.results), Path(args.out))
    except ResultError as e:  # FigureInputError or a result file's own validation
        print(f"error: {e}", file=sys.stderr)
        return 2
    for f in outcome.files:
        print(f"made {rel(f)}")
    return 0


def rel(p: Path) -> str:
    p = Path(p)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)
