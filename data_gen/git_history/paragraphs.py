"""One version's text cut into paragraphs (:func:`split_units`), and the alignment of the paragraph lists of
two consecutive versions (:func:`align`): which paragraphs are kept, which are edits of an old one."""

from __future__ import annotations

import re
from collections import defaultdict, deque
from dataclasses import dataclass
from difflib import SequenceMatcher

from .params import GitHistoryParams


_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n")


@dataclass(frozen=True)
class Unit:
    """One chunk-to-be of a document version: a paragraph (or a piece of a long one)."""

    text: str
    start: int  # character span in the version's text (line endings normalized to \n)
    end: int
    heading: str  # nearest Markdown heading at or above the unit ("" if none)


def strip_front_matter(text: str) -> int:
    """Offset where the body starts: after a leading YAML front matter block (``---`` ... ``---``/``...``)."""
    if not re.match(r"---[ \t]*\n", text):
        return 0
    m = re.compile(r"^(?:---|\.\.\.)[ \t]*$\n?", re.M).search(text, text.index("\n") + 1)
    return m.end() if m else 0


def _pieces(text: str, start: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut a paragraph longer than ``max_chars`` at sentence ends and line breaks into pieces of at most
    ``max_chars`` (greedy; a single sentence longer than that stays whole). Spans are absolute."""
    if not max_chars or len(text) <= max_chars:
        return [(start, start + len(text))]
    cuts = [m.end() for m in _SENTENCE_END.finditer(text)]
    segments, prev = [], 0
    for c in cuts + [len(text)]:
        if c > prev:
            segments.append((prev, c))
            prev = c
    out, cur_s, cur_e = [], None, None
    for s, e in segments:
        if cur_s is None:
            cur_s, cur_e = s, e
        elif e - cur_s > max_chars:
            out.append((cur_s, cur_e))
            cur_s, cur_e = s, e
        else:
            cur_e = e
    if cur_s is not None:
        out.append((cur_s, cur_e))
    spans = []
    for s, e in out:
        piece = text[s:e]
        lead = len(piece) - len(piece.lstrip())
        spans.append((start + s + lead, start + s + len(piece.rstrip())))
    return [(s, e) for s, e in spans if e > s]


def split_units(text: str, params: GitHistoryParams) -> list[Unit]:
    """Paragraphs of one version: runs of non-blank lines after the front matter (blank lines inside a fenced
    code block do not split it when ``keep_code_blocks``); heading-only paragraphs are dropped when
    ``skip_headings``; paragraphs longer than ``max_chars`` are cut at sentence ends; units shorter than
    ``min_chars`` are dropped. A unit's heading is the last ATX heading (``#`` .. ``######``) at or above its
    paragraph's first line. ``text`` must have ``\\n`` line endings."""
    units: list[Unit] = []
    heading = ""  # the last heading read so far
    para: list[tuple[int, str]] = []  # (offset, line) of the paragraph being read
    para_heading = ""
    fence: str | None = None

    def flush() -> None:
        if not para:
            return
        lines = [ln for _, ln in para]
        if not (params.skip_headings and all(_HEADING.match(ln) for ln in lines)):
            start = para[0][0] + len(lines[0]) - len(lines[0].lstrip())  # the first line's indent is not text
            end = para[-1][0] + len(para[-1][1].rstrip())
            for s, e in _pieces(text[start:end], start, params.max_chars):
                if e - s >= params.min_chars:
                    units.append(Unit(text[s:e], s, e, para_heading))
        para.clear()

    pos = strip_front_matter(text)
    while pos < len(text):
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl
        line = text[pos:end]
        pos = end + 1
        if fence is not None:  # inside a fenced code block: everything belongs to the paragraph
            para.append((end - len(line), line))
            fm = _FENCE.match(line)
            if fm and fm.group(1)[0] == fence[0] and len(fm.group(1)) >= len(fence) and \
                    not line.strip()[len(fm.group(1)):].strip():
                fence = None
            continue
        if not line.strip():
            flush()
            continue
        hm = _HEADING.match(line)
        if hm:
            heading = (hm.group(2) or "").strip()
        elif params.keep_code_blocks and _FENCE.match(line):
            fence = _FENCE.match(line).group(1)
        if not para:
            para_heading = heading
        para.append((end - len(line), line))
    flush()
    return units




# Markup that changes no statement (normalize_markup): a link's or image's target (its text stays), link
# reference definitions, autolinks and bare URLs, HTML tags, list markers and numbering ("4." becoming "1."),
# emphasis and code marks.
_MARKUP = [(re.compile(p, f), r) for p, f, r in (
    (r"!?\[([^\]]*)\]\([^)]*\)", 0, r"\1"),          # [text](target), ![alt](src)
    (r"!?\[([^\]]*)\]\[[^\]]*\]", 0, r"\1"),        # [text][ref]
    (r"^ {0,3}\[[^\]]+\]:[ \t]*\S.*$", re.M, ""),   # [ref]: target "title"
    (r"<(?:https?|mailto|ftp):[^>\s]*>", 0, ""),       # <https://...>
    (r"(?:https?://|ftp://|www\.)[^\s)\]>]+", 0, ""),  # bare URLs
    (r"\(\s*\)|\[\s*\]|<\s*>", 0, ""),                  # what a removed URL leaves: (), [], <>
    (r"</?[A-Za-z][^<>]*>", 0, ""),                    # HTML tags
    (r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+", re.M, ""),  # list markers and numbers
    (r"\*{1,3}|(?<!\w)_{1,3}|_{1,3}(?!\w)|~~|`+", 0, ""),  # emphasis, strike-through, code marks
)]


def markup_key(text: str) -> str:
    """``text`` without the markup of :data:`_MARKUP`, whitespace runs collapsed: two versions of a paragraph
    with the same key say the same thing."""
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


def comparison_key(params: GitHistoryParams):
    """What two versions of a paragraph are compared by: :func:`markup_key` (``normalize_markup``), the text with
    whitespace runs collapsed (``normalize_whitespace``) or the exact text."""
    if params.normalize_markup:
        return markup_key
    if params.normalize_whitespace:
        return lambda s: " ".join(s.split())
    return lambda s: s


_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z0-9]+)*")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _similarity(a: list[str], b: list[str], threshold: float) -> float:
    """Word-level ``SequenceMatcher.ratio`` (0 below ``threshold``, with the cheap upper bounds first)."""
    if not a and not b:
        return 1.0
    sm = SequenceMatcher(None, a, b, autojunk=False)
    if sm.real_quick_ratio() < threshold or sm.quick_ratio() < threshold:
        return 0.0
    r = sm.ratio()
    return r if r >= threshold else 0.0


