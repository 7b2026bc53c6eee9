"""Every file of a ``dataset=facts`` folder as text (:func:`render_facts`) and its atomic write: each corpus's
history walked into chunks (data_gen/git_history), each fact checked against it, the queries judged, the
corpora joined into one folder."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from smartvector_bench.core import __version__
from smartvector_bench.core.dataset import dataset_sha256
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.timeutil import format_iso

from ..folder import file_entries, jsonl, provenance, qrels_tsv, queries_jsonl, refuse_existing, write_folder
from ..git_history import History, walk_history
from ..splits import assign_family_splits, shuffle_and_number
from .params import GENERATOR, SCHEMA_VERSION, CorpusParams, FactsParams
from .queries import FactQuery, check_not_copied, fact_queries
from .spec import Fact, load_fact_file
from .timeline import Span, Statement, check_timeline, derive, statements


@dataclass
class CorpusBuild:
    params: CorpusParams
    history: History
    facts: list[Fact]
    stated: dict[str, list[Statement]]
    spans: dict[str, list[Span]]


def _iso(seconds: int | None) -> str | None:
    return None if seconds is None else format_iso(datetime.fromtimestamp(seconds, tz=timezone.utc))


def check_corpus(cp: CorpusParams, history: History) -> CorpusBuild:
    """Read the corpus's fact files and check every fact against ``history`` (paths, patterns, timeline)."""
    facts = []
    for path in cp.fact_files:
        name, more = load_fact_file(path)
        if name != cp.name:
            raise BenchError(f"{path}: corpus: {name!r}, but dataset.corpora names it {cp.name!r}")
        facts += more
    known = {c.path for c in history.chunks}
    b = CorpusBuild(cp, history, facts, {}, {})
    for f in facts:
        b.stated[f.id], b.spans[f.id] = check_fact(f, history, known, cp.git.glob)
    return b


def check_fact(f: Fact, history: History, known: set[str], glob) -> tuple[list[Statement], list[Span]]:
    """One fact against the history: its paths, its patterns and its timeline; (statements, spans)."""
    if not any(p in known for p in f.paths):  # one path is enough: renames are followed by document
        raise BenchError(f"{f.where}: paths: no paragraph of the history of {list(glob)} was ever written under "
                         f"{', '.join(f.paths)} (a typo, or outside the glob)")
    stated = statements(f, history)
    spans = derive(f, history, stated)
    check_timeline(f, spans)
    return stated, spans


def build_corpora(params: FactsParams, progress: bool | None = None,
                  histories: dict[str, History] | None = None) -> list[CorpusBuild]:
    """Every corpus walked (or taken from ``histories``, by name) and checked."""
    return [check_corpus(cp, (histories or {}).get(cp.name) or walk_history(cp.git, progress=progress))
            for cp in params.corpora]


def _groups(builds: list[CorpusBuild]) -> dict[str, str]:
    """Each fact's split unit: its declared group, joined with every fact whose own paragraphs share a lineage
    with it (union-find; the unit is named by its smallest member)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for b in builds:
        for f in b.facts:
            find(f"fact:{f.id}")
            if f.group:
                union(f"fact:{f.id}", f"group:{b.params.name}:{f.group}")
            for s in b.stated[f.id]:
                if s.primary:
                    union(f"fact:{f.id}", f"lineage:{b.params.name}:{b.history.chunks[s.chunk].lineage}")
    members: dict[str, list[str]] = {}
    for b in builds:
        for f in b.facts:
            members.setdefault(find(f"fact:{f.id}"), []).append(f.id)
    return {fid: min(ids) for ids in members.values() for fid in ids}


def fact_rng(seed: int, fact_id: str) -> np.random.Generator:
    """A fact's own stream: adding or editing another fact moves none of its dates."""
    return np.random.default_rng([seed, int(hashlib.sha256(fact_id.encode()).hexdigest()[:8], 16)])


def make_queries(params: FactsParams, builds: list[CorpusBuild], tip: int) -> list[FactQuery]:
    group_of = _groups(builds)
    queries: list[FactQuery] = []
    for b in builds:
        for f in b.facts:
            for q in fact_queries(f, b.history, b.stated[f.id], b.spans[f.id], tip, params.max_historical,
                                  fact_rng(params.seed, f.id)):
                q.group = group_of[f.id]
                queries.append(q)
    if len({q.group for q in queries}) < 2:
        raise BenchError("dataset.corpora: the facts form fewer than two split groups; dev and test need one each")
    assign_family_splits(queries, params.test_fraction, np.random.default_rng([params.seed, 3]))
    return shuffle_and_number(queries, params.seed)


