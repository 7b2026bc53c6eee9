"""Replay over simulated time: documents arrive at their timestamps, versions take effect (supersession),
consolidation runs at a fixed interval, and the queries are asked in rounds, each judged against the answer
that holds at that moment; a simulated user gives feedback on some answers. The clock is always the event's
time (days from the data), never the wall clock.

A query asked at time t is judged as of t from the labels (the chunks that exist by then and state the
value in force then), so the same question can have a different right answer in an earlier round;
historical queries keep their ``as_of`` and are asked once t has passed it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from smartvector_bench.systems.smartvector.consolidation import ConsolidationAgent, ingest_until
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus, Labels, Queries
from smartvector_bench.core.evaluation.judgments import judge_at
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.core.settings import choice
from smartvector_bench.systems.smartvector.store import VectorStore


@dataclass(frozen=True)
class ReplayParams:
    start_days_before_now: float = 120.0  # first query round, relative to the dataset's first query time
    end_days_after_now: float = 56.0  # last query round
    step_days: float = 7.0  # between query rounds
    consolidation_interval_days: float = 1.0
    p_correct: float = 0.5  # a wrong answer is corrected by the user with this probability
    p_accept: float = 0.5  # a right answer is accepted (confirmed) with this probability
    confirm_gold_on_correction: bool = True  # a correction also points to (confirms) the right chunk
    record_access: bool = True  # every answer is a recall event for its top hit
    feedback_split: str = choice("dev", "test", "all")  # whose answers get feedback
    eval_split: str = choice("test", "dev", "all")  # whose answers are measured
    user_seed: int = 0
    POSITIVE: ClassVar[tuple[str, ...]] = ("step_days", "consolidation_interval_days")


def queries_at(queries: Queries, corpus: Corpus, labels: Labels, t: float) -> tuple[Queries, np.ndarray]:
    """The queries that can be asked at ``t``, each judged as of then; returns (queries, rows).

    Non-historical queries are asked as of ``t``: their relevant / stale / rumor sets are re-derived from the
    labels at ``t`` (:func:`smartvector_bench.core.evaluation.judgments.judge_at`, over the chunks that exist by then),
    and a query is skipped while no chunk answers it. Historical queries keep their own as_of and judgments and are
    asked once ``t >= as_of``.
    """
    fam_rows: dict[str, np.ndarray] = {}
    for f in set(labels.query_family.tolist()):
        fam_rows[f] = np.nonzero(labels.chunk_family == f)[0]
    rows, rel, grades, stale, rumor, as_of = [], [], [], [], [], []
    for i in range(len(queries)):
        if queries.category[i] == "historical":
            if t >= queries.as_of[i]:
                rows.append(i)
                rel.append(queries.relevant.row(i).tolist())
                grades.append(queries.grades.row(i).tolist())
                stale.append(queries.stale.row(i).tolist())
                rumor.append(queries.rumor.row(i).tolist())
                as_of.append(float(queries.as_of[i]))
            continue
        f = labels.query_family[i]
        r = fam_rows[f]
        j = judge_at(r, labels.chunk_doc_type[r], labels.chunk_value[r], corpus.created_at[r], corpus.valid_from[r],
                     corpus.valid_to[r], labels.timelines[f], t, str(labels.query_asks[i]))
        if len(j.relevant) == 0:
            continue
        rows.append(i)
        rel.append(j.relevant.tolist())
        grades.append(j.grades.tolist())
        stale.append(j.stale.tolist())
        rumor.append(j.rumor.tolist())
        as_of.append(t)
    idx = np.array(rows, dtype=np.int64)
    sub = queries.subset(np.isin(np.arange(len(queries)), idx))
    sub.relevant = Ragged.from_lists(rel)
    sub.grades = Ragged.from_lists(grades)
    sub.stale = Ragged.from_lists(stale)
    sub.rumor = Ragged.from_lists(rumor)
    sub.as_of = np.array(as_of, dtype=np.float64)
    sub.query_time = np.full(len(idx), t)
    return sub, idx


@dataclass
class LiveSystem:
    """A SmartVector retriever bound to its own store and consolidation agent, advanced by the replay."""

    name: str
    retriever: object
    store: VectorStore
    agent: ConsolidationAgent
    learns: bool  # applies user feedback and access events


def checkpoints(first_event: float, now: float, p: ReplayParams) -> list[tuple[float, str]]:
    """Sorted (time, kind) for consolidation runs and query rounds; a round at the same time as a run
    comes after it."""
    rounds = np.arange(now - p.start_days_before_now, now + p.end_days_after_now + 1e-9, p.step_days)
    runs = np.arange(first_event + p.consolidation_interval_days, rounds[-1] + 1e-9, p.consolidation_interval_days)
    marks = [(float(t), 0, "consolidate") for t in runs] + [(float(t), 1, "round") for t in rounds]
    return [(t, kind) for t, _, kind in sorted(marks)]


def advance(system: LiveSystem, since: float, t: float, consolidate: bool) -> None:
    ingest_until(system.store, t, since=since)
    if consolidate:
        system.agent.run(system.store, t)


def apply_feedback(store: VectorStore, top1: np.ndarray, relevant: Ragged, draws: np.ndarray, t: float,
                   p: ReplayParams) -> dict[str, int]:
    """The simulated user: corrects a wrong answer (top hit not among the query's relevant chunks) with
    probability p_correct (a negative feedback on the top hit, and, if configured, a confirmation of the
    best-graded relevant chunk), accepts a right one with probability p_accept (positive feedback and
    confirmation). Every answer is an access of its top hit."""
    counts = {"corrections": 0, "acceptances": 0, "revivals": 0}
    for i, (top, u) in enumerate(zip(top1.tolist(), draws.tolist())):
        if top < 0:
            continue
        rel = relevant.row(i)
        right = bool(np.isin(top, rel))
        g = int(rel[0]) if len(rel) else -1
        if p.record_access:
            store.record_access(top, t)
        if not right and g >= 0 and u < p.p_correct:
            store.feedback(top, False, t, cause="user correction")
            counts["corrections"] += 1
            if p.confirm_gold_on_correction:
                was_dormant = store.status[g] == Status.DORMANT
                store.feedback(g, True, t, cause="user pointed to the right answer")
                store.validate(g, t, cause="user pointed to the right answer")
                counts["revivals"] += int(was_dormant and store.status[g] != Status.DORMANT)
        elif right and u < p.p_accept:
            was_dormant = store.status[top] == Status.DORMANT
            store.feedback(top, True, t, cause="user accepted")
            store.validate(top, t, cause="user accepted")
            counts["acceptances"] += 1
            counts["revivals"] += int(was_dormant and store.status[top] != Status.DORMANT)
    return counts
