"""Stored results as one pandas DataFrame, for notebooks: :func:`load`.

``load(path)`` takes

- a run folder (its ``metrics.json``, experiment=main: ``results/main``, ``results/main_large``, a job folder of a
  sweep, ``outputs/main/<time>``): one row per system x split with the headline metrics, each with its interval
  as ``<metric>_lo`` / ``<metric>_hi``, the test counts (``n_queries``, ``n_families``), the p-values and the
  dataset's name, seed and sha256;
- a sweep folder (its ``tidy.csv``, written by ``smartvector-collect``: ``results/seeds``, ``multirun/tune``):
  tidy.csv as it is, one row per job x system x split, the swept keys as columns (``dataset.seed``,
  ``weights``, ...; numeric ones as numbers) and the job's ``status`` (a failed or missing job has one row with
  empty metrics: filter on ``status`` in complete / skipped);
- the results folder (``results/``): every run and sweep folder in it stacked, with a first column ``source``
  naming the folder each row came from (``main``, ``seeds``, ...). The other experiments (feedback loop,
  re-embedding cost, shortcut audit, lvl_eval, perf) store no system x split table; their folders are listed in
  ``df.attrs["skipped"]``.

Anything else raises :class:`~smartvector_bench.core.errors.BenchError` with a one-line message. A run folder's
metrics.json is read leniently (only its ``systems`` table is needed), so a partial file still loads; use
:class:`~smartvector_bench.core.results.MainMetrics` to validate one.

Example::

    from smartvector_bench.core.results import load

    df = load("results")
    test = df[df["split"] == "test"]
    test[test["source"] == "seeds"].groupby("system")["top1"].agg(["mean", "std"])   # over the five seeds
    load("results/main").set_index(["system", "split"]).loc[("smartvector", "test"), ["top1", "top1_lo", "top1_hi"]]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results.main import MainMetrics, system_rows
from smartvector_bench.core.results.sweep import TIDY

METRICS_FILE = MainMetrics.FILE
RUN_COLUMNS = ("system", "split", M.N_QUERIES, M.N_FAMILIES,
               *(c for m in M.CI_METRICS for c in (m, M.lo(m), M.hi(m))),
               *M.P_VALUES, "dataset", "dataset_seed", "dataset_sha256", "git_sha", "config_sha256")
SOURCE = "source"
# tidy.csv's columns that hold a share, a mean score, a calibration error or a p-value: all within [0, 1]
UNIT_COLUMNS = (*(c for m in M.CI_METRICS for c in (m, M.lo(m), M.hi(m))), *M.P_VALUES)

if TYPE_CHECKING:
    import pandas as pd


def _pandas():
    """pandas, imported on first use: the experiments import this package and never need it."""
    import pandas

    return pandas


def _what(path: Path) -> str | None:
    """"run", "sweep" or None for a folder."""
    if (path / TIDY).is_file():
        return "sweep"
    if (path / METRICS_FILE).is_file():
        return "run"
    return None


def load_run(path: str | Path) -> pd.DataFrame:
    """A run folder's metrics.json (or the file itself) as rows of system x split (see the module docstring)."""
    path = Path(path)
    file = path / METRICS_FILE if path.is_dir() else path
    try:
        m = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BenchError(f"{file}: not readable as JSON ({exc})") from None
    systems = m.get("systems") if isinstance(m, dict) else None
    if not isinstance(systems, dict) or not all(isinstance(v, dict) for v in systems.values()):
        raise BenchError(f"{file}: no systems object of system -> split -> metrics (not a run of experiment=main)")
    ds = m.get("dataset") or {}
    rows = [row | {"dataset": ds.get("name"), M.N_FAMILIES: (systems[row["system"]][row["split"]] or {}).get(
        M.N_FAMILIES)} for row in system_rows(m)]
    return _pandas().DataFrame(rows, columns=list(RUN_COLUMNS))


def load_sweep(path: str | Path) -> pd.DataFrame:
    """A sweep folder's tidy.csv (or the file itself), as pandas reads it (numeric swept values as numbers); every
    metric and p-value cell empty (not measured) or a number in [0, 1], else a BenchError naming file, line and
    column."""
    path = Path(path)
    file = path / TIDY if path.is_dir() else path
    pd = _pandas()
    try:
        df = pd.read_csv(file)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # pandas' parser errors are ValueErrors
        raise BenchError(f"{file}: not readable as CSV ({exc})") from None
    for col in (c for c in UNIT_COLUMNS if c in df.columns):
        values = pd.to_numeric(df[col], errors="coerce")  # text -> NaN, told apart from an empty cell below
        bad = (df[col].notna() & values.isna()) | (values.notna() & ~values.between(0.0, 1.0))
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            cell = df[col].iloc[row]
            cell = cell.item() if hasattr(cell, "item") else cell  # numpy scalar -> its plain repr
            raise BenchError(f"{file}:{row + 2}: {col}: {cell!r} is not a number in [0, 1] (an empty cell: not "
                             "measured)")
    return df


def load_all(path: str | Path) -> pd.DataFrame:
    """Every run and sweep folder directly in ``path`` (results/), stacked, ``source`` first."""
    path = Path(path)
    frames, skipped = [], []
    for sub in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
        kind = _what(sub)
        if kind is None:
            skipped.append(sub.name)
            continue
        df = load_sweep(sub) if kind == "sweep" else load_run(sub)
        frames.append(df.assign(**{SOURCE: sub.name})[[SOURCE, *df.columns]])
    if not frames:
        raise BenchError(f"{path}: holds no run folder (metrics.json) or sweep folder (tidy.csv)")
    out = _pandas().concat(frames, ignore_index=True)
    out.attrs["skipped"] = skipped
    return out


def load(path: str | Path) -> pd.DataFrame:
    """A run folder, a sweep folder or the results folder as one DataFrame (see the module docstring)::

        >>> df = load("results/seeds")                                  # doctest: +SKIP
        >>> df[df.split == "test"].groupby("system")["top1"].mean()     # doctest: +SKIP
    """
    path = Path(path)
    if path.is_file() and path.name in (METRICS_FILE, TIDY):
        return load_run(path) if path.name == METRICS_FILE else load_sweep(path)
    if not path.is_dir():
        raise BenchError(f"{path}: not found" if not path.exists() else
                         f"{path}: not a run folder, a sweep folder or a results folder (a file other than "
                         f"{METRICS_FILE} or {TIDY})")
    kind = _what(path)
    if kind == "sweep":
        return load_sweep(path)
    if kind == "run":
        return load_run(path)
    if any(_what(p) for p in path.iterdir() if p.is_dir()):
        return load_all(path)
    raise BenchError(f"{path}: not a run folder ({METRICS_FILE}), a sweep folder ({TIDY}) or a results folder "
                     "holding them")
