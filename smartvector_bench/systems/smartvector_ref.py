"""``smartvector_ref``: the paper's own published code (PyPI ``smartvector-rag`` 0.1.1, module ``smartvector``)
driven through its public API as a system in experiment=main. Nothing of it is re-implemented here.

Ingest. Every chunk created by ``serve_time`` goes in, in time order (``created_at``, then corpus order), through
one ``SmartVectorDB.ingest_document`` call each. Its text is a single chunk of <= 200 characters, so the package's
factory makes exactly one SmartVector (asserted). The package doc_id is ``<our doc_id>#<position>``, the position
being the chunk's place among the chunks of its document version in document order (``offset_start``, ties in
corpus order; the corpus rows themselves are shuffled); so the package's chunk_index is
always 0, and ``_find_existing_chunk(doc_id, 0)`` finds the same position of the previous version: when a
chunk's successor is ingested, the package marks the predecessor DEPRECATED itself. version = our version,
created_at = ours as a naive datetime (the package uses naive ``datetime.now()``), authority = ours,
source_type = our source. The returned vector_id is mapped back to our corpus index. One side effect: the
conflict detector's skip of "same doc_id and version, different chunk" pairs never applies (each chunk has its
own package doc_id), so two chunks of one document version can be flagged as a conflict.

Supersession happens when the successor is *ingested*, not at its effective date (``valid_from``): that is the
package's design, and a superseded chunk is DEPRECATED and excluded from every later query, exactly as the
package does - including historical queries whose ``as_of`` lies inside the old version's window. And the
package only supersedes an ACTIVE predecessor: ``_find_existing_chunk`` ignores UNCONSOLIDATED vectors (so with
no consolidation between two versions nothing is superseded) and DORMANT ones (a predecessor that decayed
below 0.15 before its successor arrived stays DORMANT, never DEPRECATED).

Temporal validity. ``ingest_document`` never sets ``temporal_validity_start/end``; we set them on the created
SmartVector objects from our ``valid_from`` / ``valid_to`` (None when open). ``_temporal_score`` reads only the
end (0.05 once ``reference_time`` is past it, else 2^(-age/30), with no check of the start and no clamp for a
negative age).

Consolidation (``consolidation_schedule``). ``before_each_ingest`` (default): the package's agent runs
(``run_consolidation()``) just before each batch of chunks sharing a creation time is ingested, whenever
something was ingested since its last run, and once more at ``serve_time``. Between two arrivals nothing
else changes the store and dormancy only grows with time, so this is what running it continuously (the
package's "every hour, or nightly") gives, and it is what lets the package's own supersession fire (see
above). ``serve_time_only``: one run at ``serve_time`` after everything is ingested; then no predecessor is
ever ACTIVE when its successor arrives and the package supersedes nothing (both versions stay searchable).

Frozen clock. The package reads the wall clock: the agent's dormancy check calls
``compute_current_confidence(vec)`` without a reference time (so it ages every vector to ``datetime.now()``),
and event timestamps, the ingestion log and ``age_days`` use ``datetime.now()`` too. While the package runs
(ingest, consolidation, query) the name ``datetime`` inside ``smartvector.confidence``, ``.consolidation``,
``.db``, ``.models`` and ``.factory`` is replaced by a subclass whose ``now()`` returns the simulated time (the
batch's creation time, ``serve_time``, or the query's ``as_of``), and restored afterwards.

Conflict vote (``patch_conflict_vote``). In 0.1.1 ``ConflictDetector._resolve_conflict`` builds
``set(winners)`` of SmartVectors, a non-frozen dataclass and so unhashable: the first conflict the detector
finds raises ``TypeError`` and consolidation dies. With ``true`` (default) SmartVector gets identity hashing
(``object.__hash__``) while the package runs, so the vote runs as written (a 2-1 or 3-0 majority, so its result
does not depend on set order; the package only logs it). With ``false`` the crash is reported as a BenchError.
On the default dataset the detector finds no conflict and the patch never acts.

Queries. ``db.query(text, top_k=k, include_dormant, reference_time=as_of)`` under the clock frozen at
``as_of``, on the query TEXT: the package's keyword-overlap similarity as shipped (the query vectors are
ignored). Results keep the package's order (final_score rounded to 4 decimals, Python's stable sort, ties in
ingest order), padded to k with -1. Scores are the package's ``final_score``. The package's query never
updates access counts or feedback (only ``record_feedback`` does, and we never call it); search checks that the
store is unchanged.

Reported confidence (``reported_confidence``): ``final_score`` (default) is the top hit's final_score clipped to
[0, 1] - a weighted sum (0.35 / 0.25 / 0.25 / 0.15, summing to 1) of four signals that lie in [0, 1] except the
temporal one for a chunk created after ``as_of`` (negative age); ``confidence_score`` is the top hit's live
confidence (authority, decay, feedback, access) at ``as_of``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run
from smartvector_bench.core.settings import choice, section
from smartvector_bench.core.timeutil import format_iso, from_days
from smartvector_bench.systems.base import require_fields

PATCHED_MODULES = ("smartvector.confidence", "smartvector.consolidation", "smartvector.db", "smartvector.models",
                   "smartvector.factory")


@dataclass(frozen=True)
class RefParams:
    reported_confidence: str = choice("final_score", "confidence_score")
    include_dormant: bool = False
    consolidation_schedule: str = choice("before_each_ingest", "serve_time_only")
    patch_conflict_vote: bool = True
    status_filter: bool = True  # false: the soft variant, DEPRECATED / ARCHIVED vectors are scored like the rest


def naive(days: float) -> datetime:
    """Simulated days -> naive UTC datetime (the package compares naive datetimes)."""
    return from_days(days).replace(tzinfo=None)


def _modules():
    import importlib

    return [importlib.import_module(m) for m in PATCHED_MODULES]


@contextlib.contextmanager
def frozen_clock(when: datetime) -> Iterator[None]:
    """Inside the block, ``datetime.now()`` in the package's modules returns ``when``."""

    class FrozenDatetime(datetime):
        @classmethod
        def now(cls, tz=None):
            return when

    mods = _modules()
    saved = [m.datetime for m in mods]
    try:
        for m in mods:
            m.datetime = FrozenDatetime
        yield
    finally:
        for m, original in zip(mods, saved):
            m.datetime = original


