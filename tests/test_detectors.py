"""Contradiction detectors on hand-made texts and hand-made unit vectors; stated_values."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.systems.smartvector.detectors import (
    ReferenceDetector, SemanticDetector, content_similarity, stated_values, word_sets_matrix,
)

from .factories import make_corpus

POLICY = "remote work allowed two days weekly"
RUMOR = "weekly days two never allowed remote work"
UNRELATED = "cafeteria opens at eight"
ALL_STAFF = "remote work is allowed two days per week for all staff"
MOST_STAFF = "remote work is allowed two days per week for most staff"


def ref_corpus(rows: list[tuple[str, str, int]]):
    return make_corpus([{"text": t, "doc": d, "version": v, "authority": 0.5, "created": 0.0} for t, d, v in rows])


def pairs_of(out) -> list[tuple[int, int]]:
    return [(a, b) for a, b, _ in out]


# ---- reference detector ---------------------------------------------------------------------------------

def test_reference_pair_passing_both_thresholds():
    det = ReferenceDetector(ref_corpus([(POLICY, "p", 1), (RUMOR, "s", 1)]))
    out = det.pairs(np.array([1]), np.array([0, 1]))
    # Jaccard: {remote, work, allowed, two, days, weekly} vs the same + {never}: 6 / 7 = 0.857 > 0.3;
    # difflib: longest common block "remote work" only, 2 * 11 / (35 + 41) = 0.2895 < 0.4
    assert out == [(0, 1, {"jaccard": 0.8571, "char_similarity": 0.2895})]
    assert det.name == "reference"


def test_reference_pair_failing_jaccard():
    det = ReferenceDetector(ref_corpus([(POLICY, "p", 1), (UNRELATED, "s", 1)]))
    # no word in common: Jaccard 0 (the characters differ a lot too, but the topic test fails first)
    assert content_similarity(POLICY, UNRELATED) < 0.4
    assert det.pairs(np.array([0, 1]), np.array([0, 1])) == []
    # a pair just below the topic threshold: "a b c d e" vs "a b c x y z w v": 3 / 10 = 0.3, not > 0.3
    # content_threshold 1.0 takes the difflib test out (ratio here 2 * 7 / (9 + 15) = 0.583: 7 matching
    # characters, "a b c " plus one)
    assert content_similarity("a b c d e", "a b c x y z w v") == pytest.approx(14 / 24)
    texts = [("a b c d e", "p", 1), ("a b c x y z w v", "s", 1)]
    assert ReferenceDetector(ref_corpus(texts), content_threshold=1.0).pairs(np.array([1]), np.array([0])) == []
    det = ReferenceDetector(ref_corpus(texts), topic_threshold=0.29, content_threshold=1.0)
    assert pairs_of(det.pairs(np.array([1]), np.array([0]))) == [(0, 1)]


def test_reference_pair_failing_difflib():
    det = ReferenceDetector(ref_corpus([(ALL_STAFF, "p", 1), (MOST_STAFF, "w", 1)]))
    # Jaccard 10 / 12 > 0.3 but the texts are almost the same: difflib ratio >= 0.4
    assert content_similarity(ALL_STAFF, MOST_STAFF) >= 0.4
    assert det.pairs(np.array([1]), np.array([0])) == []
    # with a permissive content threshold the same pair is reported
    det = ReferenceDetector(ref_corpus([(ALL_STAFF, "p", 1), (MOST_STAFF, "w", 1)]), content_threshold=1.0)
    assert pairs_of(det.pairs(np.array([1]), np.array([0]))) == [(0, 1)]


def test_reference_same_doc_and_version_skipped():
    det = ReferenceDetector(ref_corpus([(POLICY, "d", 2), (RUMOR, "d", 2), (RUMOR + " now", "d", 3)]))
    out = pairs_of(det.pairs(np.array([0, 1, 2]), np.array([0, 1, 2])))
    # (0, 1) same doc and version: skipped; (0, 2) same doc, another version: a pair; (1, 2) differ only by
    # " now" (difflib >= 0.4): no pair
    assert out == [(0, 2)]


def test_reference_each_unordered_pair_once():
    det = ReferenceDetector(ref_corpus([(POLICY, "p", 1), (RUMOR, "s", 1), (UNRELATED, "u", 1)]))
    # both in new and in pool: (0, 1) and (1, 0) are the same pair
    assert pairs_of(det.pairs(np.array([0, 1, 2]), np.array([0, 1, 2]))) == [(0, 1)]
    assert pairs_of(det.pairs(np.array([1, 0]), np.array([2, 1, 0]))) == [(0, 1)]
    # a pair needs one side in new and the other in pool
    assert det.pairs(np.array([2]), np.array([0, 1])) == []
    assert det.pairs(np.array([], dtype=np.int64), np.array([0, 1])) == []


# ---- semantic detector ----------------------------------------------------------------------------------

def unit(*rows) -> np.ndarray:
    v = np.array(rows, dtype=np.float64)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


SEM_ROWS = [
    ("remote work is 2 days", "policy"),      # 0
    ("remote work is 3 days", "wiki"),        # 1: cos 0.8 with 0, values disjoint -> pair
    ("remote work is 2 or 4 days", "slack"),  # 2: cos 0.8 with 0, shares "2" -> no pair
    ("remote work is flexible", "email"),     # 3: cos 0.8 with 0, no number -> no pair
    ("remote work is 5 days", "policy"),      # 4: cos 1.0 with 0 but the same document -> no pair
    ("remote work is 7 days", "notes"),       # 5: cos 0.5 with 0, below 0.6 -> no pair
]
SEM_VECS = unit([1, 0, 0], [0.8, 0.6, 0], [0.8, 0, 0.6], [0.8, -0.6, 0], [1, 0, 0], [0.5, 0, 0.75 ** 0.5])


def sem_detector(threshold: float = 0.6) -> SemanticDetector:
    corpus = make_corpus([{"text": t, "doc": d, "authority": 0.5, "created": 0.0} for t, d in SEM_ROWS])
    return SemanticDetector(corpus, SEM_VECS, threshold)


def test_semantic_pairs_with_origin_0():
    det = sem_detector()
    out = det.pairs(np.array([0]), np.arange(6))
    assert len(out) == 1
    a, b, detail = out[0]
    assert (a, b) == (0, 1)
    assert detail == {"cosine": 0.8, "values": [[2.0], [3.0]]}
    assert det.name == "semantic"


@pytest.mark.parametrize("other, why", [(2, "shared value"), (3, "no number"), (4, "same doc_id"),
                                        (5, "below threshold")])
def test_semantic_no_pair(other, why):
    assert sem_detector().pairs(np.array([0]), np.array([other])) == [], why
    assert sem_detector().pairs(np.array([other]), np.array([0])) == [], why


def test_semantic_threshold_is_inclusive_and_configurable():
    # 0 vs 5: cos 0.5 -> a pair with threshold 0.5 (>=), none with 0.51
    assert pairs_of(sem_detector(0.5).pairs(np.array([5]), np.array([0]))) == [(0, 5)]
    assert sem_detector(0.51).pairs(np.array([5]), np.array([0])) == []


def test_semantic_each_pair_once_and_self_skipped():
    det = sem_detector()
    out = det.pairs(np.arange(6), np.arange(6))
    # every unordered pair, by hand (cosine; values):
    # (0,1) 0.8, {2} vs {3} -> pair          (0,2) 0.8, shares 2      (0,3) 0.8, 3 has no number
    # (0,4) same doc                         (0,5) 0.5 < 0.6          (1,2) 0.64, {3} vs {2,4} -> pair
    # (1,3) 0.64 - 0.36 = 0.28               (1,4) 0.8, {3} vs {5} -> pair                (1,5) 0.4
    # (2,3) 0.64, no number                  (2,4) 0.8, {2,4} vs {5} -> pair
    # (2,5) 0.4 + 0.6 * 0.8660 = 0.9196, {2,4} vs {7} -> pair      (3,4) 0.8, no number   (3,5) 0.4
    # (4,5) 0.5 < 0.6; self pairs (cosine 1) are never reported
    assert pairs_of(out) == [(0, 1), (1, 2), (1, 4), (2, 4), (2, 5)]
    assert out[1][2] == {"cosine": 0.64, "values": [[3.0], [2.0, 4.0]]}
    assert out[4][2] == {"cosine": 0.9196, "values": [[2.0, 4.0], [7.0]]}


def test_stated_values():
    assert stated_values("the fee is $75 for 25 days at 1.5 times") == frozenset({75.0, 25.0, 1.5})
    assert stated_values("$75") == frozenset({75.0})
    assert stated_values("no numbers here") == frozenset()
    assert stated_values("up 25% from 25") == frozenset({25.0})
    # values, not strings: "2.0" states the same value as "2"; a thousands separator is part of the number
    assert stated_values("2.0 days") == stated_values("2 days") == frozenset({2.0})
    assert stated_values("limit $1,000 per trip") == frozenset({1000.0})


# 8 texts over blocks of 3 (3 + 3 + 2): words first seen in one block and met again in the next, an empty and a
# blank text (one at a block's end), case and repeats within a text, whitespace other than spaces.
BLOCK_TEXTS = ["Remote work remote WORK", "two days", "", "days Two weekly", "   \t\n", "weekly remote\tÉté",
               "été cafeteria", "cafeteria cafeteria x"]


@pytest.mark.parametrize("block", [1, 2, 3, 1 << 16])
def test_word_sets_matrix_rows_are_each_texts_lower_cased_word_set_across_blocks(block):
    words = word_sets_matrix(BLOCK_TEXTS, block=block)
    vocab: dict[str, int] = {}  # columns in order of first appearance, as documented
    for text in BLOCK_TEXTS:
        for w in text.lower().split():
            vocab.setdefault(w, len(vocab))
    word_of = {c: w for w, c in vocab.items()}
    assert words.shape == (len(BLOCK_TEXTS), len(vocab))
    for i, text in enumerate(BLOCK_TEXTS):
        row = words.indices[words.indptr[i]:words.indptr[i + 1]]
        assert len(row) == len(set(row)) and np.all(words.data[words.indptr[i]:words.indptr[i + 1]] == 1)
        assert {word_of[int(c)] for c in row} == set(text.lower().split()), (block, i, text)
    assert (words != word_sets_matrix(BLOCK_TEXTS)).nnz == 0
