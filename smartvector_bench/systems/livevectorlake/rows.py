"""What LiveVectorLake's ingest and query return, and the CDC rule per paragraph position: which class each
position of a new version gets, and which old rows it closes (and with what status)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from smartvector_bench.systems.livevectorlake.cold import Close, Row

Time = float | int | datetime


@dataclass(frozen=True)
class Hit:
    """One returned paragraph (a cold-tier row). Times in days since the epoch; ``valid_to`` inf while open."""

    doc_id: str
    chunk_id: str
    position: int
    text: str
    score: float  # cosine (inner product of normalised vectors)
    valid_from: float
    valid_to: float
    version_number: int
    tier: str


@dataclass
class QueryResult:
    hits: list[Hit]
    tier: str  # "hot" or "cold": which tier answered
    as_of: Time | None
    latency_s: float


@dataclass
class IngestResult:
    """What one :meth:`LiveVectorLake.ingest_document` did (or one version of an ``ingest_batch``)."""

    doc_id: str
    version: int
    effective_at: float  # days
    seq: int | None  # sequence number of the commit that wrote it (its batch's); None when it changed nothing
    classes: dict[str, int]  # unchanged / moved / modified / new / deleted
    position_classes: list[str]  # class of each paragraph of the new version, by position
    n_paragraphs: int  # paragraphs in the new version
    embedded: int  # paragraphs sent to vectors_for (new + modified)
    rows_added: int
    rows_closed: int  # superseded + deleted
    rows_deleted: int  # closed because their text left the document (see ``_closes``)
    cold_version: int  # the table version after its batch's commit (before it, when the batch wrote nothing)
    timings_s: dict[str, float] = field(default_factory=dict)

    @property
    def reembed_share(self) -> float | None:
        """Embedded paragraphs over the paragraphs of the new version (None for an empty version)."""
        return self.embedded / self.n_paragraphs if self.n_paragraphs else None


def position_classes(old_hashes: Sequence[str], new_hashes: Sequence[str]) -> list[str]:
    """The class ``updates.cdc.apply`` gives each position of the new version (its rule, per position; every
    ingest checks these against the counts ``cdc.apply`` returns)."""
    first_at: dict[str, int] = {}
    for i, h in enumerate(old_hashes):
        first_at.setdefault(h, i)
    out = []
    for i, h in enumerate(new_hashes):
        if i < len(old_hashes) and old_hashes[i] == h:
            out.append("unchanged")
        elif h in first_at:
            out.append("moved")
        elif i < len(old_hashes):
            out.append("modified")
        else:
            out.append("new")
    return out


def closing_rows(old_rows: list[Row], classes: list[str], new_hashes: list[str], t_us: int) -> list[Close]:
    """Close every old row whose position did not stay ``unchanged``. Its status says what became of its text:
    ``superseded`` when the text continues in a ``moved`` row (each moved row continues one closed row with the
    same hash) or was replaced in place by a ``modified`` paragraph (whose ``parent_hash`` points back to it);
    ``deleted`` (``change_type`` too) when the text is gone from the document."""
    continues = Counter(h for h, c in zip(new_hashes, classes) if c == "moved")
    out = []
    for j, row in enumerate(old_rows):
        if j < len(classes) and classes[j] == "unchanged":
            continue
        if continues[row.chunk_id] > 0:
            continues[row.chunk_id] -= 1
            out.append(Close(row.key, t_us, "superseded", row.change_type))
        elif j < len(classes) and classes[j] == "modified":
            out.append(Close(row.key, t_us, "superseded", row.change_type))
        else:
            out.append(Close(row.key, t_us, "deleted", "deleted"))
    return out
