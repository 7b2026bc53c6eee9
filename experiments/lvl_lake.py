"""Driving LiveVectorLake for experiment=lvl_eval: ingest every document version while recording what the lake
asks to embed, read its cold-tier rows back, and time its queries.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from smartvector_bench.core.dataset.documents import DocVersion
from smartvector_bench.core.evaluation.metrics.summary import latency_stats, rounded
from experiments.lvl_report import SERIES
from smartvector_bench.systems.livevectorlake.cold import INF_US, to_us


@dataclass
class Ingested:
    v: DocVersion
    result: object  # IngestResult
    asked: list[str]  # texts the lake passed to vectors_for
    wall_s: float


def ingest_all(lake, versions: list[DocVersion], vec_of: dict[str, np.ndarray], dim: int,
               progress: bool) -> list[Ingested]:
    """Ingest every version in effective-time order, recording exactly what the lake asks to embed."""
    order = sorted(versions, key=lambda v: (v.effective_at, v.doc_id, v.version))
    out = []
    for v in tqdm(order, desc="lvl_eval ingest", unit="version", disable=not progress, leave=False):
        asked: list[str] = []

        def vectors_for(texts, asked=asked):
            texts = list(texts)
            asked.extend(texts)
            missing = [t for t in texts if t not in vec_of]
            if missing:
                raise RuntimeError(f"the lake asked for a paragraph that is not in documents.jsonl: {missing[0]!r}")
            return np.stack([vec_of[t] for t in texts]) if texts else np.zeros((0, dim), dtype=np.float32)

        t0 = time.perf_counter()
        res = lake.ingest_document(v.doc_id, v.version, v.text, v.effective_at, vectors_for)
        out.append(Ingested(v, res, asked, time.perf_counter() - t0))
    return out


@dataclass
class LakeRows:
    deleted: dict[tuple[str, int], list[int]]  # (doc_id, version) -> old positions closed as "deleted"
    parent: dict[tuple[str, int, int], str | None]  # (doc_id, version, position) -> parent_hash of the new row


def lake_rows(lake, ingested: list[Ingested]) -> LakeRows:
    """From the cold tier: the old positions the lake closed as ``deleted`` (text left the document) at each
    (doc_id, version), i.e. rows with status ``deleted`` whose ``valid_to`` is that version's effective time (a
    row keeps its position while open, so it is the row's position in the previous version); and the
    ``parent_hash`` of every row a version created."""
    when = {(x.v.doc_id, to_us(x.v.effective_at)): x.v.version for x in ingested}
    snap = lake.cold.snapshot()
    deleted: dict[tuple[str, int], list[int]] = {}
    parent: dict[tuple[str, int, int], str | None] = {}
    for i in range(len(snap)):
        doc_id = str(snap.doc_id[i])
        created = when.get((doc_id, int(snap.valid_from[i])))
        if created is None:
            raise RuntimeError(f"cold tier: a row of {doc_id} opened at no ingested version's time")
        parent[(doc_id, created, int(snap.position[i]))] = snap.parent_hash[i]
        if snap.status[i] == "deleted":
            t = int(snap.valid_to[i])
            if t >= INF_US or (doc_id, t) not in when:
                raise RuntimeError(f"cold tier: a deleted row of {doc_id} closed at no ingested version's time")
            deleted.setdefault((doc_id, when[(doc_id, t)]), []).append(int(snap.position[i]))
    return LakeRows({k: sorted(v) for k, v in deleted.items()}, parent)


@dataclass
class Timed:
    total_s: np.ndarray  # (repeats, n): wall time of what was timed
    embed_s: np.ndarray | None  # (repeats, n): the embedding part (with_embedding only)
    lake_s: np.ndarray  # (repeats, n): QueryResult.latency_s (the lake's own, inside query())
    tiers: Counter
    first_hits: list  # hits of the first repetition, per query
    stable: bool  # every repetition returned the same rows
    warmup_s: float


def time_queries(lake, texts: list[str], vecs: np.ndarray, as_of: np.ndarray, k: int, repeats: int,
                 encode=None, progress: bool = False, desc: str = "") -> Timed:
    """Each query ``repeats`` times, in interleaved passes (all queries, then all again). ``encode``: time the
    query's embedding (one text per call) together with ``lake.query``. One untimed warm-up query first."""
    n = len(texts)
    total = np.zeros((repeats, n))
    emb = np.zeros((repeats, n)) if encode is not None else None
    inner = np.zeros((repeats, n))
    tiers: Counter = Counter()
    first: list = [None] * n
    stable = True
    warm = 0.0
    if n:
        t0 = time.perf_counter()
        lake.query(encode([texts[0]])[0] if encode else vecs[0], float(as_of[0]), k)
        warm = time.perf_counter() - t0
    bar = tqdm(total=repeats * n, desc=desc, unit="query", disable=not progress, leave=False)
    for r in range(repeats):
        for q in range(n):
            if encode is not None:
                t0 = time.perf_counter()
                v = encode([texts[q]])[0]
                t1 = time.perf_counter()
                res = lake.query(v, float(as_of[q]), k)
                t2 = time.perf_counter()
                emb[r, q] = t1 - t0
            else:
                t0 = time.perf_counter()
                res = lake.query(vecs[q], float(as_of[q]), k)
                t2 = time.perf_counter()
            total[r, q] = t2 - t0
            inner[r, q] = res.latency_s
            tiers[res.tier] += 1
            if r == 0:
                first[q] = res.hits
            elif hit_keys(res.hits) != hit_keys(first[q]):
                stable = False
            bar.update()
    bar.close()
    return Timed(total, emb, inner, tiers, first, stable, warm)


