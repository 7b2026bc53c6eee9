"""Render a synthetic dataset (``versioned_policies`` or ``lvl_corpus``) as BEIR files with a manifest and write
it atomically (``data_gen.folder.write_folder``)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path

from smartvector_bench.core import SCHEMA_VERSION, __version__
from smartvector_bench.core.dataset import DATA_FILES, LABEL_FILES, dataset_sha256
from smartvector_bench.core.timeutil import format_iso, parse_iso

from .folder import file_entries, jsonl, provenance, qrels_tsv, queries_jsonl, refuse_existing, write_folder
from .generator import ChunkRecord, Generator, QueryRecord
from .lvl_corpus import LvlParams, generate_lvl
from .params import GeneratorParams


def render_files(params) -> dict[str, str]:
    """All files of the dataset as text, keyed by relative path (manifest included)."""
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
        "corpus.jsonl": jsonl(corpus),
        "queries.jsonl": queries_jsonl(queries, iso),
        "qrels/dev.tsv": qrels_tsv(qrels["dev"]),
        "qrels/test.tsv": qrels_tsv(qrels["test"]),
        "labels/chunks.jsonl": jsonl([{"_id": c.id, "family": c.family, "doc_type": c.doc_type, "kind": c.kind,
                                        "value": c.value} for c in chunks]),
        "labels/queries.jsonl": jsonl([{"_id": q.id, "family": q.family, "asks": q.asks,
                                         "answer": int(q.judgment.truth),
                                         "stale": [ids[int(r)] for r in q.judgment.stale],
                                         "rumor": [ids[int(r)] for r in q.judgment.rumor]} for q in queries]),
        "labels/families.jsonl": jsonl([{"family": f.plan.spec.key, "topic": f.plan.spec.topic.key,
                                          "scenario": {"versions": f.plan.n_versions, "runbook": f.plan.has_runbook,
                                                       "rumors": f.plan.n_rumors, "recent": f.plan.recent,
                                                       "announced": f.plan.announced, "lagging": f.plan.lagging,
                                                       "confirmations": f.plan.n_confirmations,
                                                       "notes": f.plan.n_notes},
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
    start = parse_iso(params.start)

    def iso(days: float) -> str:
        return format_iso(start + timedelta(days=float(days)))

    qrels = {s: [] for s in ("dev", "test")}
    for q in queries:
        qrels[q.split] += [(q.id, cid, int(g)) for cid, g in q.relevant]
    files = {
        "corpus.jsonl": jsonl(rows),
        "queries.jsonl": queries_jsonl(queries, iso),
        "qrels/dev.tsv": qrels_tsv(qrels["dev"]),
        "qrels/test.tsv": qrels_tsv(qrels["test"]),
        "labels/chunks.jsonl": jsonl([{"_id": r["_id"], "family": labels[r["_id"]].family, "doc_type": "policy",
                                        "kind": labels[r["_id"]].kind, "value": labels[r["_id"]].value}
                                       for r in rows]),
        "labels/queries.jsonl": jsonl([{"_id": q.id, "family": q.family, "asks": "policy", "answer": q.answer,
                                         "stale": q.stale, "rumor": q.rumor} for q in queries]),
        "labels/families.jsonl": jsonl([{"family": f.key, "topic": f.topic,
                                          "scenario": {"versions": f.n_versions, "fact_edits": f.fact_edits,
                                                       "fact_reverts": f.fact_reverts},
                                          "timeline": [{"effective_from": iso(d), "value": int(v)} for d, v in
                                                       zip(f.timeline.effective_from, f.timeline.values)]}
                                         for f in sorted(families, key=lambda f: f.key)]),
        "documents.jsonl": jsonl(documents),
        "edits.jsonl": jsonl(edits),
    }
    hashes, entries = file_entries(files)
    n_relevant = [len(q.relevant) for q in queries]
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "generator": f"smartvector-bench {__version__} data_gen.lvl_corpus",
        "provenance": provenance(),
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
        "files": entries,
        # What load_dataset checks: the BEIR files and labels/ (documents.jsonl and edits.jsonl are checked by
        # experiment=lvl_eval against their "files" entries).
        "dataset_sha256": dataset_sha256({k: v for k, v in hashes.items() if k in DATA_FILES + LABEL_FILES}),
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def _manifest(params: GeneratorParams, chunks: list[ChunkRecord], queries: list[QueryRecord],
              files: dict[str, str]) -> dict:
    hashes, entries = file_entries(files)
    relevant = [len(q.judgment.relevant) for q in queries]
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": f"smartvector-bench {__version__} data_gen",
        "provenance": provenance(),
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
        "files": entries,
        "dataset_sha256": dataset_sha256(hashes),
    }


def write_dataset(params: GeneratorParams, out_dir: str | Path, overwrite: bool = False) -> dict:
    """Generate and write; returns the manifest. Refuses to replace an existing folder unless asked."""
    refuse_existing(out_dir, overwrite)
    return write_folder(render_files(params), out_dir)
