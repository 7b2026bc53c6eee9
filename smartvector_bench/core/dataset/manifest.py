"""``manifest.json``: the dataset digest and the check of every listed file against its sha256, before
anything is parsed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from smartvector_bench.core.errors import BenchError

from .columns import DATASET_SCHEMA_VERSIONS
from .read import (decode_utf8, json_error, kind_of, MANIFEST_FIX, MISSING, parse_json, path_kind, read_bytes,
                   SHA256_HEX, show)


def dataset_sha256(file_hashes: dict[str, str]) -> str:
    """Hash of the whole dataset: sha256 over sorted ``relative/path  sha256`` lines."""
    lines = "".join(f"{name}  {digest}\n" for name, digest in sorted(file_hashes.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


DATA_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv")


def _entry_name(name: str) -> str:
    """A ``files`` key as the messages show it: as is when printable, else quoted."""
    return name if name.isprintable() and len(name) <= 100 else show(name)


def _manifest_digest(entry, name: str, where: Path) -> tuple[str, int | None]:
    """A manifest's ``files`` entry: ``{"sha256": ..., "bytes": ...}`` (bytes optional) or a plain sha256 string."""
    label = _entry_name(name)
    digest = entry.get("sha256") if isinstance(entry, dict) else entry
    if not isinstance(digest, str) or not SHA256_HEX.fullmatch(digest):
        raise BenchError(f"{where}: 'files.{label}' must be a sha256 string (64 lowercase hex digits) or "
                         f"{{\"sha256\": ..., \"bytes\": ...}}, got {show(entry)}; {MANIFEST_FIX}")
    size = entry.get("bytes") if isinstance(entry, dict) else None
    if isinstance(entry, dict) and "bytes" in entry and (
            not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise BenchError(f"{where}: 'files.{label}.bytes' must be a non-negative integer, got {show(size)}; "
                         f"{MANIFEST_FIX}")
    return digest, size


def _inside(name: str) -> bool:
    """A relative path inside the dataset folder (no absolute path, no ``..``, no empty part)."""
    parts = name.split("/")
    return bool(name) and name.isprintable() and "\\" not in name and all(p not in ("", ".", "..") for p in parts)


def check_manifest(root: Path, raw: dict[str, bytes]) -> tuple[dict | None, int | None]:
    """Parse ``manifest.json`` (when present) and check every file it lists, and ``dataset_sha256``, against the
    bytes read (``raw``: the checked files). Returns the manifest and its seed."""
    mpath = root / "manifest.json"
    if path_kind(mpath) == "missing" and not mpath.is_symlink():
        return None, None
    needs = f"manifest.json must be the generator's JSON manifest; {MANIFEST_FIX}"
    text = decode_utf8(mpath, read_bytes(mpath, needs))
    try:
        manifest = parse_json(text)
    except json.JSONDecodeError as exc:
        raise BenchError(f"{mpath}:{exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise BenchError(f"{mpath}: not valid JSON ({json_error(exc)})") from None
    if not isinstance(manifest, dict):
        raise BenchError(f"{mpath}: expected a JSON object, got {kind_of(manifest)}; {MANIFEST_FIX}")
    if "files" not in manifest:
        raise BenchError(f"{mpath}: has no 'files' (the sha256 of every file); {MANIFEST_FIX}")
    files = manifest["files"]
    if not isinstance(files, dict):
        raise BenchError(f"{mpath}: 'files' must be an object of file name -> sha256, got {kind_of(files)}; "
                         f"{MANIFEST_FIX}")
    recorded: dict[str, tuple[str, int | None]] = {}
    for name, entry in files.items():
        if not _inside(name):
            raise BenchError(f"{mpath}: 'files' names {show(name)}, which is not a relative path inside the "
                             f"dataset folder; {MANIFEST_FIX}")
        recorded[name] = _manifest_digest(entry, name, mpath)
    version = manifest.get("schema_version", MISSING)
    if version not in DATASET_SCHEMA_VERSIONS:
        got = "has no 'schema_version'" if version is MISSING else f"'schema_version' is {show(version)}"
        raise BenchError(f"{mpath}: {got}; this loader reads schema {' or '.join(DATASET_SCHEMA_VERSIONS)} "
                         "(regenerate the dataset with smartvector-gen)")

    def check(name: str, data: bytes) -> None:
        digest, size = recorded[name]
        if hashlib.sha256(data).hexdigest() != digest:
            raise BenchError(f"{root / name}: sha256 differs from manifest.json (file edited after generation?); "
                             f"{MANIFEST_FIX}")
        if size is not None and size != len(data):
            raise BenchError(f"{mpath}: 'files.{name}.bytes' is {size}, but the file has {len(data)} bytes; "
                             f"{MANIFEST_FIX}")

    for name, data in raw.items():
        if name not in recorded:
            raise BenchError(f"{mpath}: 'files' has no entry for {name}; {MANIFEST_FIX}")
        check(name, data)
    for name in sorted(set(recorded) - set(raw)):  # e.g. documents.jsonl / edits.jsonl of lvl_corpus
        check(name, read_bytes(root / name, f"manifest.json lists it; {MANIFEST_FIX}"))
    want = manifest.get("dataset_sha256", MISSING)
    if want is MISSING:
        raise BenchError(f"{mpath}: has no 'dataset_sha256'; {MANIFEST_FIX}")
    if not isinstance(want, str) or not SHA256_HEX.fullmatch(want):
        raise BenchError(f"{mpath}: 'dataset_sha256' must be a sha256 string (64 lowercase hex digits), got "
                         f"{show(want)}; {MANIFEST_FIX}")
    if want != dataset_sha256({name: hashlib.sha256(data).hexdigest() for name, data in raw.items()}):
        raise BenchError(f"{mpath}: 'dataset_sha256' does not match the files (a file was added, removed or edited); "
                         f"{MANIFEST_FIX}")
    config = manifest.get("config", MISSING)
    if config is MISSING:
        return manifest, None
    if not isinstance(config, dict):
        raise BenchError(f"{mpath}: 'config' must be an object (the generator's parameters), got "
                         f"{kind_of(config)}; {MANIFEST_FIX}")
    seed = config.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise BenchError(f"{mpath}: 'config.seed' must be an integer, got {show(seed)}; {MANIFEST_FIX}")
    return manifest, seed
