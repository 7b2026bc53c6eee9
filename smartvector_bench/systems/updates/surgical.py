"""``surgical``: SmartVector's surgical update, made exact.

The paper (and the reference implementation, ``smartvector-rag`` 0.1.1) diffs the old and the new text and
re-creates only the chunks whose offset range overlaps a changed range. The reference gets the offsets
wrong: it adds the whole document's length change to the end offset of every re-created chunk, so every
re-created chunk after the first is misaligned, and it never reconsiders how sentences group into chunks.
This module does the same job, but its result is always exactly what chunking the new text from scratch
gives (same chunk texts, same offsets, ``text[start:end] == chunk.text``, one vector per chunk).

Reasoning (for the sentence chunker; the paragraph chunker satisfies the same two facts):

1. *Locality to the right.* Where a sentence ends is decided by the text from its first non-blank
   character on (a terminator ``.!?`` followed by whitespace or the end, a newline, or the end), and the
   greedy grouping only compares sentence ends with the start of the current chunk. So if ``p`` is the
   start of a chunk of ``T``, then ``chunk(T[p:])`` shifted by ``p`` is exactly the chunks of ``T`` from
   ``p`` on. Consequently two texts that share a suffix and both have a chunk starting at the start of that
   shared suffix have identical chunks from there on.

2. *Grouping is greedy left to right.* Chunk ``k`` is closed when the first sentence of chunk ``k+1``
   does not fit into it. That decision reads only the text of chunk ``k`` and of chunk ``k+1``'s first
   sentence (with its terminator and one lookahead character), all of which lies before the start of
   chunk ``k+2``. So a change that starts after the start of chunk ``j`` cannot alter chunks ``0..j-2``,
   nor where chunk ``j-1`` starts; it can alter chunk ``j-1``'s end (it may absorb a sentence).

The algorithm:

- Diff old vs new text with ``difflib.SequenceMatcher(None, old, new, autojunk=False)`` (run on the text
  between the common prefix and suffix, for speed); the non-equal opcodes are the changed ranges. The
  first change starts at ``c``, the length of the longest common prefix (``old[:c] == new[:c]``). Where
  the last change ends is ambiguous (deleting ``"The A.\n"`` from ``"The A.\nThe B."`` is also deleting
  ``"A.\nThe "``); we take the alignment with the longest common suffix, of length ``S``: the last change
  ends at ``e = len(new) - S`` in the new text, and with ``delta = len(new) - len(old)``,
  ``new[e:] == old[e - delta:]``. (Taking difflib's own last opcode would be correct too, but could make
  the window swallow a chunk that merely moved, and re-embed it.)
- A changed range ``[i1, i2]`` (old coordinates, closed, so an insertion ``i1 == i2`` is a point) touches
  chunk ``k`` when it meets ``[end of chunk k-1, start of chunk k+1]`` (the chunk plus the gaps on both
  sides): an insertion exactly at a chunk boundary, or anywhere in the blank gap between two chunks,
  touches the chunks on both sides. These are the ``affected`` chunks.
- Let ``j`` be the first affected chunk. A change inside chunk ``j``'s first sentence can shorten it so
  that chunk ``j-1`` now absorbs it; so the window starts at chunk ``w = j - 1`` (or 0). Chunk ``j-1``
  is untouched and its range reaches the start of chunk ``j``, so ``c`` lies after the start of chunk
  ``j``; by fact 2 the chunks before ``w`` are unchanged and chunk ``w`` still starts where it did. From
  the start ``s`` of chunk ``w`` (0 when ``w == 0``) the new text is re-chunked: ``chunker(new[s:])``
  shifted by ``s`` equals the from-scratch chunks from position ``w`` on (fact 1).
- Walk those window chunks left to right and stop at the first one that starts at ``p >= e`` (after the
  last change) where ``p - delta`` is the start of an old chunk ``m``: both texts have a chunk starting
  at the start of a shared suffix, so (fact 1) the rest are the old chunks ``m, m+1, ...`` with texts
  unchanged and offsets shifted by ``delta``, and their vectors are reused. If no such chunk exists, the
  window runs to the end of the document.
- Chunks before the window keep their offsets (no change precedes them); chunks after it shift by
  ``delta``, the length change before them. A window chunk whose text equals the old chunk at the same
  position keeps that vector; only window chunks whose text differs are re-embedded (``reembedded``).
"""

