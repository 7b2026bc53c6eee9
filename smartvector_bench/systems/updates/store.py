"""A per-document chunk store shared by every update strategy, and the helpers around it.

A :class:`DocumentStore` holds one document's current text, its chunks (``Chunk`` objects with exact
offsets: ``text[c.start:c.end] == c.text``) and one vector per chunk, plus the chunker that made them.
Every strategy (``full``, ``cdc``, ``surgical``) is a module with one function

    apply(store, new_text, embed) -> UpdateResult

that updates the store in place to ``new_text``, sending to ``embed`` (texts -> (n, dim) float32 array)
only the chunk texts it decides to re-embed. Whatever a strategy does, the store must end up exactly as
:func:`rebuild` would make it from scratch; :func:`compare` checks that.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from smartvector_bench.core.dataset.chunking import Chunk, chunk_paragraphs, chunk_sentences
from smartvector_bench.core.errors import BenchError

EmbedFn = Callable[[Sequence[str]], np.ndarray]
CHUNKERS = ("sentences", "paragraphs")

_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """LiveVectorLake's normalisation before hashing: strip, collapse whitespace runs to one space, case-fold."""
    return _WS.sub(" ", text.strip()).casefold()


def chunk_hash(text: str) -> str:
    """SHA-256 (hex) of the normalised chunk text."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Chunker:
    """The one chunker every strategy uses: ``chunk_sentences(text, chunk_chars)`` or ``chunk_paragraphs``.

    Both have the property the surgical strategy relies on: chunking ``text[p:]`` where ``p`` is the start of
    a chunk of ``text`` gives exactly the chunks of ``text`` from ``p`` on (shifted by ``p``), because where
    a chunk ends is decided only by the text to its right.
    """

    kind: str = "sentences"
    chunk_chars: int = 200

    def __post_init__(self) -> None:
        if self.kind not in CHUNKERS:
            raise BenchError(f"chunker={self.kind}: unknown; allowed: {', '.join(CHUNKERS)}")
        if self.kind == "sentences" and (not isinstance(self.chunk_chars, int) or self.chunk_chars < 1):
            raise BenchError(f"chunk_chars={self.chunk_chars!r}: must be an integer >= 1")

    @property
    def separator(self) -> str:
        """What separates a document's sections (lines for sentence chunks, blank lines for paragraphs)."""
        return "\n" if self.kind == "sentences" else "\n\n"

    def __call__(self, text: str) -> list[Chunk]:
        if self.kind == "sentences":
            return chunk_sentences(text, self.chunk_chars)
        return chunk_paragraphs(text)


def embed_texts(embed: EmbedFn, texts: Sequence[str], dim: int) -> np.ndarray:
    """``embed(texts)`` as float32 (n, dim); an empty list is never sent to the model."""
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    out = np.asarray(embed(list(texts)), dtype=np.float32)
    if out.shape != (len(texts), dim):
        raise ValueError(f"embedder returned shape {out.shape}, expected {(len(texts), dim)}")
    return out


@dataclass
class DocumentStore:
    doc_id: str
    text: str
    chunks: list[Chunk]
    vectors: np.ndarray  # (len(chunks), dim) float32, row i belongs to chunks[i]
    chunker: Chunker
    dim: int
    hashes: list[str] | None = None  # per-document chunk hashes (kept by the cdc strategy), None if unknown

    @classmethod
    def build(cls, doc_id: str, text: str, chunker: Chunker, embed: EmbedFn, dim: int | None = None
              ) -> DocumentStore:
        """Chunk and embed ``text`` from scratch."""
        chunks = chunker(text)
        texts = [c.text for c in chunks]
        if dim is None:
            vectors = np.asarray(embed(texts), dtype=np.float32)
            dim = int(vectors.shape[1])
        else:
            vectors = embed_texts(embed, texts, dim)
        return cls(doc_id, text, chunks, vectors, chunker, dim, [chunk_hash(t) for t in texts])

    def copy(self) -> DocumentStore:
        return DocumentStore(self.doc_id, self.text, list(self.chunks), self.vectors.copy(), self.chunker,
                             self.dim, None if self.hashes is None else list(self.hashes))

    def replace(self, text: str, chunks: list[Chunk], vectors: np.ndarray, hashes: list[str] | None = None
                ) -> None:
        self.text, self.chunks = text, chunks
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(chunks), self.dim)
        self.hashes = hashes

    def problems(self) -> list[str]:
        """Internal consistency: exact offsets, positions 0..n-1, one vector per chunk."""
        out = []
        if self.vectors.shape != (len(self.chunks), self.dim):
            out.append(f"{self.doc_id}: {len(self.chunks)} chunks but vectors of shape {self.vectors.shape}")
        for i, c in enumerate(self.chunks):
            if c.index != i:
                out.append(f"{self.doc_id}: chunk at position {i} has index {c.index}")
            if self.text[c.start:c.end] != c.text:
                out.append(f"{self.doc_id}: chunk {i} text[{c.start}:{c.end}] != its text")
        return out


def rebuild(store: DocumentStore, embed: EmbedFn) -> DocumentStore:
    """The from-scratch reference for ``store``'s current text (same chunker)."""
    return DocumentStore.build(store.doc_id, store.text, store.chunker, embed, dim=store.dim)


def compare(store: DocumentStore, reference: DocumentStore) -> dict:
    """How ``store`` matches ``reference`` (normally :func:`rebuild`): each check separately.

    ``max_abs_vector_diff`` is None when the chunk counts differ (then the vectors cannot be compared).
    """
    texts = [c.text for c in store.chunks] == [c.text for c in reference.chunks]
    offsets = [(c.index, c.start, c.end) for c in store.chunks] == [(c.index, c.start, c.end)
                                                                     for c in reference.chunks]
    slices = store.text == reference.text and not store.problems()
    diff = None
    if store.vectors.shape == reference.vectors.shape:
        diff = float(np.max(np.abs(store.vectors - reference.vectors))) if store.vectors.size else 0.0
    return {"texts": texts, "offsets": offsets, "slices": slices, "max_abs_vector_diff": diff}


@dataclass
class UpdateResult:
    """What one strategy did for one edit.

    ``reembedded``: chunks whose vectors were computed again (= texts sent to ``embed``).
    ``classes``: cdc only, counts of unchanged / moved / modified / new / deleted.
    ``window``: surgical only, the [lo, hi) range of new chunk positions that were re-chunked.
    ``affected``: surgical only, old chunk positions whose offset range touches a changed range.
    """

    strategy: str
    reembedded: int
    n_chunks_before: int
    n_chunks_after: int
    classes: dict[str, int] | None = None
    window: tuple[int, int] | None = None
    affected: tuple[int, ...] = field(default_factory=tuple)
