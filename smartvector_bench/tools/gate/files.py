"""File integrity of the committed results, for the regression gate (``python -m smartvector_bench.tools.gate``).

``python -m smartvector_bench.tools.gate --write-expected`` records a manifest of every file under the results
root (relative path -> sha256 and size; the expected file itself excepted) under ``manifest`` in ``expected.json``.
The gate then checks, before any rerun:

- every recorded file is present with its recorded sha256 and size (an edit anywhere in a file, tracked metric
  or not, fails naming the file);
- every file under the root is recorded: a file the manifest does not know is a result nobody vouched for (a
  new run copied in by hand, a leftover temp file, a backup) and fails too. Republish and regenerate with
  ``--write-expected``, or delete it;
- each ``sources.<experiment>.sha256`` of the expected file equals the manifest entry of that result file;
- each ``PROVENANCE.json`` ``files`` entry (written by the publisher from the run's own bytes) matches the file,
  so a hand edit re-blessed with ``--write-expected`` still fails unless the provenance is forged as well.

Pure file checks: no knowledge of the metrics (``committed.py`` recomputes those from the same files)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

PROVENANCE_FILE = "PROVENANCE.json"


def file_digest(path: Path) -> dict:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return {"sha256": h.hexdigest(), "bytes": path.stat().st_size}


# smartvector-report's page (of results/ or of any run/sweep folder under it): derived from the files here,
# gitignored (results/**/report.html), unrecorded at any depth.
REPORT_PAGE = "report.html"


def list_files(root: Path, exclude: Path | None = None) -> list[str]:
    """Every file under ``root`` (posix paths relative to it, sorted), ``exclude`` and every report page left out."""
    skip = exclude.resolve() if exclude else None
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and p.resolve() != skip and p.name != REPORT_PAGE)


def build_manifest(root: Path, expected_path: Path) -> dict:
    """The manifest of ``root`` for an expected file written to ``expected_path`` (``root`` is stored relative
    to the expected file's folder: ``"."`` for ``results/expected.json``)."""
    rel = Path(os.path.relpath(Path(root).resolve(), Path(expected_path).resolve().parent)).as_posix()
    files = list_files(Path(root), expected_path)
    return {"root": rel, "n_files": len(files), "files": {f: file_digest(Path(root) / f) for f in files}}


def manifest_root(expected_path: Path, manifest: dict) -> Path:
    return (Path(expected_path).resolve().parent / manifest.get("root", ".")).resolve()


@dataclass
class FileCheck:
    file: str          # relative to the results root
    check: str         # what was checked: "sha256", "recorded", "sources.main.sha256", "PROVENANCE.json sha256"
    expected: str
    got: str
    ok: bool
    note: str = ""


def _short(h: str | None) -> str:
    return str(h)[:12] if h else "-"


def check_manifest(root: Path, manifest: dict, expected_path: Path) -> list[FileCheck]:
    recorded: dict[str, dict] = manifest.get("files") or {}
    checks = []
    for rel, want in recorded.items():
        path = root / rel
        if not path.is_file():
            checks.append(FileCheck(rel, "sha256", _short(want.get("sha256")), "MISSING", False,
                                    "recorded in the manifest, not found"))
            continue
        got = file_digest(path)
        ok = got["sha256"] == want.get("sha256") and got["bytes"] == want.get("bytes")
        note = "" if ok else (f"{got['bytes']} bytes, recorded {want.get('bytes')}; edited since the expected "
                              "file was written (republish, then --write-expected)")
        checks.append(FileCheck(rel, "sha256", _short(want.get("sha256")), _short(got["sha256"]), ok, note))
    for rel in list_files(root, expected_path):
        if rel not in recorded:
            checks.append(FileCheck(rel, "recorded", "in the manifest", "NOT RECORDED", False,
                                    "an unrecorded file under the results root cannot be trusted: republish and "
                                    "regenerate with --write-expected, or delete it"))
    return checks


def check_sources(sources: dict, result_files: dict[str, str], manifest: dict) -> list[FileCheck]:
    """``sources.<name>.sha256`` against the manifest entry of ``result_files[name]`` (relative path)."""
    checks = []
    recorded = manifest.get("files") or {}
    for name, src in sources.items():
        rel = result_files.get(name)
        if rel is None or "sha256" not in src:
            continue
        got = (recorded.get(rel) or {}).get("sha256")
        checks.append(FileCheck(rel, f"sources.{name}.sha256", _short(src["sha256"]), _short(got),
                                got == src["sha256"], "" if got == src["sha256"] else
                                "the expected file's sources and manifest disagree (regenerate with --write-expected)"))
    return checks


def check_provenance(root: Path) -> list[FileCheck]:
    """Every ``PROVENANCE.json`` under ``root``: its recorded ``files`` hashes against the files beside it."""
    checks = []
    for prov_path in sorted(root.rglob(PROVENANCE_FILE)):
        folder = prov_path.parent
        try:
            files = json.loads(prov_path.read_text(encoding="utf-8")).get("files") or {}
        except (OSError, ValueError, AttributeError) as exc:
            checks.append(FileCheck(prov_path.relative_to(root).as_posix(), "readable", "JSON", "ERROR", False,
                                    str(exc)))
            continue
        for fname, info in files.items():
            rel = (folder / fname).relative_to(root).as_posix()
            want = (info or {}).get("sha256") if isinstance(info, dict) else None
            if want is None:
                continue
            got = file_digest(folder / fname)["sha256"] if (folder / fname).is_file() else None
            checks.append(FileCheck(rel, f"{PROVENANCE_FILE} sha256", _short(want), _short(got) if got else
                                    "MISSING", got == want, "" if got == want else
                                    f"differs from {prov_path.relative_to(root).as_posix()}: not the bytes the "
                                    "recorded run published"))
    return checks
