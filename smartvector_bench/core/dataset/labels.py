"""``labels/`` -> :class:`Labels` (read by the evaluator only; nothing a retriever sees)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.judgments import DOC_TYPES, KINDS, Timeline

from .columns import Corpus, LABEL_FILES, Labels, Queries
from .queries import id_list
from .read import iso_days, kind_of, need, number, path_kind, read_jsonl, show


def load_labels(root: Path, corpus: Corpus, queries: Queries, texts: dict[str, str] | None = None,
                dropped: set[str] | None = None) -> Labels:
    """Read ``labels/`` (families, chunks, queries: each file optional, and every field but ``_id`` optional:
    schema/dataset.schema.json); fills ``queries.stale``, ``rumor`` and ``family``. ``texts`` holds the files'
    already-read content, by relative name; ``dropped`` the query ids the loader left out (judged nowhere)."""
    texts = texts or {}
    present = {name for name in LABEL_FILES if name in texts or path_kind(root / name) != "missing"}

    def rows_of(name: str) -> tuple[Path, list[tuple[int, dict]]]:
        path = root / name
        return path, read_jsonl(path, text=texts.get(name))

    path, rows = rows_of("labels/families.jsonl") if "labels/families.jsonl" in present else (None, [])
    timelines: dict[str, Timeline] = {}
    scenarios: dict[str, dict] = {}
    line_of: dict[str, int] = {}
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        key = need(obj, "family", where, str)
        if not key:
            raise BenchError(f"{where}: 'family' must be a non-empty string")
        if key in timelines:
            raise BenchError(f"{where}: family {key!r} is listed twice (first on line {line_of[key]})")
        line_of[key] = lineno
        steps = need(obj, "timeline", where, list)
        if not steps:
            raise BenchError(f"{where}: 'timeline' must be a non-empty list of {{effective_from, value}}")
        eff, vals = [], []
        for k, step in enumerate(steps):
            if not isinstance(step, dict):
                raise BenchError(f"{where}: 'timeline[{k}]' must be an object {{effective_from, value}}, got "
                                 f"{kind_of(step)}")
            for field_ in ("effective_from", "value"):
                if field_ not in step:
                    raise BenchError(f"{where}: 'timeline[{k}]' has no {field_!r}")
            eff.append(iso_days(step["effective_from"], where, f"timeline[{k}].effective_from"))
            vals.append(number(step["value"], where, f"timeline[{k}].value"))
        if any(b <= a for a, b in zip(eff, eff[1:])):
            raise BenchError(f"{where}: 'timeline' effective dates must increase")
        timelines[key] = Timeline(np.array(eff, dtype=np.float64), np.array(vals, dtype=np.float64))
        scenario = obj.get("scenario")
        if scenario is not None and not isinstance(scenario, dict):
            raise BenchError(f"{where}: 'scenario' must be an object of feature: value, got {kind_of(scenario)}")
        scenarios[key] = dict(scenario or {})

    path, rows = rows_of("labels/chunks.jsonl") if "labels/chunks.jsonl" in present else (None, [])
    n = len(corpus)
    family = np.full(n, "", dtype=object)
    doc_type = np.full(n, "", dtype=object)
    kind = np.full(n, "", dtype=object)
    value = np.full(n, np.nan)
    seen = np.zeros(n, dtype=bool)
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        cid = need(obj, "_id", where, str)
        if cid not in corpus.index_of:
            raise BenchError(f"{where}: unknown chunk id {show(cid)}")
        i = corpus.index_of[cid]
        if seen[i]:
            raise BenchError(f"{where}: chunk {cid!r} is labelled twice")
        seen[i] = True
        family[i] = need(obj, "family", where, str) if "family" in obj else ""
        if family[i] and timelines and family[i] not in timelines:
            raise BenchError(f"{where}: family {show(family[i])} is not in labels/families.jsonl")
        if "doc_type" in obj:
            doc_type[i] = need(obj, "doc_type", where, str)
            if doc_type[i] not in DOC_TYPES:
                raise BenchError(f"{where}: 'doc_type' is {show(doc_type[i])}; allowed: {', '.join(DOC_TYPES)}")
        if "kind" in obj:
            kind[i] = need(obj, "kind", where, str)
            if kind[i] not in KINDS:
                raise BenchError(f"{where}: 'kind' is {show(kind[i])}; allowed: {', '.join(KINDS)}")
        value[i] = number(obj.get("value"), where, "value", nullable=True)
    if rows and not seen.all():
        raise BenchError(f"{path}: chunk {corpus.ids[int(np.argmin(seen))]!r} has no labels")

    path, rows = rows_of("labels/queries.jsonl") if "labels/queries.jsonl" in present else (None, [])
    q_index = {qid: i for i, qid in enumerate(queries.ids)}
    q_family = np.array(queries.ids, dtype=object)
    q_asks = np.full(len(queries), "", dtype=object)
    stale: list[list[int]] = [[] for _ in range(len(queries))]
    rumor: list[list[int]] = [[] for _ in range(len(queries))]
    done = np.zeros(len(queries), dtype=bool)
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        qid = need(obj, "_id", where, str)
        if qid not in q_index:
            if dropped and qid in dropped:
                continue  # a query no qrels file judges (left out by load_queries)
            raise BenchError(f"{where}: unknown query id {show(qid)}")
        i = q_index[qid]
        if done[i]:
            raise BenchError(f"{where}: query {qid!r} is labelled twice")
        done[i] = True
        if "family" in obj:
            q_family[i] = need(obj, "family", where, str)
            if not q_family[i] or (timelines and q_family[i] not in timelines):
                raise BenchError(f"{where}: family {show(q_family[i])} is not in labels/families.jsonl")
        if "asks" in obj:
            q_asks[i] = need(obj, "asks", where, str)
            if q_asks[i] not in DOC_TYPES:
                raise BenchError(f"{where}: 'asks' is {show(q_asks[i])}; allowed: {', '.join(DOC_TYPES)}")
        stale[i] = id_list(obj, "stale", where, corpus) if "stale" in obj else []
        rumor[i] = id_list(obj, "rumor", where, corpus) if "rumor" in obj else []
    if rows and not done.all():
        raise BenchError(f"{path}: query {queries.ids[int(np.argmin(done))]!r} has no labels")
    queries.stale = Ragged.from_lists(stale)
    queries.rumor = Ragged.from_lists(rumor)
    queries.family = q_family
    return Labels(chunk_family=family, chunk_doc_type=doc_type, chunk_kind=kind, chunk_value=value,
                  query_family=q_family, query_asks=q_asks, timelines=timelines,
                  scenarios=scenarios)
