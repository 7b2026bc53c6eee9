"""SmartVector: four-signal retrieval over FAISS, with temporal validity, a live confidence and dependency
edges (arXiv 2604.20598), defaults from the reference implementation (``smartvector-rag`` 0.1.1).

Every signal is computed vectorised over columnar arrays at each query's ``as_of`` time:
    score = (w_s * clip(cos, 0, 1) + w_t * T + w_c * C + w_r * R) / (w_s + w_t + w_c + w_r)

Statuses are judged at ``as_of`` too: DEPRECATED (superseded by a version in force) and ARCHIVED vectors are
excluded, as the reference's query does; DORMANT vectors (live confidence below the threshold) stay
searchable but are ranked after every non-dormant one (the paper: "searchable but deprioritized"; the
reference excludes them) - ``dormant: include | deprioritize | exclude``. With
``exclude_created_after_as_of`` (default) a vector created after ``as_of`` is not a candidate: the store is
judged as it stood then (otherwise a future version, outside its window but undecayed, can outrank the
version in force on a historical query).

Reported confidence (``reported_confidence``): ``score`` (default) is the top hit's four-signal score above,
which lies in [0, 1]; ``live_confidence`` is the top hit's live confidence C.

Search modes (``candidates``)
-----------------------------
``candidates: null`` (default, exhaustive): every vector is scored for every query. ``kernel: float32``
(default): per block of BLAS cosines, a branch-free float32 pass keeps the best float32 keys per query, which
are re-scored in float64 by ``scoring.fused`` and certified by a bound of the float32 rounding
(``f32_kernel.py``): the top k of ``score()``, ids and order, scored by ``fused`` from the pass's own float32
cosines (bit for bit where sgemm rounds a cosine alike in products of any shape); a query the bound cannot
certify even with 4,096 kept is scored by the numpy kernel (``last_search["uncertified_queries"]``).
``kernel: numba``: one compiled float64 pass over blocks of BLAS cosines keeps a size-k heap per query and computes the
signals only where a bound of the key can still enter it (``fused_kernel.py``); same top k, scores within an
ulp of ``score()`` (libm's ``exp2`` against numpy's). ``kernel: numpy``: queries go in blocks sized so the
(Q, N) working arrays stay under ``memory_budget_mb`` (and at most ``query_batch``); the signals are fused in
place (no per-signal (Q, N) temporaries beyond two scratch arrays) and the top k are selected with a partition
before the tie rule sorts them. Every floating-point operation is the one the unfused formulas do, in the same
order, so its results are bit-identical to the unfused ``score()``. ``precision: float32`` (numpy kernel only)
halves the arrays but changes scores in the 7th digit and is not the default.

``candidates: C`` (re-ranking): FAISS returns the top-C rows by cosine per query (``index: flat`` exact, or
``index: hnsw`` with ``hnsw_m`` / ``hnsw_ef_construction`` / ``hnsw_ef_search``), and the four signals and
status rules are computed only on candidates, by gathering the columnar arrays at each query's as_of, ranked
with the same tie rule. Cosine alone is a poor candidate generator for this score: with the paper's weights
0.65 of it does not depend on the query text, and the exhaustive top-1 is often far down the cosine order.
So candidates also come from the other side: queries are grouped by as_of (groups at most
``group_days`` wide), and per group an upper bound ``B_j`` of each vector's query-independent part of the
rank key over the group's span is computed from the columns (T and C only decay with time, exclusions and
dormancy only start); the ``prior_candidates`` vectors with the highest bound (null:
``max(C, prior_share * N)``) join every query's candidates, their cosines taken from FAISS's stored vectors by
one BLAS product per group. The bound is not computed for every vector: vectors are kept in blocks of ``BLOCK`` rows of the decay-start order, each block
bounded from its columns' extremes, and only the blocks that can hold the top bounds are evaluated. Per query, the cosine candidates and the prior candidates with the best
``w_s clip(cos) / W + B`` are scored a few dozen at a time (4x more while an unscored one could still enter
the top k). A vector outside both lists has cosine <= the C-th candidate's and bound <= the (P+1)-th bound,
so its key is at most ``w_s * clip(cos_C) / W + B_(P+1)``. With ``certify: true`` (default) a query whose k-th
key is not above that limit gets, in one step, every vector whose bound reaches ``k-th key - w_s clip(cos_C) /
W`` as a prior candidate (so the retry certifies), unless that is more than ``max_prior_share * N``: then it is
scored exhaustively (``fallback_queries``). With a flat index the re-ranked run is therefore the exhaustive
one, up to float32 rounding of the prior candidates' cosines (~1e-7; tests check equal top-k on the scale
data). HNSW gives no cosine bound: no certification, approximate. ``last_search`` reports groups, widened and
fallback queries and vectors scored per query.

Where: this module holds the configuration, ingest, the reference ``score()`` (``signals/`` composed: the
specification) and the search dispatch; ``scoring`` the numpy fast path, ``fused_kernel`` the compiled one,
``bounds`` and ``rerank`` the re-ranking mode.

``tools.perf.search.metadata_bytes(retriever)`` accounts the per-vector state the search reads (the store's
exact compact columns, the cached relational signal) and the dependency edges against the FAISS index's bytes.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Mapping

import numpy as np

from smartvector_bench.systems.smartvector.consolidation import (
    ConsolidationAgent, ConsolidationParams, consolidate, consolidation_summary,
)
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.index import build_index
from smartvector_bench.systems.smartvector.lifecycle import Status, deprecated_at, statuses_at
from smartvector_bench.systems.smartvector.ripple import RippleParams
from smartvector_bench.core.run import Run
from smartvector_bench.core.settings import section
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams, is_dormant, live_confidence
from smartvector_bench.systems.smartvector.store import StoreParams, VectorStore
from smartvector_bench.systems.smartvector.signals.fusion import Weights, fuse, weights_from_config
from smartvector_bench.systems.smartvector.signals.relational import RelationalParams, relational_signal
from smartvector_bench.systems.smartvector.signals.temporal import TemporalParams, temporal_signal
from smartvector_bench.core.timeutil import format_iso, from_days
from smartvector_bench.systems.base import gather_hits, hit_columns
from smartvector_bench.systems.valid_cosine import require_in_force
from smartvector_bench.systems.smartvector.compact import ExactColumn
from smartvector_bench.systems.smartvector.f32_kernel import exhaustive_top_k_f32
from smartvector_bench.systems.smartvector.fused_kernel import exhaustive_top_k
from smartvector_bench.systems.smartvector.rerank import rerank
from smartvector_bench.systems.smartvector.scoring import Columns, columns, fused, top_k_by_key
from smartvector_bench.systems.smartvector.params import EXCLUDABLE, SearchParams, StatusPolicy, search_params

TOP_LEVEL = {"weights", "temporal", "confidence", "relational", "consolidation", "lifecycle",
             "exclude_statuses", *StatusPolicy.__dataclass_fields__, *SearchParams.__dataclass_fields__}

# Bytes per (query, vector) entry of the exhaustive path's working set: FAISS's float32 scores and int64 ids,
# the dense float64 cosine (becomes the score), the key, two scratch arrays (temporal, confidence), the
# partition copy, and boolean masks.
_BYTES_PER_ENTRY = {"float64": 4 + 8 + 8 + 8 + 8 + 8 + 8 + 4, "float32": 4 + 8 + 4 + 4 + 8 + 4 + 4 + 4}


class SmartVector:
    name = "smartvector"
    rank_key = "dormant vectors last"  # RanksByKey: the score is the fused score

    def __init__(self, name: str = "smartvector", **cfg):
        where = f"retrievers.{name}"
        self.name = name
        unknown = sorted(set(cfg) - TOP_LEVEL)
        if unknown:
            raise BenchError(f"{where}.{unknown[0]}: unknown key; allowed: {', '.join(sorted(TOP_LEVEL))}")
        self.weights = SmartVector.fusion_weights(cfg, where)
        self.temporal = section(TemporalParams, cfg.get("temporal"), f"{where}.temporal")
        self.conf_params = section(ConfidenceParams, cfg.get("confidence"), f"{where}.confidence")
        self.rel = section(RelationalParams, cfg.get("relational"), f"{where}.relational")
        cons = dict(cfg.get("consolidation") or {})
        ripple_params = section(RippleParams, cons.get("ripple"), f"{where}.consolidation.ripple")
        self.cons_params = section(ConsolidationParams, cons, f"{where}.consolidation", {"ripple": ripple_params})
        self.store_params = section(StoreParams, cfg.get("lifecycle"), f"{where}.lifecycle")
        policy = {k: cfg[k] for k in StatusPolicy.__dataclass_fields__ if k in cfg}
        self.policy = section(StatusPolicy, policy, where)
        self.search_params = search_params(cfg, where)
        exclude = cfg.get("exclude_statuses", ["DEPRECATED", "ARCHIVED"])
        if not isinstance(exclude, (list, tuple)):
            raise BenchError(f"{where}.exclude_statuses={exclude!r}: must be a list; allowed: {', '.join(EXCLUDABLE)}")
        self.exclude = list(exclude)
        for s in self.exclude:
            if s not in EXCLUDABLE:
                raise BenchError(f"{where}.exclude_statuses: {s!r} unknown; allowed: {', '.join(EXCLUDABLE)}")
        self.last_search: dict = {}
        self._kernel_info: dict = {}  # the exhaustive kernel's counters for last_search

    def check_dataset(self, corpus: Corpus) -> None:
        require_in_force(self.name, corpus,  # created_only: windows [created_at, +inf), no chains, no edges
                         "its temporal signal and confidence decay read each chunk's age and validity window")

    # -- ingest + consolidation ----------------------------------------------------------------------------
    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        """Frozen form: everything created by ``serve_time`` ingested and consolidated once there."""
        state = consolidate(corpus, serve_time, self.cons_params, vectors, self.conf_params, self.store_params)
        self.bind(corpus, vectors, state.store, state.agent)
        self.serve_time = serve_time
        # The store's statuses when serving starts (reported in describe(); queries judge their own as_of).
        at = np.array([serve_time])
        dormant = is_dormant(self.store.live_confidence(at), self.conf_params)
        codes = statuses_at(self.store.superseded_by, corpus.valid_from, corpus.created_at, serve_time, dormant,
                            self.store.archived_at <= serve_time, at)[0]
        self.status_counts = {s.name: int((codes == s).sum()) for s in Status}

    def bind(self, corpus: Corpus, vectors: np.ndarray, store: VectorStore, agent: ConsolidationAgent) -> None:
        """Serve from a given (possibly live, changing) store and consolidation agent."""
        sp = self.search_params
        self.corpus = corpus
        self._index = build_index(vectors, sp.index, sp.hnsw_m, sp.hnsw_ef_construction, sp.hnsw_ef_search)
        self.store = store
        self.agent = agent
        self._relational_key = None

    # -- capabilities (base.py): the consolidation audit, and the live store of experiment=feedback_loop ------
    def contradiction_detection(self, rumor) -> dict:
        from smartvector_bench.systems.smartvector.audit import detection_quality

        return detection_quality(self.store, self.agent, rumor)

    def bind_live(self, corpus: Corpus, vectors: np.ndarray) -> tuple[VectorStore, ConsolidationAgent]:
        store = VectorStore(corpus, self.conf_params, self.store_params)
        agent = ConsolidationAgent(corpus, self.cons_params, vectors)
        self.bind(corpus, vectors, store, agent)
        return store, agent

    def live_state(self) -> tuple[VectorStore, ConsolidationAgent]:
        return self.store, self.agent

    def query_signals(self, query_vector: np.ndarray, as_of: float):
        score, key, sig = self.score(self._index.dense_scores(query_vector[None, :]), np.array([as_of]))
        return score, key, sig, self.weights

    def relational(self) -> np.ndarray:
        """R per vector from the edges known at the agent's last run (recomputed only after a new run)."""
        at = self.agent.last_run if self.agent.last_run is not None else -np.inf
        key = (at, self.agent.edge_version)
        if key != self._relational_key:  # kept exact and compact between searches (compact.ExactColumn)
            self._relational = ExactColumn(relational_signal(self.agent.edge_count(at), self.rel.per_edge,
                                                             self.rel.cap))
            self._relational_key = key
        return self._relational.values()

    # -- scoring: the reference (unfused, one (Q, N) array per signal) ---------------------------------------
    def signals(self, semantic: np.ndarray, as_of: np.ndarray) -> dict[str, np.ndarray]:
        """The four signals and status masks, each (Q, N), at each query's as_of."""
        c, st = self.corpus, self.store
        t = np.asarray(as_of, dtype=np.float64)[:, None]
        temporal = temporal_signal(c.created_at, c.valid_from, c.valid_to, as_of, self.temporal.half_life_days,
                                   self.temporal.expired_score)
        confidence = st.live_confidence(as_of)
        relational = np.broadcast_to(self.relational(), semantic.shape)
        return {"semantic": semantic, "temporal": temporal, "confidence": confidence, "relational": relational,
                "dormant": is_dormant(confidence, self.conf_params),
                "deprecated": deprecated_at(st.superseded_by, c.valid_from, as_of),
                "archived": t >= st.archived_at[None, :],
                # not in the store at as_of: created later, or (live replay) not ingested yet
                "future": (t < c.created_at[None, :]) | (t < st.ingested_at[None, :])}

    @classmethod
    def fusion_weights(cls, config: Mapping, where: str) -> Weights | None:
        """``base.FusesSignals``: the ``weights`` group of a (recorded) config; no default."""
        return weights_from_config(dict(config.get("weights") or {}), f"{where}.weights")

    def hit_signals(self, query_vectors: np.ndarray, as_of: np.ndarray, ranked: np.ndarray) -> dict[str, np.ndarray]:
        """The four signals of each ranked hit (``base.ScoresHits``): :meth:`signals`' formulas on each query
        block's distinct hits only, the cosine from the stored float32 vectors as the kernels take it."""
        c, st, tp = self.corpus, self.store, self.temporal
        ranked, t = np.asarray(ranked, dtype=np.int64), np.asarray(as_of, dtype=np.float64)
        q = np.ascontiguousarray(query_vectors, dtype=np.float32)
        base, rel, stored = st.base_confidence, self.relational(), self._index.stored()
        out = {key: np.full(ranked.shape, np.nan) for key in ("semantic", "temporal", "confidence", "relational")}
        for lo in range(0, len(ranked), self.policy.query_batch):
            b = slice(lo, lo + self.policy.query_batch)
            rows, col = hit_columns(ranked[b])
            sig = {"semantic": (q[b] @ stored[rows].T).astype(np.float64),
                   "temporal": temporal_signal(c.created_at[rows], c.valid_from[rows], c.valid_to[rows], t[b],
                                               tp.half_life_days, tp.expired_score),
                   "confidence": live_confidence(base[rows], st.decay_from(rows), t[b], st.positive[rows],
                                                 st.negative[rows], st.access[rows], self.conf_params),
                   "relational": rel[rows]}
            for key, values in sig.items():
                out[key][b] = gather_hits(values, col)
        return out

    def score(self, semantic: np.ndarray, as_of: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
        """(score, rank_key, signals): rank_key applies the status policy; score is the fused value."""
        sig = self.signals(semantic, as_of)
        score = fuse(self.weights, sig["semantic"], sig["temporal"], sig["confidence"], sig["relational"])
        key = score.copy()
        if self.policy.dormant == "deprioritize":
            key = np.where(sig["dormant"], key - 2.0, key)  # scores lie in [0, 1]: dormant ranks after all others
        excluded = np.zeros_like(key, dtype=bool)
        if self.policy.dormant == "exclude" or "DORMANT" in self.exclude:
            excluded |= sig["dormant"]
        if "DEPRECATED" in self.exclude:
            excluded |= sig["deprecated"]
        if "ARCHIVED" in self.exclude:
            excluded |= sig["archived"]
        if self.policy.exclude_created_after_as_of:
            excluded |= sig["future"]
        key[excluded] = -np.inf
        return score, key, sig

    def _excludes_dormant(self) -> bool:
        return self.policy.dormant == "exclude" or "DORMANT" in self.exclude

    # -- search --------------------------------------------------------------------------------------------
    def exhaustive_batch(self) -> int:
        """Queries per block of the exhaustive path: at most query_batch, and (Q, N) arrays under the budget."""
        sp = self.search_params
        per_query = max(1, len(self.corpus)) * _BYTES_PER_ENTRY[sp.precision]
        return max(1, min(self.policy.query_batch, int(sp.memory_budget_mb * 2**20) // per_query))

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **_ignored) -> Run:
        q = len(query_vectors)
        as_of = np.asarray(as_of, dtype=np.float64)
        out = (np.full((q, k), -1, dtype=np.int64), np.full((q, k), np.nan), np.full(q, np.nan))
        cols = columns(self)
        t0 = time.perf_counter()
        c = self.search_params.candidates
        self._kernel_info = {}
        if c is None or q == 0:
            self._exhaustive(cols, query_vectors, as_of, k, np.arange(q), out)
            self.last_search = {"mode": "exhaustive", "queries": q, "batch": self.exhaustive_batch(),
                                "kernel": self.search_params.kernel, **self._kernel_info}
        else:
            rerank(self, cols, query_vectors, as_of, k, out)
        self.last_search["seconds"] = time.perf_counter() - t0
        return Run(self.name, *out)

    def _emit(self, rows: np.ndarray, ranked: np.ndarray, fused: np.ndarray, conf_top: np.ndarray | None,
              out: tuple) -> None:
        """Write ranked ids, their fused scores and the reported confidence for query rows ``rows``."""
        valid = ranked >= 0
        out[0][rows] = ranked
        out[1][rows] = np.where(valid, fused, np.nan)
        has = valid[:, 0] if ranked.shape[1] else np.zeros(len(rows), dtype=bool)
        conf = fused[:, 0] if self.policy.reported_confidence == "score" else conf_top
        out[2][rows] = np.where(has, np.clip(conf, 0.0, 1.0), np.nan)

    def _exhaustive(self, cols: Columns, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
                    rows: np.ndarray, out: tuple) -> None:
        sp = self.search_params
        if sp.kernel == "float32" and sp.precision == "float64":
            ranked, top, conf_top, rest = exhaustive_top_k_f32(self, cols, self._index.stored(), query_vectors[rows],
                                                               as_of[rows], k)
            self._emit(rows, ranked, top, conf_top, out)
            self._kernel_info["uncertified_queries"] = self._kernel_info.get("uncertified_queries", 0) + len(rest)
            if not len(rest):
                return
            rows, sp = rows[rest], replace(sp, kernel="numpy")  # the specification's own path for the rest
        if sp.kernel == "numba" and sp.precision == "float64":
            w, tp, cp, pol = self.weights, self.temporal, self.conf_params, self.policy
            fp = np.array([tp.half_life_days, tp.expired_score, cp.half_life_days, cp.min_confidence,
                           cp.dormant_threshold, w.semantic, w.temporal, w.confidence, w.total(),
                           float(cols.rel.max(initial=0.0))])
            flags = np.array([pol.dormant == "deprioritize", self._excludes_dormant(), "DEPRECATED" in self.exclude,
                              "ARCHIVED" in self.exclude, pol.exclude_created_after_as_of])
            ranked, top, conf_top = exhaustive_top_k(self._index.stored(), query_vectors[rows], as_of[rows], cols,
                                                       fp, flags, k)
            self._emit(rows, ranked, top, conf_top, out)
            return
        dtype = np.float64 if sp.precision == "float64" else np.float32
        need_conf = self.policy.reported_confidence == "live_confidence"
        batch = self.exhaustive_batch()
        for lo in range(0, len(rows), batch):
            sel = rows[lo:lo + batch]
            semantic = self._index.dense_scores(query_vectors[sel])
            score, key, conf = fused(self, cols, semantic, as_of[sel], None, dtype, need_conf)
            del semantic
            ranked = top_k_by_key(key, k)
            r = np.arange(len(sel))[:, None]
            at = np.where(ranked >= 0, ranked, 0)
            top = score[r, at].astype(np.float64)
            conf_top = conf[r[:, 0], at[:, 0]].astype(np.float64) if need_conf else None
            self._emit(sel, ranked, top, conf_top, out)

    def describe(self) -> dict:
        reported = self.policy.reported_confidence
        out = {"confidence": f"reported_confidence={reported}: " + (
                    "top-1 four-signal score (weights normalised to sum 1), in [0, 1]" if reported == "score"
                    else "top-1 live confidence C at as_of"),
               "consolidation": consolidation_summary(self.store, self.agent),
               "serve_time": format_iso(from_days(self.serve_time)),
               "status_policy": {"exclude": self.exclude, "dormant": self.policy.dormant,
                                 "exclude_created_after_as_of": self.policy.exclude_created_after_as_of},
               "statuses_at_serve_time": self.status_counts}
        sp = self.search_params
        if sp.candidates is not None:
            out["search"] = {"candidates": sp.candidates, "prior_candidates": sp.prior_candidates,
                             "certify": sp.certify, "group_days": sp.group_days, "index": sp.index,
                             "last": {k: v for k, v in self.last_search.items() if "seconds" not in k}}
        return out
