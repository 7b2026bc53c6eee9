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

from smartvector_bench.core import SCHEMA_VERSION, __version__
from smartvector_bench.core.dataset import DATA_FILES, dataset_sha256, file_sha256
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.provenance import git_sha, package_versions

from .generator import ChunkRecord, Generator, QueryRecord
from .params import GeneratorParams


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n" for r in rows)


def _qrels(rows: list[tuple[str, str, int]]) -> str:
    return "\n".join(["query-id\tcorpus-id\tscore"] + [f"{q}\t{c}\t{g}" for q, c, g in rows]) + "\n"


def render_files(params) -> dict[str, str]:
    """All files of the dataset as text, keyed by relative path (manifest included)."""
    from .lvl_corpus import LvlParams, generate_lvl

    if isinstance(params, LvlParams):
        return _render_lvl(params, *generate_lvl(params))
    gen = Generator(params)
    chunks, queries, families = gen.generate()
    iso = gen.iso

    def when(days: float) -> str | None:
        return None if days == float("inf") else iso(days)

    corpus = [{"_id": c.id, "title": c.title, "text": c.text, "metadata": {
        "doc_id": c.doc_id, "version": c.version, "source": c.source, "authority": c.authority,
        "created_at": iso(c.created_at), "valid_from": iso(c.valid_from), "valid_to": when(c.valid_to),
        "depends_on": c.depends_on, "supersedes": c.supersedes, "offset_start": c.offset_start,
        "offset_end": c.offset_end}} for c in chunks]
    ids = [c.id for c in chunks]
    qrels = {s: [] for s in ("dev", "test")}
    for q in queries:
        j = q.judgment
        qrels[q.split] += [(q.id, ids[int(r)], int(g)) for r, g in zip(j.relevant, j.grades)]
    files = {
        "corpus.jsonl": _jsonl(corpus),
        "queries.jsonl": _jsonl([{"_id": q.id, "text": q.text, "metadata": {
            "query_time": iso(q.query_time), "as_of": iso(q.as_of), "category": q.category, "split": q.split}}
            for q in queries]),
        "qrels/dev.tsv": _qrels(qrels["dev"]),
        "qrels/test.tsv": _qrels(qrels["test"]),
        "labels/chunks.jsonl": _jsonl([{"_id": c.id, "family": c.family, "doc_type": c.doc_type, "kind": c.kind,
                                        "value": c.value} for c in chunks]),
        "labels/queries.jsonl": _jsonl([{"_id": q.id, "family": q.family, "asks": q.asks,
                                         "answer": int(q.judgment.truth),
                                         "stale": [ids[int(r)] for r in q.judgment.stale],
                                         "rumor": [ids[int(r)] for r in q.judgment.rumor]} for q in queries]),
        "labels/families.jsonl": _jsonl([{"family": f.plan.spec.key, "topic": f.plan.spec.topic.key,
                                          "scenario": {"versions": f.plan.n_versions, "runbook": f.plan.has_runbook,
                                                       "rumors": f.plan.n_rumors, "recent": f.plan.recent,
                                                       "announced": f.plan.announced, "lagging": f.plan.lagging},
                                          "timeline": [{"effective_from": iso(d), "value": int(v)} for d, v in
                                                       zip(f.timeline.effective_from, f.timeline.values)]}
                                         for f in sorted(families, key=lambda f: f.plan.spec.key)]),
    }
    files["manifest.json"] = json.dumps(_manifest(params, chunks, queries, files), indent=2, sort_keys=True) + "\n"
    return files


