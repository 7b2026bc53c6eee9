"""Hand-made corpora for the shortcut audit's tests (tests/test_shortcut_audit.py, tests/test_shortcut_cues.py)."""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus


def _corpus(texts, doc_id=None, version=None, source=None, created=None, offsets=None, depends=None,
            authority=None) -> Corpus:
    n = len(texts)
    ids = [f"c{i:04x}{(7 * i) % 16:x}" for i in range(n)]
    start = np.asarray(offsets if offsets is not None else np.zeros(n), dtype=np.int64)
    created = np.asarray(created if created is not None else np.zeros(n), dtype=np.float64)
    return Corpus(
        ids=ids, titles=[""] * n, texts=list(texts),
        doc_id=np.array(doc_id if doc_id is not None else [f"d{i}" for i in range(n)], dtype=object),
        version=np.asarray(version if version is not None else np.ones(n), dtype=np.int64),
        source=np.array(source if source is not None else ["wiki"] * n, dtype=object),
        authority=np.asarray(authority if authority is not None else np.full(n, 0.5), dtype=np.float64),
        created_at=created, valid_from=created.copy(), valid_to=np.full(n, np.inf),
        depends_on=Ragged.from_lists(depends if depends is not None else [[] for _ in range(n)]),
        supersedes=np.full(n, -1, dtype=np.int64), offset_start=start,
        offset_end=start + np.array([len(t) for t in texts], dtype=np.int64),
        index_of={c: i for i, c in enumerate(ids)})
