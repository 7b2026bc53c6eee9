"""A Run is the boundary between retrieving and scoring (as in BEIR): saved runs can be re-scored later."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .dataset import Corpus, Queries


@dataclass
class Run:
    """Ranked results of one system for a batch of queries, as corpus indices.

    ``ranked[q, r]`` is the corpus index at rank ``r`` (-1 where the system returned fewer than k results),
    ``scores`` the system's ranking score there (NaN for padding), ``confidence[q]`` the system's confidence
    in its top hit, in [0, 1] (NaN when it returned nothing).
    """

    system: str
    ranked: np.ndarray  # (Q, k) int64
    scores: np.ndarray  # (Q, k) float64
    confidence: np.ndarray  # (Q,) float64

    def __post_init__(self) -> None:
        assert self.ranked.shape == self.scores.shape and self.ranked.shape[0] == self.confidence.shape[0]

    @property
    def top1(self) -> np.ndarray:
        return self.ranked[:, 0] if self.ranked.shape[1] else np.full(len(self.confidence), -1, dtype=np.int64)


def rank_by_score(scores: np.ndarray, k: int, candidates: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k per row by descending score; ties go to the lower corpus index (a fixed, documented rule).

    ``scores`` is (Q, C); ``candidates`` (Q, C) maps columns to corpus indices (default: column = index).
    Rows may hold -inf for excluded entries; those are dropped (rank padded with -1 / NaN).
    """
    q, c = scores.shape
    cand = np.broadcast_to(np.arange(c, dtype=np.int64), (q, c)) if candidates is None else candidates
    # lexsort sorts by the last key first: score descending, then corpus index ascending.
    order = np.lexsort((cand, -scores), axis=1)[:, :k]
    ranked = np.take_along_axis(cand, order, axis=1).astype(np.int64)
    top = np.take_along_axis(scores, order, axis=1).astype(np.float64)
    dropped = ~np.isfinite(top)
    ranked[dropped] = -1
    top[dropped] = np.nan
    if ranked.shape[1] < k:  # fewer candidates than k
        pad = k - ranked.shape[1]
        ranked = np.pad(ranked, ((0, 0), (0, pad)), constant_values=-1)
        top = np.pad(top, ((0, 0), (0, pad)), constant_values=np.nan)
    return ranked, top


def write_run_jsonl(path: Path, run: Run, queries: Queries, corpus: Corpus, judged: dict[str, np.ndarray],
                    meta: dict, k: int = 10) -> None:
    """First line ``{"_meta": {...}}`` (provenance: schema, system, dataset sha256, seed, git sha, config hash,
    packages), then one JSON line per query; ``judged`` holds the per-query ``correct``, ``stale``, ``rumor``."""
    from .atomic import atomic_write_text

    lines = [json.dumps({"_meta": {**meta, "system": run.system, "k": k}}, ensure_ascii=False, sort_keys=True)]
    for i, qid in enumerate(queries.ids):
        ranked = [corpus.ids[j] for j in run.ranked[i, :k] if j >= 0]
        scores = [round(float(s), 6) for s in run.scores[i, : len(ranked)]]
        conf = float(run.confidence[i])
        lines.append(json.dumps({
            "query_id": qid, "split": str(queries.split[i]), "category": str(queries.category[i]),
            "ranked": ranked, "scores": scores, "confidence": None if np.isnan(conf) else round(conf, 6),
            "correct": bool(judged["correct"][i]), "stale": bool(judged["stale"][i]),
            "rumor": bool(judged["rumor"][i]),
        }, ensure_ascii=False))
    atomic_write_text(path, "\n".join(lines) + "\n")


def read_run_jsonl(path: Path, queries: Queries, corpus: Corpus) -> tuple[dict, Run]:
    """Load a saved run back (for re-scoring without re-running a model); rows are aligned to ``queries``."""
    from .errors import BenchError

    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines or "_meta" not in (first := json.loads(lines[0])):
        raise BenchError(f"{path}:1: expected a {{\"_meta\": ...}} header line")
    meta = first["_meta"]
    k = int(meta["k"])
    row_of = {qid: i for i, qid in enumerate(queries.ids)}
    ranked = np.full((len(queries), k), -1, dtype=np.int64)
    scores = np.full((len(queries), k), np.nan)
    confidence = np.full(len(queries), np.nan)
    for lineno, line in enumerate(lines[1:], 2):
        rec = json.loads(line)
        if rec["query_id"] not in row_of:
            raise BenchError(f"{path}:{lineno}: unknown query id {rec['query_id']!r}")
        i = row_of[rec["query_id"]]
        for r, (cid, sc) in enumerate(zip(rec["ranked"], rec["scores"])):
            if cid not in corpus.index_of:
                raise BenchError(f"{path}:{lineno}: unknown chunk id {cid!r}")
            ranked[i, r], scores[i, r] = corpus.index_of[cid], sc
        confidence[i] = np.nan if rec["confidence"] is None else rec["confidence"]
    return meta, Run(meta["system"], ranked, scores, confidence)
