"""Sentence-grouped chunker (exact offsets, greedy grouping) and the paragraph chunker."""

import random

import pytest

from smartvector_bench.core.dataset.chunking import Chunk, chunk_paragraphs, chunk_sentences, split_sentences

_WORDS = ["policy", "remote", "work", "v2.3", "1.5", "days", "Approved", "e.g", "3.14", "staff", "Q&A",
          "refund", "x", "leave", "version", "N/A"]
_ENDS = [".", "!", "?", "", "...", "?!"]
_SEPS = [" ", " ", "  ", "\n", "\n\n", "\t", " \n ", "\n \t\n"]


def _random_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 25)):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12)))
        parts.append(words + rng.choice(_ENDS) + rng.choice(_SEPS))
    text = "".join(parts)
    if rng.random() < 0.3:
        text = rng.choice(_SEPS) + text
    if rng.random() < 0.5:
        text = text.rstrip()
    return text


def _nonspace(s: str) -> str:
    return "".join(ch for ch in s if not ch.isspace())


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("max_chars", [1, 15, 40, 200])
def test_offsets_exact_on_random_texts(seed, max_chars):
    rng = random.Random(seed * 1000 + max_chars)
    text = _random_text(rng)
    sentences = split_sentences(text)
    # sentence spans tile the text exactly, without gaps or overlaps
    if text:
        assert sentences[0][0] == 0 and sentences[-1][1] == len(text)
    for (a0, b0), (a1, _) in zip(sentences, sentences[1:]):
        assert b0 == a1 and a0 < b0
    chunks = chunk_sentences(text, max_chars)
    sentence_stripped = {(s, e) for s, e in ((a + len(text[a:b]) - len(text[a:b].lstrip()),
                                               b - (len(text[a:b]) - len(text[a:b].rstrip())))
                                              for a, b in sentences)}
    prev_end = -1
    for i, c in enumerate(chunks):
        assert c.index == i
        assert text[c.start:c.end] == c.text
        assert c.text == c.text.strip() and c.text  # stripped and non-empty
        assert c.start >= prev_end  # in order, no overlap
        prev_end = c.end
        if len(c.text) > max_chars:  # only a single over-long sentence may exceed the limit
            assert (c.start, c.end) in sentence_stripped
    # no text is lost: the chunks hold every non-space character, in order
    assert "".join(_nonspace(c.text) for c in chunks) == _nonspace(text)


def test_decimal_and_version_dots_do_not_split():
    text = "Rate is 1.5 percent. Use v2.3 now."
    # "Rate is 1.5 percent." = 20 chars; " Use v2.3 now." = 14 chars -> ends at 34
    assert split_sentences(text) == [(0, 20), (20, 34)]
    chunks = chunk_sentences(text, max_chars=20)
    assert [(c.start, c.end, c.text) for c in chunks] == [(0, 20, "Rate is 1.5 percent."),
                                                          (21, 34, "Use v2.3 now.")]


def test_terminators_and_newline_end_sentences():
    text = "One! Two? Three.\nfour five\nsix"
    # "One!"(0,4) " Two?"(4,9) " Three."(9,16) "\n" ends nothing new: newline is its own span end
    spans = split_sentences(text)
    assert [text[a:b].strip() for a, b in spans if text[a:b].strip()] == ["One!", "Two?", "Three.", "four five",
                                                                          "six"]
    chunks = chunk_sentences(text, max_chars=6)
    assert [c.text for c in chunks] == ["One!", "Two?", "Three.", "four five", "six"]


def test_greedy_grouping_respects_limit():
    text = "Sent one. Sent two. Sent tri."  # three 9-char sentences, single spaces: 9+1+9 = 19, +1+9 = 29
    at19 = chunk_sentences(text, max_chars=19)
    assert [(c.start, c.end) for c in at19] == [(0, 19), (20, 29)]
    assert at19[0].text == "Sent one. Sent two." and at19[1].text == "Sent tri."
    at18 = chunk_sentences(text, max_chars=18)  # 19 > 18: nothing can be grouped
    assert [(c.start, c.end) for c in at18] == [(0, 9), (10, 19), (20, 29)]
    at29 = chunk_sentences(text, max_chars=29)
    assert [(c.start, c.end) for c in at29] == [(0, 29)]
    assert all(len(c.text) <= 19 for c in at19)


def test_long_sentence_is_its_own_chunk():
    long = "This sentence is definitely longer than twenty characters."  # 58 chars
    text = "Hi. " + long + " Ok."
    chunks = chunk_sentences(text, max_chars=20)
    assert [c.text for c in chunks] == ["Hi.", long, "Ok."]
    assert [(c.start, c.end) for c in chunks] == [(0, 3), (4, 62), (63, 66)]  # 4 + 58 = 62; 63 + 3 = 66
    assert len(chunks[1].text) == 58 > 20


def test_default_limit_is_200():
    s = "a" * 98 + "."  # 99 chars
    text = f"{s} {s} {s}"  # two sentences grouped = 99 + 1 + 99 = 199 <= 200; three = 299 > 200
    chunks = chunk_sentences(text)
    assert [(c.start, c.end) for c in chunks] == [(0, 199), (200, 299)]


def test_empty_and_blank_text():
    assert chunk_sentences("") == []
    assert chunk_sentences("   \n\t ") == []
    assert chunk_paragraphs("") == []
    assert chunk_paragraphs("\n\n  \n") == []


def test_paragraph_chunker_splits_on_blank_lines():
    text = "p1 l1\np1 l2\n\np2\n \t\n\n  p3  \n"
    chunks = chunk_paragraphs(text)
    # "p1 l1\np1 l2" = 0..11; "\n\n" 11..13; "p2" 13..15; "\n \t\n\n  " 15..22 (a whitespace-only line is blank)
    assert chunks == [Chunk(0, 0, 11, "p1 l1\np1 l2"), Chunk(1, 13, 15, "p2"), Chunk(2, 22, 24, "p3")]
    for c in chunks:
        assert text[c.start:c.end] == c.text


@pytest.mark.parametrize("seed", range(20))
def test_paragraph_offsets_exact_on_random_texts(seed):
    rng = random.Random(seed)
    text = _random_text(rng)
    chunks = chunk_paragraphs(text)
    for i, c in enumerate(chunks):
        assert c.index == i and text[c.start:c.end] == c.text and c.text == c.text.strip()
        lines = c.text.split("\n")
        assert all(line.strip() for line in lines[1:-1])  # no blank line inside a paragraph
    assert "".join(_nonspace(c.text) for c in chunks) == _nonspace(text)
