"""Shortcut audit: label-aware cue rules, as a reviewer would try them, each learned on dev and applied on test.

Every rule starts from ``valid_cosine``'s candidates (the chunks in force at the query's ``as_of``). A *cue rule*
keeps those whose cue value is in a set S learned on the dev queries, falling back to all candidates when none
has it; the highest cosine wins. S is the subset of cue values with the best dev top-1 (exhaustive over subsets
for cues with at most :data:`EXHAUSTIVE_MAX` values, greedy forward selection otherwise; ties go to the larger
set, so a cue with no signal learns "keep everything", which is ``valid_cosine`` itself).

Cues (per chunk, from what a document store holds: text, source, times, ids, edges; ``kind`` alone reads labels):

- surface cues, which must not mark the answer: ``has_digit``, ``position`` (rank within its document version
  by offset: 0, 1, 2, 3+), ``dependency_target`` / ``dependency_source`` (an edge ends / starts at it),
  ``id_pattern`` (first and last character of the id's random part), ``kind`` (the labelled chunk kind),
  ``hedge`` / ``certainty`` (phrases of :data:`HEDGE_LEXICON` / :data:`CERTAINTY_LEXICON`: 0, 1, 2+),
  ``length_rank`` (rank by text length within its document version: 0 = longest, 1, 2, 3+), ``length_bin``
  (corpus length quintile) and ``digit_count`` (0, 1-3, 4-6, 7-9, 10-12, 13+);
- metadata, legitimate evidence that must not be a shortcut either (reported, not barred): ``email_source``
  and ``newest_created``, a per-query rule: the newest ``created_at`` among the top-m candidates by cosine,
  m learned on dev from :data:`NEWEST_TOP_M` (ties: the smaller m; m = 1 is ``valid_cosine``);
- trust signals, reported beside them: ``source`` and ``authority`` (authority >= a threshold learned on dev).

``surface_gbm`` (:mod:`experiments.shortcut_audit_gbm`) is a learned surface auditor, kind surface.
A rule is a pure function of the flat candidate arrays; ``audit`` returns each rule's learned setting, its
picks and its dev and test top-1 beside ``valid_cosine``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.dataset import Corpus, Labels, Queries

EXHAUSTIVE_MAX = 8
SURFACE_CUES = ("has_digit", "position", "dependency_target", "dependency_source", "id_pattern", "kind",
                "hedge", "certainty", "length_rank", "length_bin", "digit_count")
LEARNED_RULES = ("surface_gbm",)
METADATA_CUES = ("email_source", "newest_created")
TRUST_CUES = ("source", "authority")
ALL_RULES = SURFACE_CUES + LEARNED_RULES + METADATA_CUES + TRUST_CUES
RULE_KIND = {**{r: "surface" for r in SURFACE_CUES + LEARNED_RULES}, **{r: "metadata" for r in METADATA_CUES},
             **{r: "trust" for r in TRUST_CUES}}
KIND_ORDER = ("baseline", "surface", "metadata", "trust")
NEWEST_TOP_M = (1, 2, 3, 5, 10, None)  # None: all candidates

# Hearsay and doubt, as a reviewer would list them (matched case-insensitively, on word boundaries).
HEDGE_LEXICON = (
    "i heard", "we heard", "pretty sure", "reckons", "reckon", "not official", "unofficial", "unofficially",
    "i think", "i believe", "apparently",
    "rumour", "rumor", "rumours", "rumors", "rumoured", "rumored",  # external spelling too: words real text uses
    "someone said", "somebody said", "said", "told me", "heads up", "not sure", "probably", "supposedly",
    "allegedly", "as far as i know", "afaik", "if i recall", "iirc", "i guess", "i gather", "word is",
    "unconfirmed", "at least that's what", "mentioned", "can someone confirm", "still to confirm",
    "if you know better", "maybe", "might", "seems")
# Assurance; a phrase right after "not " / "n't " does not count ("not official" is a hedge).
CERTAINTY_LEXICON = (
    "confirmed", "for the record", "definitely", "certainly", "official", "officially", "checked with",
    "double-checked", "verified", "per section", "policy says", "written policy", "in writing", "as of",
    "effective", "announcement", "please note", "policy change", "logged under", "according to",
    "policy owners", "owning team", "currently", "right now")


def _lexicon_re(phrases: tuple[str, ...], negatable: bool) -> re.Pattern:
    alts = sorted({re.escape(p).replace(r"\ ", r"\s+") for p in phrases}, key=lambda s: (-len(s), s))
    return re.compile((r"(?<!\bnot )(?<!n't )" if negatable else "") + r"\b(?:" + "|".join(alts) + r")\b",
                      re.IGNORECASE)


HEDGE_RE = _lexicon_re(HEDGE_LEXICON, negatable=False)
CERTAINTY_RE = _lexicon_re(CERTAINTY_LEXICON, negatable=True)


def lexicon_count(texts, pattern: re.Pattern) -> np.ndarray:
    """Non-overlapping matches of ``pattern`` in each text (curly apostrophes read as straight ones)."""
    return np.fromiter((len(pattern.findall(t.replace("\u2019", "'"))) for t in texts), dtype=np.int64,
                       count=len(texts))


def digit_counts(texts) -> np.ndarray:
    return np.fromiter((sum(ch.isdigit() for ch in t) for t in texts), dtype=np.int64, count=len(texts))


def text_lengths(texts) -> np.ndarray:
    return np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))


def version_groups(corpus: Corpus) -> np.ndarray:
    """Per chunk: an integer naming its document version (chunks sharing ``doc_id`` and ``version``)."""
    key = np.array([f"{d}\0{v}" for d, v in zip(corpus.doc_id, corpus.version)], dtype=object)
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def length_rank(corpus: Corpus) -> np.ndarray:
    """Rank of each chunk by text length within its document version (0 = longest; ties: lower offset, row)."""
    n = len(corpus)
    group = version_groups(corpus)
    order = np.lexsort((np.arange(n), corpus.offset_start, -text_lengths(corpus.texts), group))
    g = group[order]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.searchsorted(g, g, side="left")
    return rank


def id_tail(cid: str) -> str:
    """The id's random part: the id without its leading letters, '_' and '-' (the whole id if nothing is left)."""
    return cid.lstrip("abcdefghijklmnopqrstuvwxyz_-") or cid