def render_facts(params: FactsParams, progress: bool | None = None,
                 histories: dict[str, History] | None = None) -> dict[str, str]:
    """Every file of the dataset folder as text, keyed by relative path (manifest.json included)."""
    builds = build_corpora(params, progress, histories)
    seen: dict[str, str] = {}
    for f in (f for b in builds for f in b.facts):
        if f.id in seen:
            raise BenchError(f"{f.where}: id: also used at {seen[f.id]}; fact ids are unique")
        seen[f.id] = f.where
    tip = max(b.history.tip_time for b in builds)
    queries = make_queries(params, builds, tip)
    rows, labels, texts = [], {}, []
    for b in builds:
        # chunk -> (primary, fact, value): the fact it states (labels/chunks.jsonl: one family per chunk)
        family: dict[int, tuple[bool, str, str]] = {}
        for f in b.facts:
            for s in b.stated[f.id]:
                cand = (s.primary, f.id, s.value)
                old = family.get(s.chunk)
                if old is None or (not cand[0], cand[1]) < (not old[0], old[1]):  # own paths, then id
                    family[s.chunk] = cand
        docs = {b.history.chunks[i].doc_id for i in family}
        for i, c in enumerate(b.history.chunks):
            if params.documents == "facts" and c.doc_id not in docs:
                continue
            rows.append({"_id": c.id, "title": c.title, "text": c.text, "metadata": {
                "doc_id": f"{b.params.name}:{c.doc_id}", "version": c.version, "source": b.params.name,
                "authority": float(b.params.git.authority), "created_at": _iso(c.valid_from),
                "valid_from": _iso(c.valid_from), "valid_to": _iso(c.valid_to), "depends_on": [],
                "supersedes": c.supersedes, "offset_start": c.offset_start, "offset_end": c.offset_end}})
            fid = family.get(i, (False, "", None))[1]
            # the value stays out: labels/chunks.jsonl's value is a number (schema 2.1), a fact's is text
            labels[c.id] = {"_id": c.id, "family": fid, **({"kind": "statement"} if fid else {})}
            texts.append(c.text)
    ids = [r["_id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise BenchError("dataset.corpora: two corpora gave a chunk the same id; give them different histories")
    check_not_copied(queries, texts)
    order = sorted(range(len(rows)), key=lambda k: ids[k])
    by_id = sorted(queries, key=lambda q: q.id)
    qrels: dict[str, list] = {"dev": [], "test": []}
    for q in by_id:
        qrels[q.split] += [(q.id, cid, grade) for cid, grade in q.relevant]
    files = {
        "corpus.jsonl": jsonl([rows[k] for k in order]),
        "queries.jsonl": queries_jsonl(by_id, _iso),
        "qrels/dev.tsv": qrels_tsv(qrels["dev"]),
        "qrels/test.tsv": qrels_tsv(qrels["test"]),
        "labels/chunks.jsonl": jsonl([labels[ids[k]] for k in order]),
        "labels/queries.jsonl": jsonl([{"_id": q.id, "family": q.fact.id, "stale": q.stale, "rumor": []}
                                        for q in by_id]),
    }
    hashes, entries = file_entries(files)
    manifest = {
        "schema_version": SCHEMA_VERSION, "generator": GENERATOR,
        "generator_code": f"smartvector-bench {__version__} data_gen.facts",
        "provenance": provenance(), "config": params.to_dict(),
        "repos": {b.params.name: {"head": b.history.head, "tip_time": _iso(b.history.tip_time),
                                  "commits": b.history.commits} for b in builds},
        "counts": counts(builds, queries, len(rows)),
        "samples": samples(queries, {r["_id"]: r for r in rows}, params.seed),
        "files": entries, "dataset_sha256": dataset_sha256(hashes),
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def counts(builds: list[CorpusBuild], queries: list[FactQuery], n_vectors: int) -> dict:
    ov = np.array([q.overlap for q in queries])
    return {
        "vectors": n_vectors,
        "facts": sum(len(b.facts) for b in builds),
        "facts_by_corpus": {b.params.name: len(b.facts) for b in builds},
        "facts_by_kind": dict(sorted(Counter(f.kind for b in builds for f in b.facts).items())),
        "groups": len({q.group for q in queries}),
        "queries": len(queries),
        "queries_by_category": dict(sorted(Counter(q.category for q in queries).items())),
        "queries_by_split": dict(sorted(Counter(q.split for q in queries).items())),
        "queries_with_stale": sum(bool(q.stale) for q in queries),
        "relevant_per_query_mean": round(float(np.mean([len(q.relevant) for q in queries])), 3),
        "question_overlap": {"mean": round(float(ov.mean()), 3), "max": round(float(ov.max()), 3),
                             "what": "share of a question's content words found in its relevant paragraph in "
                                     "the fact's own document"},
    }


N_SAMPLES, SAMPLE_STALE = 20, 3


def samples(queries: list[FactQuery], rows: dict[str, dict], seed: int) -> list[dict]:
    """:data:`N_SAMPLES` seeded random queries with the texts of their relevant and stale chunks (at most
    :data:`SAMPLE_STALE` stale ones, the newest first), for a reader to check the labels (docs/facts.md)."""
    pick = sorted(np.random.default_rng([seed, 5]).choice(len(queries), min(N_SAMPLES, len(queries)),
                                                          replace=False).tolist())

    def chunk(cid: str) -> dict:
        r = rows[cid]
        return {"id": cid, "title": r["title"], "valid_from": r["metadata"]["valid_from"],
                "valid_to": r["metadata"]["valid_to"], "text": r["text"]}

    out = []
    for q in (queries[i] for i in pick):
        stale = sorted(q.stale, key=lambda c: rows[c]["metadata"]["valid_from"], reverse=True)
        out.append({"query_id": q.id, "fact": q.fact.id, "kind": q.fact.kind, "category": q.category,
                    "split": q.split, "as_of": _iso(q.as_of), "question": q.text, "value": q.value,
                    "relevant": [{**chunk(c), "grade": g} for c, g in q.relevant],
                    "stale": [chunk(c) for c in stale[:SAMPLE_STALE]], "n_stale": len(stale)})
    return out


def write_facts(params: FactsParams, out_dir: str | Path, overwrite: bool = False,
                progress: bool | None = None) -> dict:
    """Build and write the folder atomically (a temporary sibling renamed into place); returns the manifest."""
    refuse_existing(out_dir, overwrite)
    return write_folder(render_facts(params, progress=progress), out_dir)
