"""LiveVectorLake's FAISS hot tier (``hot_index: flat | hnsw``): a FAISS index of the CURRENT rows only,
persisted next to the cold tier. The default hot tier is Milvus (:mod:`.hot_milvus`, the paper's choice), with
the same interface and the same ``state.json`` commit point; this one stays for the perf bench.

Every indexed vector has a FAISS id (int64, never reused) that maps to the cold-tier row key
``(doc_id, chunk_id, position, valid_from_us)``. ``flat`` is an exact inner-product index (``IndexIDMap2`` over
``IndexFlatIP``; vectors are L2-normalised, so scores are cosines) updated in place: closed rows are removed,
new rows added. ``hnsw`` is the paper's HNSW (M=16, efConstruction=200 by default), rebuilt from the current
vectors on every update because FAISS's HNSW cannot remove vectors.

On disk (folder ``hot/``), for applied sequence number ``s``:

- ``index-<s>.faiss``: the serialised index;
- ``rows-<s>.json``: ``[[faiss_id, doc_id, chunk_id, position, valid_from_us], ...]``;
- ``state.json``: ``{"applied_seq": s, "index_file": ..., "rows_file": ..., "dim", "kind", "n", "next_id"}``.

Each file is written atomically (``smartvector_bench.core.atomic``: temp file, fsync, rename), the two data files
first and ``state.json`` last: ``state.json`` is the commit point, so a crash at any moment leaves a state
that names complete files for the sequence number it records. Older data files are deleted afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np

from smartvector_bench.core.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text

STATE = "state.json"
KINDS = ("flat", "hnsw")

RowKey = tuple  # (doc_id, chunk_id, position, valid_from_us)


def read_state(directory: str | Path) -> dict | None:
    """The hot tier's ``state.json``, or None when missing or unreadable."""
    try:
        state = json.loads((Path(directory) / STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get("applied_seq"), int) else None


class HotTier:
    # Called with the sequence number after the data files and before state.json are written (a crash-test
    # hook, set by lake.py); None in normal use.
    before_state = None

    def __init__(self, directory: str | Path, dim: int, kind: str = "flat", hnsw_m: int = 16,
                 hnsw_ef_construction: int = 200, hnsw_ef_search: int = 64):
        if kind not in KINDS:
            raise ValueError(f"hot_index={kind}: unknown; allowed: {', '.join(KINDS)}")
        self.dir = Path(directory)
        self.dim = int(dim)
        self.kind = kind
        self.hnsw = (int(hnsw_m), int(hnsw_ef_construction), int(hnsw_ef_search))
        self.applied_seq: int | None = None
        self._index = self._empty()
        self._key_of: dict[int, RowKey] = {}
        self._id_of: dict[RowKey, int] = {}
        self._next_id = 0

    # -- index -----------------------------------------------------------------------------------------------

    def _empty(self):
        if self.kind == "flat":
            base = faiss.IndexFlatIP(self.dim)
        else:
            m, ef_c, ef_s = self.hnsw
            base = faiss.IndexHNSWFlat(self.dim, m, faiss.METRIC_INNER_PRODUCT)
            base.hnsw.efConstruction = ef_c
            base.hnsw.efSearch = ef_s
        return faiss.IndexIDMap2(base)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def keys(self) -> list[RowKey]:
        return sorted(self._id_of)

    def vector(self, key: RowKey) -> np.ndarray:
        return self._index.reconstruct(int(self._id_of[key]))

    def search(self, query: np.ndarray, k: int) -> list[tuple[RowKey, float]]:
        """Top-``k`` current rows by inner product, best first."""
        k = min(int(k), len(self))
        if k <= 0:
            return []
        scores, ids = self._index.search(np.ascontiguousarray(query, dtype=np.float32).reshape(1, self.dim), k)
        return [(self._key_of[int(i)], float(s)) for s, i in zip(scores[0], ids[0]) if i >= 0]

    # -- updates ---------------------------------------------------------------------------------------------

    def rebuild(self, keys: list[RowKey], vectors: np.ndarray, seq: int) -> None:
        """Replace the whole index by ``keys``/``vectors`` (the cold tier's current rows) at ``seq``."""
        self._index = self._empty()
        self._key_of, self._id_of = {}, {}
        self._add(list(keys), vectors)
        self._persist(seq)

    def apply(self, remove: list[RowKey], add: list[RowKey], vectors: np.ndarray, seq: int) -> None:
        """Remove the closed rows, add the new ones, persist at ``seq``."""
        missing = [k for k in remove if k not in self._id_of]
        if missing:
            raise RuntimeError(f"hot tier: rows to remove are not indexed: {missing[:3]}")
        if self.kind == "flat":
            if remove:
                ids = np.array([self._id_of.pop(k) for k in remove], dtype=np.int64)
                for i in ids:
                    del self._key_of[int(i)]
                self._index.remove_ids(ids)
            self._add(list(add), vectors)
        else:  # HNSW cannot remove: rebuild from the vectors that stay plus the new ones
            gone = set(remove)
            keep = [k for k in sorted(self._id_of) if k not in gone]
            kept = (np.stack([self.vector(k) for k in keep]) if keep
                    else np.zeros((0, self.dim), dtype=np.float32))
            self._index = self._empty()
            self._key_of, self._id_of = {}, {}
            self._add(keep + list(add), np.concatenate([kept, np.asarray(vectors, np.float32).reshape(-1, self.dim)]))
        self._persist(seq)

    def _add(self, keys: list[RowKey], vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(keys), self.dim)
        if not keys:
            return
        dup = [k for k in keys if k in self._id_of]
        if dup or len(set(keys)) != len(keys):
            raise RuntimeError(f"hot tier: row indexed twice: {(dup or keys)[:3]}")
        ids = np.arange(self._next_id, self._next_id + len(keys), dtype=np.int64)
        self._next_id += len(keys)
        self._index.add_with_ids(vectors, ids)
        for i, k in zip(ids, keys):
            self._key_of[int(i)] = k
            self._id_of[k] = int(i)

    # -- persistence -----------------------------------------------------------------------------------------

    def _persist(self, seq: int) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        index_file, rows_file = f"index-{seq:012d}.faiss", f"rows-{seq:012d}.json"
        atomic_write_bytes(self.dir / index_file, faiss.serialize_index(self._index).tobytes())
        rows = [[i, *self._key_of[i]] for i in sorted(self._key_of)]
        atomic_write_text(self.dir / rows_file, json.dumps(rows, separators=(",", ":")))
        if self.before_state is not None:
            self.before_state(seq)
        atomic_write_json(self.dir / STATE, {"applied_seq": seq, "index_file": index_file, "rows_file": rows_file,
                                             "dim": self.dim, "kind": self.kind, "n": len(self),
                                             "next_id": self._next_id})
        self.applied_seq = seq
        for p in self.dir.iterdir():  # older data files and temp files left by a killed writer
            if p.name not in (index_file, rows_file, STATE) and (
                    p.name.startswith(("index-", "rows-")) or p.name.endswith(".tmp")):
                p.unlink(missing_ok=True)

    def load(self) -> str | None:
        """Load the persisted index. Returns None when it loaded, else why not (then the tier is empty)."""
        state = read_state(self.dir)
        if state is None:
            return "no readable hot-tier state file"
        if state.get("dim") != self.dim or state.get("kind") != self.kind:
            return f"hot tier built for dim={state.get('dim')} kind={state.get('kind')}"
        try:
            data = np.frombuffer((self.dir / state["index_file"]).read_bytes(), dtype=np.uint8)
            index = faiss.deserialize_index(data.copy())
            rows = json.loads((self.dir / state["rows_file"]).read_text(encoding="utf-8"))
        except (OSError, ValueError, RuntimeError, KeyError, TypeError) as exc:
            return f"hot-tier files unreadable ({type(exc).__name__}: {exc})"
        key_of = {int(r[0]): (str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows}
        if index.ntotal != len(key_of) or len(set(key_of.values())) != len(key_of) or index.d != self.dim:
            return "hot-tier index and row map disagree"
        self._index = index
        if self.kind == "hnsw":
            faiss.downcast_index(index.index).hnsw.efSearch = self.hnsw[2]
        self._key_of = key_of
        self._id_of = {k: i for i, k in key_of.items()}
        self._next_id = int(state.get("next_id", max(key_of, default=-1) + 1))
        self.applied_seq = int(state["applied_seq"])
        return None
