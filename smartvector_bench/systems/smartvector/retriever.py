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
``candidates: null`` (default, exhaustive): every vector is scored for every query. ``kernel: numba``
(default): one compiled pass over blocks of BLAS cosines keeps a size-k heap per query and computes the
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
0.65 of it does not depend on the query text, and the exhaustive top-1 is often far down the cosine order
(on the default dataset at cosine rank 229 of 258 at worst; the top-50 by cosine holds it for only 52% of
the queries). So candidates also come from the other side: queries are grouped by as_of (groups at most
``group_days`` wide), and per group an upper bound ``B_j`` of each vector's query-independent part of the
rank key over the group's span is computed from the columns (T and C only decay with time, exclusions and
dormancy only start); the ``prior_candidates`` vectors with the highest bound (null:
``max(C, prior_share * N)``) join every query's candidates, their cosines taken from FAISS's stored vectors by
one BLAS product per group. The bound is not computed for every vector: vectors are kept in blocks of ``BLOCK`` rows of the decay-start order, each block
bounded from its columns' extremes, and only the blocks that can hold the top bounds are evaluated (about 5%
of N on the scale data). Per query, the cosine candidates and the prior candidates with the best
``w_s clip(cos) / W + B`` are scored a few dozen at a time (4x more while an unscored one could still enter
the top k). A vector outside both lists has cosine <= the C-th candidate's and bound <= the (P+1)-th bound,
so its key is at most ``w_s * clip(cos_C) / W + B_(P+1)``. With ``certify: true`` (default) a query whose k-th
key is not above that limit gets, in one step, every vector whose bound reaches ``k-th key - w_s clip(cos_C) /
W`` as a prior candidate (so the retry certifies), unless that is more than ``max_prior_share * N``: then it is
scored exhaustively (``fallback_queries``). With a flat index the re-ranked run is therefore the exhaustive
one, up to float32 rounding of the prior candidates' cosines (~1e-7; tests check equal top-k on the scale
data). HNSW gives no cosine bound: no certification, approximate. ``last_search`` reports groups, widened and
fallback queries and vectors scored per query.

``metadata_bytes(retriever)`` accounts the per-vector columnar state (store, corpus columns read by the
signals, cached relational signal, edges) against the FAISS index's bytes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import ClassVar, Optional

import numpy as np

from smartvector_bench.systems.smartvector.consolidation import ConsolidationAgent, ConsolidationParams, consolidate, summarize
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.index import FlatIndex, build_index
from smartvector_bench.systems.smartvector.lifecycle import Status, deprecated_at, statuses_at
from smartvector_bench.systems.smartvector.ripple import RippleParams
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.core.settings import choice, section
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams, is_dormant
from smartvector_bench.systems.smartvector.store import StoreParams, VectorStore
from smartvector_bench.systems.smartvector.signals.fusion import fuse, weights_from_config
from smartvector_bench.systems.smartvector.signals.relational import RelationalParams, relational_signal
from smartvector_bench.systems.smartvector.signals.temporal import TemporalParams, temporal_signal
from smartvector_bench.core.timeutil import format_iso, from_days
from smartvector_bench.systems.base import require_fields
from smartvector_bench.systems.smartvector.fused_kernel import exhaustive_top_k

EXCLUDABLE = ("DORMANT", "DEPRECATED", "ARCHIVED")
BOUND_EPS = 1e-9  # slack on the certification bound (floating-point rounding of the bound's terms)
COSINE_SLACK = 1e-5  # BLAS and FAISS's kernel differ by ~1e-7 on a cosine: the C-th cosine plus this bounds the rest


@dataclass(frozen=True)
class StatusPolicy:
    dormant: str = choice("deprioritize", "include", "exclude")
    reported_confidence: str = choice("score", "live_confidence")
    # Judge the store as of each query's as_of: a vector created after as_of did not exist then.
    exclude_created_after_as_of: bool = True
    query_batch: int = 256  # queries scored per block (bounds the (Q, N) signal arrays)
    POSITIVE: ClassVar[tuple[str, ...]] = ("query_batch",)


