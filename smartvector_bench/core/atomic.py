"""Atomic file writes: write a temp file in the same folder, fsync, then rename, so no reader ever
sees a half-written result."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

# What a write killed before its rename leaves: ``.<name>.<random>.tmp`` (mkstemp below: 8 characters from
# [a-z0-9_]); and a generated dataset's half-renamed folders (data_gen/folder.py: mkdtemp ``.dataset.<random>``,
# then ``.dataset.old``).
TEMP_FILE = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")
TEMP_DATASET = re.compile(r"\.dataset\.(?:[a-z0-9_]{8}|old)")


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp files are private; results are meant to be read by everyone
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def dumps_json(obj) -> str:
    """Canonical JSON for result files: sorted keys, 2-space indent, trailing newline."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_json(path: str | Path, obj) -> None:
    atomic_write_text(path, dumps_json(obj))


def remove_leftovers(folder: str | Path) -> list[str]:
    """Remove what interrupted atomic writes left directly in ``folder`` (:data:`TEMP_FILE` files,
    :data:`TEMP_DATASET` folders); returns their names. Only safe while no other process writes there: the run
    folder's lock (core/scratch.py ``run_lock``) ensures it."""
    removed = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return removed
    for e in entries:
        if TEMP_FILE.fullmatch(e.name) and e.is_file(follow_symlinks=False):
            Path(e.path).unlink(missing_ok=True)
        elif TEMP_DATASET.fullmatch(e.name) and e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path, ignore_errors=True)
        else:
            continue
        removed.append(e.name)
    return removed