def _binned(x: np.ndarray, edges: list[int], labels: tuple[str, ...]) -> np.ndarray:
    return np.asarray(labels, dtype=object)[np.searchsorted(edges, x, side="right")]


def cue_values(corpus: Corpus, labels: Labels | None) -> dict[str, np.ndarray]:
    """Per-chunk categorical value (as str) of every per-chunk cue."""
    n = len(corpus)
    target = np.zeros(n, dtype=bool)
    target[corpus.depends_on.indices] = True
    source_of = corpus.depends_on.counts() > 0
    length = text_lengths(corpus.texts)
    edges = np.quantile(length, [0.2, 0.4, 0.6, 0.8]) if n else np.zeros(4)
    small = ("0", "1", "2+")
    out = {
        "has_digit": np.array([str(any(ch.isdigit() for ch in t)) for t in corpus.texts], dtype=object),
        "position": _binned(corpus.position(), [1, 2, 3], ("0", "1", "2", "3+")),
        "dependency_target": target.astype(str).astype(object),
        "dependency_source": source_of.astype(str).astype(object),
        "id_pattern": np.array([f"{t[:1]}..{t[-1:]}" for t in map(id_tail, corpus.ids)], dtype=object),
        "hedge": _binned(lexicon_count(corpus.texts, HEDGE_RE), [1, 2], small),
        "certainty": _binned(lexicon_count(corpus.texts, CERTAINTY_RE), [1, 2], small),
        "length_rank": _binned(length_rank(corpus), [1, 2, 3], ("0", "1", "2", "3+")),
        "length_bin": np.array([f"q{b + 1}" for b in np.searchsorted(edges, length, side="right")], dtype=object),
        "digit_count": _binned(digit_counts(corpus.texts), [1, 4, 7, 10, 13],
                               ("0", "1-3", "4-6", "7-9", "10-12", "13+")),
        "email_source": (np.asarray(corpus.source, dtype=object) == "email").astype(str).astype(object),
        "source": np.asarray(corpus.source, dtype=object),
        "authority": np.array([f"{a:.2f}" for a in corpus.authority], dtype=object),
    }
    if labels is not None:
        out["kind"] = np.asarray(labels.chunk_kind, dtype=object)
    return out