@dataclass(frozen=True)
class SearchParams:
    candidates: Optional[int] = None  # None: exhaustive; C: re-rank FAISS's top-C by cosine (+ prior candidates)
    prior_candidates: Optional[int] = None  # P vectors with the highest bound per as_of group; None: = candidates
    certify: bool = True  # re-rank: score a query exhaustively unless the bound proves its top-k exact
    group_days: float = 7.0  # re-rank: width of an as_of group (one bound per group)
    prior_share: float = 0.02  # re-rank: prior_candidates=null takes max(candidates, prior_share * N)
    max_prior_share: float = 0.05  # re-rank: an uncertified query's prior list widens x4 up to this share of N
    index: str = choice("flat", "hnsw")
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 128
    memory_budget_mb: float = 256.0  # exhaustive: (Q, N) working arrays per query block stay under this
    precision: str = choice("float64", "float32")  # exhaustive path's (Q, N) arrays (numpy kernel)
    kernel: str = choice("numba", "numpy")  # exhaustive path: one compiled pass (fused_kernel) | numpy arrays
    POSITIVE: ClassVar[tuple[str, ...]] = ("hnsw_m", "hnsw_ef_construction", "hnsw_ef_search",
                                           "memory_budget_mb")
    OPTIONAL_INT: ClassVar[tuple[str, ...]] = ("candidates", "prior_candidates")


TOP_LEVEL = {"weights", "temporal", "confidence", "relational", "consolidation", "lifecycle",
             "exclude_statuses", *StatusPolicy.__dataclass_fields__, *SearchParams.__dataclass_fields__}

# Bytes per (query, vector) entry of the exhaustive path's working set: FAISS's float32 scores and int64 ids,
# the dense float64 cosine (becomes the score), the key, two scratch arrays (temporal, confidence), the
# partition copy, and boolean masks.
_BYTES_PER_ENTRY = {"float64": 4 + 8 + 8 + 8 + 8 + 8 + 8 + 4, "float32": 4 + 8 + 4 + 4 + 8 + 4 + 4 + 4}


def search_params(cfg: dict, where: str) -> SearchParams:
    values = {k: cfg[k] for k in SearchParams.__dataclass_fields__ if k in cfg}
    for key, least in (("candidates", 1), ("prior_candidates", 0)):
        v = values.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < least):
            raise BenchError(f"{where}.{key}={v!r}: must be null or an integer >= {least}")
    optional = {k: values.pop(k) for k in SearchParams.OPTIONAL_INT if k in values}
    params = section(SearchParams, values, where)
    return replace(params, **optional)


@dataclass
class _Columns:
    """Per-vector columns the signals read, derived once per search call from the store (transient)."""

    created: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    decay_from: np.ndarray
    base: np.ndarray
    fb_pos: np.ndarray  # positive_boost * positive
    fb_neg: np.ndarray  # negative_penalty * negative
    access: np.ndarray  # access_reinforcement * ln(1 + accesses)
    rel: np.ndarray  # w_r * R
    succ_from: np.ndarray  # valid_from of the successor (inf: none)
    archived_at: np.ndarray
    ingested_at: np.ndarray


BLOCK = 1024  # vectors per block of the prior-candidate search (block bounds prune the bound computation)


def _conf_bound(base, decay_from, fb_pos, fb_neg, access, t_lo: float, cp: ConfidenceParams):
    """C at t_lo from the given columns (monotone in base, decay start, fb_pos and access, antitone in fb_neg)."""
    conf = np.maximum(cp.min_confidence, base * np.exp2(-np.maximum(t_lo - decay_from, 0.0) / cp.half_life_days))
    return np.minimum(1.0, np.clip(conf + fb_pos - fb_neg, cp.min_confidence, 1.0) + access)


@dataclass
class _Blocks:
    """The vectors in blocks of ``BLOCK`` consecutive rows of the decay-start order (recent ones together), with
    each block's extremes of the columns ``key_bound`` reads (built once per search, O(N))."""

    perm: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    created_max: np.ndarray
    decay_from_max: np.ndarray
    base_max: np.ndarray
    fb_pos_max: np.ndarray
    fb_neg_min: np.ndarray
    access_max: np.ndarray
    rel_max: np.ndarray
    arrives_min: np.ndarray  # min over the block of max(created, ingested_at)
    cols: _Columns  # the columns in block order (a block's rows are contiguous: cache-friendly gathers)

    @classmethod
    def build(cls, cols: _Columns) -> "_Blocks":
        n = len(cols.created)
        perm = np.argsort(cols.decay_from, kind="stable")
        starts = np.arange(0, n, BLOCK)
        sizes = np.diff(np.append(starts, n))
        by_block = _Columns(**{f: getattr(cols, f)[perm] for f in _Columns.__dataclass_fields__})

        def red(ufunc, a):
            return ufunc.reduceat(a, starts) if n else np.zeros(0)

        c = by_block
        return cls(perm, starts, sizes, red(np.maximum, c.created), red(np.maximum, c.decay_from),
                   red(np.maximum, c.base), red(np.maximum, c.fb_pos), red(np.minimum, c.fb_neg),
                   red(np.maximum, c.access), red(np.maximum, c.rel),
                   red(np.minimum, np.maximum(c.created, c.ingested_at)), by_block)

    def positions_of(self, blocks: np.ndarray) -> np.ndarray:
        """Positions (in block order) of the given blocks' vectors, block by block."""
        lens = self.sizes[blocks]
        return np.repeat(self.starts[blocks] - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))


