"""The retriever protocol: index a corpus at a simulated time, then search query batches, each judged at
its own ``as_of`` time.

A system is any importable class whose instances satisfy :class:`Retriever` (a ``typing.Protocol``: nothing to
inherit, nothing to register); ``conf/retriever/<name>.yaml`` names it with ``_target_`` and gives its
parameters (smartvector_bench/systems/__init__.py builds it). The other protocols here are optional
capabilities the experiments look for with ``isinstance``, never by peeking at attributes: a system that
implements one gets the matching treatment, any other system is left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol, runtime_checkable

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from smartvector_bench.systems.smartvector.consolidation import ConsolidationAgent
    from smartvector_bench.core.csr import Ragged
    from smartvector_bench.systems.smartvector.signals.fusion import Weights
    from smartvector_bench.systems.smartvector.store import VectorStore


@runtime_checkable
class Retriever(Protocol):
    name: str  # the configured name (``retrievers.<name>``) when ``__init__`` takes a ``name`` parameter

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        """Ingest the corpus (vectors row-aligned with it) and prepare to serve from ``serve_time`` on
        (simulated days; consolidation runs there)."""
        ...

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        """Rank the corpus for each query; ``as_of[q]`` is the time the answer must hold at. ``texts`` are the
        query texts, for systems that do not work on embeddings (e.g. keyword overlap). ``labels`` is empty
        except for a system that is :class:`ReadsLabels` (the oracle, a ceiling): the harness passes it
        ``query_family=``. Every other system must ignore unknown keyword arguments.

        The output contract, checked on every result before anything is scored or written
        (:func:`smartvector_bench.core.run.contract.check_search`; a break stops the run naming the system, the query
        and the rule): a :class:`Run` with ``ranked`` and ``scores`` of shape ``(n_queries, <= k)`` and
        ``confidence`` of shape ``(n_queries,)``; integer ids in ``[0, len(corpus))``, unique per query, with
        ``-1`` and a NaN score as padding after the last hit only; finite scores for the hits; confidence in
        [0, 1], NaN only for a query with no hit; scores that do not increase down the ranking, unless the system
        is :class:`RanksByKey` (it orders by another key first, e.g. recent_cosine by recency). An exception or
        ``sys.exit`` inside any call of a system stops the run in one line naming the system and the call."""
        ...

    def describe(self) -> dict:
        """What this system did beyond the config (e.g. consolidation summary), for metrics.json: a dict with
        string keys that JSON holds as it is (lists, strings, finite numbers, bools, None), checked right after
        the system ran."""
        ...


@runtime_checkable
class ChecksDataset(Protocol):
    """Optional: a system that cannot run on every dataset says so before anything is embedded or run."""

    def check_dataset(self, corpus: Corpus) -> None:
        """Raise :class:`~smartvector_bench.core.errors.BenchError` with one line naming the field or limit the
        corpus lacks (``corpus.present`` lists the metadata fields the dataset gave). The harness adds the
        dataset's path and the fix (drop the system from ``systems=``)."""
        ...


@runtime_checkable
class RanksByKey(Protocol):
    """Optional: a system whose ranking puts a key before the score it reports (recency, authority, dormancy),
    so its scores need not fall down the ranking; the output contract skips that one rule for it
    (``smartvector_bench/core/run/contract.py``). Every other system's scores must not increase down the ranking."""

    rank_key: str  # what orders the hits before the score, in words (for the docs and error messages)


@runtime_checkable
class FitsOnDev(Protocol):
    """Optional: a system whose settings are fitted on the dev split of the dataset it is judged on. It never
    sees a label: the harness (``experiments/tuning.py``) builds each candidate, indexes it when asked, judges it
    on the dev queries, keeps the best of each stage and hands the winner back; then the system is indexed and
    searched as any other. Its test figures are the result."""

    def stages(self) -> list[dict[str, list]]:
        """Grids of dotted settings, fitted one stage after the other (each over the best settings so far)."""
        ...

    def candidate(self, params: dict) -> tuple[Retriever, bool]:
        """The system with ``params`` set, and whether the harness must ``index`` it (False: already indexed)."""
        ...

    def adopt(self, params: dict, report: dict) -> None:
        """Become the candidate with ``params``; ``report`` (how it was chosen) goes into ``describe()``."""
        ...


@runtime_checkable
class TrainsOnDev(Protocol):
    """Optional: a learned system (``ltr``) trained on the dev split's qrels of the dataset it is judged on. After
    ``index``, the harness (``experiments/tuning.py``) calls :meth:`train` with the dev queries only: their
    vectors, texts and ``as_of`` and their graded relevance (qrels). No test query's qrels, and no stale, rumor,
    family or kind label, ever reach it; then it is searched as any other system."""

    def train(self, query_vectors: np.ndarray, as_of: np.ndarray, texts: list[str], relevant: Ragged,
              grades: Ragged) -> dict:
        """Fit on the dev queries; ``relevant.row(q)`` lists query q's relevant corpus rows, ``grades.row(q)`` their
        grades (>= 1). Returns a JSON-ready summary of the fit (for ``describe()``)."""
        ...


@runtime_checkable
class SavesModel(Protocol):
    """Optional: a trained system whose model the harness writes beside its run file (``model_<name>.txt``), and
    which can search with a saved one instead of training (``ltr``'s ``model_file``). Training is not
    reproducible across CPUs (features that moved by float rounding train other trees), so the regression gate
    reruns such a system on another CPU with the published model."""

    def model_text(self) -> str | None:
        """The trained model as text, None before training."""
        ...


