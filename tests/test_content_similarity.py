"""The reference detector's character ratio: cydifflib (the fast path) gives exactly difflib's ratio (the
specification) on real corpus text pairs, long pairs where difflib's autojunk applies, unicode and random
strings."""

from __future__ import annotations

import random

import numpy as np

from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.systems.smartvector.detectors import AUTOJUNK_MIN, content_similarity, content_similarity_spec


def _same(pairs) -> int:
    for a, b in pairs:
        assert content_similarity(a, b) == content_similarity_spec(a, b), (a, b)
    return len(pairs)


def test_equal_on_corpus_pairs(default_dataset):
    texts = load_dataset(default_dataset).corpus.texts
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, len(texts), (2, 3000))
    pairs = [(texts[a], texts[b]) for a, b in zip(i.tolist(), j.tolist())]
    # long texts (several chunks joined) where autojunk drops b's popular characters
    joined = [" ".join(texts[x] for x in rng.integers(0, len(texts), 6).tolist()) for _ in range(300)]
    longs = [(joined[a], joined[b]) for a, b in rng.integers(0, len(joined), (400, 2)).tolist()]
    longs += [(t, t[: len(t) // 2] + " revised " + t[len(t) // 2:]) for t in joined]  # near-copies
    assert sum(len(b) >= AUTOJUNK_MIN for _, b in longs) > 600
    assert _same(pairs) + _same(longs) == 3000 + 700


def test_equal_on_random_and_unicode_strings():
    rnd = random.Random(1)
    alphabets = ["ab", "abc ", "abcdefghij ", "aé€ 𝄞Ωß", "0123456789,. "]
    pairs = []
    for _ in range(3000):
        alpha = rnd.choice(alphabets)
        a = "".join(rnd.choice(alpha) for _ in range(rnd.randint(0, 400)))
        b = "".join(rnd.choice(alpha) for _ in range(rnd.randint(0, 400))) if rnd.random() < 0.5 else \
            "".join(c if rnd.random() > 0.1 else rnd.choice(alpha) for c in a)  # a few edits of a
        pairs.append((a, b) if rnd.random() < 0.5 else (a.upper(), b))
    pairs += [("", ""), ("", "x"), ("İ", "i̇"), ("ΣΑΣ", "σας")]  # lower() can change a text's length
    assert _same(pairs) == 3004
