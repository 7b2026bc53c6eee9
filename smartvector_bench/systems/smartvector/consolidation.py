"""The ConsolidationAgent (SmartVector paper, "Consolidation (Sleep-Time Replay)"), run on a VectorStore at
simulated times: dormancy transitions, contradiction detection (``reference`` or ``semantic`` detector) and
the majority-vote verdict, dependency edges (given and detected), ripple penalties from superseded or
contradicted vectors, DEPRECATED -> ARCHIVED, UNCONSOLIDATED -> ACTIVE. Dependencies follow supersession:
an edge to a superseded vector counts for the version in force.

Differences from the reference implementation, on purpose: the verdict is applied (the loser gets one
correction, i.e. one negative feedback) instead of only logged; the vote abstains on tied criteria instead of
favouring the second vector; ARCHIVED is assigned; time is the simulated time, never the wall clock; each
run looks at what changed since the previous run (pairs are judged once).

``consolidate(corpus, at, params)`` is the frozen form used by the main table: ingest everything created by
``at``, apply the supersessions in force, run the agent once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from smartvector_bench.systems.smartvector.candidates import ORIENT_CHUNK, knn_pairs, select_oriented, sorted_unique
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems.smartvector.detectors import (  # noqa: F401
    ReferenceDetector, SemanticDetector, content_similarity, jaccard_between, jaccard_of, jaccard_pairs,
    word_sets_matrix)
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.smartvector.compact import PackedRagged, narrow_ids
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.systems.smartvector.ripple import RippleParams, apply_ripple, ripple_hits
from smartvector_bench.core.settings import choice
from smartvector_bench.systems.smartvector.distinct import distinct_pairs, word_rule_options
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams, live_confidence
from smartvector_bench.systems.smartvector.store import StoreParams, VectorStore, ingest_until  # noqa: F401 (re-export)


@dataclass(frozen=True)
class ConsolidationParams:
    enabled: bool = True
    detector: str = choice("reference", "semantic")
    topic_threshold: float = 0.3  # reference: word Jaccard above this = same topic
    content_threshold: float = 0.4  # reference: difflib ratio below this = different claim
    similarity_threshold: float = 0.6  # semantic: cosine at least this = same subject
    verdict: str = choice("demote", "log_only")  # demote: the loser gets one negative feedback; log_only: reference
    tie_break: str = choice("authority", "recency")  # who wins a 1-1 vote
    detect_dependencies: bool = True
    dependency_threshold: float = 0.35  # word Jaccard: the lower-authority chunk depends on the higher one
    transfer_dependencies: bool = True  # an edge to a superseded vector counts for its successor in force
    ripple: RippleParams = field(default_factory=RippleParams)
    # None: compare all pairs (new x pool). k: judge only the candidate pairs of ``candidate_pairs``; what lies
    # outside them is missed (smartvector_bench/tools/perf/consolidation.py measures how much).
    candidates: int | None = None
    candidate_index: str = choice("ivf", "flat", "hnsw")  # ivf / hnsw: approximate kNN; flat: exact (quadratic)
    # knn: each vector's k nearest by cosine (a text's near-copies crowd out other texts); distinct: the k nearest
    # groups of near-duplicates (cosine >= duplicate_cosine), rows matched by rare shared words (distinct.py).
    candidate_pairs: str = choice("knn", "distinct")
    duplicate_cosine: float = 0.95
    # With candidates None: all pairs up to this many vectors, then ``auto_candidates`` (None: all pairs always).
    # All pairs is an N x N product: ~8.6 GB at 10,000 vectors (results/perf); the default datasets have 258 and 2,172.
    all_pairs_max: int | None = 5000
    auto_candidates: int = 100  # k of that path (knn at 10,000: k = 100 found every all-pairs contradiction, 20 none)

    def __post_init__(self) -> None:
        for key in ("candidates", "all_pairs_max"):
            v = getattr(self, key)
            if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1):
                raise BenchError(f"consolidation.{key}={v!r}: must be null or an integer >= 1")
        v = self.auto_candidates
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise BenchError(f"consolidation.auto_candidates={v!r}: must be an integer >= 1")

    def candidates_for(self, n: int) -> int | None:
        """The k of the candidate path for ``n`` vectors (None: all pairs): ``candidates`` when set, else
        ``auto_candidates`` above ``all_pairs_max`` vectors."""
        if self.candidates is not None:
            return int(self.candidates)
        if self.all_pairs_max is not None and n > self.all_pairs_max:
            return int(self.auto_candidates)
        return None


def resolve(a: int, b: int, created_at: np.ndarray, authority: np.ndarray,
            feedback_ratio: Mapping[int, float] | np.ndarray, tie_break: str) -> tuple[int, int, int]:
    """Majority vote of three (newer, higher authority, higher feedback ratio); a tied criterion abstains.

    Returns (winner, loser, votes for the winner). A tied vote goes to ``tie_break``, then to the lower index.
    """
    a, b = min(a, b), max(a, b)  # the final fallback (lower index) must not depend on argument order
    votes = {a: 0, b: 0}
    for values in (created_at, authority, feedback_ratio):
        if values[a] != values[b]:
            votes[a if values[a] > values[b] else b] += 1
    if votes[a] != votes[b]:
        winner = a if votes[a] > votes[b] else b
    else:
        primary = authority if tie_break == "authority" else created_at
        secondary = created_at if tie_break == "authority" else authority
        winner = a
        for values in (primary, secondary):
            if values[a] != values[b]:
                winner = a if values[a] > values[b] else b
                break
    loser = b if winner == a else a
    return winner, loser, votes[winner]


def edges_to_ragged(src: np.ndarray, dst: np.ndarray, n: int) -> Ragged:
    """Unique directed edges (src depends on dst) as a Ragged over src, rows sorted; self-loops dropped."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if src.size:
        key = sorted_unique(src * n + dst)  # the (src, dst) rows of np.unique(..., axis=0), as one int64 key
        src, dst = key // n, key % n
        keep = src != dst
        src, dst = src[keep], dst[keep]
    counts = np.bincount(src, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Ragged(indptr, dst.astype(np.int64))


def reverse(depends_on: Ragged) -> Ragged:
    """depended_by from depends_on."""
    return edges_to_ragged(depends_on.indices, depends_on.row_ids(), depends_on.n_rows)


def latest_successor(superseded_by: np.ndarray, valid_from: np.ndarray, at: float) -> np.ndarray:
    """Follow supersession links while the successor is in force at ``at``; identity for the rest."""
    out = np.arange(len(superseded_by))
    for _ in range(len(superseded_by)):
        nxt = superseded_by[out]
        step = (nxt >= 0) & (valid_from[np.where(nxt >= 0, nxt, 0)] <= at)
        if not step.any():
            break
        out = np.where(step, nxt, out)
    return out


class ConsolidationAgent:
    chunk = ORIENT_CHUNK  # candidate pairs oriented and tested at a time (the result does not depend on it)

    def __init__(self, corpus: Corpus, params: ConsolidationParams, vectors: np.ndarray | None = None):
        self.corpus, self.p = corpus, params
        if params.detector == "semantic":
            if vectors is None:
                raise ValueError("the semantic detector needs the corpus embeddings")
            self.detector = SemanticDetector(corpus, vectors, params.similarity_threshold)
        else:
            self.detector = ReferenceDetector(corpus, params.topic_threshold, params.content_threshold)
        self.words = self.detector.words if params.detector == "reference" else word_sets_matrix(corpus.texts)
        self.word_sizes = np.asarray(self.words.sum(axis=1)).ravel()  # read by every chunk's Jaccard (50 ms at 1M)
        # Dependency edges as found (given and detected, before transfer): unique, CSR over the dependant, packed
        # (compact.PackedRagged); ``edge_version`` counts the batches merged in (caches of R key on it).
        self.edges = PackedRagged.pack(edges_to_ragged(np.zeros(0, np.int64), np.zeros(0, np.int64), len(corpus)))
        self.edge_version = 0
        self.judged: set[tuple[int, int]] = set()
        self.contradictions: list[tuple[int, int, int]] = []  # (winner, loser, votes)
        self.last_run: float | None = None
        self.edges_seen = np.zeros(len(corpus), dtype=bool)  # edges were looked for (once, on arrival)
        # k of the candidate path (None: all pairs); above all_pairs_max vectors it is chosen automatically
        self.k = params.candidates_for(len(corpus))
        if self.k is not None and vectors is None:
            raise ValueError(f"consolidation.candidates needs the corpus embeddings (vectors=None; k={self.k} for "
                             f"{len(corpus)} vectors, all_pairs_max={params.all_pairs_max})")
        self.vectors = vectors
        self._candidates: tuple[np.ndarray, np.ndarray] | None = None
        self.timings: dict[str, float] = {}  # seconds of the last run's phases
        self.probe: Callable[[str], None] | None = None  # told each phase as it starts (see consolidate)

    def _phase(self, name: str) -> float:
        if self.probe is not None:
            self.probe(name)
        return time.perf_counter()

    def candidate_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The candidate pairs (i < j) over the corpus vectors (``candidate_pairs``: distinct or knn), computed
        once; int32 below 2^31 rows (~10M pairs at 1M vectors: 80 MB, not 160 MB)."""
        if self._candidates is None:
            lo, hi = (distinct_pairs(self.vectors, self.words, int(self.k), self.p.duplicate_cosine,
                                     self.p.candidate_index, **word_rule_options(self.p, self.corpus.texts))
                      if self.p.candidate_pairs == "distinct"
                      else knn_pairs(self.vectors, int(self.k), self.p.candidate_index))
            lo = narrow_ids(lo, len(self.corpus))
            self._candidates = (lo, narrow_ids(hi, len(self.corpus)))
        return self._candidates

    # -- edges -----------------------------------------------------------------------------------------------
    def raw_edges(self) -> Ragged:
        """The edges as found (unique, no self-loops), int64."""
        return self.edges.unpack()

    def add_edges(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Merge edges (``src`` depends on ``dst``) into the CSR: duplicates and self-loops dropped."""
        self.edge_version += 1
        if not len(src):
            return
        raw = self.raw_edges()
        src = np.concatenate([raw.row_ids(), np.asarray(src, np.int64)])
        dst = np.concatenate([raw.indices, np.asarray(dst, np.int64)])
        self.edges = PackedRagged.pack(edges_to_ragged(src, dst, len(self.corpus)))

    def depends_on(self, at: float) -> Ragged:
        """Edges as they count at ``at``: transferred to the version in force when configured."""
        raw = self.raw_edges()
        if not (self.p.enabled and self.p.transfer_dependencies):
            return raw
        succ = latest_successor(self.corpus.superseded_by(), self.corpus.valid_from, at)
        return edges_to_ragged(succ[raw.row_ids()], succ[raw.indices], len(self.corpus))

    def edge_count(self, at: float) -> np.ndarray:
        deps = self.depends_on(at)
        return deps.counts() + reverse(deps).counts()

    # -- one run ---------------------------------------------------------------------------------------------
    def run(self, store: VectorStore, t: float) -> None:
        c = self.corpus
        pending = np.array(sorted(store.pending), dtype=np.int64)
        store.pending.clear()
        fresh = pending[~self.edges_seen[pending]]
        self.edges_seen[fresh] = True  # edges are looked for once per vector, when it first arrives
        previous, self.last_run = self.last_run, t
        if not self.p.enabled:
            self._add_given_edges(fresh)
            return
        in_force = store.in_force()

        # Contradictions between what changed and what is in force.
        timings = self.timings = {}
        if self.k is not None:
            t0 = self._phase("candidates")
            lo, hi = self.candidate_pairs()
            timings["candidates_s"] = time.perf_counter() - t0
        t0 = self._phase("contradictions")
        origins: set[int] = set()
        new = pending[in_force[pending]] if len(pending) else pending
        if self.k is None:
            found = self.detector.pairs(new, np.nonzero(in_force)[0])
        else:
            found = self.detector.judge(*select_oriented(lo, hi, new, in_force, len(c), self.detector.gate, self.chunk))
        for a, b, detail in found:
            if (a, b) in self.judged:
                continue
            self.judged.add((a, b))
            ratio = dict(zip((a, b), store.feedback_ratio(np.array([a, b])).tolist()))  # the two rows resolve reads
            winner, loser, votes = resolve(a, b, c.created_at, c.authority, ratio, self.p.tie_break)
            self.contradictions.append((winner, loser, votes))
            store.log(t, "contradiction", loser, winner, detector=self.detector.name, votes_for_winner=votes,
                      applied=self.p.verdict == "demote", **detail)
            if self.p.verdict == "demote":
                store.feedback(loser, False, t, cause=f"verdict: contradicted by {c.ids[winner]}")
                origins.add(loser)

        timings["contradictions_s"] = time.perf_counter() - t0

        # Dependency edges: the corpus's own, plus detected ones between different documents.
        t0 = self._phase("edges")
        self._add_given_edges(fresh)
        if self.p.detect_dependencies and len(fresh):
            ingested = store.ingested()
            if self.k is None:
                i, j, _ = jaccard_between(self.words, fresh, np.nonzero(ingested)[0], self.p.dependency_threshold)
                keep = (c.doc_id[i] != c.doc_id[j]) & ~(np.isin(j, fresh) & (j < i))  # each new pair once
                i, j = i[keep], j[keep]
            else:  # candidate pairs with one end fresh and the other ingested, each once
                i, j = select_oriented(lo, hi, fresh, ingested, len(c), lambda a, b: (c.doc_id[a] != c.doc_id[b]) & (
                    jaccard_of(self.words, a, b, sizes=self.word_sizes) > self.p.dependency_threshold), self.chunk)
            ai, aj = c.authority[i], c.authority[j]
            # The lower-authority chunk depends on the higher one; on equal authority the newer on the older
            # (then the later corpus row on the earlier).
            ci, cj = c.created_at[i], c.created_at[j]
            i_depends = (ai < aj) | ((ai == aj) & ((ci > cj) | ((ci == cj) & (i > j))))
            src, dst = np.where(i_depends, i, j), np.where(i_depends, j, i)
            self.add_edges(src, dst)
            store.events.add_columns(len(src), time=float(t), kind="dependency_detected", vector=src, cause=dst)
        timings["edges_s"] = time.perf_counter() - t0

        # Ripple from every vector superseded since the last run, and from every demoted loser, to whoever
        # depended on it: by the edges as given, as they counted at the previous run (before this supersession
        # moved them on) and as they count now.
        t0 = self._phase("ripple")
        origins |= set(pending[store.status[pending] == Status.DEPRECATED].tolist())
        if origins:
            views = [self.raw_edges(), self.depends_on(t)]
            if previous is not None:
                views.append(self.depends_on(previous))
            src = np.concatenate([v.row_ids() for v in views])
            dst = np.concatenate([v.indices for v in views])
            depended_by = reverse(edges_to_ragged(src, dst, len(c)))
            skip = ~store.in_force()
            hits = ripple_hits(depended_by, np.array(sorted(origins), dtype=np.int64), self.p.ripple, skip)
            apply_ripple(store, hits, t, self.p.ripple.floor)

        timings["ripple_s"] = time.perf_counter() - t0
        self._phase("statuses")

        # Dormancy after this run's verdicts and ripples; then DEPRECATED -> ARCHIVED after the grace period,
        # and UNCONSOLIDATED -> ACTIVE.
        self._dormancy(store, t, store.in_force())
        due = (store.status == Status.DEPRECATED) & (store.deprecated_at <= t - store.params.archive_after_days)
        store.archive_rows(np.nonzero(due)[0], t)
        store.set_statuses(np.nonzero(store.status == Status.UNCONSOLIDATED)[0], Status.ACTIVE, t, "consolidated")

    def _add_given_edges(self, pending: np.ndarray) -> None:
        """The corpus's own edges of ``pending`` vectors (one gather; the edge arrays as the per-vector loop
        would concatenate them)."""
        deps = self.corpus.depends_on
        pending = np.asarray(pending, dtype=np.int64)
        if not len(pending):
            return
        counts = deps.counts()[pending]
        if not counts.sum():
            return
        src = np.repeat(pending, counts)
        starts = np.repeat(deps.indptr[pending] - np.cumsum(counts) + counts, counts)
        dst = deps.indices[starts + np.arange(len(src))]
        self.add_edges(src, dst)

    def _dormancy(self, store: VectorStore, t: float, in_force: np.ndarray) -> None:
        conf = store.live_confidence(np.array([t]))[0]
        low = conf < store.conf.dormant_threshold
        awake = (store.status == Status.ACTIVE) | (store.status == Status.UNCONSOLIDATED)
        # set_status's records as one batch each (~160 MB of dicts at 1M); disjoint sets, so both chosen first
        for rows, status, why in ((in_force & awake & low, Status.DORMANT, "decay: confidence {:.3f} below threshold"),
                                  ((store.status == Status.DORMANT) & ~low, Status.ACTIVE, "revived: confidence {:.3f}")):
            store.set_statuses(np.nonzero(rows)[0], status, t, [why.format(x) for x in conf[rows].tolist()])


# -- the frozen form ---------------------------------------------------------------------------------------------

@dataclass
class ConsolidationResult:
    store: VectorStore
    agent: ConsolidationAgent
    at: float

    @property
    def base_confidence(self) -> np.ndarray:
        return self.store.base_confidence

    @property
    def negative_feedback(self) -> np.ndarray:
        return self.store.negative

    @property
    def depends_on(self) -> Ragged:
        return self.agent.depends_on(self.at)

    @property
    def edge_count(self) -> np.ndarray:
        return self.agent.edge_count(self.at)

    @property
    def contradictions(self) -> list[tuple[int, int, int]]:
        return self.agent.contradictions

    @property
    def events(self) -> list[dict]:
        """What consolidation did (ingest and status bookkeeping left out)."""
        return [e for e in self.store.events if e["kind"] in CONSOLIDATION_EVENTS]

    def summary(self) -> dict:
        return consolidation_summary(self.store, self.agent)


CONSOLIDATION_EVENTS = ("contradiction", "dependency_detected", "ripple")


def consolidation_summary(store: VectorStore, agent: ConsolidationAgent) -> dict:
    """Counts of what consolidation did, and the edges as they count after the agent's last run."""
    kinds = {k: n for k, n in store.events.count("kind").items() if k in CONSOLIDATION_EVENTS}
    at = agent.last_run if agent.last_run is not None else -np.inf
    out = {"contradictions": len(agent.contradictions), "edges": int(agent.depends_on(at).indices.size),
           "events": dict(sorted(kinds.items()))}
    if agent.k is not None and agent.p.candidates is None:  # switched to candidate pairs by size
        out["auto_candidates"] = {"k": agent.k, "n_vectors": len(agent.corpus), "all_pairs_max": agent.p.all_pairs_max}
    return out


def consolidate(corpus: Corpus, at: float, params: ConsolidationParams, vectors: np.ndarray | None = None,
                conf: ConfidenceParams | None = None, store_params: StoreParams | None = None,
                chunk: int = ORIENT_CHUNK, probe: Callable[[str], None] | None = None) -> ConsolidationResult:
    """Everything created by ``at`` ingested, supersessions in force applied, one consolidation run at ``at``.
    ``chunk``: ConsolidationAgent.chunk. ``probe``: called with each phase's name as it starts (ingest, setup,
    candidates, contradictions, edges, ripple, statuses): lets a benchmark measure each phase's memory."""
    probe = probe or (lambda phase: None)
    probe("ingest")
    t0 = time.perf_counter()
    store = VectorStore(corpus, conf or ConfidenceParams(), store_params or StoreParams())
    ingest_until(store, at)
    probe("setup")
    t1 = time.perf_counter()
    agent = ConsolidationAgent(corpus, params, vectors)
    t2 = time.perf_counter()
    agent.chunk, agent.probe = chunk, probe
    agent.run(store, at)
    agent.probe = None  # the result keeps no reference to the probe
    agent.timings.update(ingest_s=t1 - t0, setup_s=t2 - t1)  # setup: word sets (and the detector's tables)
    return ConsolidationResult(store, agent, at)
