"""kg_smartvector: the SmartVector spec for sqlite-knowledge-graph (seed 003), served from a real SQLite file.

``index()`` writes the database (:class:`smartvector_bench.systems.kg_smartvector.store.KnowledgeGraph`, schema v3, WAL) to
``db_path`` if configured (it must not exist yet; relative to the working directory), else to
``<temp dir>/kg_smartvector_*/kg.sqlite`` (``tempfile.gettempdir()``; under ``smartvector-bench`` the job's
``<run>/.scratch/``, :mod:`smartvector_bench.core.scratch`), deleted when the retriever is closed or garbage-collected,
or at interpreter exit (the path is in ``describe()``). It ingests one entity per chunk created by ``serve_time``
(entity_type ``chunk``; properties ``chunk_id``, ``doc_id``, ``version``, ``source``; ``created_at`` from the
data; ``base_confidence`` = the chunk's authority; ``decay_rate`` from the config; ``valid_from`` /
``valid_until`` from its metadata, an open end as NULL), its vector in ``kg_vectors``, a ``depends_on`` row per
given dependency and a ``supersedes`` row per supersession (each created when the later of its two chunks
was), then runs the ripple once per superseded entity at its successor's ``valid_from`` (penalty 0.15 at hop
1, 0.075 at hop 2, written to ``kg_feedback``, which live confidence reads from that time on).

``search()`` reads everything back from SQLite (entity columns, vectors, feedback and ripple rows, dependency
rows) whenever the database changed since the last read, and scores every query at its own ``as_of``. The
snapshot is reused only while SQLite's ``PRAGMA data_version`` (bumped by any other connection's commit) and
this connection's ``total_changes`` are both unchanged, i.e. while no write can have happened: re-reading every
table costs more than scoring a batch of queries, so it is done only when something may have changed::

    final = (w1 * clip(cos, 0, 1) + w2 * temporal_validity + w3 * live_confidence + w4 * graph_importance)
            / (w1 + w2 + w3 + w4)

- ``cos``: cosine between the query and the vector read from ``kg_vectors`` (numpy, exact);
- ``temporal_validity``: 1.0 when ``valid_from <= as_of < valid_until``, otherwise
  ``exp(-temporal_decay_rate * days outside the window)`` (days before ``valid_from`` or since
  ``valid_until``);
- ``live_confidence``: the store's formula at ``as_of`` (see :mod:`smartvector_bench.systems.kg_smartvector.store`);
- ``graph_importance``: PageRank over the dependency rows created by ``as_of`` (``supersedes`` excluded), or
  the crate's normalised in-degree (``graph_importance: in_degree``), in [0, 1].

The default weights 0.5 / 0.2 / 0.2 / 0.1 sum to 1, so the division changes nothing for them; it keeps the
score in [0, 1] for any weights (``set_retrieval_weights``). The reported confidence is the top hit's final
score. With ``exclude_created_after_as_of`` (default) an entity created after ``as_of`` is not a candidate
(the graph as it stood then, the ``created_before`` filter); no entity is excluded for being superseded: the
spec has no status filter, only the softer temporal signal. Ties: ``rank_by_score`` (lower corpus index).
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Mapping

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.kg_smartvector.pagerank import graph_importance
from smartvector_bench.systems.kg_smartvector.store import KnowledgeGraph
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.core.settings import choice, section
from smartvector_bench.systems.smartvector.signals.fusion import Weights, fuse, weights_from_config
from smartvector_bench.core.timeutil import format_iso, from_days
from smartvector_bench.systems.base import gather_hits, hit_columns
from smartvector_bench.systems.valid_cosine import require_in_force

DEFAULT_WEIGHTS = {"semantic": 0.5, "temporal": 0.2, "confidence": 0.2, "relational": 0.1}


@dataclass(frozen=True)
class KGParams:
    decay_rate: float = 0.05           # lambda of the confidence decay, per day (each entity's decay_rate)
    access_bonus: float = 0.1          # * ln(1 + access_count)
    temporal_decay_rate: float = 0.05  # temporal_validity = exp(-rate * days outside the window)
    graph_importance: str = choice("pagerank", "in_degree")
    damping: float = 0.85              # PageRank damping, in [0, 1)
    ripple_penalty: float = 0.15       # at hop 1, halved per hop
    ripple_max_depth: int = 2
    exclude_created_after_as_of: bool = True
    query_batch: int = 256             # queries scored per block (bounds the (Q, N) arrays)
    POSITIVE: ClassVar[tuple[str, ...]] = ("query_batch",)


TOP_LEVEL = {"weights", "db_path", *KGParams.__dataclass_fields__}


def temporal_validity(valid_from: np.ndarray, valid_until: np.ndarray, as_of: np.ndarray,
                      rate: float) -> np.ndarray:
    """(Q, N): 1 inside [valid_from, valid_until) at each as_of, else exp(-rate * days outside)."""
    t = np.asarray(as_of, dtype=np.float64)[:, None]
    # before > 0 only when t < valid_from, after > 0 only when t > valid_until (valid_from < valid_until), so
    # at most one of the two is non-zero and their sum is the days outside, exactly (x + 0.0 == x).
    outside = np.maximum(valid_from[None, :] - t, 0.0)  # -inf start: 0
    outside += np.maximum(t - valid_until[None, :], 0.0)  # +inf end: 0
    outside *= -rate
    return np.exp(outside, out=outside)


def _rank_top_k(key: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``rank_by_score(key, k)``, identical output, without sorting whole rows: per row, the columns scoring at
    least the k-th largest value (ties at the boundary included) hold the first k of the full order (score
    descending, then column ascending), so only they are sorted. Rows with fewer than k finite scores (and any
    NaN) go through ``rank_by_score`` itself."""
    q, c = key.shape
    if k <= 0 or c <= 4 * k or q == 0 or np.isnan(key).any():
        return rank_by_score(key, k)
    kth = np.partition(key, c - k, axis=1)[:, c - k]
    easy = np.isfinite(kth)
    ranked = np.empty((q, k), dtype=np.int64)
    top = np.empty((q, k), dtype=np.float64)
    if (~easy).any():
        ranked[~easy], top[~easy] = rank_by_score(key[~easy], k)
    rows = np.nonzero(easy)[0]
    if len(rows):
        sub = key[rows]
        rr, cc = np.nonzero(sub >= kth[rows, None])
        counts = np.bincount(rr, minlength=len(rows))
        width = int(counts.max())
        pos = np.arange(len(rr)) - np.repeat(np.cumsum(counts) - counts, counts)
        cand = np.full((len(rows), width), c, dtype=np.int64)  # padding: column c, score -inf (sorts last)
        score = np.full((len(rows), width), -np.inf, dtype=sub.dtype)
        cand[rr, pos] = cc
        score[rr, pos] = sub[rr, cc]
        ranked[rows], top[rows] = rank_by_score(score, k, candidates=cand)
    return ranked, top


