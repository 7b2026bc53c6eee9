"""Seeded queries of the three categories (see docs/git_history.md), their text from the words every version
of a lineage shares, split dev/test by document."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from smartvector_bench.core.errors import BenchError

from ..splits import assign_family_splits, shuffle_and_number
from .history import Chunk, History
from .paragraphs import tokens
from .params import _SECONDS_PER_DAY, CATEGORIES, GitHistoryParams


# Function words and Markdown / web debris that carry no topic (never used as query words).
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her here
hers him his how if in into is it its itself just may me might more most must my no nor not now of off on once
only or other our ours out over own same shall she should so some such than that the their theirs them then
there these they this those through to too under until up upon very was we were what when where which while who
whom why will with would you your yours yourself etc via per get got use used using make made one two also
http https www com org gov html htm md png jpg svg pdf href src url link links img div span class id nbsp amp
quot endif endfor include page site baseurl raw endraw liquid
""".split())


@dataclass
class Query:
    id: str
    text: str
    lineage: str
    doc_id: str
    category: str
    as_of: int
    query_time: int
    relevant: int  # chunk index
    split: str = ""

    @property
    def family(self) -> str:  # what assign_family_splits groups by: the document
        return self.doc_id


def _content_words(text: str) -> list[str]:
    return [w for w in tokens(text) if len(w) >= 3 and w not in STOPWORDS and not w.isdigit()]


def query_text(history: History, lineage: str, df: Counter, params: GitHistoryParams) -> str | None:
    """Text of every query about ``lineage``, the same whatever version is meant: the head (the heading, or the
    file name's words when no heading is above the paragraph; verbatim when every version has the same one,
    else the words they all share), a colon, and the ``query_words`` rarest
    content words (document frequency over the corpus, ties by position) that every version contains, in
    the order of the lineage's first version. None when fewer than ``min_query_words`` words are shared."""
    members = [history.chunks[i] for i in history.lineages[lineage]]
    shared = set(_content_words(members[0].text))
    for c in members[1:]:
        shared &= set(_content_words(c.text))
    order: list[str] = []
    for w in _content_words(members[0].text):
        if w in shared and w not in order:
            order.append(w)
    if len(order) < params.min_query_words:
        return None
    rank = sorted(range(len(order)), key=lambda k: (df[order[k]], k))[:params.query_words]
    words = [order[k] for k in sorted(rank)]
    # A version's head is its heading, or the words of its file name when no heading is above it.
    heads = [c.heading or re.sub(r"[-_.]+", " ", Path(c.path).stem) for c in members]
    if len(set(heads)) == 1:
        head = heads[0]
    else:
        common = set(tokens(heads[0]))
        for h in heads[1:]:
            common &= set(tokens(h))
        head = " ".join(w for w in dict.fromkeys(tokens(heads[0])) if w in common)
    return f"{head}: {' '.join(words)}" if head else " ".join(words)


def in_force(c: Chunk, t: int) -> bool:
    return c.valid_from <= t and (c.valid_to is None or t < c.valid_to)


def make_queries(history: History, params: GitHistoryParams) -> list[Query]:
    """Seeded queries of the three categories (see docs/git_history.md), split dev/test by document."""
    chunks, tip = history.chunks, history.tip_time
    df: Counter = Counter()
    for c in chunks:
        df.update(set(_content_words(c.text)))
    recent = params.recent_days * _SECONDS_PER_DAY
    pools: dict[str, list[str]] = {k: [] for k in CATEGORIES}
    texts: dict[str, str] = {}
    for lid in sorted(history.lineages):
        members = history.lineages[lid]
        if len(members) < 2:
            continue
        text = query_text(history, lid, df, params)
        if text is None:
            continue
        texts[lid] = text
        last = chunks[members[-1]]
        if last.valid_to is None:
            pools["recently_updated" if tip - last.valid_from <= recent else "current"].append(lid)
        pools["historical"].append(lid)
    per_doc: Counter = Counter()
    queries: list[Query] = []
    want = asdict(params.queries)
    pick_rng = np.random.default_rng([params.seed, 1])
    time_rng = np.random.default_rng([params.seed, 2])
    for category in ("recently_updated", "current", "historical"):  # the scarcest pool first
        pool = pools[category]
        taken = 0
        for k in pick_rng.permutation(len(pool)).tolist():
            if taken >= want[category]:
                break
            lid = pool[k]
            members = history.lineages[lid]
            doc = chunks[members[0]].doc_id
            if per_doc[doc] >= params.max_queries_per_document:
                continue
            if category == "historical":
                closed = [i for i in members if chunks[i].valid_to is not None]
                ci = closed[int(time_rng.integers(len(closed)))]
                c = chunks[ci]
                as_of = int(time_rng.integers(c.valid_from, c.valid_to))  # whole seconds in [from, to)
            else:
                ci, as_of = members[-1], tip
            assert in_force(chunks[ci], as_of)
            queries.append(Query("", texts[lid], lid, doc, category, as_of, tip, ci))
            per_doc[doc] += 1
            taken += 1
    if not queries:
        raise BenchError(f"dataset.repo={params.repo}: no lineage with two versions and at least "
                         f"dataset.min_query_words={params.min_query_words} shared words; no query can be made "
                         "(widen dataset.glob or lower dataset.min_chars / dataset.min_query_words)")
    n_docs = len({q.doc_id for q in queries})
    if n_docs >= 2:
        # whole documents, round(n_docs * test_fraction) of them (at least one per split) in test, chosen so
        # that each category's test share is close to test_fraction (data_gen.splits)
        n_test = min(max(int(round(n_docs * params.test_fraction)), 1), n_docs - 1)
        assign_family_splits(queries, n_test / n_docs, np.random.default_rng([params.seed, 3]))
    else:
        for q in queries:
            q.split = "test"
    return shuffle_and_number(queries, params.seed)
