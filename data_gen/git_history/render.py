"""Every file of the dataset folder as text (:func:`render_git_history`) and its atomic write."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from smartvector_bench.core import __version__
from smartvector_bench.core.dataset import dataset_sha256
from smartvector_bench.core.evaluation.judgments import GRADE_AUTHORITATIVE
from smartvector_bench.core.timeutil import format_iso

from ..folder import file_entries, jsonl, provenance, qrels_tsv, queries_jsonl, refuse_existing, write_folder
from .history import walk_history
from .params import GENERATOR, SCHEMA_VERSION, SOURCE, GitHistoryParams
from .queries import Query, in_force, make_queries


def _iso(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    return format_iso(datetime.fromtimestamp(seconds, tz=timezone.utc))


def render_git_history(params: GitHistoryParams, progress: bool | None = None) -> dict[str, str]:
    """Every file of the dataset folder as text, keyed by relative path (manifest.json included)."""
    history = walk_history(params, progress=progress)
    queries = make_queries(history, params)
    chunks = history.chunks
    order = sorted(range(len(chunks)), key=lambda i: chunks[i].id)  # ids are hashes: no chronology in the order
    corpus = [{"_id": c.id, "title": c.title, "text": c.text, "metadata": {
        "doc_id": c.doc_id, "version": c.version, "source": SOURCE, "authority": float(params.authority),
        "created_at": _iso(c.valid_from), "valid_from": _iso(c.valid_from), "valid_to": _iso(c.valid_to),
        "depends_on": [], "supersedes": c.supersedes, "offset_start": c.offset_start, "offset_end": c.offset_end}}
        for c in (chunks[i] for i in order)]
    by_id = sorted(queries, key=lambda q: q.id)
    qrels: dict[str, list] = {"dev": [], "test": []}
    for q in by_id:
        qrels[q.split].append((q.id, chunks[q.relevant].id, GRADE_AUTHORITATIVE))

    def stale(q: Query) -> list[str]:
        # the lineage's other versions that exist at as_of and are not in force then (i.e. superseded)
        return sorted(chunks[i].id for i in history.lineages[q.lineage]
                      if i != q.relevant and chunks[i].valid_from <= q.as_of and not in_force(chunks[i], q.as_of))

    files = {
        "corpus.jsonl": jsonl(corpus),
        "queries.jsonl": queries_jsonl(by_id, _iso),
        "qrels/dev.tsv": qrels_tsv(qrels["dev"]),
        "qrels/test.tsv": qrels_tsv(qrels["test"]),
        "labels/chunks.jsonl": jsonl([{"_id": chunks[i].id, "family": chunks[i].lineage} for i in order]),
        "labels/queries.jsonl": jsonl([{"_id": q.id, "family": q.lineage, "stale": stale(q), "rumor": []}
                                        for q in by_id]),
    }
    hashes, entries = file_entries(files)
    lineage_sizes = [len(v) for v in history.lineages.values()]
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "generator": GENERATOR,
        "generator_code": f"smartvector-bench {__version__} data_gen.git_history",
        "provenance": provenance(),
        "config": params.to_dict(),
        "repo": {"head": history.head, "rev": params.rev, "tip_time": _iso(history.tip_time)},
        "counts": {
            "vectors": len(chunks),
            "vectors_open_at_tip": sum(c.valid_to is None for c in chunks),
            "documents": history.documents,
            "document_versions": len({(c.doc_id, c.version) for c in chunks}),
            "lineages": len(history.lineages),
            "lineages_with_versions": sum(n >= 2 for n in lineage_sizes),
            "commits": history.commits,
            "commits_time_clamped": history.commits_clamped,
            "queries": len(queries),
            "queries_requested": asdict(params.queries),
            "queries_by_category": dict(sorted(Counter(q.category for q in queries).items())),
            "queries_by_split": dict(sorted(Counter(q.split for q in queries).items())),
            "documents_by_split": dict(sorted(Counter(s for _, s in {(q.doc_id, q.split) for q in queries}).items())),
            "relevant_per_query_mean": 1.0,
        },
        "files": entries,
        "dataset_sha256": dataset_sha256(hashes),
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def write_git_history(params: GitHistoryParams, out_dir: str | Path, overwrite: bool = False,
                      progress: bool | None = None) -> dict:
    """Build and write the folder atomically (a temporary sibling renamed into place); returns the manifest."""
    refuse_existing(out_dir, overwrite)
    return write_folder(render_git_history(params, progress=progress), out_dir)
