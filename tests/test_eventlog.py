"""ColumnLog (eventlog.py): columnar batches read back as the same dicts a list of dicts would hold."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.systems.smartvector.eventlog import ColumnLog


def _as_list(log: ColumnLog) -> list[dict]:
    return list(log)


def test_batches_read_back_as_the_dicts_a_list_would_hold():
    log, ref = ColumnLog(), []
    single = {"time": 1.0, "kind": "status", "vector": 3, "cause": "ingested", "old": None, "new": "ACTIVE"}
    log.append(dict(single))
    ref.append(dict(single))
    vec = np.array([5, 7, 9], dtype=np.int64)
    before = np.array([0.123456, 0.5, 1.0])
    log.add_columns(3, time=2.5, kind="ripple", vector=vec, cause=np.array([1, 1, 2]), confidence_before=before,
                    depth=np.array([1, 2, 1]))
    ref += [{"time": 2.5, "kind": "ripple", "vector": v, "cause": c, "confidence_before": b, "depth": d}
            for v, c, b, d in zip([5, 7, 9], [1, 1, 2], before.tolist(), [1, 2, 1])]
    log.append({"time": 3.0, "kind": "access", "vector": 5, "cause": "retrieved"})
    ref.append({"time": 3.0, "kind": "access", "vector": 5, "cause": "retrieved"})
    got = _as_list(log)
    assert got == ref and len(log) == 5 and log == ref
    # same key order and Python types (int, not numpy int32; float, not numpy float64)
    assert [list(r) for r in got] == [list(r) for r in ref]
    assert all(type(a[k]) is type(b[k]) for a, b in zip(got, ref) for k in a)
    assert log.index(ref[2]) == 2
    assert log.count("kind") == {"status": 1, "ripple": 3, "access": 1}
    assert log.column("vector", {"kind": "ripple", "cause": 1}).tolist() == [5, 7]
    assert log != ref[:-1]


def test_wide_integers_are_kept_as_int32_but_read_back_exactly():
    log = ColumnLog()
    log.add_columns(2, vector=np.array([0, 2**31 - 1]), big=np.array([0, 2**40]))
    assert log._segments[0].columns["vector"].dtype == np.int32
    assert log._segments[0].columns["big"].dtype == np.int64
    assert list(log) == [{"vector": 0, "big": 0}, {"vector": 2**31 - 1, "big": 2**40}]


def test_lift_sets_nullable_fields_in_place_in_order():
    ledger = ColumnLog(nullable=("lifted_at",))
    ledger.append({"vector": 1, "applied": 0.1, "lifted_at": None})
    ledger.add_columns(3, vector=np.array([1, 2, 1]), applied=np.array([0.2, 0.3, 0.4]), lifted_at=None)
    lifted = ledger.lift("lifted_at", {"vector": 1}, 7.0)
    assert [e["applied"] for e in lifted] == [0.1, 0.2, 0.4]
    assert [e["lifted_at"] for e in ledger] == [7.0, 7.0, None, 7.0]
    assert ledger.lift("lifted_at", {"vector": 1}, 8.0) == []  # already lifted: nothing twice


def test_columns_are_far_smaller_than_dicts():
    n = 10_000
    cols, dicts = ColumnLog(), ColumnLog()
    vec, cause = np.arange(n), np.arange(n)[::-1]
    cols.add_columns(n, time=1.0, kind="dependency_detected", vector=vec, cause=cause)
    dicts.extend({"time": 1.0, "kind": "dependency_detected", "vector": int(v), "cause": int(c)}
                 for v, c in zip(vec, cause))
    assert cols == dicts
    assert cols.nbytes() == 8 * n  # two int32 columns
    assert dicts.nbytes() > 20 * cols.nbytes()


def test_a_column_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="column 'vector'"):
        ColumnLog().add_columns(3, vector=np.arange(2))
