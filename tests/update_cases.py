"""Shared by the update-strategy tests (tests/test_update_strategies.py, tests/test_update_equivalence.py):
a deterministic fake embedder, a document store built from scratch, the check of a store against a
from-scratch rebuild after each edit, and the hand-made four-line document."""

from __future__ import annotations

import hashlib

import numpy as np

from smartvector_bench.systems.updates import Chunker, DocumentStore, normalise
from smartvector_bench.systems.updates.store import compare

DIM = 8


def _vec(key: str) -> np.ndarray:
    raw = np.frombuffer(hashlib.sha256(key.encode("utf-8")).digest(), dtype=np.uint8)[:DIM]
    return raw.astype(np.float32) / 255.0


class FakeEmbedder:
    """Deterministic: a vector from the sha256 of the text (of the normalised text if ``normalised``), so
    vectors compare exactly; counts every text it is sent."""

    def __init__(self, normalised: bool = False):
        self.normalised = normalised
        self.calls = 0
        self.seen: list[str] = []

    def __call__(self, texts):
        texts = list(texts)
        self.calls += len(texts)
        self.seen.extend(texts)
        return np.stack([_vec(normalise(t) if self.normalised else t) for t in texts]) if texts \
            else np.zeros((0, DIM), np.float32)


def embedder_for(name: str) -> FakeEmbedder:
    # cdc reuses a vector when the *normalised* text hash matches, so it is exact for embedders that are
    # invariant under the normalisation (as MiniLM's uncased tokenizer is); the others must match raw text.
    return FakeEmbedder(normalised=(name == "cdc"))


def build(text: str, chunker: Chunker, embed) -> DocumentStore:
    return DocumentStore.build("doc", text, chunker, embed, dim=DIM)


def problems(apply, chunker: Chunker, text: str, new_texts: list[str], embed) -> list[str]:
    """Apply each new text in turn; after each, compare the store with a from-scratch rebuild."""
    store = build(text, chunker, embed)
    out = []
    for step, new in enumerate(new_texts):
        apply(store, new, embed)
        ref = build(new, chunker, embed)
        c = compare(store, ref)
        if store.text != new:
            out.append(f"step {step}: store text is not the new text")
        if not c["texts"]:
            out.append(f"step {step}: chunk texts differ")
        if not c["offsets"]:
            out.append(f"step {step}: offsets differ")
        if not c["slices"]:
            out.append(f"step {step}: text[start:end] != chunk.text")
        if c["max_abs_vector_diff"] != 0.0:
            out.append(f"step {step}: vectors differ ({c['max_abs_vector_diff']})")
        if out:
            break
    return out


C40 = Chunker("sentences", 40)
LINES = ["Alpha policy covers all staff.", "Beta rule: claims are due in 30 days.",
         "Gamma step: file the form online.", "Delta contact: the finance team."]
DOC = "\n".join(LINES)
