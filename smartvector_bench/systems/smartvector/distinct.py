"""Candidate pairs among distinct texts: near-duplicates collapsed before the nearest-neighbour search, then
expanded back to rows by the words that set the copies apart.

Why: a text with many near-copies (the same chunk in many teams' documents, a paragraph pasted into many
pages) fills its own ``k`` nearest neighbours with those copies, so plain kNN pairs hold only copies of
one text. The reference detector cannot call two near-copies a contradiction (it needs a difflib ratio
below ``content_threshold``, which copies exceed), yet the pairs it needs (a message and the policy it
contradicts) are pushed out of the list. The semantic detector can (two near-copies stating different
values in different documents); this generator pairs near-copies only through shared rare words, so it
may miss those (not measured).

The steps (``distinct_pairs``):

1. *Groups*: leader clustering in row order: a row joins the most similar leader when their cosine is at
   least ``dup_cosine``, else it leads a new group (up to ``max_leaders`` leaders; rows after that which
   match none stay alone, so a corpus of distinct texts costs ``N x max_leaders``, not ``N^2``).
2. *Group pairs*: each group's ``k`` nearest groups by the cosine of their (normalised) mean vectors,
   group pairs at least ``dup_cosine`` apart dropped; and each group with itself.
   With ``jaccard_floor`` (the lowest word-Jaccard threshold the rules use) also the group pairs whose words
   could pass it (a bound from their medoids' words), however far apart their vectors are.
3. *Rows*: a group pair where one side has at most ``small`` rows gives every row pair (at most
   ``small`` times the other side); so do two larger groups whose medoids' core words alone pass the floor
   and whose medoids could be a contradiction (``every_gate``; within a budget). Other larger groups give
   the row pairs that share a word held by at most ``small`` rows of each group (the word Jaccard that the
   reference detector and the dependency rule read rises by exactly such shared words: a team's or a
   product's name, a document's id, a version's value), plus the two medoids (the rows nearest their
   group's mean).

A corpus with no near-duplicates has one row per group, and step 3 gives the kNN pairs of the rows; ``k``
covering every row gives every pair, as :func:`.candidates.knn_pairs` does.
Pairs are ``(i, j)`` int64 arrays with ``i < j``, unique, sorted, as :func:`.candidates.knn_pairs`.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from smartvector_bench.systems.smartvector.candidates import KeyUnion, all_pairs, knn_pairs, sorted_unique
from smartvector_bench.systems.smartvector.detectors import content_similarity

PAIR_CHUNK = 1 << 20  # row pairs generated at a time (int64 temporaries of ~8 MB each)
ENTRY_CHUNK = 1 << 22  # word-matrix entries counted at a time by split_words (~30M entries at 1M vectors)
DENSE_COUNTS = 1 << 23  # split_words counts (word, group) keys in a dense table up to this many cells (64 MB)


def duplicate_groups(x: np.ndarray, dup_cosine: float, max_leaders: int = 2048, block_rows: int = 4096,
                     ) -> np.ndarray:
    """Near-duplicate group of each row (int64 labels 0.. in order of first row): leader clustering in row
    order. A row joins the leader it is most similar to when that cosine is at least ``dup_cosine``; otherwise
    it becomes a leader (while there are fewer than ``max_leaders``; after that it stays a group of its own).
    One (block, leaders) product per block: ``N x leaders`` multiply-adds, linear in N for a bounded number
    of distinct texts; a corpus of distinct texts only pays ``N x max_leaders``."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = len(x)
    g = np.full(n, -1, dtype=np.int64)
    leaders = np.zeros((0, x.shape[1]), dtype=np.float32)
    leader_group: list[int] = []
    next_group = 0
    for s in range(0, n, block_rows):
        xb = x[s:s + block_rows]
        gb = g[s:s + len(xb)]
        if len(leaders):
            sims = xb @ leaders.T
            best = np.argmax(sims, axis=1)
            ok = sims[np.arange(len(xb)), best] >= dup_cosine
            gb[ok] = np.asarray(leader_group, dtype=np.int64)[best[ok]]
        rest = np.nonzero(gb < 0)[0]
        if len(rest) and len(leaders) < max_leaders:
            within = xb[rest] @ xb[rest].T >= dup_cosine  # new leaders among this block's unmatched rows
            free = np.ones(len(rest), dtype=bool)
            new = []
            for i in range(len(rest)):
                if not free[i]:
                    continue
                if len(leaders) + len(new) >= max_leaders:
                    break
                members = free & within[i]
                gb[rest[members]] = next_group
                free &= ~members
                new.append(rest[i])
                leader_group.append(next_group)
                next_group += 1
            leaders = np.vstack([leaders, xb[new]])
        alone = gb < 0
        gb[alone] = next_group + np.arange(int(alone.sum()))
        next_group += int(alone.sum())
    return _first_seen_labels(g)