def _pair_block(olds: list[int], news: list[int], old_tok: dict[int, list[str]], new_tok: dict[int, list[str]],
                threshold: float) -> list[tuple[int, int]]:
    """Order-preserving pairing of replaced paragraphs with the largest total similarity (>= threshold each)."""
    n, m = len(olds), len(news)
    if not n or not m:
        return []
    sim = [[_similarity(old_tok[i], new_tok[j], threshold) for j in news] for i in olds]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for a in range(1, n + 1):
        for b in range(1, m + 1):
            v = max(best[a - 1][b], best[a][b - 1])
            s = sim[a - 1][b - 1]
            if s > 0.0:
                v = max(v, best[a - 1][b - 1] + s)
            best[a][b] = v
    pairs, a, b = [], n, m
    while a and b:
        s = sim[a - 1][b - 1]
        if s > 0.0 and best[a][b] == best[a - 1][b - 1] + s:
            pairs.append((olds[a - 1], news[b - 1]))
            a, b = a - 1, b - 1
        elif best[a][b] == best[a - 1][b]:
            a -= 1
        else:
            b -= 1
    return pairs[::-1]


def align(old: list[str], new: list[str], threshold: float) -> tuple[dict[int, int], dict[int, int]]:
    """Match the paragraph keys of two versions: ``(kept, edited)``, each ``{new index: old index}``.

    ``SequenceMatcher`` over the paragraph lists gives the unchanged runs (kept). Among the rest, a new
    paragraph whose text equals a not yet matched old one (a moved paragraph) is kept too (first unmatched
    occurrence, in order). Inside each replaced region, the remaining old and new paragraphs are paired in
    order with the largest total word-level similarity, each pair at least ``threshold`` (edited). Old
    paragraphs left over are removed; new ones left over start new lineages."""
    sm = SequenceMatcher(None, old, new, autojunk=False)
    kept: dict[int, int] = {}
    blocks = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            kept.update({j1 + k: i1 + k for k in range(i2 - i1)})
        else:
            blocks.append((list(range(i1, i2)), list(range(j1, j2))))
    free_old: dict[str, deque[int]] = defaultdict(deque)
    for olds, _ in blocks:
        for i in olds:
            free_old[old[i]].append(i)
    moved_old: set[int] = set()
    for _, news in blocks:
        for j in news:
            if free_old.get(new[j]):
                i = free_old[new[j]].popleft()
                kept[j] = i
                moved_old.add(i)
    edited: dict[int, int] = {}
    for olds, news in blocks:
        o = [i for i in olds if i not in moved_old]
        n_ = [j for j in news if j not in kept]
        if o and n_:
            old_tok = {i: tokens(old[i]) for i in o}
            new_tok = {j: tokens(new[j]) for j in n_}
            for i, j in _pair_block(o, n_, old_tok, new_tok, max(threshold, 1e-9)):
                edited[j] = i
    return kept, edited
