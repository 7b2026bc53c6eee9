"""One experiment's outputs against its expected values and invariants, and the committed results as a whole:
file integrity (``files.py``), every expected value and invariant recomputed from the committed files, and
every published sweep's summary recomputed from its tidy.csv (``sweeps.py``); each row names its file."""

from __future__ import annotations

from pathlib import Path

from smartvector_bench.tools.gate import files, sweeps
from smartvector_bench.tools.gate.common import EXPERIMENTS, rel
from smartvector_bench.tools.gate.invariants import INVARIANTS
from smartvector_bench.tools.gate.paths import check_expected, experiment_dir, load_outputs, tol_text
from smartvector_bench.tools.gate.report import Row


def compare_folder(name: str, folder: Path | None, metrics: dict[str, dict], where: str) -> list[Row]:
    """Every expected value and invariant of experiment ``name`` against its outputs in ``folder``."""
    if folder is None:
        return [Row(f"{name} (outputs)", EXPERIMENTS[name].result_file, "MISSING", "-", False, f"not found in {where}"),
                *[Row(p, s.get("value"), "MISSING", tol_text(s), False, "no outputs") for p, s in metrics.items()]]
    out = load_outputs(name, folder)
    if out.doc is None:  # the result file is absent, not JSON or not of its kind: one row names file and key
        note = f"{out.error}; {len(metrics)} expected values not compared"
        return [Row(f"{name}.{out.error_key}" if out.error_key else f"{name} (outputs)",
                    f"a {EXPERIMENTS[name].kind} result file", "ERROR", "-", False, note,
                    line=note.removeprefix(f"{rel(folder / EXPERIMENTS[name].result_file)}: "))]
    rows = [Row(f"{name} (outputs)", "readable", "ERROR", "-", False, out.error)] if out.error else []
    return rows + check_expected(out, metrics) + INVARIANTS[name](out)


def _in_file(row: Row, name: str, folder: Path) -> Row:
    """``row`` of experiment ``name`` renamed after the committed file it is about: ``metrics.json`` +
    ``systems.x.test.ece``, ``feedback_loop.csv`` + ``[round=3,...].top1``."""
    exp, rest = EXPERIMENTS[name], row.metric
    for prefix in (f"{name}.", f"{name} "):
        rest = rest.removeprefix(prefix)
    fname = exp.result_file
    if row.file:  # a row about another file of the folder (a run file): named by the experiment's invariants
        fname, rest = row.file, rest.removeprefix(f"{row.file}: ")
    elif exp.csv_file and rest.startswith("csv"):
        fname, rest = exp.csv_file, rest[3:].lstrip(". ") or "rows"
    row.metric, row.file = rest, rel(folder / fname)
    return row


def check_committed(expected_path: Path, expected: dict) -> tuple[list[Row], Path | None]:
    """The committed results root of ``expected`` (its ``manifest``): file integrity (``files``), then
    every expected value and invariant recomputed from the committed files. Each row names its file."""
    manifest = expected.get("manifest")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return [Row("manifest", "sha256 of every result file", "MISSING", "file", False,
                    "no file manifest: regenerate the expected file with --write-expected", rel(expected_path))], None
    root = files.manifest_root(expected_path, manifest)
    if not root.is_dir():
        return [Row("manifest root", "a folder", "MISSING", "file", False, f"{root} not found", rel(root))], None
    folders = {n: experiment_dir(root, n) for n in expected["experiments"]}
    result_files = {n: (f / EXPERIMENTS[n].result_file).relative_to(root).as_posix()
                    for n, f in folders.items() if f is not None}
    checks = (files.check_manifest(root, manifest, expected_path) + files.check_provenance(root)
              + files.check_sources(expected.get("sources") or {}, result_files, manifest))
    rows = [Row(c.check, c.expected, c.got, "file", c.ok, c.note, rel(root / c.file)) for c in checks]
    for n, metrics in expected["experiments"].items():
        folder = folders[n]
        rows += [_in_file(r, n, folder if folder is not None else root / n)
                 for r in compare_folder(n, folder, metrics, rel(root))]
    rows += [Row(c.path, c.recomputed, c.stored, "summary", c.ok, c.note, rel(root / c.file), line=c.line())
             for c in sweeps.check_summaries(root)]
    return rows, root
