"""Shortcut audit: label-aware cue rules, as a reviewer would try them, each learned on dev and applied on test.

Every rule starts from ``valid_cosine``'s candidates (the chunks in force at the query's ``as_of``) and keeps
those whose *cue* value is in a set S learned on the dev queries, falling back to all candidates when none
has it; the highest cosine wins. S is the subset of cue values with the best dev top-1 (exhaustive over
subsets for cues with at most :data:`EXHAUSTIVE_MAX` values, greedy forward selection otherwise; ties go to
the larger set, so a cue with no signal learns "keep everything", which is ``valid_cosine`` itself).

Cues (per chunk):

- surface cues, which must not mark the answer: ``has_digit`` (the text contains a digit), ``position``
  (rank within its document by offset: 0, 1, 2, 3+), ``dependency_target`` (another chunk depends on it),
  ``dependency_source`` (it depends on another chunk), ``id_pattern`` (first and last character of the
  id's random part) and ``kind`` (the chunk's labelled kind, read from labels/);
- trust signals, legitimate but reported beside them: ``source`` and ``authority`` (authority >= a threshold
  learned on dev).

A rule is a pure function of per-query candidate arrays; ``audit`` returns each rule's learned set and its
dev and test top-1 beside ``valid_cosine``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from smartvector_bench.core.dataset import Corpus, Labels, Queries

EXHAUSTIVE_MAX = 8
SURFACE_CUES = ("has_digit", "position", "dependency_target", "dependency_source", "id_pattern", "kind")
TRUST_CUES = ("source", "authority")


def cue_values(corpus: Corpus, labels: Labels | None) -> dict[str, np.ndarray]:
    """Per-chunk categorical value (as str) of every cue."""
    n = len(corpus)
    target = np.zeros(n, dtype=bool)
    target[corpus.depends_on.indices] = True
    source_of = corpus.depends_on.counts() > 0
    pos = np.minimum(corpus.position(), 3)
    tail = [cid.lstrip("abcdefghijklmnopqrstuvwxyz_-") or cid for cid in corpus.ids]
    out = {
        "has_digit": np.array([str(any(ch.isdigit() for ch in t)) for t in corpus.texts], dtype=object),
        "position": np.array([str(p) if p < 3 else "3+" for p in pos], dtype=object),
        "dependency_target": target.astype(str).astype(object),
        "dependency_source": source_of.astype(str).astype(object),
        "id_pattern": np.array([f"{t[:1]}..{t[-1:]}" for t in tail], dtype=object),
        "source": np.asarray(corpus.source, dtype=object),
        "authority": np.array([f"{a:.2f}" for a in corpus.authority], dtype=object),
    }
    if labels is not None:
        out["kind"] = np.asarray(labels.chunk_kind, dtype=object)
    return out


@dataclass
class Candidates:
    """Per query: the in-force chunks (rows), their cosines, and whether each is relevant."""

    rows: list[np.ndarray]
    cos: list[np.ndarray]
    relevant: list[np.ndarray]


def candidates(cos: np.ndarray, corpus: Corpus, queries: Queries) -> Candidates:
    """``cos`` is (Q, N) cosine; candidates are the chunks in force at each query's as_of."""
    rows, c, rel = [], [], []
    for q in range(len(queries)):
        t = queries.as_of[q]
        ok = np.nonzero((corpus.created_at <= t) & (corpus.valid_from <= t) & (t < corpus.valid_to))[0]
        rows.append(ok)
        c.append(cos[q, ok])
        rel.append(np.isin(ok, queries.relevant.row(q)))
    return Candidates(rows, c, rel)


