"""``cdc``: LiveVectorLake's chunk-level change detection (arXiv 2601.05270), done per document.

Every chunk is identified by the SHA-256 of its normalised text (strip, collapse whitespace, case-fold).
The hashes are scoped to one document (they live in that document's store): the same paragraph in two
documents are two independent chunks, so deleting it from one never touches the other (LiveVectorLake's
public code keeps one global hash set and gets this wrong).

The new text is re-chunked from scratch with the same chunker, then each new chunk is classified by
position against the old chunks of the same document:

- ``unchanged``: the same hash at the same position; its vector is kept;
- ``moved``: the hash is present at another position of the old document; its vector is reused
  (content-addressed). This class is OUR addition to the paper's four (new / modified / deleted /
  unchanged): without it every chunk after an inserted or deleted one would count as modified;
- ``modified``: a different hash at a position the old document had;
- ``new``: a position beyond the old chunk count (and a hash the old document did not have);
- ``deleted``: old positions beyond the new chunk count (counted, nothing to embed).

Only ``modified`` and ``new`` chunks are re-embedded. Because the vector of an ``unchanged`` or ``moved``
chunk is reused on a hash match, the result equals a rebuild exactly when the embedder is invariant under
the normalisation (MiniLM's uncased tokenizer and the hashing embedder are, up to exotic case-folds).
"""

from __future__ import annotations

import numpy as np

from smartvector_bench.systems.updates.store import DocumentStore, EmbedFn, UpdateResult, chunk_hash, embed_texts

NAME = "cdc"
CLASSES = ("unchanged", "moved", "modified", "new", "deleted")


def apply(store: DocumentStore, new_text: str, embed: EmbedFn) -> UpdateResult:
    old_chunks = store.chunks
    old_hashes = store.hashes if store.hashes is not None else [chunk_hash(c.text) for c in old_chunks]
    first_at: dict[str, int] = {}
    for i, h in enumerate(old_hashes):
        first_at.setdefault(h, i)

    chunks = store.chunker(new_text)
    hashes = [chunk_hash(c.text) for c in chunks]
    counts = dict.fromkeys(CLASSES, 0)
    vectors = np.zeros((len(chunks), store.dim), dtype=np.float32)
    todo: list[int] = []
    for i, h in enumerate(hashes):
        if i < len(old_hashes) and old_hashes[i] == h:
            counts["unchanged"] += 1
            vectors[i] = store.vectors[i]
        elif h in first_at:
            counts["moved"] += 1
            vectors[i] = store.vectors[first_at[h]]
        elif i < len(old_hashes):
            counts["modified"] += 1
            todo.append(i)
        else:
            counts["new"] += 1
            todo.append(i)
    counts["deleted"] = max(0, len(old_chunks) - len(chunks))
    if todo:
        vectors[todo] = embed_texts(embed, [chunks[i].text for i in todo], store.dim)
    before = len(old_chunks)
    store.replace(new_text, chunks, vectors, hashes)
    return UpdateResult(NAME, reembedded=len(todo), n_chunks_before=before, n_chunks_after=len(chunks),
                        classes=counts)