def hit_keys(hits) -> list[tuple]:
    """What identifies a returned row: two answers are the same when these keys are."""
    return [(h.doc_id, h.chunk_id, h.position, h.valid_from) for h in hits]


LATENCY_DEFINITION = (
    "query_only: wall time of lake.query (perf_counter around the call) with the query vector given; "
    "with_embedding: the query text embedded by the raw model (no cache, one text per call) then lake.query, "
    "timed together; embedding_only: the embedding part of with_embedding. Each query timed `repeats` times in "
    "interleaved passes after one untimed warm-up query; every repetition kept in `samples`.")


def latency_section(timed: dict[str, dict[str, Timed]], groups: dict[str, np.ndarray], query_ids: list[str],
                    expect: dict[str, str], cold_load_s: float) -> dict:
    """The JSON's ``latency``: percentiles per series and mode, the tiers that answered, and every sample."""
    latency: dict = {"definition": LATENCY_DEFINITION, "samples": {}}
    for series in SERIES:
        qo, we = timed[series]["query_only"], timed[series]["with_embedding"]
        idx = groups[series]
        latency[series] = {
            "n_queries": int(len(idx)),
            "query_only": latency_stats(qo.total_s),
            "with_embedding": latency_stats(we.total_s),
            "embedding_only": latency_stats(we.embed_s),
            "lake_internal": latency_stats(qo.lake_s),
            "tiers_used": dict(qo.tiers + we.tiers),
            "expected_tier": expect[series],
            "tier_as_expected": set(qo.tiers + we.tiers) <= {expect[series]},
            "hits_stable_across_repeats": bool(qo.stable and we.stable),
            "warmup_s": {"query_only": rounded(qo.warmup_s, 7), "with_embedding": rounded(we.warmup_s, 7)},
        }
        latency["samples"][series] = {
            "query_ids": [query_ids[i] for i in idx],
            "query_only_s": np.round(qo.total_s, 7).tolist(),
            "with_embedding_s": np.round(we.total_s, 7).tolist(),
            "embedding_only_s": np.round(we.embed_s, 7).tolist(),
        }
    same_cold = sum(hit_keys(a) == hit_keys(b) for a, b in
                    zip(timed["cold_cached"]["query_only"].first_hits, timed["cold_uncached"]["query_only"].first_hits))
    latency["cold_uncached"]["same_hits_as_cached"] = {"queries": int(same_cold), "of": int(len(groups["cold_cached"]))}
    latency["cold_cached"]["table_load_s"] = rounded(cold_load_s, 6)
    return latency


def latency_rows(latency: dict, groups: dict[str, np.ndarray], queries) -> list[dict]:
    """One row per timed repetition, for ``lvl_eval_latency.csv``."""
    rows = []
    for series in SERIES:
        sm = latency["samples"][series]
        cats = {queries.ids[i]: str(queries.category[i]) for i in groups[series]}
        for mode, key in (("query_only", "query_only_s"), ("with_embedding", "with_embedding_s"),
                          ("embedding_only", "embedding_only_s")):
            for r, rep in enumerate(sm[key]):
                for qid, sec in zip(sm["query_ids"], rep):
                    rows.append({"series": series, "mode": mode, "query_id": qid, "category": cats[qid],
                                 "repeat": r, "seconds": sec})
    return rows