def _best_per_value(cand: Candidates, values: np.ndarray, levels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(Q, L) best cosine among candidates with each cue level (-inf if none) and whether that one is relevant.

    Ties within a level go to the lower corpus row, as everywhere in the harness."""
    q_n = len(cand.rows)
    best = np.full((q_n, len(levels)), -np.inf)
    hit = np.zeros((q_n, len(levels)), dtype=bool)
    row = np.full((q_n, len(levels)), np.iinfo(np.int64).max)
    index = {v: i for i, v in enumerate(levels)}
    for q in range(q_n):
        for r, c, ok in zip(cand.rows[q], cand.cos[q], cand.relevant[q]):
            li = index[values[r]]
            if c > best[q, li] or (c == best[q, li] and r < row[q, li]):
                best[q, li], hit[q, li], row[q, li] = c, ok, r
    return np.stack([best, row.astype(np.float64)], axis=-1), hit


def _rule_correct(table: np.ndarray, hit: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Per query: is the pick of "best cosine among levels in ``keep`` (fallback: all levels)" relevant?"""
    best, row = table[..., 0], table[..., 1]

    def pick(mask: np.ndarray) -> np.ndarray:
        b = np.where(mask[None, :], best, -np.inf)
        # Highest cosine, then lowest row: lexsort on (row, -cos) per query.
        key = np.where(np.isfinite(b), b, -np.inf)
        top = key.max(axis=1, keepdims=True)
        tied = (key == top) & np.isfinite(key)
        r = np.where(tied, row, np.inf)
        return np.argmin(r, axis=1), np.isfinite(top[:, 0])

    li, found = pick(keep)
    li_all, _ = pick(np.ones_like(keep))
    li = np.where(found, li, li_all)
    return hit[np.arange(len(li)), li]


def learn_set(table: np.ndarray, hit: np.ndarray, levels: list[str]) -> np.ndarray:
    """The subset of levels with the best dev top-1 (ties: the larger set, then the first found)."""
    n = len(levels)
    full = np.ones(n, dtype=bool)
    best_mask, best_acc = full, _rule_correct(table, hit, full).mean() if len(table) else 0.0
    if n <= EXHAUSTIVE_MAX:
        for size in range(n - 1, 0, -1):
            for combo in combinations(range(n), size):
                mask = np.zeros(n, dtype=bool)
                mask[list(combo)] = True
                acc = _rule_correct(table, hit, mask).mean()
                if acc > best_acc + 1e-12:
                    best_mask, best_acc = mask, acc
        return best_mask
    mask = np.zeros(n, dtype=bool)
    acc_now = -1.0
    while True:
        trials = []
        for i in np.nonzero(~mask)[0]:
            m = mask.copy()
            m[i] = True
            trials.append((_rule_correct(table, hit, m).mean(), -i, m))
        if not trials:
            break
        acc, _, m = max(trials, key=lambda x: (x[0], x[1]))
        if acc <= acc_now + 1e-12:
            break
        mask, acc_now = m, acc
    return mask if acc_now > best_acc + 1e-12 else best_mask


def audit(cos: np.ndarray, corpus: Corpus, queries: Queries, labels: Labels | None,
          cues: tuple[str, ...] = SURFACE_CUES + TRUST_CUES) -> dict:
    """Learn each cue rule on dev, apply on test; returns per-query correctness and a summary per rule."""
    cand = candidates(cos, corpus, queries)
    values = cue_values(corpus, labels)
    dev = np.asarray(queries.split) == "dev"
    test = np.asarray(queries.split) == "test"
    out: dict = {"rules": {}, "correct": {}}
    any_relevant = np.array([bool(r.any()) for r in cand.relevant])
    base_table, base_hit = _best_per_value(cand, np.array(["all"] * len(corpus), dtype=object), ["all"])
    base = _rule_correct(base_table, base_hit, np.ones(1, dtype=bool))
    out["correct"]["valid_cosine"] = base
    out["rules"]["valid_cosine"] = {"cue": None, "keep": None, "dev_top1": float(base[dev].mean()),
                                    "test_top1": float(base[test].mean())}
    out["reachable"] = {"dev": float(any_relevant[dev].mean()), "test": float(any_relevant[test].mean())}
    for cue in cues:
        if cue not in values:
            continue
        v = values[cue]
        levels = sorted({str(x) for x in v})
        table, hit = _best_per_value(cand, v, levels)
        if cue == "authority":
            # A threshold: keep authority >= theta (levels are sorted numerically as strings of equal width).
            levels_num = sorted(levels, key=float)
            order = [levels.index(x) for x in levels_num]
            best_mask, best_acc = np.ones(len(levels), dtype=bool), -1.0
            for i in range(len(levels_num)):
                mask = np.zeros(len(levels), dtype=bool)
                mask[order[i:]] = True
                acc = _rule_correct(table[dev], hit[dev], mask).mean()
                if acc > best_acc + 1e-12:
                    best_mask, best_acc = mask, acc
            keep = best_mask
        else:
            keep = learn_set(table[dev], hit[dev], levels)
        correct = _rule_correct(table, hit, keep)
        out["correct"][cue] = correct
        out["rules"][cue] = {"cue": cue, "kind": "surface" if cue in SURFACE_CUES else "trust",
                             "keep": [lv for lv, k in zip(levels, keep) if k], "levels": len(levels),
                             "dev_top1": float(correct[dev].mean()), "test_top1": float(correct[test].mean()),
                             "test_gain": float(correct[test].mean() - base[test].mean())}
    return out