@dataclass
class Candidates:
    """The in-force (query, chunk) pairs, flat: by query, then cosine (highest first), then corpus row."""

    query: np.ndarray
    row: np.ndarray
    cos: np.ndarray
    relevant: np.ndarray
    rank: np.ndarray  # 0 = the query's highest cosine (valid_cosine's pick)
    indptr: np.ndarray  # (Q + 1,): query q's pairs are indptr[q]:indptr[q + 1]

    @property
    def n_queries(self) -> int:
        return len(self.indptr) - 1

    def first(self, keep: np.ndarray) -> np.ndarray:
        """Per query: the position of its first kept pair (the best cosine among them), else of its first pair;
        -1 for a query without candidates."""
        pick = np.where(np.diff(self.indptr) > 0, self.indptr[:-1], -1)
        idx = np.nonzero(keep)[0]
        qs, at = np.unique(self.query[idx], return_index=True)
        pick[qs] = idx[at]
        return pick

    def correct(self, pick: np.ndarray) -> np.ndarray:
        if not len(self.row):
            return np.zeros(len(pick), dtype=bool)
        return (pick >= 0) & self.relevant[np.maximum(pick, 0)]

    def rows_of(self, pick: np.ndarray) -> np.ndarray:
        if not len(self.row):
            return np.full(len(pick), -1, dtype=np.int64)
        return np.where(pick >= 0, self.row[np.maximum(pick, 0)], -1)


def candidates(cos: np.ndarray, corpus: Corpus, queries: Queries) -> Candidates:
    """``cos`` is (Q, N) cosine; candidates are the chunks in force at each query's as_of."""
    t = np.asarray(queries.as_of, dtype=np.float64)[:, None]
    q, r = np.nonzero((corpus.created_at <= t) & (corpus.valid_from <= t) & (t < corpus.valid_to))
    c = np.asarray(cos)[q, r]
    order = np.lexsort((r, -c, q))
    q, r, c = q[order], r[order], c[order]
    n = max(len(corpus), 1)
    rel = queries.relevant
    relevant = np.isin(q * n + r, rel.row_ids() * n + rel.indices)
    indptr = np.searchsorted(q, np.arange(len(queries) + 1))
    return Candidates(q, r, c, relevant, np.arange(len(q)) - indptr[q], indptr)