def _render_lvl(params, rows: list[dict], documents: list[dict], edits: list[dict], queries: list,
                labels: dict, families: list) -> dict[str, str]:
    """The lvl_corpus folder (``data_gen.lvl_corpus``): the v2 BEIR files and labels, plus ``documents.jsonl``
    and ``edits.jsonl`` (every document version and the ground-truth edits, read by experiment=lvl_eval)."""
    from datetime import timedelta

    from smartvector_bench.core.dataset import LABEL_FILES
    from smartvector_bench.core.timeutil import format_iso, parse_iso

    start = parse_iso(params.start)

    def iso(days: float) -> str:
        return format_iso(start + timedelta(days=float(days)))

    qrels = {s: [] for s in ("dev", "test")}
    for q in queries:
        qrels[q.split] += [(q.id, cid, int(g)) for cid, g in q.relevant]
    files = {
        "corpus.jsonl": _jsonl(rows),
        "queries.jsonl": _jsonl([{"_id": q.id, "text": q.text, "metadata": {
            "query_time": iso(q.query_time), "as_of": iso(q.as_of), "category": q.category, "split": q.split}}
            for q in queries]),
        "qrels/dev.tsv": _qrels(qrels["dev"]),
        "qrels/test.tsv": _qrels(qrels["test"]),
        "labels/chunks.jsonl": _jsonl([{"_id": r["_id"], "family": labels[r["_id"]].family, "doc_type": "policy",
                                        "kind": labels[r["_id"]].kind, "value": labels[r["_id"]].value}
                                       for r in rows]),
        "labels/queries.jsonl": _jsonl([{"_id": q.id, "family": q.family, "asks": "policy", "answer": q.answer,
                                         "stale": q.stale, "rumor": q.rumor} for q in queries]),
        "labels/families.jsonl": _jsonl([{"family": f.key, "topic": f.topic,
                                          "scenario": {"versions": f.n_versions, "fact_edits": f.fact_edits,
                                                       "fact_reverts": f.fact_reverts},
                                          "timeline": [{"effective_from": iso(d), "value": int(v)} for d, v in
                                                       zip(f.timeline.effective_from, f.timeline.values)]}
                                         for f in sorted(families, key=lambda f: f.key)]),
        "documents.jsonl": _jsonl(documents),
        "edits.jsonl": _jsonl(edits),
    }
    hashes = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in files.items()}
    n_relevant = [len(q.relevant) for q in queries]
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "generator": f"smartvector-bench {__version__} data_gen.lvl_corpus",
        "provenance": {"git": git_sha(), "packages": {k: v for k, v in package_versions().items()
                                                       if k in ("smartvector-bench", "numpy")}},
        "config": {"name": "lvl_corpus", **params.to_dict()},
        "counts": {"vectors": len(rows), "documents": len({d["doc_id"] for d in documents}),
                   "document_versions": len(documents), "families": len(families), "queries": len(queries),
                   "queries_by_category": dict(sorted(Counter(q.category for q in queries).items())),
                   "queries_by_split": dict(sorted(Counter(q.split for q in queries).items())),
                   "families_by_split": dict(sorted(Counter(s for _, s in {(q.family, q.split)
                                                                             for q in queries}).items())),
                   "relevant_per_query_mean": round(sum(n_relevant) / len(n_relevant), 4) if n_relevant else 0.0,
                   "vectors_by_kind": dict(sorted(Counter(lab.kind for lab in labels.values()).items())),
                   "edits_by_class": dict(sorted(Counter(c["class"] for e in edits if e["version"] > 1
                                                         for c in e["changes"]).items()))},
        "files": {name: {"sha256": digest, "bytes": len(files[name].encode("utf-8"))} for name, digest in hashes.items()},
        # What load_dataset checks: the BEIR files and labels/ (documents.jsonl and edits.jsonl are checked by
        # experiment=lvl_eval against their "files" entries).
        "dataset_sha256": dataset_sha256({k: v for k, v in hashes.items() if k in DATA_FILES + LABEL_FILES}),
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def _manifest(params: GeneratorParams, chunks: list[ChunkRecord], queries: list[QueryRecord],
              files: dict[str, str]) -> dict:
    hashes = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in files.items()}
    relevant = [len(q.judgment.relevant) for q in queries]
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
            "families_by_split": dict(sorted(Counter(s for _, s in {(q.family, q.split) for q in queries}).items())),
            "queries_with_several_relevant": sum(r > 1 for r in relevant),
            "relevant_per_query_mean": round(sum(relevant) / len(relevant), 4) if relevant else 0.0,
            "vectors_by_source": dict(sorted(Counter(c.source for c in chunks).items())),
            "vectors_by_kind": dict(sorted(Counter(c.kind for c in chunks).items())),
        },
        "files": {name: {"sha256": digest, "bytes": len(files[name].encode("utf-8"))}
                  for name, digest in hashes.items()},
        "dataset_sha256": dataset_sha256(hashes),
    }


def write_dataset(params: GeneratorParams, out_dir: str | Path, overwrite: bool = False) -> dict:
    """Generate and write; returns the manifest. Refuses to replace an existing folder unless asked."""
    if Path(out_dir).exists() and not overwrite:
        raise BenchError(f"out_dir={out_dir}: already exists; choose another folder or pass overwrite=true")
    return write_folder(render_files(params), out_dir)


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