def _first_seen_labels(g: np.ndarray) -> np.ndarray:
    """Group labels renumbered 0.. in the order of each group's first row."""
    _, first, inverse = np.unique(g, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.ravel()]


def group_means(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """L2-normalised mean vector of each group (float32, one row per label 0..G-1)."""
    n_groups = int(g.max()) + 1 if len(g) else 0
    ind = sparse.csr_matrix((np.ones(len(g), dtype=np.float32), (g, np.arange(len(g)))), shape=(n_groups, len(g)))
    m = np.asarray(ind @ x, dtype=np.float32)
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return m


RATIO_MARGIN = 0.05  # copies differ from their medoid by a few characters (a team's or a document's name)


def word_rule_options(params, texts: list[str]) -> dict:
    """``jaccard_floor`` and ``every_gate`` of :func:`distinct_pairs` for a consolidation's rules
    (``ConsolidationParams``): the floor is the lowest word-Jaccard threshold they read (the reference
    detector's ``topic_threshold``, the dependency rule's ``dependency_threshold``; None if none); every row
    pair of two groups is worth judging only when their medoids could be a reference contradiction (difflib
    ratio below ``content_threshold`` + ``RATIO_MARGIN``); with the semantic detector never (its
    contradictions need no word overlap, and the dependency rule alone would not pay for the square)."""
    found = [params.topic_threshold] if params.detector == "reference" else []
    found += [params.dependency_threshold] if params.detect_dependencies else []
    ceiling = params.content_threshold + RATIO_MARGIN

    def gate(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if params.detector != "reference":
            return np.zeros(len(a), dtype=bool)
        return np.fromiter((content_similarity(texts[i], texts[j]) < ceiling for i, j in zip(a.tolist(), b.tolist())),
                           dtype=bool, count=len(a))

    return {"jaccard_floor": min(found) if found else None, "every_gate": gate}


def _members(g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows sorted by group, start of each group in it, size of each group)."""
    order = np.argsort(g, kind="stable")
    sizes = np.bincount(g)
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    return order, starts, sizes


def _grids(rows_a: np.ndarray, rows_b: np.ndarray, chunk: int | None = None):
    """For items with ``rows_a[p]`` by ``rows_b[p]`` combinations, yields ``(p, u, v)`` for every combination
    ``u < rows_a[p]``, ``v < rows_b[p]`` of item ``p``, in pieces of about ``chunk`` (default PAIR_CHUNK)."""
    chunk = PAIR_CHUNK if chunk is None else max(1, int(chunk))
    count = rows_a.astype(np.int64) * rows_b
    cum = np.cumsum(count)
    lo = 0
    while lo < len(count):
        hi = max(lo + 1, int(np.searchsorted(cum, (cum[lo - 1] if lo else 0) + chunk, side="right")))
        c = count[lo:hi]
        p = np.repeat(np.arange(lo, hi), c)
        local = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
        yield p, local // rows_b[p], local % rows_b[p]
        lo = hi


def _keys(ra: np.ndarray, rb: np.ndarray, n: int) -> np.ndarray:
    keep = ra != rb
    ra, rb = ra[keep], rb[keep]
    return sorted_unique(np.minimum(ra, rb) * n + np.maximum(ra, rb))


def _every_member_pair(ga: np.ndarray, gb: np.ndarray, order, starts, sizes, n: int, out: KeyUnion) -> None:
    """Keys ``lo * n + hi`` of every row pair across each group pair (a group with itself: distinct rows)."""
    for p, u, v in _grids(sizes[ga], sizes[gb]):
        out.add(_keys(order[starts[ga[p]] + u], order[starts[gb[p]] + v], n))


def split_words(words: sparse.csr_matrix, g: np.ndarray, small: int) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    """(core, rare): the word-set matrix split by entry. An entry is rare when its row's group has more than
    ``small`` rows and at most ``small`` of them hold the word (what sets some copies apart: a team's name,
    a document's id, a version's value); every other entry is core."""
    w = _float_words(words)
    rare = rare_entries(w, g, small)
    return word_part(w, ~rare), word_part(w, rare)


def _float_words(words: sparse.csr_matrix) -> sparse.csr_matrix:
    w = sparse.csr_matrix(words, dtype=np.float32)  # float32 input: shares its arrays, no copy
    w.sort_indices()
    return w


def _sorted_counts(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, how many times each occurs) of an int64 array, by sorting a copy."""
    key = np.sort(key)
    start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else np.zeros(0, np.int64)
    return key[start], np.diff(np.r_[start, key.size])


def rare_entries(w: sparse.csr_matrix, g: np.ndarray, small: int, chunk: int | None = None) -> np.ndarray:
    """Bool per entry of ``w`` (sorted CSR): rare in the sense of :func:`split_words`. The (word, group) keys
    are counted ``chunk`` entries (default ENTRY_CHUNK) at a time, whole rows each: no int64 array over every
    entry (three of them were ~700 MB at 1M vectors)."""
    chunk = ENTRY_CHUNK if chunk is None else max(1, int(chunk))
    n_groups = int(g.max()) + 1 if len(g) else 0
    big = np.bincount(g, minlength=n_groups) > small
    cuts = np.unique(np.r_[np.searchsorted(w.indptr, np.arange(0, w.nnz, chunk), side="right") - 1, w.shape[0]])

    def keys(r0: int, r1: int) -> np.ndarray:  # word * groups + group of the entries of rows r0..r1-1
        key = w.indices[w.indptr[r0]:w.indptr[r1]].astype(np.int64)
        key *= n_groups
        key += np.repeat(g[r0:r1], np.diff(w.indptr[r0:r1 + 1]))
        return key

    dense = w.shape[1] * n_groups <= DENSE_COUNTS  # few groups: one count per (word, group), no sort
    if dense:
        held = np.zeros(w.shape[1] * n_groups, dtype=np.int64)
        for r0, r1 in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            held += np.bincount(keys(r0, r1), minlength=len(held))
    else:  # the distinct keys of each chunk with their counts, summed over chunks
        parts = [_sorted_counts(keys(r0, r1)) for r0, r1 in zip(cuts[:-1].tolist(), cuts[1:].tolist())]
        uniq = np.concatenate([u for u, _ in parts]) if parts else np.zeros(0, np.int64)
        cnt = np.concatenate([c for _, c in parts]) if parts else np.zeros(0, np.int64)
        del parts
        order = np.argsort(uniq, kind="stable")
        uniq, cnt = uniq[order], cnt[order]
        start = np.flatnonzero(np.r_[True, uniq[1:] != uniq[:-1]]) if uniq.size else np.zeros(0, np.int64)
        uniq, held = uniq[start], (np.add.reduceat(cnt, start) if start.size else cnt)
        del cnt, order
    rare = np.zeros(w.nnz, dtype=bool)
    for r0, r1 in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        key = keys(r0, r1)
        count = held[key] if dense else held[np.searchsorted(uniq, key)]
        rare[w.indptr[r0]:w.indptr[r1]] = (count <= small) & np.repeat(big[g[r0:r1]], np.diff(w.indptr[r0:r1 + 1]))
    return rare


def word_part(w: sparse.csr_matrix, keep: np.ndarray, rows: np.ndarray | None = None) -> sparse.csr_matrix:
    """The entries of ``w`` where ``keep`` (bool per entry) holds, as a CSR of the same shape; of ``rows`` only
    (in that order: ``word_part(w, keep)[rows]``) when given, without the whole part."""
    if rows is None:  # arrays over the kept entries only (a cumulative count per entry is 240 MB at 1M)
        at = np.flatnonzero(keep)
        per_row = np.bincount(np.searchsorted(w.indptr, at, side="right") - 1, minlength=w.shape[0])
        indptr = np.zeros(w.shape[0] + 1, dtype=np.int64)
        np.cumsum(per_row, out=indptr[1:])
        return sparse.csr_matrix((w.data[at], w.indices[at], indptr), shape=w.shape)
    rows = np.asarray(rows, dtype=np.int64)
    cnt = np.diff(w.indptr)[rows]
    pos = np.repeat(w.indptr[rows] - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()), dtype=np.int64)
    m = keep[pos]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.bincount(np.repeat(np.arange(len(rows)), cnt)[m], minlength=len(rows)), out=indptr[1:])
    pos = pos[m]
    return sparse.csr_matrix((w.data[pos], w.indices[pos], indptr), shape=(len(rows), w.shape[1]))


