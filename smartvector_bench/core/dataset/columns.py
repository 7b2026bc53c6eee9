"""The columnar classes a loaded dataset is made of (:class:`Corpus`, :class:`Queries`, :class:`Labels`,
:class:`Dataset`) and the names of the layout's fields and files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.evaluation.judgments import Timeline

SPLITS = ("dev", "test")
# Dataset layouts this loader reads: 2.0 (every field required, five categories) and 2.1, its superset
# (optional fields with defaults, free-form categories, optional qrels and labels files): schema/dataset.schema.json.
DATASET_SCHEMA_VERSIONS = (SCHEMA_VERSION, "2.1")
CATEGORIES = ("current", "recently_updated", "contested", "dependent", "historical")
# What a document store holds about a chunk; nothing here says which chunk answers what (that is in labels/).
CORPUS_META = ("doc_id", "version", "source", "authority", "created_at", "valid_from", "valid_to", "depends_on",
               "supersedes", "offset_start", "offset_end")
QUERY_META = ("query_time", "as_of", "category", "split")
QUERY_DEFAULTS = {"query_time": "as_of, else the corpus's latest time", "as_of": "query_time",
                  "category": "all", "split": "its qrels file's split, else assigned (SplitSettings)"}
LABEL_FILES = ("labels/chunks.jsonl", "labels/queries.jsonl", "labels/families.jsonl")
# What a missing corpus field means (schema/dataset.schema.json says the same). doc_id defaults to the chunk's
# own _id; created_at and valid_from stand in for each other, and with neither the chunk is in force for all time.
CORPUS_DEFAULTS = {"doc_id": "<the chunk's _id>", "version": 1, "source": "unknown", "authority": 1.0,
                   "created_at": "valid_from, else for all time", "valid_from": "created_at, else for all time",
                   "valid_to": None, "depends_on": [], "supersedes": None, "offset_start": 0,
                   "offset_end": "offset_start + len(text)"}


@dataclass
class Corpus:
    """One row per chunk (vector): what a real document store has. Times are float days since the epoch; an
    open ``valid_to`` is +inf. ``offset_start`` / ``offset_end`` are the chunk's character span in its
    document version."""

    ids: list[str]
    titles: list[str]
    texts: list[str]
    doc_id: np.ndarray
    version: np.ndarray
    source: np.ndarray
    authority: np.ndarray
    created_at: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    depends_on: Ragged
    supersedes: np.ndarray  # index of the chunk this one replaces, -1 if none
    offset_start: np.ndarray
    offset_end: np.ndarray
    index_of: dict[str, int] = field(repr=False, default_factory=dict)
    # The metadata fields every row of the file gave; the others hold their documented defaults (a plain BEIR
    # folder has none). A system that needs a field checks it here, before anything is embedded.
    present: frozenset[str] = frozenset(CORPUS_META)

    def __len__(self) -> int:
        return len(self.ids)

    def superseded_by(self) -> np.ndarray:
        """Index of the successor of each chunk (-1 if none); the inverse of ``supersedes``."""
        out = np.full(len(self), -1, dtype=np.int64)
        has = self.supersedes >= 0
        out[self.supersedes[has]] = np.nonzero(has)[0]
        return out

    def position(self) -> np.ndarray:
        """Rank of each chunk within its document version by ``offset_start`` (0 = first)."""
        key = np.array([f"{d}\0{v}" for d, v in zip(self.doc_id, self.version)], dtype=object)
        order = np.lexsort((self.offset_start, key))
        pos = np.zeros(len(self), dtype=np.int64)
        prev, rank = None, 0
        for i in order.tolist():
            rank = rank + 1 if key[i] == prev else 0
            pos[i], prev = rank, key[i]
        return pos


@dataclass
class Queries:
    """Queries with their judgments (evaluator side: retrievers only ever see texts and times).

    ``relevant`` row ``q`` lists the corpus rows judged relevant (qrels score >= 1), best grade first, with
    ``grades`` aligned; ``stale`` / ``rumor`` come from the labels (empty without labels); ``family`` is the
    cluster a query belongs to (its policy family; the query's own id when the dataset has no labels).
    ``as_of_text`` is each as_of as queries.jsonl wrote it (its ISO string, or query_time's when as_of defaults to
    it; None when neither is given, and for queries built in code): the run file repeats it, since days do not
    round-trip to the same string.
    """

    ids: list[str]
    texts: list[str]
    query_time: np.ndarray
    as_of: np.ndarray
    category: np.ndarray
    split: np.ndarray
    relevant: Ragged
    grades: Ragged
    stale: Ragged
    rumor: Ragged
    family: np.ndarray
    as_of_text: list[str | None] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def gold(self) -> np.ndarray:
        """One relevant chunk per query (the best-graded, then lowest row; -1 if none): for simulated users."""
        first = self.relevant.indptr[:-1]
        has = self.relevant.counts() > 0
        out = np.full(len(self), -1, dtype=np.int64)
        out[has] = self.relevant.indices[first[has]]
        return out

    def subset(self, mask: np.ndarray) -> "Queries":
        rows = np.nonzero(mask)[0]
        return Queries(
            ids=[self.ids[i] for i in rows], texts=[self.texts[i] for i in rows],
            query_time=self.query_time[rows], as_of=self.as_of[rows], category=self.category[rows],
            split=self.split[rows], relevant=self.relevant.take(rows), grades=self.grades.take(rows),
            stale=self.stale.take(rows), rumor=self.rumor.take(rows), family=self.family[rows],
            as_of_text=None if self.as_of_text is None else [self.as_of_text[i] for i in rows],
        )


@dataclass
class Labels:
    """The generator's labels, aligned with the corpus rows and the queries (``labels/``)."""

    chunk_family: np.ndarray  # object; "" where a chunk belongs to no family
    chunk_doc_type: np.ndarray  # object: policy / runbook / message
    chunk_kind: np.ndarray  # object: statement / scope / procedure / ...
    chunk_value: np.ndarray  # float64; NaN where the chunk states no value
    query_family: np.ndarray  # object
    query_asks: np.ndarray  # object: the document type whose statement is authoritative for the query
    timelines: dict[str, Timeline]
    # family -> its generator scenario (labels/families.jsonl "scenario"; {} when the file has none)
    scenarios: dict[str, dict] = field(default_factory=dict)


@dataclass
class Dataset:
    path: Path
    corpus: Corpus
    queries: Queries
    sha256: str
    seed: int | None
    manifest: dict | None
    labels: Labels | None = None
    split_assignment: dict | None = None  # how queries without a split got one (load_queries), for metrics.json
    # What the loader said on stderr about the folder (loaded unchecked, query metadata it ignores), one line each
    notes: tuple[str, ...] = ()