class KGSmartVector:
    name = "kg_smartvector"

    def __init__(self, name: str = "kg_smartvector", **cfg):
        where = f"retrievers.{name}"
        self.name = name
        self.where = where
        cfg = dict(cfg or {})
        unknown = sorted(set(cfg) - TOP_LEVEL)
        if unknown:
            raise BenchError(f"{where}.{unknown[0]}: unknown key; allowed: {', '.join(sorted(TOP_LEVEL))}")
        self.weights = KGSmartVector.fusion_weights(cfg, where)
        self.params = section(KGParams, {k: v for k, v in cfg.items() if k in KGParams.__dataclass_fields__}, where)
        if not self.params.damping < 1.0:
            raise BenchError(f"{where}.damping={self.params.damping}: must be in [0, 1)")
        db_path = cfg.get("db_path")
        if db_path is not None and (not isinstance(db_path, str) or not db_path):
            raise BenchError(f"{where}.db_path={db_path!r}: must be null (a temporary file) or a file path")
        self.db_path = db_path
        self.kg: KnowledgeGraph | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None

    def check_dataset(self, corpus: Corpus) -> None:
        require_in_force(self.name, corpus,  # created_only: windows [created_at, +inf), no chains, no edges
                         "each entity's creation time and validity window drive its confidence decay and "
                         "temporal validity")

    # -- weights -------------------------------------------------------------------------------------------
    def set_retrieval_weights(self, w1: float, w2: float, w3: float, w4: float) -> None:
        """Weights of cosine, temporal validity, live confidence and graph importance for later searches."""
        self.weights = weights_from_config({"semantic": w1, "temporal": w2, "confidence": w3, "relational": w4},
                                           "set_retrieval_weights")

    # -- ingest --------------------------------------------------------------------------------------------
    def _open_db(self) -> Path:
        self.close()
        if self.db_path is None:
            # Removed by close(), on garbage collection or at exit (TemporaryDirectory's own finalizer); a
            # folder already gone (job_scratch removed the whole scratch) is no error.
            self._tmp = tempfile.TemporaryDirectory(prefix="kg_smartvector_", dir=tempfile.gettempdir(),
                                                    ignore_cleanup_errors=True)
            path = Path(self._tmp.name) / "kg.sqlite"
        else:
            path = Path(self.db_path)
            if path.exists():
                raise BenchError(f"{self.where}.db_path={self.db_path}: file exists; the benchmark builds the "
                                 "database from scratch: remove it or choose another path")
            path.parent.mkdir(parents=True, exist_ok=True)
        p = self.params
        self.kg = KnowledgeGraph(path, access_bonus=p.access_bonus, default_decay_rate=p.decay_rate,
                                 ripple_penalty=p.ripple_penalty, ripple_max_depth=p.ripple_max_depth)
        self.path = path
        return path

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        n = len(corpus)
        if len(vectors) != n:
            raise BenchError(f"{self.name}: {len(vectors)} vectors for {n} chunks")
        self._open_db()
        self._snap_cache = None
        kg = self.kg
        self._index_of = {cid: i for i, cid in enumerate(corpus.ids)}
        rows = np.nonzero(corpus.created_at <= serve_time)[0]
        ent = np.full(n, -1, dtype=np.int64)
        ripples = []
        with kg.transaction():
            for i in rows:
                ent[i] = kg.insert_entity(
                    "chunk", corpus.ids[i],
                    {"chunk_id": corpus.ids[i], "doc_id": str(corpus.doc_id[i]), "version": int(corpus.version[i]),
                     "source": str(corpus.source[i])},
                    at=float(corpus.created_at[i]), base_confidence=float(corpus.authority[i]),
                    valid_from=float(corpus.valid_from[i]), valid_until=float(corpus.valid_to[i]))
                kg.set_vector(int(ent[i]), vectors[i])
            for i in rows:
                for j in corpus.depends_on.row(i):
                    if ent[j] >= 0 and j != i:
                        kg.add_dependency(int(ent[i]), int(ent[j]), "depends_on",
                                          at=float(max(corpus.created_at[i], corpus.created_at[j])))
                old = int(corpus.supersedes[i])
                if old >= 0 and ent[old] >= 0:
                    kg.add_dependency(int(ent[i]), int(ent[old]), "supersedes",
                                      at=float(max(corpus.created_at[i], corpus.created_at[old])))
                    ripples.append((float(corpus.valid_from[i]), int(ent[old])))
            for at, changed in sorted(ripples):  # chronological, so the log reads in order
                kg.ripple(changed, at)
        self.n_corpus = n
        self.serve_time = float(serve_time)
        self.n_ripples = len(ripples)

    # -- scoring -------------------------------------------------------------------------------------------
    def _snapshot(self) -> dict:
        """The state retrieval uses, read from SQLite (entities with a vector only); re-read whenever any
        connection may have written since the last read (see the module doc)."""
        if self.kg is None:
            raise BenchError(f"{self.name}: search() before index()")
        kg = self.kg
        stamp = (kg.conn.execute("PRAGMA data_version").fetchone()[0], kg.conn.total_changes, id(kg))
        cached = getattr(self, "_snap_cache", None)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        snap = self._read_snapshot()
        self._snap_cache = (stamp, snap)
        return snap

    def _read_snapshot(self) -> dict:
        kg = self.kg
        cols = kg.entity_columns()
        vec_ids, mat = kg.vectors()
        has = np.isin(cols["id"], vec_ids)
        cols = {k: v[has] for k, v in cols.items()}
        mat = mat[np.searchsorted(vec_ids, cols["id"])].astype(np.float64)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        mat = np.divide(mat, norms, out=np.zeros_like(mat), where=norms > 0)
        # the chunk id out of each entity's JSON properties, extracted by SQLite (JSON1) rather than
        # json.loads per entity in Python
        chunk_of = dict(kg.conn.execute("SELECT id, json_extract(properties, '$.chunk_id') FROM kg_entities"))
        corpus_col = np.array([self._corpus_index(chunk_of[int(e)]) for e in cols["id"]], dtype=np.int64)
        all_ids = np.array([r[0] for r in kg.conn.execute("SELECT id FROM kg_entities ORDER BY id")], dtype=np.int64)
        deps = kg.dependencies()
        return {"cols": cols, "vectors": mat, "corpus_col": corpus_col, "all_ids": all_ids, "deps": deps,
                "keep": np.searchsorted(all_ids, cols["id"])}

    def _corpus_index(self, chunk_id) -> int:
        if chunk_id not in self._index_of:
            raise BenchError(f"{self.name}: entity for chunk {chunk_id!r} is not in the indexed corpus")
        return self._index_of[chunk_id]

    def _importance(self, snap: dict, as_of: np.ndarray) -> np.ndarray:
        """(Q, N) graph importance over the dependency rows created by each query's as_of."""
        deps, all_ids = snap["deps"], snap["all_ids"]
        src = np.searchsorted(all_ids, deps["source"])
        dst = np.searchsorted(all_ids, deps["target"])
        order = np.argsort(deps["created_at"], kind="stable")
        created = deps["created_at"][order]
        uniq, inverse = np.unique(as_of, return_inverse=True)
        cache: dict[int, np.ndarray] = {}
        rows = []
        for u in uniq:
            m = int(np.searchsorted(created, u, side="right"))  # rows created at or before u
            if m not in cache:
                sel = order[:m]
                g = graph_importance(len(all_ids), src[sel], dst[sel], deps["dep_type"][sel],
                                     self.params.graph_importance, self.params.damping)
                cache[m] = g[snap["keep"]]
            rows.append(cache[m])
        return np.stack(rows)[inverse] if rows else np.zeros((0, len(snap["keep"])))

    def _block(self, snap: dict, query_vectors: np.ndarray, as_of: np.ndarray) -> dict[str, np.ndarray]:
        """The four signals, the fused score and the candidate mask, (Q, N entities)."""
        cols = snap["cols"]
        q = np.asarray(query_vectors, dtype=np.float64)
        qn = np.linalg.norm(q, axis=1, keepdims=True)
        q = np.divide(q, qn, out=np.zeros_like(q), where=qn > 0)
        t = np.asarray(as_of, dtype=np.float64)
        sig = {"semantic": q @ snap["vectors"].T,
               "temporal": temporal_validity(cols["valid_from"], cols["valid_until"], t,
                                             self.params.temporal_decay_rate),
               "confidence": self.kg.confidence_matrix(t, cols),
               "relational": self._importance(snap, t)}
        sig["final"] = fuse(self.weights, sig["semantic"], sig["temporal"], sig["confidence"], sig["relational"])
        candidate = np.ones_like(sig["final"], dtype=bool)
        if self.params.exclude_created_after_as_of:
            candidate &= cols["created_at"][None, :] <= t[:, None]
        sig["candidate"] = candidate
        return sig

    def signals(self, query_vectors: np.ndarray, as_of: np.ndarray) -> dict[str, np.ndarray]:
        """The four signals and final score per query and corpus row, (Q, len(corpus)); NaN for chunks not in
        the database (created after serve_time), ``candidate`` False there. For tests and explanations."""
        snap = self._snapshot()
        sig = self._block(snap, query_vectors, np.asarray(as_of, dtype=np.float64))
        out = {}
        for key, val in sig.items():
            fill = False if key == "candidate" else np.nan
            full = np.full((len(query_vectors), self.n_corpus), fill, dtype=val.dtype)
            full[:, snap["corpus_col"]] = val
            out[key] = full
        return out

    @classmethod
    def fusion_weights(cls, config: Mapping, where: str) -> Weights | None:
        """``base.FusesSignals``: the config's ``weights``, else :data:`DEFAULT_WEIGHTS` (the crate's)."""
        weights = config.get("weights")
        if weights is not None and not isinstance(weights, Mapping):
            raise BenchError(f"{where}.weights={weights!r}: must be a mapping of "
                             "semantic / temporal / confidence / relational")
        return weights_from_config(dict(DEFAULT_WEIGHTS if weights is None else weights), f"{where}.weights")

    def hit_signals(self, query_vectors: np.ndarray, as_of: np.ndarray, ranked: np.ndarray) -> dict[str, np.ndarray]:
        """The four signals of each ranked hit (``base.ScoresHits``; ``relational`` is graph importance): the
        formulas of :meth:`_block` on each query block's distinct hit entities (graph importance, a property of
        the whole graph, per block as search computes it)."""
        snap = self._snapshot()
        cols, ranked = snap["cols"], np.asarray(ranked, dtype=np.int64)
        pos_of = np.full(self.n_corpus + 1, -1, dtype=np.int64)  # corpus row -> entity position; -1 stays -1
        pos_of[snap["corpus_col"]] = np.arange(len(snap["corpus_col"]))
        q = np.asarray(query_vectors, dtype=np.float64)
        qn = np.linalg.norm(q, axis=1, keepdims=True)
        q = np.divide(q, qn, out=np.zeros_like(q), where=qn > 0)
        t = np.asarray(as_of, dtype=np.float64)
        out = {key: np.full(ranked.shape, np.nan) for key in ("semantic", "temporal", "confidence", "relational")}
        for lo in range(0, len(ranked), self.params.query_batch):
            b = slice(lo, lo + self.params.query_batch)
            ents, col = hit_columns(pos_of[ranked[b]])  # positions ascend with entity id, as cols are sorted
            sub = {key: v[ents] for key, v in cols.items()}
            sig = {"semantic": q[b] @ snap["vectors"][ents].T,
                   "temporal": temporal_validity(sub["valid_from"], sub["valid_until"], t[b],
                                                 self.params.temporal_decay_rate),
                   "confidence": self.kg.confidence_matrix(t[b], sub),
                   "relational": self._importance(snap, t[b])[:, ents]}
            for key, values in sig.items():
                out[key][b] = gather_hits(values, col)
        return out

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **_ignored) -> Run:
        snap = self._snapshot()
        nq = len(query_vectors)
        ranked = np.full((nq, k), -1, dtype=np.int64)
        scores = np.full((nq, k), np.nan)
        confidence = np.full(nq, np.nan)
        as_of = np.asarray(as_of, dtype=np.float64)
        for lo in range(0, nq, self.params.query_batch):
            hi = min(nq, lo + self.params.query_batch)
            sig = self._block(snap, query_vectors[lo:hi], as_of[lo:hi])
            key = np.full((hi - lo, self.n_corpus), -np.inf)
            key[:, snap["corpus_col"]] = np.where(sig["candidate"], sig["final"], -np.inf)
            r, top = _rank_top_k(key, k)
            ranked[lo:hi], scores[lo:hi] = r, top
            has = r[:, 0] >= 0
            confidence[lo:hi] = np.where(has, np.clip(top[:, 0], 0.0, 1.0), np.nan)
        return Run(self.name, ranked, scores, confidence)

    def describe(self) -> dict:
        kg = self.kg
        info = {"confidence": "top-1 final four-signal score (weights normalised to sum 1), in [0, 1]",
                "weights": dataclasses.asdict(self.weights),
                "params": dataclasses.asdict(self.params)}
        if kg is None:
            return info
        info.update({
            "db_path": str(self.path),
            "db_kept": self.db_path is not None,
            "schema_version": kg.schema_version(),
            "journal_mode": kg.journal_mode(),
            "serve_time": format_iso(from_days(self.serve_time)),
            "counts": kg.counts(),
            "ripples_run": self.n_ripples,
            "temporal_validity": f"1 inside [valid_from, valid_until), else "
                                 f"exp(-{self.params.temporal_decay_rate} * days outside)",
            "graph_importance": (f"PageRank (damping {self.params.damping:.2f}; depends_on / depended_by edges, supersedes and "
                                 "contradicts excluded), / max"
                                 if self.params.graph_importance == "pagerank"
                                 else "crate v0.13: in-degree over all dependency types / max"),
        })
        return info

    def close(self) -> None:
        if self.kg is not None:
            self.kg.close()
            self.kg = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
