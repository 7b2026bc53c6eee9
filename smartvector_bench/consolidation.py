"""The consolidation pass run before queries are served (SmartVector paper, "Consolidation (Sleep-Time
Replay)"): contradiction detection and resolution, dependency edges (given and detected), supersession with
dependency transfer, and ripple penalties from changed or contradicted vectors.

Differences from the reference implementation, on purpose: the conflict verdict is applied (the loser gets
one correction, i.e. one negative feedback) instead of only logged; the vote abstains on ties instead of
favouring the second vector; time is the simulated serving time, never the wall clock.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from .csr import Ragged
from .dataset import Corpus
from .ripple import RippleParams, apply_penalties, ripple
from .settings import choice


@dataclass(frozen=True)
class ConsolidationParams:
    enabled: bool = True
    detector: str = choice("reference")  # word Jaccard > topic_threshold and difflib ratio < content_threshold
    topic_threshold: float = 0.3
    content_threshold: float = 0.4
    verdict: str = choice("demote", "log_only")  # demote: the loser gets one negative feedback; log_only: the reference
    tie_break: str = choice("authority", "recency")  # who wins a 1-1 vote
    detect_dependencies: bool = True
    dependency_threshold: float = 0.35  # word Jaccard: the lower-authority chunk depends on the higher one
    transfer_dependencies: bool = True  # a superseding vector takes over its predecessor's edges
    ripple: RippleParams = field(default_factory=RippleParams)


@dataclass
class ConsolidationResult:
    base_confidence: np.ndarray  # after ripple penalties
    negative_feedback: np.ndarray  # corrections applied by verdicts
    depends_on: Ragged  # final dependency edges (after detection and transfer)
    edge_count: np.ndarray  # depends_on + depended_by per vector
    contradictions: list[tuple[int, int, int]]  # (winner, loser, votes for winner)
    events: list[dict]  # audit log: time, kind, vector, cause, detail

    def summary(self) -> dict:
        kinds: dict[str, int] = {}
        for e in self.events:
            kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
        return {"contradictions": len(self.contradictions), "edges": int(self.depends_on.indices.size),
                "events": dict(sorted(kinds.items()))}


def word_sets_matrix(texts: list[str]) -> sparse.csr_matrix:
    """Binary (N, vocabulary) matrix of lower-cased whitespace tokens (the reference's word sets)."""
    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, text in enumerate(texts):
        for w in set(text.lower().split()):
            rows.append(i)
            cols.append(vocab.setdefault(w, len(vocab)))
    data = np.ones(len(rows), dtype=np.float32)
    return sparse.csr_matrix((data, (rows, cols)), shape=(len(texts), max(1, len(vocab))))


def jaccard_pairs(words: sparse.csr_matrix, threshold: float, mask: np.ndarray | None = None,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, jaccard) for i < j with Jaccard > threshold, among rows where ``mask`` is true."""
    idx = np.arange(words.shape[0]) if mask is None else np.nonzero(mask)[0]
    sub = words[idx]
    inter = (sub @ sub.T).tocoo()
    sizes = np.asarray(sub.sum(axis=1)).ravel()
    keep = inter.row < inter.col
    r, c, x = inter.row[keep], inter.col[keep], inter.data[keep]
    jac = x / (sizes[r] + sizes[c] - x)
    hit = jac > threshold
    return idx[r[hit]], idx[c[hit]], jac[hit]


def content_similarity(a: str, b: str) -> float:
    """difflib SequenceMatcher ratio on lower-cased text (the reference's character similarity)."""
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


def resolve(a: int, b: int, created_at: np.ndarray, authority: np.ndarray, feedback_ratio: np.ndarray,
            tie_break: str) -> tuple[int, int, int]:
    """Majority vote of three (newer, higher authority, higher feedback ratio); a tied criterion abstains.

    Returns (winner, loser, votes for the winner). A tied vote goes to ``tie_break``, then to the lower index.
    """
    a, b = min(a, b), max(a, b)  # the final fallback (lower index) must not depend on argument order
    votes = {a: 0, b: 0}
    for values in (created_at, authority, feedback_ratio):
        if values[a] != values[b]:
            votes[a if values[a] > values[b] else b] += 1
    if votes[a] != votes[b]:
        winner = a if votes[a] > votes[b] else b
    else:
        primary = authority if tie_break == "authority" else created_at
        secondary = created_at if tie_break == "authority" else authority
        winner = a
        for values in (primary, secondary):
            if values[a] != values[b]:
                winner = a if values[a] > values[b] else b
                break
    loser = b if winner == a else a
    return winner, loser, votes[winner]


def _edges_to_ragged(src: np.ndarray, dst: np.ndarray, n: int) -> Ragged:
    """Unique directed edges (src depends on dst) as a Ragged over src, rows sorted."""
    if src.size:
        pairs = np.unique(np.stack([src, dst], axis=1), axis=0)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        src, dst = pairs[:, 0], pairs[:, 1]
    counts = np.bincount(src, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Ragged(indptr, dst.astype(np.int64))


def reverse(depends_on: Ragged) -> Ragged:
    """depended_by from depends_on."""
    src = depends_on.row_ids()
    order = np.lexsort((src, depends_on.indices))
    return _edges_to_ragged(depends_on.indices[order], src[order], depends_on.n_rows)


def latest_successor(superseded_by: np.ndarray, valid_from: np.ndarray, at: float) -> np.ndarray:
    """Follow supersession links while the successor is in force at ``at``; identity for the rest."""
    out = np.arange(len(superseded_by))
    for _ in range(len(superseded_by)):
        nxt = superseded_by[out]
        step = (nxt >= 0) & (valid_from[np.where(nxt >= 0, nxt, 0)] <= at)
        if not step.any():
            break
        out = np.where(step, nxt, out)
    return out


def consolidate(corpus: Corpus, at: float, p: ConsolidationParams) -> ConsolidationResult:
    """One consolidation pass over the vectors ingested by ``at`` (simulated days)."""
    n = len(corpus)
    base = corpus.authority.astype(np.float64).copy()
    negative = np.zeros(n)
    events: list[dict] = []
    superseded_by = corpus.superseded_by()
    successor = latest_successor(superseded_by, corpus.valid_from, at)
    ingested = corpus.created_at <= at
    deprecated = successor != np.arange(n)
    src = corpus.depends_on.row_ids()
    dst = corpus.depends_on.indices
    contradictions: list[tuple[int, int, int]] = []

    if not p.enabled:
        deps = _edges_to_ragged(src, dst, n)
        return ConsolidationResult(base, negative, deps, deps.counts() + reverse(deps).counts(), [], events)

    words = word_sets_matrix(corpus.texts)
    doc_version = np.array([f"{d}\0{v}" for d, v in zip(corpus.doc_id, corpus.version)], dtype=object)

    # 1. Contradictions among vectors in force: same topic (word overlap), different claim (low char similarity).
    live = ingested & ~deprecated
    ratio = np.full(n, 0.5)  # feedback ratio with no feedback yet
    for i, j, jac in zip(*jaccard_pairs(words, p.topic_threshold, live)):
        if doc_version[i] == doc_version[j]:
            continue
        sim = content_similarity(corpus.texts[i], corpus.texts[j])
        if sim >= p.content_threshold:
            continue
        winner, loser, votes = resolve(int(i), int(j), corpus.created_at, corpus.authority, ratio, p.tie_break)
        contradictions.append((winner, loser, votes))
        events.append({"time": at, "kind": "contradiction", "vector": loser, "cause": winner,
                       "detail": {"jaccard": round(float(jac), 4), "char_similarity": round(sim, 4),
                                  "votes_for_winner": votes, "applied": p.verdict == "demote"}})
        if p.verdict == "demote":
            negative[loser] += 1

    # 2. Dependency edges: the corpus's own, plus detected ones between different documents.
    if p.detect_dependencies:
        i, j, _ = jaccard_pairs(words, p.dependency_threshold, ingested)
        other = corpus.doc_id[i] != corpus.doc_id[j]
        i, j = i[other], j[other]
        # The lower-authority chunk depends on the higher one; on equal authority the newer depends on the older.
        a_i, a_j = corpus.authority[i], corpus.authority[j]
        j_depends = (a_i > a_j) | ((a_i == a_j) & (corpus.created_at[j] >= corpus.created_at[i]))
        src = np.concatenate([src, np.where(j_depends, j, i)])
        dst = np.concatenate([dst, np.where(j_depends, i, j)])
        for a, b in zip(np.where(j_depends, j, i), np.where(j_depends, i, j)):
            events.append({"time": at, "kind": "dependency_detected", "vector": int(a), "cause": int(b),
                           "detail": {}})
    deps_before = _edges_to_ragged(src, dst, n)

    # 3. Ripple from every changed (superseded) or contradicted vector to its dependants.
    origins = sorted(set(np.nonzero(deprecated & ingested)[0].tolist())
                     | ({c[1] for c in contradictions} if p.verdict == "demote" else set()))
    depended_by = reverse(deps_before)
    for origin in origins:
        hits = ripple(depended_by, origin, p.ripple, skip=deprecated | ~ingested)
        base = apply_penalties(base, hits, p.ripple.floor)
        for v, depth, pen in hits:
            events.append({"time": at, "kind": "ripple", "vector": v, "cause": origin,
                           "detail": {"depth": depth, "penalty": pen}})

    # 4. Supersession transfers dependencies to the version in force.
    if p.transfer_dependencies:
        src, dst = successor[src], successor[dst]
    deps = _edges_to_ragged(src, dst, n)
    edge_count = deps.counts() + reverse(deps).counts()
    return ConsolidationResult(base, negative, deps, edge_count, contradictions, events)