def _shared_rare_word_pairs(rare: sparse.csr_matrix, g: np.ndarray, ga: np.ndarray, gb: np.ndarray,
                            n_groups: int, small: int, out: KeyUnion) -> None:
    """Keys of row pairs sharing a rare word (:func:`split_words`), for the group pairs ``(ga, gb)`` (a group
    with itself included when listed). A join on (word, group): every rare entry probes its group's
    candidate partners, so the cost is entries x partners, not the square of the rows that hold a word.
    A probe finds at most ``small`` rows (a rare word's holders in the partner group), so pieces of
    ``PAIR_CHUNK / small`` probes give at most ``PAIR_CHUNK`` row pairs each."""
    n = rare.shape[0]
    sub = rare.tocoo()
    r, t = sub.row.astype(np.int64), sub.col.astype(np.int64)
    key = t * n_groups + g[r]
    order = np.argsort(key, kind="stable")
    key, r = key[order], r[order]
    del sub, t, order  # the join below holds several entry-sized arrays per piece
    # each group's partners, one direction (ga <= gb): every pair of two groups is found once
    src, dst = np.minimum(ga, gb), np.maximum(ga, gb)
    dst = dst[np.argsort(src, kind="stable")]
    ptr = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n_groups), out=ptr[1:])
    grp = key % n_groups
    deg = ptr[grp + 1] - ptr[grp]
    for e, _, j in _grids(np.ones(len(key), dtype=np.int64), deg, PAIR_CHUNK // max(1, small)):
        other = dst[ptr[grp[e]] + j]
        probe = key[e] - grp[e] + other  # the same word in the partner group
        lo = np.searchsorted(key, probe, side="left")
        hits = np.searchsorted(key, probe, side="right") - lo
        p = np.repeat(np.arange(len(probe)), hits)
        partner = r[lo[p] + np.arange(int(hits.sum())) - np.repeat(np.cumsum(hits) - hits, hits)]
        mine = r[e][p]
        keep = (other[p] != grp[e][p]) | (mine < partner)  # inside one group each pair is found twice
        out.add(_keys(mine[keep], partner[keep], n))


def _medoids(x: np.ndarray, g: np.ndarray, reps: np.ndarray, block: int = 1 << 15) -> np.ndarray:
    """The row nearest its group's mean, per group (ties: the lower row)."""
    cos = np.empty(len(g), dtype=np.result_type(x.dtype, reps.dtype))
    for s in range(0, len(g), block):  # blocks: reps[g] whole would be another N x dim copy of the vectors
        cos[s:s + block] = np.einsum("ij,ij->i", x[s:s + block], reps[g[s:s + block]])
    by_cos = np.lexsort((np.arange(len(g)), -cos, g))
    first = np.r_[True, g[by_cos][1:] != g[by_cos][:-1]]
    medoid = np.empty(len(reps), dtype=np.int64)
    medoid[g[by_cos][first]] = by_cos[first]
    return medoid


def _jaccard_bounds(m: sparse.csr_matrix, rare: sparse.csr_matrix, g: np.ndarray, floor: float, max_groups: int,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Group pairs ``(a, b)``, ``a < b``, whose medoids' core words could reach a word Jaccard above ``floor``
    if every rare word of a member matched: ``(I + r_a + r_b) / U > floor``, I and U the medoids' core
    intersection and union, r the group's largest rare-word count per row (0 in a group of at most ``small``
    rows, whose words are all core). ``m``: the medoids' core words, one row per group. One sparse product
    over the G medoids (none above ``max_groups`` groups: that product approaches all pairs)."""
    n_groups = m.shape[0]
    if n_groups < 2 or n_groups > max_groups:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    inter = sparse.triu(m @ m.T, k=1).tocoo()
    size = np.asarray(m.sum(axis=1)).ravel()
    most_rare = np.zeros(n_groups)
    np.maximum.at(most_rare, g, np.diff(rare.indptr).astype(np.float64))
    a, b, i = inter.row.astype(np.int64), inter.col.astype(np.int64), inter.data
    keep = (i + most_rare[a] + most_rare[b]) / np.maximum(size[a] + size[b] - i, 1) > floor
    return a[keep], b[keep]


def distinct_pairs(vectors: np.ndarray, words: sparse.csr_matrix, k: int, dup_cosine: float = 0.95,
                   index: str = "ivf", small: int = 8, max_leaders: int = 2048, nprobe: int = 8,
                   jaccard_floor: float | None = None, max_groups: int = 20_000, every_budget: float = 8.0,
                   every_gate=None, groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs ``(i, j)``, ``i < j``, among each group of near-duplicates' ``k`` nearest distinct
    groups, expanded to rows (the module's steps); ``words``: the binary (N, vocabulary) word-set matrix
    the detectors read. ``jaccard_floor`` (the lowest word-Jaccard threshold a detector or the dependency
    rule uses; None: vectors only) adds the group pairs whose words can pass it (:func:`_jaccard_bounds`) and
    expands two large groups to every row pair when their medoids' core words alone pass it, each row's own
    rare words counted in the union (highest such Jaccard first, at most ``every_budget * N`` such row pairs
    in all: across many copies these pairs grow with the square of N; the rest get the rare-word pairs) and,
    with ``every_gate`` (a function of two row arrays giving a bool array), only where it holds for the two
    medoids. ``groups``: precomputed :func:`duplicate_groups` labels."""
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n = len(x)
    empty = np.zeros(0, dtype=np.int64)
    if n < 2 or k < 1:
        return empty, empty
    if k >= n - 1:  # as knn_pairs: k covering every row is every pair
        return all_pairs(n)
    g = duplicate_groups(x, dup_cosine, max_leaders) if groups is None else np.asarray(groups, np.int64)
    order, starts, sizes = _members(g)
    n_groups = len(sizes)
    reps = group_means(x, g)
    ga, gb = knn_pairs(reps, k, "flat" if n_groups <= max_groups else index, nprobe=nprobe)
    if len(ga):
        far = np.einsum("ij,ij->i", reps[ga], reps[gb]) < dup_cosine
        ga, gb = ga[far], gb[far]
    w = _float_words(words)
    is_rare = rare_entries(w, g, small)
    rare = word_part(w, is_rare)
    medoid = _medoids(x, g, reps)
    mc = word_part(w, ~is_rare, medoid)  # all that is read of the core part: the medoids' rows (not N rows)
    del is_rare, w
    if jaccard_floor is not None:
        la, lb = _jaccard_bounds(mc, rare, g, jaccard_floor, max_groups)
        key = sorted_unique(np.r_[ga * n_groups + gb, la * n_groups + lb])
        ga, gb = key // n_groups, key % n_groups
    selfs = np.nonzero(sizes >= 2)[0]
    ga, gb = np.r_[ga, selfs], np.r_[gb, selfs]
    every = np.minimum(sizes[ga], sizes[gb]) <= small
    if jaccard_floor is not None and len(ga):  # core words alone pass: any member pair may
        inter = np.asarray(mc[ga].multiply(mc[gb]).sum(axis=1)).ravel()
        size = np.asarray(mc.sum(axis=1)).ravel()
        fewest = np.full(n_groups, np.inf)  # a row sharing no rare word still counts its own in the union
        np.minimum.at(fewest, g, np.diff(rare.indptr).astype(np.float64))
        denom = size[ga] + size[gb] - inter + fewest[ga] + fewest[gb]
        jac = np.where(ga != gb, inter / np.maximum(denom, 1), 0.0)
        cand = np.nonzero(~every & (jac > jaccard_floor))[0]
        if every_gate is not None and len(cand):
            cand = cand[np.asarray(every_gate(medoid[ga[cand]], medoid[gb[cand]]), dtype=bool)]
        cand = cand[np.argsort(-jac[cand], kind="stable")]  # within the budget, the highest core Jaccard first
        fits = np.cumsum(sizes[ga[cand]] * sizes[gb[cand]]) <= every_budget * n
        every[cand[fits]] = True
    del mc
    keys = KeyUnion()  # pieces merged as they come: a pair found in many pieces is held about once
    _every_member_pair(ga[every], gb[every], order, starts, sizes, n, keys)
    big_a, big_b = ga[~every], gb[~every]
    if len(big_a):
        _shared_rare_word_pairs(rare, g, big_a, big_b, n_groups, small, keys)
        ma, mb = medoid[big_a], medoid[big_b]
        keep = ma != mb
        keys.add(np.minimum(ma[keep], mb[keep]) * n + np.maximum(ma[keep], mb[keep]))
    del rare
    key = keys.result()
    del keys
    hi = key % n
    key //= n  # in place: the keys become the first ends
    return key, hi