from __future__ import annotations

import difflib
from bisect import bisect_left

import numpy as np

from smartvector_bench.core.dataset.chunking import Chunk
from smartvector_bench.systems.updates.store import DocumentStore, EmbedFn, UpdateResult, chunk_hash, embed_texts

NAME = "surgical"


def changed_ranges(old_text: str, new_text: str) -> list[tuple[int, int, int, int]]:
    """Non-equal difflib opcodes as (i1, i2, j1, j2): old[i1:i2] became new[j1:j2].

    The common prefix and suffix are cut off first and ``SequenceMatcher(autojunk=False)`` runs on the
    middle only (offsets shifted back): the same kind of opcodes, without difflib's quadratic cost on the
    unchanged bulk of the document. The first change then starts at the longest common prefix.
    """
    n = min(len(old_text), len(new_text))
    p = 0
    while p < n and old_text[p] == new_text[p]:
        p += 1
    q = 0
    while q < n - p and old_text[-1 - q] == new_text[-1 - q]:
        q += 1
    a, b = old_text[p:len(old_text) - q], new_text[p:len(new_text) - q]
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i1 + p, i2 + p, j1 + p, j2 + p) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]


def affected_chunks(chunks: list[Chunk], text_len: int, ranges: list[tuple[int, int, int, int]]) -> list[int]:
    """Old chunk positions touched by a changed range (closed intervals, gaps count for both neighbours)."""
    out = []
    for k, c in enumerate(chunks):
        lo = chunks[k - 1].end if k > 0 else 0
        hi = chunks[k + 1].start if k + 1 < len(chunks) else text_len
        if any(i1 <= hi and i2 >= lo for i1, i2, _, _ in ranges):
            out.append(k)
    return out


def apply(store: DocumentStore, new_text: str, embed: EmbedFn) -> UpdateResult:
    old_text, old, old_vecs = store.text, store.chunks, store.vectors
    n_old = len(old)
    if new_text == old_text:
        return UpdateResult(NAME, 0, n_old, n_old, window=(0, 0))
    ranges = changed_ranges(old_text, new_text)
    delta = len(new_text) - len(old_text)
    common_suffix = 0
    for x, y in zip(reversed(old_text), reversed(new_text)):
        if x != y:
            break
        common_suffix += 1
    last_end_new = len(new_text) - common_suffix  # new[last_end_new:] == old[last_end_new - delta:]
    affected = affected_chunks(old, len(old_text), ranges)

    j = affected[0] if affected else 0
    w = max(0, j - 1)
    s = old[w].start if w > 0 else 0

    # Old chunks that start inside the unchanged tail, keyed by their start in the new text.
    tail_from = bisect_left([c.start for c in old], last_end_new - delta)
    shifted_start = {old[m].start + delta: m for m in range(tail_from, n_old)}

    window: list[Chunk] = []
    resume: int | None = None  # old position from which chunks are reused
    for c in store.chunker(new_text[s:]):
        p = s + c.start
        if p >= last_end_new and p in shifted_start:
            resume = shifted_start[p]
            break
        window.append(Chunk(w + len(window), p, s + c.end, c.text))

    tail: list[Chunk] = []
    if resume is not None:
        base = w + len(window)
        tail = [Chunk(base + t, oc.start + delta, oc.end + delta, oc.text) for t, oc in enumerate(old[resume:])]
    chunks = list(old[:w]) + window + tail

    vectors = np.empty((len(chunks), store.dim), dtype=np.float32)
    vectors[:w] = old_vecs[:w]
    todo: list[int] = []
    for c in window:
        if c.index < n_old and old[c.index].text == c.text:
            vectors[c.index] = old_vecs[c.index]
        else:
            todo.append(c.index)
    if todo:
        vectors[todo] = embed_texts(embed, [chunks[i].text for i in todo], store.dim)
    if resume is not None:
        vectors[w + len(window):] = old_vecs[resume:]

    old_hashes = store.hashes
    hashes = None
    if old_hashes is not None:
        hashes = (old_hashes[:w] + [chunk_hash(c.text) for c in window]
                  + (old_hashes[resume:] if resume is not None else []))
    store.replace(new_text, chunks, vectors, hashes)
    return UpdateResult(NAME, reembedded=len(todo), n_chunks_before=n_old, n_chunks_after=len(chunks),
                        window=(w, w + len(window)), affected=tuple(affected))
