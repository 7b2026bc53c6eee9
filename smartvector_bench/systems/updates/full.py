"""``full``: the naive baseline. Re-chunk the new text and re-embed every chunk of the edited document."""

from __future__ import annotations

from smartvector_bench.systems.updates.store import DocumentStore, EmbedFn, UpdateResult, chunk_hash, embed_texts

NAME = "full"


def apply(store: DocumentStore, new_text: str, embed: EmbedFn) -> UpdateResult:
    before = len(store.chunks)
    chunks = store.chunker(new_text)
    texts = [c.text for c in chunks]
    vectors = embed_texts(embed, texts, store.dim)
    store.replace(new_text, chunks, vectors, [chunk_hash(t) for t in texts])
    return UpdateResult(NAME, reembedded=len(chunks), n_chunks_before=before, n_chunks_after=len(chunks))