@runtime_checkable
class ReadsLabels(Protocol):
    """Optional, for ceilings only: a system that reads the ground-truth labels. The harness refuses a dataset
    without ``labels/`` before anything is embedded, calls ``index_labels`` after ``index`` and passes
    ``query_family=`` (aligned with the query batch) to ``search``. No real system can be one."""

    def index_labels(self, chunk_family: np.ndarray, chunk_kind: np.ndarray | None = None) -> None:
        """One family key and one kind (``statement``, ...) per corpus row, "" for none."""
        ...


@runtime_checkable
class AuditsConsolidation(Protocol):
    """Optional: a system whose consolidation passes verdicts on contradictions; experiment=main scores them
    against the injected rumors (``system_info.<name>.contradiction_detection`` in metrics.json)."""

    def contradiction_detection(self, rumor: Ragged) -> dict:
        """How the verdicts line up with the rumor rows of each query (the dataset's truth, which the system
        never saw): see :func:`smartvector_bench.systems.smartvector.audit.detection_quality`."""
        ...


@runtime_checkable
class LiveStore(Protocol):
    """Optional: a system serving from a store whose state changes while it serves (user feedback, accesses,
    consolidation runs) and logs why. experiment=feedback_loop replays it; audit.py traces a vector's lineage
    and explains a query's top hit from it."""

    def bind_live(self, corpus: Corpus, vectors: np.ndarray) -> tuple[VectorStore, ConsolidationAgent]:
        """Serve from a new, empty store and consolidation agent (nothing ingested yet) and return both: the
        replay ingests, consolidates and gives feedback through them, and every later search sees it."""
        ...

    def live_state(self) -> tuple[VectorStore, ConsolidationAgent]:
        """The store and consolidation agent searches are served from now."""
        ...

    def query_signals(self, query_vector: np.ndarray, as_of: float) -> tuple[np.ndarray, np.ndarray, dict, Weights]:
        """For one query at ``as_of``: every vector's fused score and rank key (``-inf``: excluded), each (1, N),
        its signals and status masks (``semantic``, ``temporal``, ``confidence``, ``relational``, ``dormant``,
        ``deprecated``, ``archived``; each (1, N)) and the weights that fused them."""
        ...


@runtime_checkable
class ScoresHits(Protocol):
    """Optional: a four-signal system reports each ranked hit's signals (the run file's per-hit ``signals``, for
    the report's drill-down). Computed after ranking, on the hits only; rankings and scores are not touched."""

    def hit_signals(self, query_vectors: np.ndarray, as_of: np.ndarray, ranked: np.ndarray) -> dict[str, np.ndarray]:
        """``semantic`` (the raw cosine), ``temporal``, ``confidence``, ``relational``, each (Q, k) aligned with
        ``ranked`` (a Run's, from the last ``search`` on the same state; NaN where it is -1), such that
        ``signals.fusion.fuse(weights, ...)`` gives the Run's scores (to float32 rounding of the cosine)."""
        ...


@runtime_checkable
class FusesSignals(ScoresHits, Protocol):
    """Optional: a :class:`ScoresHits` system whose run score IS ``signals.fusion.fuse(weights, hit signals)``, with
    weights its recorded config fixes. Checked on the class a recorded ``_target_`` names, without building it, so
    a published run folder gets the fusion check and the report's signal columns (``tools/report/stored_signals``:
    ``publish`` refuses signals that do not give the stored scores) whatever the system's name or package."""

    @classmethod
    def fusion_weights(cls, config: Mapping, where: str) -> Weights | None:
        """The weights of a recorded config (``retrievers.<name>``, ``where``), read as ``__init__`` reads them;
        None when the config alone does not fix them (fitted on dev). BenchError naming the key if unreadable."""
        ...


def hit_columns(ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For :class:`ScoresHits`: the distinct corpus rows ``ranked`` holds (sorted) and each entry's column among
    them (-1 for padding), so signals are computed on (Q, distinct hits) arrays instead of (Q, N)."""
    ranked = np.asarray(ranked, dtype=np.int64)
    rows = np.unique(ranked[ranked >= 0])
    return rows, np.where(ranked >= 0, np.searchsorted(rows, ranked), -1)


def gather_hits(values: np.ndarray, col: np.ndarray) -> np.ndarray:
    """(Q, k) of a (Q, distinct hits) array at :func:`hit_columns`'s columns, NaN for padding."""
    values = np.broadcast_to(np.asarray(values, dtype=np.float64), (len(col), values.shape[-1]))
    out = np.take_along_axis(values, np.maximum(col, 0), axis=1) if values.shape[-1] else np.zeros(col.shape)
    return np.where(col >= 0, out, np.nan)


def require_fields(system: str, corpus: Corpus, fields: tuple[str, ...], why: str) -> None:
    """For ``check_dataset``: one line naming each of ``fields`` the dataset does not give on every chunk
    (``corpus.present``), and what the system reads it for (``why``)."""
    missing = [f for f in fields if f not in corpus.present]
    if missing:
        names = ", ".join(f"metadata.{f}" for f in missing)
        raise BenchError(f"{system} needs {names} on every chunk ({why}); the dataset lacks "
                         f"{'it' if len(missing) == 1 else 'them'}")
