"""The store's columnar batches against their specifications. ingest_until: ``store.ingest`` /
``store.supersede`` one event at a time in (time, ingest before supersede, row) order; the same event log,
statuses, times and pending set, in one call and over several ``since`` windows (as the replay advances).
archive_rows: ``archive`` row by row."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams
from smartvector_bench.systems.smartvector.store import StoreParams, VectorStore, ingest_until


def ingest_one_at_a_time(store: VectorStore, at: float, since: float = -np.inf) -> None:
    c = store.corpus
    events = [(float(c.created_at[i]), 0, int(i)) for i in np.nonzero((c.created_at > since) & (c.created_at <= at))[0]]
    succ = store.superseded_by
    for old in np.nonzero(succ >= 0)[0]:
        t = float(c.valid_from[succ[old]])
        if since < t <= at:
            events.append((t, 1, int(old)))
    for t, kind, i in sorted(events):
        store.ingest(i, t) if kind == 0 else store.supersede(i, int(succ[i]), t)


def _state(s: VectorStore):
    return (list(s.events), s.status.tolist(), s.ingested_at.tolist(), s.deprecated_at.tolist(), sorted(s.pending))


@pytest.mark.parametrize("windows", [1, 4])
def test_batch_equals_one_event_at_a_time(default_dataset, windows):
    corpus = load_dataset(default_dataset).corpus
    times = np.r_[corpus.created_at, corpus.valid_from]
    cuts = np.quantile(times[np.isfinite(times)], np.linspace(0, 1, windows + 1)[1:])
    cuts[-1] = np.inf
    want, got = (VectorStore(corpus, ConfidenceParams(), StoreParams()) for _ in range(2))
    since = -np.inf
    for at in cuts:
        ingest_one_at_a_time(want, at, since)
        ingest_until(got, at, since)
        since = at
        assert _state(got) == _state(want)
    assert any(e["cause"].startswith("superseded by") for e in got.events)
    assert len(got.events) > len(corpus)


def test_archive_rows_equals_archive_one_at_a_time(default_dataset):
    corpus = load_dataset(default_dataset).corpus
    want, got = (VectorStore(corpus, ConfidenceParams(), StoreParams()) for _ in range(2))
    for s in (want, got):
        ingest_until(s, np.inf)
    rows = np.nonzero(want.status == 3)[0]  # DEPRECATED
    assert len(rows) > 5
    for i in rows[::2]:
        want.archive(int(i), 9.5)
    got.archive_rows(rows[::2], 9.5)
    assert _state(got) == _state(want) and list(got.archived_at) == list(want.archived_at)
