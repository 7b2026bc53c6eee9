"""Write a generated dataset as a BEIR folder with a manifest, atomically: everything goes to a temporary
sibling folder that is renamed into place only when complete."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from smartvector_bench import SCHEMA_VERSION, __version__
from smartvector_bench.dataset import DATA_FILES, dataset_sha256, file_sha256
from smartvector_bench.errors import BenchError
from smartvector_bench.provenance import git_sha, package_versions

from .generator import ChunkRecord, Generator, QueryRecord
from .params import GeneratorParams


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n" for r in rows)


def _qrels(queries: list[QueryRecord], split: str) -> str:
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q.id}\t{q.gold}\t1" for q in queries if q.split == split]
    return "\n".join(lines) + "\n"


def render_files(params) -> dict[str, str]:
    """All files of the dataset as text, keyed by relative path (manifest included)."""
    from .lvl_corpus import LvlParams, generate_lvl

    if isinstance(params, LvlParams):
        return _render_lvl(params, *generate_lvl(params))
    chunks, queries = Generator(params).generate()
    files = {
        "corpus.jsonl": _jsonl([c.to_beir() for c in chunks]),
        "queries.jsonl": _jsonl([q.to_beir() for q in queries]),
        "qrels/dev.tsv": _qrels(queries, "dev"),
        "qrels/test.tsv": _qrels(queries, "test"),
    }
    files["manifest.json"] = json.dumps(_manifest(params, chunks, queries, files), indent=2, sort_keys=True) + "\n"
    return files


def _render_lvl(params, rows: list[dict], documents: list[dict], edits: list[dict],
                queries: list[QueryRecord]) -> dict[str, str]:
    files = {
        "corpus.jsonl": _jsonl(rows),
        "queries.jsonl": _jsonl([q.to_beir() for q in queries]),
        "qrels/dev.tsv": _qrels(queries, "dev"),
        "qrels/test.tsv": _qrels(queries, "test"),
        "documents.jsonl": _jsonl(documents),
        "edits.jsonl": _jsonl(edits),
    }
    hashes = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in files.items()}
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "generator": f"smartvector-bench {__version__} data_gen.lvl_corpus",
        "provenance": {"git": git_sha(), "packages": {k: v for k, v in package_versions().items()
                                                       if k in ("smartvector-bench", "numpy")}},
        "config": {"name": "lvl_corpus", **params.to_dict()},
        "counts": {"vectors": len(rows), "documents": len({d["doc_id"] for d in documents}),
                   "document_versions": len(documents), "queries": len(queries),
                   "queries_by_category": dict(sorted(Counter(q.category for q in queries).items())),
                   "queries_by_split": dict(sorted(Counter(q.split for q in queries).items())),
                   "edits_by_class": dict(sorted(Counter(c["class"] for e in edits if e["version"] > 1
                                                         for c in e["changes"]).items()))},
        "files": {name: {"sha256": digest, "bytes": len(files[name].encode("utf-8"))} for name, digest in hashes.items()},
        "dataset_sha256": dataset_sha256({k: v for k, v in hashes.items() if k in DATA_FILES}),
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def _manifest(params: GeneratorParams, chunks: list[ChunkRecord], queries: list[QueryRecord],
              files: dict[str, str]) -> dict:
    hashes = {name: hashlib.sha256(files[name].encode("utf-8")).hexdigest() for name in DATA_FILES}
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": f"smartvector-bench {__version__} data_gen",
        # numpy's version matters: the generator's random streams come from it.
        "provenance": {"git": git_sha(), "packages": {k: v for k, v in package_versions().items()
                                                       if k in ("smartvector-bench", "numpy")}},
        "config": params.to_dict(),
        "counts": {
            "vectors": len(chunks),
            "documents": len({(c.doc_id, c.version) for c in chunks}),
            "families": len({c.family for c in chunks}),
            "queries": len(queries),
            "queries_by_split": dict(sorted(Counter(q.split for q in queries).items())),
            "queries_by_category": dict(sorted(Counter(q.category for q in queries).items())),
            "vectors_by_source": dict(sorted(Counter(c.source for c in chunks).items())),
            "vectors_by_kind": dict(sorted(Counter(c.kind for c in chunks).items())),
        },
        "files": {name: {"sha256": digest, "bytes": len(files[name].encode("utf-8"))}
                  for name, digest in hashes.items()},
        "dataset_sha256": dataset_sha256(hashes),
    }


def write_dataset(params: GeneratorParams, out_dir: str | Path, overwrite: bool = False) -> dict:
    """Generate and write; returns the manifest. Refuses to replace an existing folder unless asked."""
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise BenchError(f"out_dir={out}: already exists; choose another folder or pass overwrite=true")
    files = render_files(params)
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
    for name in DATA_FILES:
        if file_sha256(out / name) != manifest["files"][name]["sha256"]:
            raise BenchError(f"{out / name}: written bytes differ from the manifest (disk problem?)")
    return manifest
