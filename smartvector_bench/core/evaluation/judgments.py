"""Ground-truth judgments of the versioned-policy benchmark, derived from labels that only the evaluator reads.

A *family* is one fact (a policy value for one audience) with a *timeline*: the value in force from each
effective date on. Every chunk of the corpus has labels (``labels/chunks.jsonl``): its family, its
document type (``policy``, ``runbook`` or ``message``), its kind (the section's role: ``statement``,
``scope``, ``procedure``, ``contacts``, ``prerequisite``, ``verification``, ``note``) and the value it
states (none for most kinds). Judgments of a query of family ``f`` at time ``as_of`` follow from those
labels and the corpus's own times (all in days):

- the truth is the timeline's value in force at ``as_of`` (the last effective date <= ``as_of``);
- a chunk *exists* at ``as_of`` if ``created_at <= as_of`` and is *in force* if also
  ``valid_from <= as_of < valid_to``. A chunk that does not exist at ``as_of`` gets no judgment at all;
- **relevant**: exists, in force, of family ``f``, states the truth. Grade 2 for a chunk of the document
  type the query asks about (``policy`` for questions about the policy, ``runbook`` for the ``dependent``
  questions about the system configuration), grade 1 for any other correct statement;
- **stale**: a ``policy`` or ``runbook`` chunk of family ``f`` that exists and states a value that was in
  force before ``as_of`` and has been superseded by then (whether or not its own window is still open);
- **rumor**: a ``message`` chunk of family ``f`` that exists and states a value that is wrong at ``as_of``
  (a never-used value, a superseded one, or an announced one not yet in force).

The three sets are disjoint. The generator writes them for every query (qrels and
``labels/queries.jsonl``); the replay of the feedback loop re-derives them at each round's time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DOC_TYPES = ("policy", "runbook", "message")
KINDS = ("statement", "scope", "procedure", "contacts", "prerequisite", "verification", "note")
GRADE_AUTHORITATIVE, GRADE_CORRECT = 2, 1


@dataclass(frozen=True)
class Timeline:
    """A family's value from each effective date on (days, increasing)."""

    effective_from: np.ndarray  # (n,) float64, increasing
    values: np.ndarray  # (n,) float64

    def value_at(self, t: float) -> float:
        """The value in force at ``t``; NaN before the first effective date."""
        i = int(np.searchsorted(self.effective_from, t, side="right")) - 1
        return float(self.values[i]) if i >= 0 else float("nan")

    def superseded_at(self, t: float) -> np.ndarray:
        """Values that were in force before ``t`` and no longer are at ``t``."""
        i = int(np.searchsorted(self.effective_from, t, side="right")) - 1
        if i <= 0:
            return np.empty(0)
        current = self.values[i]
        old = self.values[:i]
        return old[old != current]


@dataclass(frozen=True)
class Judgment:
    relevant: np.ndarray  # corpus rows, best grade first, then by row
    grades: np.ndarray  # aligned with ``relevant``
    stale: np.ndarray
    rumor: np.ndarray
    truth: float


def judge_at(rows: np.ndarray, doc_type: np.ndarray, value: np.ndarray, created_at: np.ndarray,
             valid_from: np.ndarray, valid_to: np.ndarray, timeline: Timeline, as_of: float,
             asks: str) -> Judgment:
    """Judgments of one query (module docstring) over the corpus ``rows`` of its family.

    The other arrays are aligned with ``rows`` (the family's chunks): ``doc_type`` (str), ``value`` (float,
    NaN for chunks that state none), and the corpus times in days. ``asks`` is the document type that earns
    grade 2.
    """
    truth = timeline.value_at(as_of)
    exists = created_at <= as_of
    in_force = exists & (valid_from <= as_of) & (as_of < valid_to)
    states = ~np.isnan(value)
    right = states & (value == truth)
    relevant = in_force & right
    is_doc = doc_type != "message"
    stale = exists & is_doc & states & np.isin(value, timeline.superseded_at(as_of))
    rumor = exists & ~is_doc & states & ~right
    grades = np.where(doc_type == asks, GRADE_AUTHORITATIVE, GRADE_CORRECT)
    rel = np.nonzero(relevant)[0]
    order = np.lexsort((rows[rel], -grades[rel]))
    rel = rel[order]
    return Judgment(relevant=rows[rel], grades=grades[rel].astype(np.int64), stale=np.sort(rows[stale]),
                    rumor=np.sort(rows[rumor]), truth=truth)
