"""An experiment's outputs, the gate's metric paths into them and how an expected entry is compared.

Paths are ``<experiment>.<keys into the result JSON>`` (list items by position) and, for a CSV,
``<experiment>.csv[col=value,...].<column>`` (one row by its key columns) or ``<experiment>.csv.columns``;
``compare`` applies an entry's ``kind`` (exact4, exact6, exact, abs, columns; p-values also on a log10 scale)."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartvector_bench.core.results import ResultError
from smartvector_bench.tools.gate.common import EXPERIMENTS, read_result
from smartvector_bench.tools.gate.report import Row

DECIMALS = 4


# -- loading outputs ---------------------------------------------------------------------------------------------

def experiment_dir(root: Path, name: str) -> Path | None:
    """Where ``name``'s outputs are under ``root``: ``root/<name>/`` (a results root) or ``root`` itself (one
    run folder holding the experiment's result file). None if neither."""
    exp = EXPERIMENTS[name]
    for cand in (root / name, root):
        if (cand / exp.result_file).is_file():
            return cand
    return None


@dataclass
class Outputs:
    name: str
    folder: Path
    doc: Any = None               # the result file's document, as its result object reads it (``read_result``)
    csv_header: list[str] | None = None
    csv_rows: list[dict] | None = None
    error: str | None = None      # could not read the result file / CSV
    error_key: str | None = None  # the result file's key that the error names (None: the file as a whole)


def load_outputs(name: str, folder: Path) -> Outputs:
    exp = EXPERIMENTS[name]
    out = Outputs(name, folder)
    try:
        out.doc = read_result(name, folder / exp.result_file)
    except ResultError as exc:
        out.error, out.error_key = str(exc), exc.key
        return out
    if exp.csv_file:
        try:
            text = (folder / exp.csv_file).read_text(encoding="utf-8")
        except OSError as exc:
            out.error = f"{folder / exp.csv_file}: {exc}"
            return out
        reader = csv.DictReader(io.StringIO(text))
        out.csv_header = list(reader.fieldnames or [])
        out.csv_rows = list(reader)
    return out


# -- metric paths ------------------------------------------------------------------------------------------------

class Missing(Exception):
    """A metric path that does not resolve; the message names the missing key or column."""


_CSV_ROW = re.compile(r"^csv\[(?P<sel>[^\]]*)\]\.(?P<col>.+)$")


def csv_number(text: str) -> Any:
    if text == "":
        return None
    try:
        v = float(text)
    except ValueError:
        return text
    return int(v) if re.fullmatch(r"-?\d+", text) else v


def resolve(out: Outputs, path: str) -> Any:
    """The value at ``path`` (with or without the ``<experiment>.`` prefix) in ``out``; raises Missing."""
    rest = path.removeprefix(out.name + ".")
    exp = EXPERIMENTS[out.name]
    if rest == "csv.columns":
        if out.csv_header is None:
            raise Missing(f"{exp.csv_file} not found")
        return list(out.csv_header)
    m = _CSV_ROW.match(rest)
    if m:
        if out.csv_rows is None:
            raise Missing(f"{exp.csv_file} not found")
        sel = dict(kv.split("=", 1) for kv in m["sel"].split(",") if kv)
        col = m["col"]
        for key in [*sel, col]:
            if key not in (out.csv_header or []):
                raise Missing(f"column {key!r} missing from {exp.csv_file}")
        rows = [r for r in out.csv_rows if all(r.get(k) == v for k, v in sel.items())]
        if not rows:
            raise Missing(f"no row {m['sel']} in {exp.csv_file}")
        if len(rows) > 1:
            raise Missing(f"{len(rows)} rows match {m['sel']} in {exp.csv_file} (expected one)")
        return csv_number(rows[0][col])
    cur = out.doc
    done: list[str] = [out.name]
    for seg in rest.split("."):
        if isinstance(cur, dict):
            if seg not in cur:
                raise Missing(f"key {'.'.join(done)}.{seg} missing")
            cur = cur[seg]
        elif isinstance(cur, list):
            if not seg.isdigit() or int(seg) >= len(cur):
                raise Missing(f"item {'.'.join(done)}.{seg} missing (list of {len(cur)})")
            cur = cur[int(seg)]
        else:
            raise Missing(f"{'.'.join(done)} is a {type(cur).__name__}, not an object (no key {seg!r})")
        done.append(seg)
    return cur


# -- comparing ---------------------------------------------------------------------------------------------------

def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def bad_number(x: Any) -> str | None:
    if x is None:
        return "None where a number is expected"
    if not is_number(x):
        return f"{type(x).__name__} where a number is expected"
    if not math.isfinite(x):
        return "NaN/inf where a number is expected"
    return None


