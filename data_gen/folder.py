"""The text formats of a dataset folder and its atomic write, shared by every generator."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from smartvector_bench.core.dataset import file_sha256
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results.provenance import git_sha, package_versions


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n" for r in rows)


def qrels_tsv(rows: list[tuple[str, str, int]]) -> str:
    return "\n".join(["query-id\tcorpus-id\tscore"] + [f"{q}\t{c}\t{g}" for q, c, g in rows]) + "\n"


def queries_jsonl(queries: list, iso: Callable) -> str:
    """``queries.jsonl`` from records with ``id``, ``text``, ``query_time``, ``as_of``, ``category`` and ``split``
    (``iso`` turns a record's time into the ISO string)."""
    return jsonl([{"_id": q.id, "text": q.text, "metadata": {
        "query_time": iso(q.query_time), "as_of": iso(q.as_of), "category": q.category, "split": q.split}}
        for q in queries])


def file_entries(files: dict[str, str]) -> tuple[dict[str, str], dict[str, dict]]:
    """(sha256 per file, the manifest's ``files`` section) of rendered files."""
    hashes = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in files.items()}
    return hashes, {name: {"sha256": digest, "bytes": len(files[name].encode("utf-8"))}
                    for name, digest in hashes.items()}


def refuse_existing(out_dir: str | Path, overwrite: bool) -> None:
    if Path(out_dir).exists() and not overwrite:
        raise BenchError(f"out_dir={out_dir}: already exists; choose another folder or pass overwrite=true")


def write_folder(files: dict[str, str], out_dir: str | Path) -> dict:
    """Write rendered files (one ``manifest.json`` among them) as a folder, atomically: into a temporary sibling
    renamed into place (an existing folder is replaced); returns the manifest after checking the bytes on disk."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, text in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        os.chmod(tmp, 0o755)
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # Self-check: what is on disk is what the manifest says.
    manifest = json.loads(files["manifest.json"])
    for name in manifest["files"]:
        if file_sha256(out / name) != manifest["files"][name]["sha256"]:
            raise BenchError(f"{out / name}: written bytes differ from the manifest (disk problem?)")
    return manifest


def provenance() -> dict:
    # numpy's version matters: the generators' random streams come from it.
    return {"git": git_sha(), "packages": {k: v for k, v in package_versions().items()
                                           if k in ("smartvector-bench", "numpy")}}
