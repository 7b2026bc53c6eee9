"""LiveVectorLake's hot tier in Milvus, as the seed paper has it: the CURRENT rows in a Milvus collection,
through ``pymilvus.MilvusClient``, with the interface and crash-safety contract of the FAISS tier (:mod:`.hot`,
kept for the perf bench).

**Server.** ``uri=None``: Milvus Lite on the lake's ``hot/milvus.db`` (milvus-lite 3.x: a gRPC server thread
of this process, started by pymilvus on the first connection; its lifetime: :mod:`.milvus_conn`). Else any
Milvus server (``http://host:19530``, ``token`` if it needs one).

**Collection.** A new one per rebuild, ``<collection>_s<seq>_<random>`` (the random part keeps lakes sharing a
server apart, whatever their prefix): ``id`` INT64 primary key, the row key ``doc_id``, ``chunk_id`` (VARCHAR),
``position``, ``valid_from_us`` (INT64), ``vector`` FLOAT_VECTOR; consistency ``Strong`` (a search sees every
earlier write). Index ``FLAT``, metric ``IP`` (kind ``milvus``: exact; vectors are L2-normalised, so scores are
cosines), or ``HNSW`` (kind ``milvus_hnsw``: ``M``, ``efConstruction``, searched with ``ef`` = max(ef, limit):
a server refuses less). :meth:`apply` deletes closed rows by primary key and inserts new ones in place.

**Commit point.** ``hot/state.json``, written atomically once Milvus holds the rows: ``applied_seq``,
``collection``, ``dim``, ``kind``, ``n``, ``next_id`` and ``rows_digest`` (the sum of 128-bit BLAKE2b hashes
of the ``(id, row key)`` pairs: order-free, updated per row). :meth:`load` accepts the collection only when it
exists, ``count(*)`` is ``n`` and its ids and keys (one query, no vectors) are unique, below ``next_id`` and
give the digest; else it says why and ``lake.recover`` rebuilds from the cold tier. Milvus has no transaction
over a delete and an insert, so a crash after Milvus changed and before ``state.json`` shows twice: the applied
sequence is behind the cold tier's, and the rows miss the digest (as do Milvus writes lost in an OS crash:
milvus-lite fsyncs its WAL only on close).

**Ownership.** ``hot/milvus-collections.json`` lists the collections the lake created, each written there
before it is created; after a commit all but the current are dropped, so a crash mid-rebuild leaves no orphan
for long, and nothing of another lake is ever touched.

**Search.** Ties are broken by the row key (ascending), not by Milvus's order: ``k`` + 16 hits are fetched,
more while the k-th score equals the last one fetched. Milvus Lite searches rows still in its memtable by brute
force in Python (8-20x slower than a flushed segment), so a local tier flushes before the first search after a
write (on a server a flush is slow and rate-limited: left to it). No filter holds a value from the data (doc
ids may hold quotes): deletes and reads go by primary key; the only expressions are ``id >= 0``, ``count(*)``.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import weakref
from pathlib import Path

import numpy as np

from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.livevectorlake.hot import STATE, read_state
from smartvector_bench.systems.livevectorlake.milvus_conn import OWNED, acquire, drop, owned, reap, shown

KINDS = ("milvus", "milvus_hnsw")
LOCAL_DB = "milvus.db"  # pymilvus hands a URI ending in .db to milvus-lite, which uses it as its data folder
DEFAULT_COLLECTION = "lvl_hot"
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")  # Milvus: letters, digits, _; room left for the suffix
FIELDS = ["id", "doc_id", "chunk_id", "position", "valid_from_us"]
MAX_TOPK = 16384  # a Milvus server's limit on search and query results (milvus-lite has none)
TIE_MARGIN = 16
INSERT_BATCH = 1000  # rows per insert call: a gRPC message far below any server's size limit
MASK = (1 << 128) - 1

RowKey = tuple  # (doc_id, chunk_id, position, valid_from_us)


def check_settings(uri, token, collection, where: str) -> None:
    """Refuse bad ``milvus_uri`` / ``milvus_token`` / ``milvus_collection`` values in one line."""
    if uri is not None and (not isinstance(uri, str) or not uri.strip()):
        raise BenchError(f"{where}milvus_uri={uri!r}: must be null (Milvus Lite in the lake folder) or a Milvus URI")
    if token is not None and not isinstance(token, str):
        raise BenchError(f"{where}milvus_token: must be null or a string")
    if collection is not None and not (isinstance(collection, str) and NAME.fullmatch(collection)):
        raise BenchError(f"{where}milvus_collection={collection!r}: must be null or letters, digits and _ (not "
                         "starting with a digit), at most 200 characters")


def _canon(key) -> RowKey:
    return (str(key[0]), str(key[1]), int(key[2]), int(key[3]))


def _row_hash(i: int, key: RowKey) -> int:
    data = json.dumps([int(i), *key], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "big")


# -- the tier ---------------------------------------------------------------------------------------------------

class MilvusHotTier:
    # Called with the sequence number after Milvus was written and before state.json is (a crash-test hook,
    # set by lake.py); None in normal use.
    before_state = None

    def __init__(self, directory: str | Path, dim: int, kind: str = "milvus", hnsw_m: int = 16,
                 hnsw_ef_construction: int = 200, hnsw_ef_search: int = 64, uri: str | None = None,
                 token: str | None = None, collection: str | None = None):
        if kind not in KINDS:
            raise ValueError(f"hot_index={kind}: not a Milvus kind; allowed: {', '.join(KINDS)}")
        check_settings(uri, token, collection, "")
        self.dir = Path(directory)
        self.dim = int(dim)
        self.kind = kind
        self.hnsw = (int(hnsw_m), int(hnsw_ef_construction), int(hnsw_ef_search))
        self.prefix = collection or DEFAULT_COLLECTION
        self.local = uri is None
        self.server = f"milvus-lite {LOCAL_DB}" if self.local else shown(uri)
        self.applied_seq: int | None = None
        self.collection: str | None = None
        self._key_of: dict[int, RowKey] = {}
        self._id_of: dict[RowKey, int] = {}
        self._next_id = 0
        self._digest = 0
        self._unflushed = False
        self.dir.mkdir(parents=True, exist_ok=True)
        target = str((self.dir / LOCAL_DB).resolve()) if self.local else str(uri)
        self._conn = acquire(target, token or "", self.local)
        self._client = self._conn.client
        self._finalizer = weakref.finalize(self, drop, self._conn)

    def close(self) -> None:
        """Give the connection back (the last tier of a local lake stops its milvus-lite server)."""
        self._finalizer()
        reap()

    # -- reading ---------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._id_of)

    def keys(self) -> list[RowKey]:
        return sorted(self._id_of)

    def vector(self, key: RowKey) -> np.ndarray:
        rows = self._client.get(self.collection, ids=[self._id_of[_canon(key)]], output_fields=["vector"])
        if not rows:
            raise RuntimeError(f"hot tier: row {key} is not in Milvus collection {self.collection}")
        return np.asarray(rows[0]["vector"], dtype=np.float32)

    def search(self, query: np.ndarray, k: int) -> list[tuple[RowKey, float]]:
        """Top-``k`` current rows by inner product, best first, ties by row key."""
        n = len(self)
        k = min(int(k), n)
        if k <= 0:
            return []
        if self._unflushed and self.local:
            self._client.flush(self.collection)
            self._unflushed = False
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(self.dim).tolist()
        limit = min(n, k + TIE_MARGIN, MAX_TOPK)
        while True:
            params: dict = {"metric_type": "IP"}
            if self.kind == "milvus_hnsw":
                params["params"] = {"ef": max(self.hnsw[2], limit)}
            res = self._client.search(self.collection, data=[q], limit=limit, anns_field="vector",
                                      search_params=params)
            try:
                hits = sorted(((self._key_of[int(h["id"])], float(h["distance"])) for h in res[0]),
                              key=lambda h: (-h[1], h[0]))
            except KeyError as exc:
                raise RuntimeError(f"hot tier: Milvus returned id {exc} that no current row has") from None
            # Done unless a row not fetched could tie with the k-th (exact search: every row not fetched scores
            # <= the last one fetched).
            if limit >= min(n, MAX_TOPK) or len(hits) < limit or hits[k - 1][1] > hits[-1][1]:
                return hits[:k]
            limit = min(n, 2 * limit, MAX_TOPK)

    # -- updates ---------------------------------------------------------------------------------------------

    def rebuild(self, keys: list[RowKey], vectors: np.ndarray, seq: int) -> None:
        """Fill a new collection with ``keys``/``vectors`` (the cold tier's current rows), commit at ``seq``."""
        keys = [_canon(k) for k in keys]
        if len(set(keys)) != len(keys):
            raise RuntimeError("hot tier: row indexed twice in a rebuild")
        self.collection = self._create(seq)
        self._key_of, self._id_of, self._next_id, self._digest = {}, {}, 0, 0
        self._insert(keys, vectors)
        self._persist(seq)

    def apply(self, remove: list[RowKey], add: list[RowKey], vectors: np.ndarray, seq: int) -> None:
        """Delete the closed rows, insert the new ones, commit at ``seq``. Checked before Milvus is touched."""
        remove, add = [_canon(k) for k in remove], [_canon(k) for k in add]
        missing = [k for k in remove if k not in self._id_of]
        if missing:
            raise RuntimeError(f"hot tier: rows to remove are not indexed: {missing[:3]}")
        staying = set(self._id_of).difference(remove)
        dup = [k for k in add if k in staying]
        if dup or len(set(add)) != len(add):
            raise RuntimeError(f"hot tier: row indexed twice: {(dup or add)[:3]}")
        if remove:
            ids = [self._id_of[k] for k in remove]
            self._client.delete(self.collection, ids=ids)
            self._unflushed = True
            for i, k in zip(ids, remove):
                del self._key_of[i], self._id_of[k]
                self._digest = (self._digest - _row_hash(i, k)) & MASK
        self._insert(add, vectors)
        self._persist(seq)

    def _create(self, seq: int) -> str:
        from pymilvus import DataType, MilvusClient

        name = f"{self.prefix}_s{seq}_{secrets.token_hex(4)}"
        atomic_write_json(self.dir / OWNED, [*owned(self.dir), name])  # before it exists: no orphan unlisted
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=65535)
        schema.add_field("chunk_id", DataType.VARCHAR, max_length=1024)
        schema.add_field("position", DataType.INT64)
        schema.add_field("valid_from_us", DataType.INT64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        self._client.create_collection(name, schema=schema, consistency_level="Strong")
        index = self._client.prepare_index_params()
        if self.kind == "milvus":
            index.add_index("vector", index_type="FLAT", metric_type="IP")
        else:  # pymilvus 3 sends M / efConstruction as top-level keys, which milvus-lite 3.2 silently ignores (it
            # reads only a JSON "params" key): both forms, the same values
            build = {"M": self.hnsw[0], "efConstruction": self.hnsw[1]}
            index.add_index("vector", index_type="HNSW", metric_type="IP", params={**build, "params": build})
        # sync=False: pymilvus would otherwise sleep 0.5 s before polling the index state (per rebuild, so per
        # lake opened); the collection is empty and load_collection waits for what it needs.
        self._client.create_index(name, index, sync=False)
        self._client.load_collection(name)
        return name

    def _insert(self, keys: list[RowKey], vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(keys), self.dim)
        for lo in range(0, len(keys), INSERT_BATCH):
            batch = keys[lo:lo + INSERT_BATCH]
            ids = range(self._next_id, self._next_id + len(batch))
            self._client.insert(self.collection, [
                {"id": i, "doc_id": k[0], "chunk_id": k[1], "position": k[2], "valid_from_us": k[3],
                 "vector": vectors[lo + j].tolist()} for j, (i, k) in enumerate(zip(ids, batch))])
            self._unflushed = True
            self._next_id += len(batch)
            for i, k in zip(ids, batch):
                self._key_of[i], self._id_of[k] = k, i
                self._digest = (self._digest + _row_hash(i, k)) & MASK

    # -- persistence -----------------------------------------------------------------------------------------

    def _persist(self, seq: int) -> None:
        if self.before_state is not None:
            self.before_state(seq)
        atomic_write_json(self.dir / STATE, {"applied_seq": seq, "collection": self.collection, "dim": self.dim,
                                             "kind": self.kind, "n": len(self), "next_id": self._next_id,
                                             "rows_digest": f"{self._digest:032x}"})
        self.applied_seq = seq
        kept = [self.collection]
        for name in owned(self.dir):
            if name != self.collection:
                try:
                    self._client.drop_collection(name)  # dropping a missing collection is no error
                except Exception:  # noqa: BLE001 - the server refused: keep it listed, retry next commit
                    kept.append(name)
        atomic_write_json(self.dir / OWNED, kept)
        for p in self.dir.iterdir():  # a FAISS tier's files (the lake changed kind) and temp files of a killed writer
            if p.is_file() and (p.name.startswith(("index-", "rows-")) or p.name.endswith(".tmp")):
                p.unlink(missing_ok=True)

    def load(self) -> str | None:
        """Load the committed collection's row map. None when it matches ``state.json``, else why not (then the
        tier is empty; ``applied_seq`` is the state's, which recover reports)."""
        from pymilvus.exceptions import MilvusException

        state = read_state(self.dir)
        if state is None:
            return "no readable hot-tier state file"
        if state.get("dim") != self.dim or state.get("kind") != self.kind:
            return f"hot tier built for dim={state.get('dim')} kind={state.get('kind')}"
        self.applied_seq = int(state["applied_seq"])
        name, n = state.get("collection"), state.get("n")
        if not isinstance(name, str) or not isinstance(n, int) or not isinstance(state.get("next_id"), int):
            return "hot-tier state names no Milvus collection"
        try:
            if not self._client.has_collection(name):
                return f"Milvus collection {name} is missing"
            dims = [f.get("params", {}).get("dim") for f in self._client.describe_collection(name)["fields"]
                    if f.get("name") == "vector"]
            if [int(d) for d in dims if d is not None] != [self.dim]:
                return f"Milvus collection {name} does not hold {self.dim}-dimensional vectors"
            self._client.load_collection(name)  # a restarted milvus-lite serves nothing until loaded
            count = int(self._client.query(name, filter="", output_fields=["count(*)"])[0]["count(*)"])
            if count != n:
                return f"Milvus collection {name} has {count} rows, the hot-tier state says {n}"
            rows = self._rows(name, n)
        except (MilvusException, KeyError, IndexError, TypeError, ValueError) as exc:
            return f"Milvus collection {name} unreadable ({type(exc).__name__}: {exc})"
        key_of = {int(r["id"]): (str(r["doc_id"]), str(r["chunk_id"]), int(r["position"]), int(r["valid_from_us"]))
                  for r in rows}
        digest = 0
        for i, k in key_of.items():
            digest = (digest + _row_hash(i, k)) & MASK
        if (len(key_of) != n or len(set(key_of.values())) != n or any(i >= state["next_id"] for i in key_of)
                or f"{digest:032x}" != state.get("rows_digest")):
            return f"Milvus collection {name}: rows differ from the hot-tier state"
        self.collection = name
        self._key_of, self._id_of = key_of, {k: i for i, k in key_of.items()}
        self._next_id, self._digest = int(state["next_id"]), digest
        self._unflushed = True  # a restarted milvus-lite replays its WAL into the memtable
        return None

    def _rows(self, name: str, n: int) -> list[dict]:
        if n == 0:
            return []
        if n <= MAX_TOPK:
            return list(self._client.query(name, filter="id >= 0", output_fields=FIELDS, limit=n))
        it = self._client.query_iterator(name, batch_size=4096, filter="id >= 0", output_fields=FIELDS)
        rows: list[dict] = []
        try:
            while batch := it.next():
                rows.extend(batch)
        finally:
            it.close()
        return rows

    def describe(self) -> dict:
        return {"server": self.server, "collection": self.collection,
                "index": "FLAT (exact)" if self.kind == "milvus" else
                f"HNSW M={self.hnsw[0]} efConstruction={self.hnsw[1]} ef=max({self.hnsw[2]}, limit)",
                "metric": "IP"}