@contextlib.contextmanager
def statuses_lifted(db, enabled: bool) -> Iterator[None]:
    """While the block runs, DEPRECATED and ARCHIVED vectors read as ACTIVE, so ``db.query`` (which skips
    them) scores them with its four signals like any other; their statuses are restored afterwards. The
    package's score never reads the status, so this turns off its status filter and nothing else."""
    from smartvector.models import VectorStatus

    if not enabled:
        yield
        return
    hidden = (VectorStatus.DEPRECATED, VectorStatus.ARCHIVED)
    lifted = [(v, v.status) for v in db.vectors.values() if v.status in hidden]
    try:
        for v, _ in lifted:
            v.status = VectorStatus.ACTIVE
        yield
    finally:
        for v, status in lifted:
            v.status = status


@contextlib.contextmanager
def hashable_vectors(enabled: bool) -> Iterator[None]:
    """Give SmartVector identity hashing while the block runs (see the module docstring)."""
    from smartvector.models import SmartVector

    if not enabled:
        yield
        return
    had = "__hash__" in SmartVector.__dict__
    saved = SmartVector.__dict__.get("__hash__")
    try:
        SmartVector.__hash__ = object.__hash__
        yield
    finally:
        if had:
            SmartVector.__hash__ = saved
        else:
            del SmartVector.__hash__


def chunk_positions(corpus: Corpus) -> np.ndarray:
    """Position of each chunk among the chunks of its (doc_id, version), by ``offset_start`` (ties in corpus
    order)."""
    seen: dict[tuple[str, int], int] = {}
    pos = np.zeros(len(corpus), dtype=np.int64)
    for i in np.argsort(corpus.offset_start, kind="stable").tolist():
        key = (str(corpus.doc_id[i]), int(corpus.version[i]))
        pos[i] = seen.get(key, 0)
        seen[key] = pos[i] + 1
    return pos


def _fingerprint(db) -> list[tuple]:
    """Everything a query could change in the store."""
    return [(vid, v.status, v.access_count, v.positive_feedback, v.negative_feedback, v.last_accessed,
             v.last_validated, v.base_confidence, tuple(v.depends_on), tuple(v.depended_by),
             tuple(v.contradictions)) for vid, v in db.vectors.items()]


SUMMARY_KEYS = ("conflicts_found", "relationships_built", "ripples_propagated", "vectors_dormant",
                "vectors_consolidated")