def _best_per_value(cand: Candidates, values: np.ndarray, levels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(Q, L, 2) best cosine among candidates with each cue level (-inf if none) and its row, and (Q, L) whether
    that one is relevant. Ties within a level go to the lower corpus row, as everywhere in the harness."""
    q_n, n_lv = cand.n_queries, len(levels)
    index = {v: i for i, v in enumerate(levels)}
    level_of = np.array([index[str(v)] for v in values], dtype=np.int64)
    key, at = np.unique(cand.query * n_lv + level_of[cand.row], return_index=True)  # first = best of each
    best = np.full(q_n * n_lv, -np.inf)
    row = np.full(q_n * n_lv, float(np.iinfo(np.int64).max))
    hit = np.zeros(q_n * n_lv, dtype=bool)
    best[key], row[key], hit[key] = cand.cos[at], cand.row[at], cand.relevant[at]
    return np.stack([best, row], axis=-1).reshape(q_n, n_lv, 2), hit.reshape(q_n, n_lv)


def _rule_correct(table: np.ndarray, hit: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Per query: is the pick of "best cosine among levels in ``keep`` (fallback: all levels)" relevant?"""
    best, row = table[..., 0], table[..., 1]

    def pick(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = np.where(mask[None, :], best, -np.inf)
        top = key.max(axis=1, keepdims=True)
        tied = (key == top) & np.isfinite(key)  # highest cosine, then lowest row
        return np.argmin(np.where(tied, row, np.inf), axis=1), np.isfinite(top[:, 0])

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
    return _greedy(table, hit, int(_rule_correct(table, hit, full).sum()), best_mask)


def _greedy(table: np.ndarray, hit: np.ndarray, full_count: int, full: np.ndarray) -> np.ndarray:
    """Greedy forward selection of levels (each step adds the level with the most dev hits, ties: the lowest
    index; stops when no level adds one), the gain of every level at once; ``full`` unless it beats keeping
    everything (``full_count`` dev hits)."""
    best, row = table[..., 0], table[..., 1]
    q_n, n = hit.shape
    order = np.lexsort((row, -best))  # per query: levels by best cosine, then row (-inf last)
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.broadcast_to(np.arange(n), (q_n, n)), axis=1)
    finite, h = np.isfinite(best), hit.astype(np.int64)
    cur_pos = np.full(q_n, n)  # the current pick's place in the order (n: none kept, the fallback)
    cur = h[np.arange(q_n), order[:, 0]] if n else np.zeros(q_n, dtype=np.int64)
    mask, count_now = np.zeros(n, dtype=bool), -1
    while not mask.all():
        gain = np.where((pos < cur_pos[:, None]) & finite, h - cur[:, None], 0).sum(axis=0)
        count = np.where(mask, -1, cur.sum() + gain)
        i = int(np.argmax(count))
        if count[i] <= count_now:
            break
        mask[i], count_now = True, int(count[i])
        better = (pos[:, i] < cur_pos) & finite[:, i]
        cur_pos[better], cur[better] = pos[better, i], h[better, i]
    return mask if count_now > full_count else full


def _learn_threshold(table: np.ndarray, hit: np.ndarray, levels: list[str]) -> np.ndarray:
    """Keep the levels >= theta (numeric), theta with the best dev top-1 (ties: the lowest, keep everything)."""
    order = sorted(range(len(levels)), key=lambda i: float(levels[i]))
    best_mask, best_acc = np.ones(len(levels), dtype=bool), -1.0
    for i in range(len(order)):
        mask = np.zeros(len(levels), dtype=bool)
        mask[order[i:]] = True
        acc = _rule_correct(table, hit, mask).mean()
        if acc > best_acc + 1e-12:
            best_mask, best_acc = mask, acc
    return best_mask


def newest_pick(cand: Candidates, created_at: np.ndarray, m: int | None) -> np.ndarray:
    """Per query: among its top-``m`` candidates by cosine (all if None), the newest ``created_at``; ties: the
    higher cosine, then the lower row (-1 for a query without candidates)."""
    pos = np.nonzero(cand.rank < m)[0] if m is not None else np.arange(len(cand.row))
    sel = pos[np.lexsort((pos, -created_at[cand.row[pos]], cand.query[pos]))]
    qs, at = np.unique(cand.query[sel], return_index=True)
    pick = np.full(cand.n_queries, -1, dtype=np.int64)
    pick[qs] = sel[at]
    return pick


# Learned rules' fits by name: fit(cand, corpus, dev, groups=...) -> {"pick": ..., **info};
# experiments/shortcut_audit_gbm.py registers surface_gbm when imported (it reads this module's cue helpers, so this
# module cannot import it).
LEARNED_FITS: dict = {}


def audit(cos: np.ndarray, corpus: Corpus, queries: Queries, labels: Labels | None,
          cues: tuple[str, ...] = ALL_RULES) -> dict:
    """Learn each rule on dev, apply on test; returns per-query correctness and picks (corpus rows, -1: none)
    and a summary per rule."""
    cand = candidates(cos, corpus, queries)
    values = cue_values(corpus, labels)
    dev = np.asarray(queries.split) == "dev"
    test = np.asarray(queries.split) == "test"
    out: dict = {"rules": {}, "correct": {}, "picks": {}}
    reach = np.bincount(cand.query[cand.relevant], minlength=cand.n_queries) > 0
    out["reachable"] = {"dev": float(reach[dev].mean()), "test": float(reach[test].mean())}
    base = cand.correct(cand.first(np.zeros(len(cand.row), dtype=bool)))

    def record(name: str, pick: np.ndarray, **info) -> None:
        correct = cand.correct(pick)
        out["correct"][name], out["picks"][name] = correct, cand.rows_of(pick)
        entry = {"cue": name, **info, "dev_top1": float(correct[dev].mean()), "test_top1": float(correct[test].mean())}
        if name == "valid_cosine":
            entry.update(cue=None, keep=None)
        else:
            entry.update(kind=RULE_KIND.get(name, "surface"),
                         test_gain=float(correct[test].mean() - base[test].mean()))
        out["rules"][name] = entry

    record("valid_cosine", cand.first(np.zeros(len(cand.row), dtype=bool)))
    for cue in cues:
        if cue == "newest_created":
            picks = [newest_pick(cand, corpus.created_at, m) for m in NEWEST_TOP_M]
            acc = [cand.correct(p)[dev].mean() if dev.any() else 0.0 for p in picks]
            i = int(np.argmax(np.round(acc, 12)))  # ties: the smaller m (m = 1 is valid_cosine)
            record(cue, picks[i], keep=["all" if NEWEST_TOP_M[i] is None else f"top-{NEWEST_TOP_M[i]}"],
                   levels=len(NEWEST_TOP_M))
            continue
        if cue in LEARNED_RULES:
            if cue not in LEARNED_FITS:  # it registers itself; this module does not import it (no import circle)
                raise BenchError(f"shortcut rule {cue!r}: import experiments.shortcut_audit_gbm first")
            g = LEARNED_FITS[cue](cand, corpus, dev, groups=queries.family)
            record(cue, g.pop("pick"), keep=None, **g)
            continue
        if cue not in values:
            continue
        v = values[cue]
        levels = sorted({str(x) for x in v})
        table, hit = _best_per_value(cand, v, levels)
        keep = (_learn_threshold if cue == "authority" else learn_set)(table[dev], hit[dev], levels)
        allowed = np.isin(v, np.asarray(levels, dtype=object)[keep])
        record(cue, cand.first(allowed[cand.row]), keep=[lv for lv, k in zip(levels, keep) if k], levels=len(levels))
    return out
