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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..consolidation import ConsolidationAgent, ConsolidationParams, consolidate, summarize
from ..dataset import Corpus
from ..errors import BenchError
from ..index import FlatIndex
from ..lifecycle import Status, deprecated_at, statuses_at
from ..ripple import RippleParams
from ..run import Run, rank_by_score
from ..settings import choice, section
from ..signals.confidence import ConfidenceParams, is_dormant
from ..store import StoreParams, VectorStore
from ..signals.fusion import fuse, weights_from_config
from ..signals.relational import RelationalParams, relational_signal
from ..signals.temporal import TemporalParams, temporal_signal
from ..timeutil import format_iso, from_days
from . import register

EXCLUDABLE = ("DORMANT", "DEPRECATED", "ARCHIVED")


@dataclass(frozen=True)
class StatusPolicy:
    dormant: str = choice("deprioritize", "include", "exclude")
    reported_confidence: str = choice("score", "live_confidence")
    # Judge the store as of each query's as_of: a vector created after as_of did not exist then.
    exclude_created_after_as_of: bool = True
    query_batch: int = 256  # queries scored per block (bounds the (Q, N) signal arrays)
    POSITIVE: ClassVar[tuple[str, ...]] = ("query_batch",)


TOP_LEVEL = {"kind", "weights", "temporal", "confidence", "relational", "consolidation", "lifecycle",
             "exclude_statuses", *StatusPolicy.__dataclass_fields__}


@register("smartvector")
class SmartVector:
    name = "smartvector"

    def __init__(self, cfg: dict, name: str = "smartvector"):
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
        self.exclude = list(cfg.get("exclude_statuses", ["DEPRECATED", "ARCHIVED"]))
        for s in self.exclude:
            if s not in EXCLUDABLE:
                raise BenchError(f"{where}.exclude_statuses: {s!r} unknown; allowed: {', '.join(EXCLUDABLE)}")

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
        self.corpus = corpus
        self._index = FlatIndex(vectors)
        self.store = store
        self.agent = agent
        self._relational_key = None

    def relational(self) -> np.ndarray:
        """R per vector from the edges known at the agent's last run (recomputed only after a new run)."""
        at = self.agent.last_run if self.agent.last_run is not None else -np.inf
        key = (at, len(self.agent.src))
        if key != self._relational_key:
            self._relational = relational_signal(self.agent.edge_count(at), self.rel.per_edge, self.rel.cap)
            self._relational_key = key
        return self._relational

    # -- scoring -------------------------------------------------------------------------------------------
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

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None) -> Run:
        q = len(query_vectors)
        ranked = np.full((q, k), -1, dtype=np.int64)
        scores = np.full((q, k), np.nan)
        confidence = np.full(q, np.nan)
        for lo in range(0, q, self.policy.query_batch):
            hi = min(q, lo + self.policy.query_batch)
            semantic = self._index.all_scores(query_vectors[lo:hi])
            score, key, sig = self.score(semantic, as_of[lo:hi])
            r, _ = rank_by_score(key, k)
            ranked[lo:hi] = r
            valid = r >= 0
            rows = np.arange(hi - lo)[:, None]
            fused = score[rows, np.where(valid, r, 0)]
            scores[lo:hi] = np.where(valid, fused, np.nan)
            top = r[:, 0]
            has = top >= 0
            if self.policy.reported_confidence == "score":
                conf = fused[:, 0]
            else:
                conf = sig["confidence"][np.arange(hi - lo), np.where(has, top, 0)]
            confidence[lo:hi] = np.where(has, np.clip(conf, 0.0, 1.0), np.nan)
        return Run(self.name, ranked, scores, confidence)

    def describe(self) -> dict:
        reported = self.policy.reported_confidence
        return {"confidence": f"reported_confidence={reported}: " + (
                    "top-1 four-signal score (weights normalised to sum 1), in [0, 1]" if reported == "score"
                    else "top-1 live confidence C at as_of"),
                "consolidation": summarize(self.store, self.agent),
                "serve_time": format_iso(from_days(self.serve_time)),
                "status_policy": {"exclude": self.exclude, "dormant": self.policy.dormant,
                                  "exclude_created_after_as_of": self.policy.exclude_created_after_as_of},
                "statuses_at_serve_time": self.status_counts}