class SmartVector:
    name = "smartvector"

    def __init__(self, name: str = "smartvector", **cfg):
        where = f"retrievers.{name}"
        self.name = name
        unknown = sorted(set(cfg) - TOP_LEVEL)
        if unknown:
            raise BenchError(f"{where}.{unknown[0]}: unknown key; allowed: {', '.join(sorted(TOP_LEVEL))}")
        self.weights = weights_from_config(dict(cfg.get("weights") or {}), f"{where}.weights")
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

    def check_dataset(self, corpus: Corpus) -> None:
        require_fields(self.name, corpus, ("created_at", "valid_from", "valid_to"),
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
        key = (at, len(self.agent.src))
        if key != self._relational_key:
            self._relational = relational_signal(self.agent.edge_count(at), self.rel.per_edge, self.rel.cap)
            self._relational_key = key
        return self._relational

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

    # -- scoring: fused, on gathered columns ----------------------------------------------------------------
    def _columns(self) -> _Columns:
        c, st, p = self.corpus, self.store, self.conf_params
        sup = st.superseded_by
        has = sup >= 0
        return _Columns(
            created=c.created_at, valid_from=c.valid_from, valid_to=c.valid_to, decay_from=st.decay_from(),
            base=st.base_confidence, fb_pos=p.positive_boost * st.positive, fb_neg=p.negative_penalty * st.negative,
            access=p.access_reinforcement * np.log1p(np.maximum(st.access, 0)),
            rel=self.weights.relational * self.relational(),
            succ_from=np.where(has, c.valid_from[np.where(has, sup, 0)], np.inf),
            archived_at=st.archived_at, ingested_at=st.ingested_at)

    def _excludes_dormant(self) -> bool:
        return self.policy.dormant == "exclude" or "DORMANT" in self.exclude

    def _fused(self, cols: _Columns, semantic: np.ndarray, as_of: np.ndarray, ids: np.ndarray | None = None,
               dtype=np.float64, need_confidence: bool = False):
        """(score, key, confidence or None) for (Q, M) entries: column j of row q is vector ``ids[q, j]``
        (``ids=None``: every vector, in row order). ``semantic`` is consumed (it becomes the score).

        The same floating-point operations as ``score()`` in the same order (in place), so the values are
        bit-identical in float64."""
        g = (lambda a: a[None, :]) if ids is None else (lambda a: a[ids])
        t = np.asarray(as_of, dtype=np.float64)[:, None]
        w, tp, cp = self.weights, self.temporal, self.conf_params
        # temporal: expired_score outside [valid_from, valid_to), else 2^(-max(t - created, 0) / H)
        temporal = t - g(cols.created)
        np.maximum(temporal, 0.0, out=temporal)
        np.negative(temporal, out=temporal)
        temporal /= tp.half_life_days
        temporal = temporal.astype(dtype, copy=False)
        np.exp2(temporal, out=temporal)
        outside = t >= g(cols.valid_to)
        outside |= t < g(cols.valid_from)
        temporal[outside] = tp.expired_score
        # confidence: max(c_min, base * 2^(-max(t - decay_from, 0) / H)) + feedback, clipped; + accesses, <= 1
        conf = t - g(cols.decay_from)
        np.maximum(conf, 0.0, out=conf)
        np.negative(conf, out=conf)
        conf /= cp.half_life_days
        conf = conf.astype(dtype, copy=False)
        np.exp2(conf, out=conf)
        conf *= g(cols.base)
        np.maximum(conf, cp.min_confidence, out=conf)
        conf += g(cols.fb_pos)
        conf -= g(cols.fb_neg)
        np.clip(conf, cp.min_confidence, 1.0, out=conf)
        conf += g(cols.access)
        np.minimum(conf, 1.0, out=conf)
        dormant = conf < cp.dormant_threshold
        # fuse: ((w_s clip(s) + w_t T) + w_c C) + w_r R, then / W
        score = semantic if semantic.dtype == dtype else semantic.astype(dtype)
        np.clip(score, 0.0, 1.0, out=score)
        score *= w.semantic
        temporal *= w.temporal
        score += temporal
        np.multiply(conf, w.confidence, out=temporal)
        score += temporal
        score += g(cols.rel)
        score /= w.total()
        del temporal
        key = score.copy()
        if self.policy.dormant == "deprioritize":
            key[dormant] -= 2.0
        excluded = dormant if self._excludes_dormant() else np.zeros(key.shape, dtype=bool)
        if "DEPRECATED" in self.exclude:
            excluded |= t >= g(cols.succ_from)
        if "ARCHIVED" in self.exclude:
            excluded |= t >= g(cols.archived_at)
        if self.policy.exclude_created_after_as_of:
            excluded |= t < g(cols.created)
            excluded |= t < g(cols.ingested_at)
        key[excluded] = -np.inf
        return score, key, (conf if need_confidence else None)

    def key_bound(self, cols: _Columns, t_lo: float, t_hi: float, idx: np.ndarray | None = None) -> np.ndarray:
        """(N,) upper bound of each vector's rank key minus its semantic part (w_s clip(cos) / W), over
        every as_of in [t_lo, t_hi]: T and C only decay as t grows (T is expired_score outside the window),
        dormancy, deprecation and archiving only start, and a vector is excluded for the whole span only if
        it is excluded at its start (or, for not-yet-created, at its end). -inf: excluded all along.
        ``idx``: only these vectors (in that order)."""
        g = (lambda a: a) if idx is None else (lambda a: a[idx])
        w, tp, cp = self.weights, self.temporal, self.conf_params
        in_window = (g(cols.valid_from) <= t_hi) & (g(cols.valid_to) > t_lo)
        temporal = np.exp2(-np.maximum(t_lo - g(cols.created), 0.0) / tp.half_life_days)
        temporal = np.where(in_window, np.maximum(temporal, tp.expired_score), tp.expired_score)
        conf = _conf_bound(g(cols.base), g(cols.decay_from), g(cols.fb_pos), g(cols.fb_neg), g(cols.access), t_lo,
                           cp)
        bound = (w.temporal * temporal + w.confidence * conf + g(cols.rel)) / w.total() + BOUND_EPS
        dormant = conf < cp.dormant_threshold  # dormant at t_lo: dormant for every later t
        if self.policy.dormant == "deprioritize":
            bound[dormant] -= 2.0
        excluded = dormant if self._excludes_dormant() else np.zeros(len(bound), dtype=bool)
        if "DEPRECATED" in self.exclude:
            excluded |= t_lo >= g(cols.succ_from)
        if "ARCHIVED" in self.exclude:
            excluded |= t_lo >= g(cols.archived_at)
        if self.policy.exclude_created_after_as_of:
            excluded |= (t_hi < g(cols.created)) | (t_hi < g(cols.ingested_at))
        bound[excluded] = -np.inf
        return bound

    def block_bound(self, blocks: "_Blocks", t_lo: float, t_hi: float) -> np.ndarray:
        """Per block of ``blocks``, an upper bound of ``key_bound`` over its vectors: the same monotone formula
        on the block's extremes (latest creation and decay start, highest base, feedback, accesses and R);
        status rules only lower a bound, so they are left out, except a block created entirely after t_hi."""
        w, tp, cp = self.weights, self.temporal, self.conf_params
        temporal = np.maximum(np.exp2(-np.maximum(t_lo - blocks.created_max, 0.0) / tp.half_life_days),
                              tp.expired_score)
        conf = _conf_bound(blocks.base_max, blocks.decay_from_max, blocks.fb_pos_max, blocks.fb_neg_min,
                           blocks.access_max, t_lo, cp)
        bound = (w.temporal * temporal + w.confidence * conf + blocks.rel_max) / w.total() + BOUND_EPS
        if self.policy.exclude_created_after_as_of:
            bound[blocks.arrives_min > t_hi] = -np.inf
        return bound

    def top_bounds(self, blocks: "_Blocks", t_lo: float, t_hi: float, m: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, bounds): the m + 1 vectors with the highest ``key_bound`` over [t_lo, t_hi], by descending
        bound (ties: lower row first), computing the bound only on the blocks that can hold them: blocks are
        taken by descending block bound until the next one's is no higher than the (m + 1)-th bound found.
        Every vector left out has a bound no higher than the last one returned."""
        n = len(blocks.perm)
        m = min(m, n - 1)
        ub = self.block_bound(blocks, t_lo, t_hi)
        border = np.argsort(-ub, kind="stable")
        cum = np.cumsum(blocks.sizes[border])
        j = int(np.searchsorted(cum, m + 1)) + 1  # enough blocks for m + 1 vectors
        done, pos, b = 0, np.zeros(0, dtype=np.int64), np.zeros(0)
        while True:
            new = blocks.positions_of(border[done:j])  # bounds are computed once per block
            pos = np.concatenate([pos, new])
            b = np.concatenate([b, self.key_bound(blocks.cols, t_lo, t_hi, new)])
            done = j
            tau = -np.partition(-b, m)[m] if len(b) > m else -np.inf
            nxt = ub[border[j]] if j < len(border) else -np.inf
            if not nxt > tau:
                break
            j = max(j + 1, min(2 * j, int(np.count_nonzero(ub > tau))))  # tau rises as blocks are added
        idx = blocks.perm[pos]
        top = np.argpartition(-b, m)[: m + 1] if len(b) > m + 1 else np.arange(len(b))
        top = top[np.lexsort((idx[top], -b[top]))]
        return idx[top], b[top]

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
        cols = self._columns()
        t0 = time.perf_counter()
        c = self.search_params.candidates
        if c is None or q == 0:
            self._exhaustive(cols, query_vectors, as_of, k, np.arange(q), out)
            self.last_search = {"mode": "exhaustive", "queries": q, "batch": self.exhaustive_batch()}
        else:
            self._rerank(cols, query_vectors, as_of, k, out)
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

    def _exhaustive(self, cols: _Columns, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
                    rows: np.ndarray, out: tuple) -> None:
        sp = self.search_params
        if sp.kernel == "numba" and sp.precision == "float64":
            w, tp, cp, pol = self.weights, self.temporal, self.conf_params, self.policy
            fp = np.array([tp.half_life_days, tp.expired_score, cp.half_life_days, cp.min_confidence,
                           cp.dormant_threshold, w.semantic, w.temporal, w.confidence, w.total(),
                           float(cols.rel.max(initial=0.0))])
            flags = np.array([pol.dormant == "deprioritize", self._excludes_dormant(), "DEPRECATED" in self.exclude,
                              "ARCHIVED" in self.exclude, pol.exclude_created_after_as_of])
            ranked, fused, conf_top = exhaustive_top_k(self._index.stored(), query_vectors[rows], as_of[rows], cols,
                                                       fp, flags, k)
            self._emit(rows, ranked, fused, conf_top, out)
            return
        dtype = np.float64 if sp.precision == "float64" else np.float32
        need_conf = self.policy.reported_confidence == "live_confidence"
        batch = self.exhaustive_batch()
        for lo in range(0, len(rows), batch):
            sel = rows[lo:lo + batch]
            semantic = self._index.dense_scores(query_vectors[sel])
            score, key, conf = self._fused(cols, semantic, as_of[sel], None, dtype, need_conf)
            del semantic
            ranked = top_k_by_key(key, k)
            r = np.arange(len(sel))[:, None]
            at = np.where(ranked >= 0, ranked, 0)
            fused = score[r, at].astype(np.float64)
            conf_top = conf[r[:, 0], at[:, 0]].astype(np.float64) if need_conf else None
            self._emit(sel, ranked, fused, conf_top, out)

    def _rerank(self, cols: _Columns, query_vectors: np.ndarray, as_of: np.ndarray, k: int, out: tuple) -> None:
        sp = self.search_params
        n, q = len(self.corpus), len(query_vectors)
        c = min(sp.candidates, n)
        p = sp.prior_candidates
        if p is None:  # the share of N with the highest bound: more teams active at once, more contenders
            p = max(c, int(np.ceil(sp.prior_share * n)))
        p = min(p, n)
        qv = np.ascontiguousarray(query_vectors, dtype=np.float32)
        t = time.perf_counter()
        sem_c, ids_c = self._index.search(qv, c)
        faiss_s = time.perf_counter() - t
        complete = c >= n and self._index.exact  # every row is a cosine candidate: nothing to bound or add
        certify = sp.certify and self._index.exact and not complete
        use_bound = (p > 0 or certify) and not complete
        w = self.weights
        fallback: list[np.ndarray] = []
        stats = {"as_of_groups": 0, "scored_per_query": 0.0, "widened": 0}
        stored = self._index.stored() if use_bound else None
        blocks = _Blocks.build(cols) if use_bound else None
        widest = max(p, min(n, int(sp.max_prior_share * n)))
        for grp in self._groups(as_of, use_bound):
            stats["as_of_groups"] += 1
            if not use_bound:  # cosine candidates only: score them all
                ids = ids_c[grp]
                self._rank_with_prior(cols, grp, ids, sem_c[grp], np.zeros(0, dtype=np.int64), np.zeros(0), qv,
                                      None, as_of, k, out)
                stats["scored_per_query"] += ids.shape[1] * len(grp)
                continue
            t_lo, t_hi = float(as_of[grp].min()), float(as_of[grp].max())
            found: list = [None, None]  # the highest bounds found so far: rows and values, descending

            def top(m: int) -> tuple[np.ndarray, np.ndarray]:
                if found[0] is None or len(found[0]) <= min(m, n - 1):
                    found[:] = self.top_bounds(blocks, t_lo, t_hi, m)
                return found[0], found[1]

            rows, p_g = grp, p
            while True:
                if 0 < p_g < n:
                    order, vals = top(p_g)
                    srt = np.argsort(order[:p_g])
                    prior, b_prior, rest = order[:p_g][srt], vals[:p_g][srt], float(vals[p_g])
                elif p_g >= n:
                    prior, rest = np.arange(n), -np.inf
                    b_prior = self.key_bound(cols, t_lo, t_hi)
                else:
                    prior, b_prior = np.zeros(0, dtype=np.int64), np.zeros(0)
                    rest = float(self.block_bound(blocks, t_lo, t_hi).max(initial=-np.inf))
                kth, scored = self._rank_with_prior(cols, rows, ids_c[rows], sem_c[rows], prior, b_prior, qv,
                                                    stored, as_of, k, out)
                stats["scored_per_query"] += scored
                if not certify:
                    break
                cos_c = np.clip(sem_c[rows, c - 1], 0.0, 1.0) + COSINE_SLACK
                limit = w.semantic * cos_c / w.total() + rest  # any vector that is not a candidate
                bad = ~(kth > limit) & np.isfinite(limit)
                if not bad.any():
                    break
                rows, kth, cos_c = rows[bad], kth[bad], cos_c[bad]
                # A vector outside the C-th cosine can only reach a row's k-th key if its bound is at least
                # kth - w_s clip(cos_C) / W: every vector with such a bound becomes a prior candidate (one
                # widening, sized by the bound order), so the retry certifies unless that is over the cap.
                thr = kth - w.semantic * cos_c / w.total()
                order, vals = top(widest)
                desc = -vals
                # a row with fewer than k scorable candidates has no k-th key yet: 4x the list
                needed = np.where(np.isfinite(thr), np.searchsorted(desc, -thr, side="right"),
                                  min(widest, 4 * max(p_g, 1)) if p_g < widest else widest + 1)
                over = needed >= min(len(order), widest + 1) if widest < n else np.zeros(len(rows), dtype=bool)
                if over.any():  # the bound cannot separate these queries: score them exhaustively
                    fallback.append(rows[over])
                    rows, needed = rows[~over], needed[~over]
                if not len(rows):
                    break
                p_g = int(min(n, max(p_g + 1, needed.max())))
                stats["widened"] += len(rows)
        fb = np.sort(np.concatenate(fallback)) if fallback else np.zeros(0, dtype=np.int64)
        if len(fb):
            self._exhaustive(cols, query_vectors, as_of, k, fb, out)
        self.last_search = {"mode": "rerank", "queries": q, "candidates": c, "prior_candidates": p if use_bound
                            else 0, "index": self._index.kind, "certified": certify,
                            "as_of_groups": stats["as_of_groups"], "widened_queries": stats["widened"],
                            "fallback_queries": int(len(fb)),
                            "scored_per_query": stats["scored_per_query"] / max(q, 1), "faiss_seconds": faiss_s}

    def _rank_with_prior(self, cols: _Columns, rows: np.ndarray, ids: np.ndarray, sem: np.ndarray,
                         prior: np.ndarray, b_prior: np.ndarray, qv: np.ndarray, stored: np.ndarray | None,
                         as_of: np.ndarray, k: int, out: tuple) -> tuple[np.ndarray, int]:
        """Exact four-signal top-k of query ``rows`` among their cosine candidates (``ids``, ``sem``: (R, C))
        and the group's ``prior`` vectors (ascending row indices, bounds ``b_prior``), written to ``out``;
        returns the k-th keys and the number of entries scored.

        A prior vector's key is at most ``w_s clip(cos) / W + bound``. The cosine candidates and the ``width``
        prior vectors with the best such upper bound (a few times k) are scored; a row where an unscored prior
        vector's upper bound still reaches the k-th key found is scored again with 4x the width, until none
        does. No (R, C + P) id array is built."""
        need_conf = self.policy.reported_confidence == "live_confidence"
        valid = dedupe_rows(ids)
        scored = ids.size
        if not len(prior):
            return self._rank_into(cols, rows, ids, sem, valid, as_of, k, out, need_conf), scored
        w = self.weights
        # the prior candidates' cosines from the stored vectors (one BLAS product per group; equal to FAISS's
        # to float32 rounding, ~1e-7)
        cos = qv[rows] @ stored[prior].T
        upper = np.clip(cos, 0.0, 1.0).astype(np.float64)
        upper *= w.semantic / w.total()
        upper += b_prior
        # a prior vector that is already a cosine candidate of the row is scored there
        pos = np.minimum(np.searchsorted(prior, ids), len(prior) - 1)
        r_hit, c_hit = np.nonzero((prior[pos] == ids) & valid)
        upper[r_hit, pos[r_hit, c_hit]] = -np.inf
        kth = np.full(len(rows), -np.inf)
        left = np.arange(len(rows))
        width = max(4 * k, 64)
        ids_v = np.where(valid, ids, -1)
        while len(left):
            up = upper[left]
            if width >= len(prior):
                sel = np.broadcast_to(np.arange(len(prior)), (len(left), len(prior)))
            else:
                sel = np.argpartition(-up, width - 1, axis=1)[:, :width]
            both = np.concatenate([ids_v[left], prior[sel]], axis=1)
            sem2 = np.concatenate([sem[left], np.take_along_axis(cos[left], sel, axis=1).astype(np.float64)],
                                  axis=1)
            # -inf upper bounds (excluded, or a cosine candidate already) need no scoring
            ok = np.concatenate([valid[left], np.take_along_axis(up, sel, axis=1) > -np.inf], axis=1)
            kth[left] = self._rank_into(cols, rows[left], both, sem2, ok, as_of, k, out, need_conf)
            scored += both.size
            if width >= len(prior):
                break
            np.put_along_axis(up, sel, -np.inf, axis=1)
            left = left[(up >= kth[left, None]).any(axis=1)]  # an unscored prior vector could still enter
            width *= 4
        return kth, scored

    def _rank_into(self, cols: _Columns, grp: np.ndarray, ids: np.ndarray, sem: np.ndarray, valid: np.ndarray,
                   as_of: np.ndarray, k: int, out: tuple, need_conf: bool) -> np.ndarray:
        """Score (G, M) candidates exactly, rank them by the tie rule, write the rows; returns the k-th keys."""
        m = ids.shape[1]
        safe = np.where(valid, ids, 0)
        score, key, conf = self._fused(cols, np.where(valid, sem, 0.0), as_of[grp], safe, np.float64, need_conf)
        key[~valid] = -np.inf
        # rank_by_score breaks ties by the candidate's corpus index; the column rides along in the low digits
        # (each corpus index appears once per row among the valid candidates)
        code, top = rank_by_score(key, k, candidates=safe * m + np.arange(m))
        pos = np.where(code >= 0, code % m, 0)
        ranked = np.where(code >= 0, code // m, -1)
        r = np.arange(len(grp))[:, None]
        self._emit(grp, ranked, score[r, pos], conf[r[:, 0], pos[:, 0]] if need_conf else None, out)
        kth = top[:, k - 1] if k >= 1 else np.full(len(grp), np.inf)
        return np.where(np.isnan(kth), -np.inf, kth)

    def _groups(self, as_of: np.ndarray, by_time: bool) -> list[np.ndarray]:
        """Query rows in blocks of at most query_batch; with ``by_time``, sorted by as_of and each block at
        most group_days wide."""
        q, batch = len(as_of), self.policy.query_batch
        if not by_time:
            return [np.arange(lo, min(q, lo + batch)) for lo in range(0, q, batch)]
        order = np.argsort(as_of, kind="stable")
        groups, start = [], 0
        for i in range(1, q + 1):
            if i == q or i - start >= batch or as_of[order[i]] - as_of[order[start]] > self.search_params.group_days:
                groups.append(order[start:i])
                start = i
        return groups

    def describe(self) -> dict:
        reported = self.policy.reported_confidence
        out = {"confidence": f"reported_confidence={reported}: " + (
                    "top-1 four-signal score (weights normalised to sum 1), in [0, 1]" if reported == "score"
                    else "top-1 live confidence C at as_of"),
               "consolidation": summarize(self.store, self.agent),
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


# -- helpers -----------------------------------------------------------------------------------------------------

def top_k_by_key(key: np.ndarray, k: int) -> np.ndarray:
    """``rank_by_score(key, k)[0]`` (descending key, ties to the lower index, -inf dropped), selecting the
    candidates with a partition first: only the entries >= each row's k-th largest key are sorted."""
    q, n = key.shape
    if n <= 4 * k + 64 or q == 0:
        return rank_by_score(key, k)[0]
    # the k-th largest via the k-th smallest of -key (numpy's introselect is slow on long runs of equal
    # values, e.g. excluded -inf, when they lie below the k-th position)
    kth = -np.partition(-key, k - 1, axis=1)[:, k - 1]
    floor = np.where(np.isfinite(kth), kth, np.inf)[:, None]  # -inf k-th: only the finite entries count
    mask = (key >= floor) | (np.isfinite(key) & ~np.isfinite(kth)[:, None])
    counts = mask.sum(axis=1)
    width = int(counts.max()) if q else 0
    if width > 64 * k + 1024:  # massive ties at the k-th key: the plain sort is as good
        return rank_by_score(key, k)[0]
    rows, cols = np.nonzero(mask)  # row-major: per row, ascending corpus index
    start = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    slot = np.arange(len(rows)) - start[rows]
    sub = np.full((q, max(width, 1)), -np.inf)
    cand = np.full((q, max(width, 1)), n, dtype=np.int64)
    sub[rows, slot] = key[rows, cols]
    cand[rows, slot] = cols
    return rank_by_score(sub, k, candidates=cand)[0]


def dedupe_rows(ids: np.ndarray) -> np.ndarray:
    """(Q, M) bool: True for the first occurrence of each id in its row, False for repeats and for -1."""
    if ids.size == 0:
        return np.zeros(ids.shape, dtype=bool)
    order = np.argsort(ids, axis=1, kind="stable")
    srt = np.take_along_axis(ids, order, axis=1)
    first = np.ones(ids.shape, dtype=bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    keep = np.empty(ids.shape, dtype=bool)
    np.put_along_axis(keep, order, first, axis=1)
    return keep & (ids >= 0)


def rerank_agreement(retriever_cfg: dict, corpus: Corpus, vectors: np.ndarray, query_vectors: np.ndarray,
                     as_of: np.ndarray, cs, *, k: int = 10, serve_time: float | None = None,
                     name: str = "smartvector") -> dict:
    """Top-1 agreement of candidate re-ranking with exhaustive scoring, for each candidate count in ``cs``.

    The retriever is built from ``retriever_cfg`` (its other search options kept: prior candidates,
    certification, index), indexed once at ``serve_time`` (default: the latest as_of), and the same queries are
    searched exhaustively and then with ``candidates = C`` for each C. Returns the exhaustive search time and
    one row per C: share of queries whose top-1 is the same (both empty counts as the same), how many differ,
    whether the whole top-k is the same, the search time, and how many queries fell back to exhaustive."""
    cfg = dict(retriever_cfg)
    cfg["candidates"] = None
    r = SmartVector(name, **{k: v for k, v in cfg.items() if k != "_target_"})
    as_of = np.asarray(as_of, dtype=np.float64)
    r.index(corpus, vectors, float(np.max(as_of)) if serve_time is None else float(serve_time))
    base = r.search_params
    t = time.perf_counter()
    exact = r.search(query_vectors, as_of, k)
    exhaustive_s = time.perf_counter() - t
    rows = []
    for c in cs:
        r.search_params = replace(base, candidates=int(c))
        t = time.perf_counter()
        run = r.search(query_vectors, as_of, k)
        secs = time.perf_counter() - t
        same = run.top1 == exact.top1
        rows.append({"candidates": int(c), "top1_agreement": float(same.mean()) if len(same) else 1.0,
                     "n_differ": int((~same).sum()), "n_queries": int(len(same)),
                     "topk_identical": float((run.ranked == exact.ranked).all(axis=1).mean()) if len(same) else 1.0,
                     "search_s": secs, "fallback_queries": r.last_search.get("fallback_queries", 0),
                     "faiss_s": r.last_search.get("faiss_seconds")})
    r.search_params = base
    return {"exhaustive_s": exhaustive_s, "n_vectors": len(corpus), "rows": rows}


def metadata_bytes(retriever: SmartVector) -> dict:
    """Memory of SmartVector's per-vector state against the FAISS index's.

    ``arrays``: ``.nbytes`` of every numpy array of length N the store holds (its columns), of the corpus
    columns the signals read (authority, created_at, valid_from, valid_to, supersedes) and of the retriever's
    cached relational signal; ``edges``: the dependency edges (the agent's found edges and the corpus's given
    ones, CSR). ``index``: the FAISS index (flat: ntotal * d * 4; HNSW adds its links). Nothing per query is
    kept between searches (the per-search columns are transient)."""
    n = len(retriever.corpus)
    arrays: dict[str, int] = {}
    for attr, value in sorted(vars(retriever.store).items()):
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == n:
            arrays[f"store.{attr}"] = int(value.nbytes)
    c = retriever.corpus
    for attr in ("authority", "created_at", "valid_from", "valid_to", "supersedes"):
        arrays[f"corpus.{attr}"] = int(getattr(c, attr).nbytes)
    if getattr(retriever, "_relational_key", None) is not None:
        arrays["retriever.relational"] = int(retriever._relational.nbytes)
    agent = retriever.agent
    edges = {"agent.edges": int(sum(a.nbytes for a in agent.src) + sum(a.nbytes for a in agent.dst)),
             "corpus.depends_on": int(c.depends_on.indptr.nbytes + c.depends_on.indices.nbytes)}
    total = sum(arrays.values()) + sum(edges.values())
    index = retriever._index.nbytes()
    return {"n_vectors": n, "arrays": arrays, "edges": edges, "total": int(total),
            "per_vector": total / max(n, 1), "index": int(index), "index_kind": retriever._index.kind,
            "ratio": total / index if index else float("inf")}
