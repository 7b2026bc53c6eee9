"""File integrity of the committed results: ``results/expected.json``, the manifest of every file under the
results root (relative path -> sha256 and size; ``--write-expected`` writes it and prints every change), and each
``PROVENANCE.json``'s own list. The manifest holds no metric values: the committed files are the expected values.

A recorded file missing or with other bytes fails naming it; so does a file the manifest does not know (a run
copied in by hand, a leftover temp file: republish and regenerate, or delete it), and a file whose bytes are not
the ones its ``PROVENANCE.json`` lists (written by the publisher from the run's own bytes), so a hand edit
re-blessed with ``--write-expected`` still fails unless the provenance is forged as well, and then the replay
(``replay.py``) fails on the figure. Pure file checks, no knowledge of the metrics.

The expected file checks itself too: it is read only as ``--write-expected`` writes it (``schema_version``, keys,
entry shapes, ``n_files``), and its ``folders`` (per top-level folder: the count and digest of the manifest's
entries) must be those of its manifest, so an entry deleted, added or edited by hand is refused (exit 2) naming
the folder and, from the files on disk and the PROVENANCE.json lists, the entry."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.dataset.read import SHA256_HEX
from smartvector_bench.tools.gate.common import BadInput, Row, rel

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


def _row(rel: str, check: str, expected: str, got: str, ok: bool, note: str = "") -> Row:
    return Row(check, expected, got, "file", ok, note, rel)  # ``file`` relative to the results root


def check_manifest(root: Path, manifest: dict, expected_path: Path) -> list[Row]:
    recorded: dict[str, dict] = manifest.get("files") or {}
    checks = []
    for rel, want in recorded.items():
        got = file_digest(root / rel) if (root / rel).is_file() else None
        ok = got is not None and (got["sha256"], got["bytes"]) == (want.get("sha256"), want.get("bytes"))
        note = "" if ok else "recorded in the manifest, not found" if got is None else (
            f"{got['bytes']} bytes, recorded {want.get('bytes')}; edited since the manifest was written "
            "(republish, then --write-expected)")
        checks.append(_row(rel, "sha256", str(want.get("sha256"))[:12], got["sha256"][:12] if got else "MISSING",
                           ok, note))
    checks += [_row(rel, "recorded", "in the manifest", "NOT RECORDED", False, "an unrecorded file cannot be "
                    "trusted: republish and regenerate with --write-expected, or delete it")
               for rel in list_files(root, expected_path) if rel not in recorded]
    return checks


def check_provenance(root: Path) -> list[Row]:
    """Every ``PROVENANCE.json`` under ``root``: its recorded ``files`` hashes against the files beside it."""
    checks = []
    for prov_path in sorted(root.rglob(PROVENANCE_FILE)):
        where = prov_path.relative_to(root).as_posix()
        try:
            files = json.loads(prov_path.read_text(encoding="utf-8")).get("files") or {}
        except (OSError, ValueError, AttributeError) as exc:
            checks.append(_row(where, "readable", "JSON", "ERROR", False, str(exc)))
            continue
        for fname, info in files.items():
            want, path = (info or {}).get("sha256") if isinstance(info, dict) else None, prov_path.parent / fname
            if want is None:
                continue
            got = file_digest(path)["sha256"] if path.is_file() else None
            checks.append(_row(path.relative_to(root).as_posix(), f"{PROVENANCE_FILE} sha256", want[:12],
                               got[:12] if got else "MISSING", got == want, "" if got == want else
                               f"differs from {where}: not the bytes the recorded run published"))
    return checks


EXPECTED_SCHEMA = "3.0"  # 3.0: ``folders``, the manifest's own count and digest per folder
NOTES = ["Generated by `python -m smartvector_bench.tools.gate --write-expected` after publishing (`make results`, "
         "`make bench`); never edit by hand. manifest: sha256 and size of every file under the results root (this "
         "file excepted); folders: per top-level folder ('.': the root's own files) the manifest's count and sha256 "
         "of its entries, so an entry deleted, added or edited by hand fails; the gate "
         "(smartvector_bench/tools/gate/) checks both, then recomputes every published figure from the committed run "
         "files and compares reruns with them."]
KEYS = ("schema_version", "notes", "generated_by", "manifest", "folders")  # exactly what write_expected writes
ROOT_FILES = "."  # the folder key of the files directly under the results root


def _folder(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ROOT_FILES


def folder_digests(files: dict[str, dict]) -> dict[str, dict]:
    """Per top-level folder (one per experiment or sweep preset, ``.`` for the root's files): its number of
    manifest entries and the sha256 of their canonical JSON."""
    groups: dict[str, dict] = {}
    for f, entry in files.items():
        groups.setdefault(_folder(f), {})[f] = entry
    return {g: {"entries": len(e), "sha256": hashlib.sha256(json.dumps(e, sort_keys=True).encode()).hexdigest()}
            for g, e in sorted(groups.items())}


def write_expected(results_root: Path, path: Path) -> dict:
    """The manifest of ``results_root`` written to ``path``; prints each file added, changed or removed."""
    if not Path(results_root).is_dir():
        raise BadInput(f"{results_root}: not a folder")
    try:  # any earlier version, only for the list of changes
        before = json.loads(Path(path).read_text(encoding="utf-8")) if Path(path).exists() else {}
    except (OSError, ValueError):
        before = {}
    manifest = build_manifest(results_root, path)
    doc = {"schema_version": EXPECTED_SCHEMA, "notes": NOTES,
           "generated_by": f"python -m smartvector_bench.tools.gate --write-expected --results-from {rel(results_root)}",
           "manifest": manifest, "folders": folder_digests(manifest["files"])}
    old = ((before if isinstance(before, dict) else {}).get("manifest") or {}).get("files") or {}
    new = doc["manifest"]["files"]
    changes = [f"added {f}" for f in new if f not in old] + [f"removed {f}" for f in old if f not in new]
    changes += [f"changed {f}: sha256 {str(old[f].get('sha256', ''))[:12]} -> {new[f]['sha256'][:12]}" for f in new
                if f in old and old[f] != new[f]]
    print("\n".join(changes) if changes else f"{rel(path)}: manifest unchanged")
    atomic_write_json(path, doc)
    Path(path).chmod(0o644)
    return doc


def _format_problem(doc) -> str | None:
    """What makes ``doc`` other than what ``write_expected`` writes (None: nothing)."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    if doc.get("schema_version") != EXPECTED_SCHEMA:
        return f"schema_version {doc.get('schema_version')!r}; this gate reads {EXPECTED_SCHEMA!r} only"
    if set(doc) != set(KEYS):
        odd = sorted(set(doc) - set(KEYS)) or sorted(set(KEYS) - set(doc))
        return f"{'unknown' if odd[0] in doc else 'missing'} key {odd[0]!r} (keys: {', '.join(KEYS)})"
    m, folders = doc["manifest"], doc["folders"]
    if not isinstance(m, dict) or set(m) != {"root", "n_files", "files"} or not isinstance(m["root"], str) \
            or not isinstance(m["files"], dict) or type(m["n_files"]) is not int:
        return "manifest: expected {root: a string, n_files: an integer, files: an object}"
    for f, e in m["files"].items():
        if not (isinstance(e, dict) and set(e) == {"sha256", "bytes"} and isinstance(e["sha256"], str)
                and SHA256_HEX.fullmatch(e["sha256"]) and type(e["bytes"]) is int and e["bytes"] >= 0):
            return f"manifest.files.{f}: expected {{sha256: 64 hex digits, bytes: an integer >= 0}}, got {e!r:.80}"
        if not f or f.startswith("/") or ".." in f.split("/"):
            return f"manifest.files: {f!r} is not a path inside the results root"
    if m["n_files"] != len(m["files"]):
        return f"manifest.n_files {m['n_files']}, {len(m['files'])} entries listed"
    if not isinstance(folders, dict) or not all(isinstance(v, dict) and set(v) == {"entries", "sha256"}
                                                for v in folders.values()):
        return "folders: expected {folder: {entries: an integer, sha256: a string}}"
    return None


def _provenance_lists(root: Path, folder: str) -> dict[str, str]:
    """Path (relative to ``root``) -> sha256 of every file a PROVENANCE.json in ``root/folder`` lists."""
    out: dict[str, str] = {}
    base = root if folder == ROOT_FILES else root / folder
    for prov in sorted(base.rglob(PROVENANCE_FILE)) if folder != ROOT_FILES and base.is_dir() else []:
        try:
            listed = json.loads(prov.read_text(encoding="utf-8")).get("files") or {}
        except (OSError, ValueError, AttributeError):
            continue
        here = prov.parent.relative_to(root).as_posix()
        out |= {f"{here}/{f}": (i or {}).get("sha256") for f, i in listed.items() if isinstance(i, dict)}
    return out


def _which(root: Path, folder: str, files: dict, expected_path: Path, kind: str) -> list[str]:
    """The entries of ``folder`` most likely ``kind`` (missing, added, edited) by hand: judged by the files on disk
    and the PROVENANCE.json lists, the only other records of them."""
    mine = {f: e for f, e in files.items() if _folder(f) == folder}
    base = root if folder == ROOT_FILES else root / folder
    on_disk = {f if folder == ROOT_FILES else f"{folder}/{f}" for f in list_files(base, expected_path)} \
        if base.is_dir() else set()
    if folder == ROOT_FILES:
        on_disk = {f for f in on_disk if "/" not in f}
    proven = _provenance_lists(root, folder)
    if kind == "missing":
        return sorted((on_disk | set(proven)) - set(mine))
    if kind == "added":
        return sorted(f for f in mine if f not in on_disk or (proven and f not in proven
                                                              and not f.endswith(PROVENANCE_FILE)))
    return sorted(f for f, e in mine.items() if f in proven and proven[f] != e["sha256"]
                  or f not in on_disk or file_digest(root / f) != e)


def _n(k: int) -> str:
    return f"{k} entr{'y' if k == 1 else 'ies'}"


def folder_problems(expected_path: Path, doc: dict) -> list[str]:
    """Each folder whose recorded count or digest is not the manifest's, with the entries to blame."""
    files, recorded = doc["manifest"]["files"], doc["folders"]
    listed, root = folder_digests(files), manifest_root(expected_path, doc["manifest"])
    problems = []
    for g in sorted(set(recorded) | set(listed)):
        r, got = recorded.get(g) or {"entries": 0, "sha256": "none"}, listed.get(g) or {"entries": 0, "sha256": "none"}
        if r == got:
            continue
        label = "the root's own files" if g == ROOT_FILES else g
        if r["entries"] != got["entries"]:
            kind = "missing" if got["entries"] < r["entries"] else "added"
            text = f"{label}: {_n(r['entries'])} recorded, {got['entries']} listed"
        else:
            kind = "edited"
            text = f"{label}: {_n(got['entries'])}, digest {got['sha256'][:12]}, recorded {r['sha256'][:12]}"
        names = _which(root, g, files, expected_path, kind)
        shown = ", ".join(names[:3]) + (" ..." if len(names) > 3 else "")
        problems.append(text + (f" ({kind}: {shown})" if names else ""))
    return problems


def read_expected(path: Path, quiet: bool = False) -> dict | None:
    """The expected file: exactly what ``write_expected`` writes, its folder counts and digests those of its
    manifest; BadInput names what is wrong (``quiet``: None instead)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        why = _format_problem(doc)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
    if why is not None:
        if quiet:
            return None
        raise BadInput(f"{rel(path)}: cannot read the manifest ({why}); regenerate it with --write-expected") from None
    problems = folder_problems(path, doc)
    if problems:
        if quiet:
            return None
        raise BadInput(f"{rel(path)}: " + "; ".join(problems) + "; not what --write-expected wrote: restore it "
                       "from git or regenerate it (--write-expected)")
    return doc
