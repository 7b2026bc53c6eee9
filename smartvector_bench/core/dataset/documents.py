"""The two files an lvl_corpus adds to the BEIR files: ``documents.jsonl`` (every document version) and
``edits.jsonl`` (the generator's ground-truth class of every paragraph position), read and cross-checked.

``load_dataset`` reads the BEIR files and checks their sha256; this module checks these two against the same
``manifest.json`` and against each other (data_gen/lvl_corpus.py writes them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from smartvector_bench.core.dataset.chunking import chunk_paragraphs
from smartvector_bench.core.dataset import file_sha256, read_jsonl
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.timeutil import iso_to_days

LVL_FILES = ("documents.jsonl", "edits.jsonl")
POSITION_CLASSES = ("unchanged", "moved", "modified", "new")
EMBED_CLASSES = ("new", "modified")


@dataclass
class DocVersion:
    doc_id: str
    version: int
    effective_at: float  # days since the epoch
    text: str
    paragraphs: list[str]  # as the lake chunks the text (blank-line paragraphs)
    truth: list[str]  # ground-truth class of each position of this version
    revert: list[bool]
    old_position: list[int | None]
    deleted: list[int] = field(default_factory=list)  # old positions deleted at this version


def _jsonl(path: Path) -> list[tuple[str, dict]]:
    return [(f"{path}:{lineno}", obj) for lineno, obj in read_jsonl(path)]


def check_lvl_files(root: Path, manifest: dict | None) -> None:
    """``documents.jsonl`` and ``edits.jsonl`` against their sha256 in ``manifest.json`` (``files``), when the
    manifest lists them: ``load_dataset`` checks only the BEIR files and ``labels/``."""
    files = (manifest or {}).get("files")
    if not isinstance(files, dict):
        return
    for name in LVL_FILES:
        entry = files.get(name)
        recorded = entry.get("sha256") if isinstance(entry, dict) else entry
        if isinstance(recorded, str) and (root / name).is_file() and file_sha256(root / name) != recorded:
            raise BenchError(f"{root / name}: sha256 differs from manifest.json (file edited after generation?)")


def load_versions(root: Path, manifest: dict | None = None) -> list[DocVersion]:
    """Every document version with its paragraphs and ground-truth edits, in (doc_id, version) order."""
    for name in LVL_FILES:
        if not (root / name).is_file():
            raise BenchError(f"{root / name}: file is missing; experiment=lvl_eval needs an lvl_corpus folder")
    check_lvl_files(root, manifest)
    edits: dict[tuple[str, int], tuple[str, list]] = {}
    for where, e in _jsonl(root / "edits.jsonl"):
        try:
            key = (str(e["doc_id"]), int(e["version"]))
            changes = list(e["changes"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BenchError(f"{where}: expected doc_id, version and changes ({exc})") from None
        if key in edits:
            raise BenchError(f"{where}: {key[0]} version {key[1]} listed twice")
        edits[key] = (where, changes)
    versions: dict[tuple[str, int], DocVersion] = {}
    for where, d in _jsonl(root / "documents.jsonl"):
        try:
            key = (str(d["doc_id"]), int(d["version"]))
            text = d["text"]
            effective_at = iso_to_days(d["effective_at"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BenchError(f"{where}: expected doc_id, version, effective_at (ISO-8601 UTC) and text "
                             f"({exc})") from None
        if not isinstance(text, str):
            raise BenchError(f"{where}: text must be a string")
        if key in versions:
            raise BenchError(f"{where}: {key[0]} version {key[1]} listed twice")
        if key not in edits:
            raise BenchError(f"{where}: {key[0]} version {key[1]} has no entry in edits.jsonl")
        ewhere, changes = edits[key]
        paragraphs = [c.text for c in chunk_paragraphs(text)]
        kept = [c for c in changes if c.get("class") != "deleted"]
        if [c.get("position") for c in kept] != list(range(len(paragraphs))):
            raise BenchError(f"{ewhere}: the changes' positions {[c.get('position') for c in kept]} do not match "
                             f"the {len(paragraphs)} paragraphs of {key[0]} version {key[1]} in documents.jsonl")
        bad = sorted({str(c.get("class")) for c in kept} - set(POSITION_CLASSES))
        if bad:
            raise BenchError(f"{ewhere}: unknown class {bad[0]!r}; allowed: {', '.join(POSITION_CLASSES)}, deleted")
        versions[key] = DocVersion(
            doc_id=key[0], version=key[1], effective_at=effective_at, text=text, paragraphs=paragraphs,
            truth=[c["class"] for c in kept], revert=[bool(c.get("revert")) for c in kept],
            old_position=[c.get("old_position") for c in kept],
            deleted=sorted(int(c["old_position"]) for c in changes if c.get("class") == "deleted"))
    missing = sorted(set(edits) - set(versions))
    if missing:
        raise BenchError(f"{root / 'edits.jsonl'}: {missing[0][0]} version {missing[0][1]} is not in documents.jsonl")
    return [versions[k] for k in sorted(versions)]
