"""Sentence-grouped chunking with character offsets (the SmartVector reference chunker's rule, written
so that offsets are exact: ``text[start:end] == chunk_text`` for every chunk).

Sentences end at ``.``, ``!`` or ``?`` followed by whitespace or the end of the text, or at a newline
(a dot inside "1.5" or "v2.3" does not end a sentence). Sentences are grouped greedily into chunks of at
most ``max_chars`` characters; a single longer sentence becomes its own chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE = re.compile(r"[^\n]*?(?:[.!?](?=\s|$)|\n|$)")


@dataclass(frozen=True)
class Chunk:
    index: int  # position within the document
    start: int  # character offset of the first character in the source text
    end: int  # exclusive end offset
    text: str


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of sentences, including their terminator and leading whitespace."""
    spans = []
    pos = 0
    for m in _SENTENCE.finditer(text):
        if m.end() > pos:
            spans.append((pos, m.end()))
            pos = m.end()
    if pos < len(text):
        spans.append((pos, len(text)))
    return spans


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def chunk_sentences(text: str, max_chars: int = 200) -> list[Chunk]:
    """Greedy sentence grouping; chunk length is measured on the stripped chunk text."""
    chunks: list[Chunk] = []
    cur: tuple[int, int] | None = None
    for s_start, s_end in split_sentences(text):
        a, b = _strip_span(text, s_start, s_end)
        if a == b:
            continue
        if cur is not None and b - cur[0] <= max_chars:
            cur = (cur[0], b)
            continue
        if cur is not None:
            chunks.append(Chunk(len(chunks), cur[0], cur[1], text[cur[0]:cur[1]]))
        cur = (a, b)
    if cur is not None:
        chunks.append(Chunk(len(chunks), cur[0], cur[1], text[cur[0]:cur[1]]))
    return chunks


def chunk_paragraphs(text: str) -> list[Chunk]:
    """Paragraph chunks (split on blank lines), as LiveVectorLake does."""
    chunks: list[Chunk] = []
    for m in re.finditer(r"(?:(?!\n[ \t]*\n)[\s\S])+", text):
        a, b = _strip_span(text, m.start(), m.end())
        if a < b:
            chunks.append(Chunk(len(chunks), a, b, text[a:b]))
    return chunks