# p-values (a last key ``p_value`` or ending in ``_p``: mcnemar_p, permutation_p, mcnemar.p_value, ...) span
# orders of magnitude (2e-82 ... 1): at 4 decimals every p below 5e-5 reads 0.0000, so an exact4 p-value must
# also agree on a log scale, |log10 got - log10 expected| <= P_LOG10_TOL (0.01: about 2.3% relative; 1e-6 vs
# 3e-6 differ, 1e-6 vs 1.0001e-6 agree). Zero only matches zero. The 4-decimal rule still applies, so no
# p-value is compared more loosely than before.
P_LOG10_TOL = 0.01


def is_p_value(path: str) -> bool:
    last = path.rsplit(".", 1)[-1]
    return last == "p_value" or last.endswith("_p")


def log10_close(got: float, value: float) -> tuple[bool, str]:
    got, value = float(got), float(value)
    if got == value:
        return True, ""
    if got <= 0.0 or value <= 0.0:
        return False, "p-value: zero or negative against a different value"
    d = abs(math.log10(got) - math.log10(value))
    return (d <= P_LOG10_TOL, "" if d <= P_LOG10_TOL else f"p-value: |diff of log10| {d:.3g} > {P_LOG10_TOL:g}")


# exact6 values are stored rounded to 6 decimals, so two values 1e-9 apart (float noise of another CPU) can be
# stored one unit of the 6th decimal apart: at that precision one unit is the same value. A real change of a
# metric moves it by far more.
STORED_DECIMALS = 6


def same_at_stored_precision(got: float, value: float) -> bool:
    """Whether two values stored at :data:`STORED_DECIMALS` decimals agree up to one unit of the last one."""
    unit = 10.0 ** -STORED_DECIMALS
    return abs(round(float(got), STORED_DECIMALS) - round(float(value), STORED_DECIMALS)) <= unit * (1 + 1e-6)


def compare(spec: dict, got: Any, path: str = "") -> tuple[bool, str]:
    """Whether ``got`` matches the expected entry ``spec`` (at metric ``path``: a p-value is also compared on a
    log scale, see ``P_LOG10_TOL``); the second item explains a miss."""
    kind, value, tol = spec.get("kind"), spec.get("value"), float(spec.get("tolerance") or 0.0)
    if kind == "columns":
        if not isinstance(got, list):
            return False, "no header"
        missing = [c for c in value if c not in got]
        return (not missing, f"column(s) missing: {', '.join(missing)}" if missing else "")
    if kind == "exact":
        return (got == value, "" if got == value else "differs")
    if kind in ("exact4", "exact6", "abs"):
        if isinstance(value, list):
            if not isinstance(got, list):
                return False, f"{type(got).__name__} where a list is expected"
            if len(got) != len(value):
                return False, f"{len(got)} items, expected {len(value)}"
            for i, (v, g) in enumerate(zip(value, got)):
                ok, why = compare({**spec, "value": v}, g, path)
                if not ok:
                    return False, f"item {i}: {why}"
            return True, ""
        if value is None:  # recorded as None (e.g. no baseline): must still be None
            return (got is None, "" if got is None else "expected None")
        if isinstance(value, bool) or not is_number(value):
            return (got == value, "" if got == value else "differs")
        bad = bad_number(got)
        if bad:
            return False, bad
        if kind == "exact6" and not tol:
            if not same_at_stored_precision(got, value):
                return False, f"differs at {STORED_DECIMALS} decimals by more than one unit"
            if is_p_value(path):
                return log10_close(got, value)
            return True, ""
        if kind in ("exact4", "exact6"):
            places = 6 if kind == "exact6" else DECIMALS
            diff = abs(round(float(got), places) - round(float(value), places))
            if diff > tol + 1e-12:
                return False, f"differs at {places} decimals"
            if is_p_value(path):
                return log10_close(got, value)
            return True, ""
        diff = abs(float(got) - float(value))
        return (diff <= tol, "" if diff <= tol else f"|diff| {diff:.3g} > {tol:g}")
    return False, f"unknown kind {kind!r}"


def check_expected(out: Outputs, metrics: dict[str, dict]) -> list[Row]:
    rows = []
    for path, spec in metrics.items():
        tol = tol_text(spec)
        try:
            got = resolve(out, path)
        except Missing as exc:
            rows.append(Row(path, spec.get("value"), "MISSING", tol, False, str(exc)))
            continue
        ok, why = compare(spec, got, path)
        if is_p_value(path) and spec.get("kind") in ("exact4", "exact6"):
            tol += f", log10 +/- {P_LOG10_TOL:g}"
        rows.append(Row(path, spec.get("value"), got, tol, ok, why))
    return rows


def tol_text(spec: dict) -> str:
    kind = spec.get("kind")
    if kind in ("exact4", "exact6"):
        t = float(spec.get("tolerance") or 0.0)
        if kind == "exact6" and not t:
            return "6 dp +/- 1 unit"
        return f"{6 if kind == 'exact6' else DECIMALS} dp" + (f" +/- {t:g}" if t else "")
    if kind == "abs":
        return f"+/- {float(spec.get('tolerance') or 0.0):g}"
    return kind or "?"