class SmartVectorRef:
    name = "smartvector_ref"

    def __init__(self, name: str = "smartvector_ref", **params):
        self.name = name
        self.where = f"retrievers.{name}"
        self.params = section(RefParams, params, self.where)
        try:
            import smartvector  # noqa: F401
        except ImportError as exc:  # pragma: no cover - the package is a dependency
            raise BenchError(f"{self.where}: the package smartvector-rag is not installed ({exc})") from None

    def check_dataset(self, corpus: Corpus) -> None:
        """Before anything is embedded: the package's clock is each chunk's ``created_at``, and each chunk must
        stay one package vector (the factory splits a text at sentence ends into chunks of <= 200 characters;
        ``index`` asserts the same), or our corpus rows would not map to the package's vectors."""
        from smartvector.factory import SmartVectorFactory

        require_fields(self.name, corpus, ("created_at",), "the package ingests each chunk at its creation time")
        check_size(corpus, self.name)
        for i, text in enumerate(corpus.texts):
            n = len(SmartVectorFactory.from_text("check", 1, text, "check", "check", "", 1.0, naive(0.0)))
            if n != 1:
                raise BenchError(
                    f"{self.name} needs every chunk to stay one package chunk (smartvector-rag splits a text at "
                    f"sentence ends into chunks of at most 200 characters, and a blank text into none); chunk "
                    f"{corpus.ids[i]!r} has {len(text)} characters and would become {n}")

    # -- the package, under the simulated clock -------------------------------------------------------------
    def _consolidate(self, at: float) -> dict:
        with frozen_clock(naive(at)), hashable_vectors(self.params.patch_conflict_vote):
            try:
                summary = self.db.run_consolidation()
            except TypeError as exc:
                if "unhashable" not in str(exc):
                    raise
                raise BenchError(
                    f"{self.where}: smartvector-rag crashed in its conflict vote at {format_iso(from_days(at))} "
                    f"({exc}: ConflictDetector._resolve_conflict builds a set of unhashable SmartVectors); "
                    f"set {self.where}.patch_conflict_vote=true to run it with identity hashing") from None
        self.runs += 1
        for key in SUMMARY_KEYS:
            self.totals[key] += int(summary[key])
        return summary

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        from smartvector import SmartVectorDB

        t0 = time.perf_counter()
        self.corpus = corpus
        self.serve_time = float(serve_time)
        self.db = SmartVectorDB()
        self.row_of: dict[str, int] = {}  # package vector_id -> our corpus index
        self.vec_of: dict[int, str] = {}  # our corpus index -> package vector_id
        self.runs = 0
        self.totals = {key: 0 for key in SUMMARY_KEYS}
        pos = chunk_positions(corpus)
        self.package_doc_ids = [f"{corpus.doc_id[i]}#{pos[i]}" for i in range(len(corpus))]
        order = sorted((i for i in range(len(corpus)) if corpus.created_at[i] <= serve_time),
                       key=lambda i: (float(corpus.created_at[i]), i))
        schedule = self.params.consolidation_schedule
        pending = False  # ingested since the agent's last run
        last_t = -np.inf
        superseded: dict[int, int] = {}  # our index of a successor -> our index of what the package deprecated
        for i in order:
            t = float(corpus.created_at[i])
            if schedule == "before_each_ingest" and pending and t > last_t:  # a new batch arrives
                self._consolidate(t)
                pending = False
            last_t = t
            with frozen_clock(naive(t)):
                results = self.db.ingest_document(
                    doc_id=self.package_doc_ids[i], version=int(corpus.version[i]), text=corpus.texts[i],
                    source_name=str(corpus.doc_id[i]), source_type=str(corpus.source[i]), author="",
                    authority=float(corpus.authority[i]), created_at=naive(t))
            if len(results) != 1:
                raise BenchError(f"{self.where}: chunk {corpus.ids[i]!r} became {len(results)} package vectors "
                                 "(expected exactly one: a chunk of <= 200 characters with some text)")
            res = results[0]
            vid = res["new_vector"] if res["action"] == "superseded" else res["vector_id"]
            assert vid not in self.row_of, f"package vector id {vid} issued twice"
            self.row_of[vid], self.vec_of[i] = i, vid
            vec = self.db.vectors[vid]
            vec.temporal_validity_start = naive(corpus.valid_from[i])
            vec.temporal_validity_end = naive(corpus.valid_to[i]) if np.isfinite(corpus.valid_to[i]) else None
            if res["action"] == "superseded":
                superseded[i] = self.row_of[res["old_vector"]]
            pending = True
        self.last_summary = self._consolidate(self.serve_time)
        self.n_ingested = len(order)
        self._supersession_report(superseded)
        self.status_counts: dict[str, int] = {}
        for v in self.db.vectors.values():
            self.status_counts[v.status.name] = self.status_counts.get(v.status.name, 0) + 1
        self.index_s = time.perf_counter() - t0

    def _supersession_report(self, superseded: dict[int, int]) -> None:
        """Compare the package's supersessions with the corpus's ``supersedes`` metadata."""
        c = self.corpus
        ingested = set(self.vec_of)
        expected = {i: int(c.supersedes[i]) for i in ingested if c.supersedes[i] >= 0 and c.supersedes[i] in ingested}
        agree = sum(1 for i, p in expected.items() if superseded.get(i) == p)
        missed = [p for i, p in expected.items() if i not in superseded]
        self.supersession = {
            "in_corpus": len(expected),
            "deprecated_by_package": len(superseded),
            "agree_with_corpus": agree,
            "disagree_with_corpus": sum(1 for i, p in superseded.items() if expected.get(i) != p),
            "not_deprecated_predecessor_status": {
                s: sum(1 for p in missed if self.db.vectors[self.vec_of[p]].status.name == s)
                for s in sorted({self.db.vectors[self.vec_of[p]].status.name for p in missed})},
        }

    # -- queries --------------------------------------------------------------------------------------------
    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **_ignored) -> Run:
        t0 = time.perf_counter()
        q = len(as_of)
        if texts is None or len(texts) != q:
            raise BenchError(f"{self.where}: the reference implementation ranks by keyword overlap and needs the "
                             f"query texts ({'none' if texts is None else len(texts)} given for {q} queries)")
        ranked = np.full((q, k), -1, dtype=np.int64)
        scores = np.full((q, k), np.nan)
        confidence = np.full(q, np.nan)
        before = _fingerprint(self.db)
        for row in range(q):
            text = texts[row]
            if not isinstance(text, str) or not text.strip():
                raise BenchError(f"{self.where}: query {row} has no text (the reference implementation ranks by "
                                 "keyword overlap of the query text)")
            at = naive(as_of[row])
            with frozen_clock(at), statuses_lifted(self.db, not self.params.status_filter):
                results = self.db.query(text, top_k=k, include_dormant=self.params.include_dormant,
                                        reference_time=at)
            for r, res in enumerate(results[:k]):
                ranked[row, r] = self.row_of[res.vector.vector_id]
                scores[row, r] = res.final_score
            if results:
                top = results[0]
                value = top.final_score if self.params.reported_confidence == "final_score" else top.confidence_score
                confidence[row] = float(np.clip(value, 0.0, 1.0))
        assert _fingerprint(self.db) == before, "the package's query modified the store"
        self.search_s = time.perf_counter() - t0
        return Run(self.name, ranked, scores, confidence)

    def describe(self) -> dict:
        import smartvector

        p = self.params
        info = {
            "package": {"name": "smartvector-rag", "version": metadata.version("smartvector-rag"),
                        "module_version": getattr(smartvector, "__version__", None)},
            "patched": {
                "frozen_clock": f"datetime.now() in {', '.join(PATCHED_MODULES)} returns the simulated time "
                                "(batch creation time at ingest and consolidation before it, serve_time for the "
                                "last consolidation, as_of per query)",
                "conflict_vote_identity_hash": p.patch_conflict_vote,
                "validity_window": "temporal_validity_start/end set on each ingested SmartVector from "
                                   "valid_from/valid_to",
            },
            "similarity": "package keyword overlap on the query text (query vectors ignored)",
            "confidence": ("top-1 final_score clipped to [0, 1] (0.35 S + 0.25 T + 0.25 C + 0.15 R)"
                           if p.reported_confidence == "final_score"
                           else "top-1 confidence_score (package live confidence at as_of)"),
            "include_dormant": p.include_dormant,
            "status_filter": (p.status_filter and "DEPRECATED and ARCHIVED vectors are not returned (the package)"
                              or "off: DEPRECATED and ARCHIVED vectors are scored like the rest (soft variant)"),
            "consolidation_schedule": p.consolidation_schedule,
        }
        if hasattr(self, "db"):
            info.update({
                "serve_time": format_iso(from_days(self.serve_time)),
                "ingested": self.n_ingested,
                "not_ingested_created_after_serve_time": len(self.corpus) - self.n_ingested,
                "statuses_after_consolidation": dict(sorted(self.status_counts.items())),
                "consolidation_runs": self.runs,
                "consolidation_at_serve_time": {key: int(self.last_summary[key]) for key in SUMMARY_KEYS},
                "consolidation_totals": dict(self.totals),
                "supersession": self.supersession,
                "wall_time_s": {"index": round(self.index_s, 3),
                                "search": round(getattr(self, "search_s", float("nan")), 3)},
            })
        return info


# Size limit. The package's consolidation compares every pair of ingested chunks in pure Python (keyword
# overlap, then difflib) and runs before each batch of arrivals: O(N^2) per run and up to N runs, so time grows
# about cubically while memory stays small (docs/operations.md has the measured times). Above this many chunks
# the system refuses before anything is embedded, rather than run for most of an hour.
MAX_CHUNKS = 1000


def check_size(corpus: Corpus, name: str = "smartvector_ref", max_chunks: int = MAX_CHUNKS) -> None:
    """For ``check_dataset``: one-line BenchError when the corpus has more than ``max_chunks`` chunks."""
    if len(corpus) > max_chunks:
        raise BenchError(f"{name} runs on at most {max_chunks:,} chunks and the dataset has {len(corpus):,}: "
                         "smartvector-rag's consolidation compares every pair of chunks in pure Python before each "
                         "batch of arrivals, so its time grows about cubically with the chunks; leave it out of "
                         "systems= on this dataset")
