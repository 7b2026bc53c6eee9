"""Lifecycle statuses judged at a query's time."""

import numpy as np

from smartvector_bench.systems.smartvector.lifecycle import STATUS_NAMES, Status, deprecated_at, statuses_at

INF = np.inf


def test_status_codes():
    assert STATUS_NAMES == ("UNCONSOLIDATED", "ACTIVE", "DORMANT", "DEPRECATED", "ARCHIVED")
    assert [int(s) for s in Status] == [0, 1, 2, 3, 4]


def test_deprecated_only_once_successor_in_force():
    superseded_by = np.array([1, -1, -1])
    valid_from = np.array([0.0, 10.0, 0.0])
    d = deprecated_at(superseded_by, valid_from, np.array([5.0, 9.999, 10.0, 15.0]))
    assert d.shape == (4, 3)
    # successor 1 in force from 10: v0 deprecated at 10 and 15 (<=), not at 5 or 9.999
    assert d.tolist() == [[False, False, False], [False, False, False], [True, False, False], [True, False, False]]


def test_deprecated_chain():
    superseded_by = np.array([1, 2, -1])
    valid_from = np.array([0.0, 10.0, 20.0])
    d = deprecated_at(superseded_by, valid_from, np.array([15.0, 25.0]))
    assert d.tolist() == [[True, False, False], [True, True, False]]


def test_statuses_at_each_status_and_precedence():
    # v0 consolidated, nothing else -> ACTIVE
    # v1 created after consolidation (6 > 5) -> UNCONSOLIDATED
    # v2 created after consolidation and dormant -> DORMANT beats UNCONSOLIDATED
    # v3 dormant, superseded by v5 which is in force from t=10 -> DEPRECATED (beats DORMANT) from t=10
    # v4 archived, also dormant and superseded by v6 (in force from 0) -> ARCHIVED beats everything
    # v5, v6 plain successors -> ACTIVE
    superseded_by = np.array([-1, -1, -1, 5, 6, -1, -1])
    valid_from = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 10.0, 0.0])
    created_at = np.array([0.0, 6.0, 6.0, 0.0, 0.0, 0.0, 0.0])
    consolidated_at = 5.0
    dormant = np.zeros((2, 7), dtype=bool)
    dormant[:, 2] = True
    dormant[:, 3] = True
    dormant[:, 4] = True
    archived = np.array([False, False, False, False, True, False, False])
    st = statuses_at(superseded_by, valid_from, created_at, consolidated_at, dormant, archived,
                     np.array([5.0, 10.0]))
    A, U, Dm, Dp, Ar = Status.ACTIVE, Status.UNCONSOLIDATED, Status.DORMANT, Status.DEPRECATED, Status.ARCHIVED
    assert st.tolist() == [
        [A, U, Dm, Dm, Ar, A, A],  # t=5: v5 not in force yet -> v3 only dormant
        [A, U, Dm, Dp, Ar, A, A],  # t=10: v3 superseded -> DEPRECATED beats DORMANT
    ]


def test_statuses_created_exactly_at_consolidation_is_active():
    st = statuses_at(np.array([-1, -1]), np.array([0.0, 0.0]), np.array([5.0, 5.5]), 5.0,
                     np.zeros((1, 2), dtype=bool), np.zeros(2, dtype=bool), np.array([6.0]))
    assert st.tolist() == [[Status.ACTIVE, Status.UNCONSOLIDATED]]


def test_dormant_per_query_time():
    dormant = np.array([[False], [True]])  # dormant only at the second query time
    st = statuses_at(np.array([-1]), np.array([0.0]), np.array([0.0]), 1.0, dormant, np.array([False]),
                     np.array([10.0, 100.0]))
    assert st.tolist() == [[Status.ACTIVE], [Status.DORMANT]]
