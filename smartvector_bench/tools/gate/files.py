"""File integrity of the committed results: the manifest in ``expected.json`` (relative path -> sha256 and size
of every file under the results root, ``--write-expected``) and each ``PROVENANCE.json``'s own list.

A recorded file missing or with other bytes fails naming it; so does a file the manifest does not know (a run
copied in by hand, a leftover temp file: republish and regenerate, or delete it), and a file whose bytes are not
the ones its ``PROVENANCE.json`` lists (written by the publisher from the run's own bytes), so a hand edit
re-blessed with ``--write-expected`` still fails unless the provenance is forged as well, and then the replay
(``replay.py``) fails on the figure. Pure file checks, no knowledge of the metrics."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

PROVENANCE_FILE = "PROVENANCE.json"
REPORT_PAGE = "report.html"  # smartvector-report's page: derived, gitignored, unrecorded at any depth


def file_digest(path: Path) -> dict:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return {"sha256": h.hexdigest(), "bytes": path.stat().st_size}


def list_files(root: Path, exclude: Path | None = None) -> list[str]:
    """Every file under ``root`` (posix paths relative to it, sorted), ``exclude`` and every report page left out."""
    skip = exclude.resolve() if exclude else None
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and p.resolve() != skip and p.name != REPORT_PAGE)


def build_manifest(root: Path, expected_path: Path) -> dict:
    """The manifest of ``root`` for an expected file at ``expected_path`` (``root`` relative to its folder)."""
    rel = Path(os.path.relpath(Path(root).resolve(), Path(expected_path).resolve().parent)).as_posix()
    files = list_files(Path(root), expected_path)
    return {"root": rel, "n_files": len(files), "files": {f: file_digest(Path(root) / f) for f in files}}


def manifest_root(expected_path: Path, manifest: dict) -> Path:
    return (Path(expected_path).resolve().parent / manifest.get("root", ".")).resolve()


@dataclass
class FileCheck:
    file: str          # relative to the results root
    check: str         # "sha256", "recorded", "PROVENANCE.json sha256"
    expected: str
    got: str
    ok: bool
    note: str = ""


def check_manifest(root: Path, manifest: dict, expected_path: Path) -> list[FileCheck]:
    recorded: dict[str, dict] = manifest.get("files") or {}
    checks = []
    for rel, want in recorded.items():
        got = file_digest(root / rel) if (root / rel).is_file() else None
        ok = got is not None and (got["sha256"], got["bytes"]) == (want.get("sha256"), want.get("bytes"))
        note = "" if ok else "recorded in the manifest, not found" if got is None else (
            f"{got['bytes']} bytes, recorded {want.get('bytes')}; edited since the manifest was written "
            "(republish, then --write-expected)")
        checks.append(FileCheck(rel, "sha256", str(want.get("sha256"))[:12], got["sha256"][:12] if got else "MISSING",
                                ok, note))
    checks += [FileCheck(rel, "recorded", "in the manifest", "NOT RECORDED", False, "an unrecorded file cannot be "
                         "trusted: republish and regenerate with --write-expected, or delete it")
               for rel in list_files(root, expected_path) if rel not in recorded]
    return checks


def check_provenance(root: Path) -> list[FileCheck]:
    """Every ``PROVENANCE.json`` under ``root``: its recorded ``files`` hashes against the files beside it."""
    checks = []
    for prov_path in sorted(root.rglob(PROVENANCE_FILE)):
        where = prov_path.relative_to(root).as_posix()
        try:
            files = json.loads(prov_path.read_text(encoding="utf-8")).get("files") or {}
        except (OSError, ValueError, AttributeError) as exc:
            checks.append(FileCheck(where, "readable", "JSON", "ERROR", False, str(exc)))
            continue
        for fname, info in files.items():
            want, path = (info or {}).get("sha256") if isinstance(info, dict) else None, prov_path.parent / fname
            if want is None:
                continue
            got = file_digest(path)["sha256"] if path.is_file() else None
            checks.append(FileCheck(path.relative_to(root).as_posix(), f"{PROVENANCE_FILE} sha256", want[:12],
                                    got[:12] if got else "MISSING", got == want, "" if got == want else
                                    f"differs from {where}: not the bytes the recorded run published"))
    return checks
