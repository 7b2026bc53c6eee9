"""LiveVectorLake on a real Delta table: the cold table's columns, per-document CDC (only new and modified
paragraphs embedded, hashes scoped per document) and closed history rows."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.livevectorlake import SCHEMA
from smartvector_bench.systems.livevectorlake.cold import to_us
from smartvector_bench.systems.updates import chunk_hash

from .lvl_cases import DIM, EMB, ingest
from .lvl_cases import lake  # noqa: F401 - a fresh lake (a fixture)

COLUMNS = ["chunk_id", "doc_id", "position", "text", "embedding", "valid_from", "valid_to", "status",
           "version_number", "parent_hash", "change_type"]


def rows(path) -> list[dict]:
    table = DeltaTable(str(path / "cold")).to_pyarrow_table()
    return table.to_pylist()


def us(days: float) -> int:
    return to_us(days)


# ---- the cold table -------------------------------------------------------------------------------------------

def test_cold_table_is_a_delta_table_with_exactly_the_columns(lake, tmp_path):
    ingest(lake, "d", 1, ["Alpha.", "Beta."], 10.0)
    dt = DeltaTable(str(tmp_path / "lake" / "cold"))
    assert dt.schema().to_arrow().names == COLUMNS == SCHEMA.names
    assert dt.version() == 1 and dt.transaction_version("livevectorlake") == 1  # one commit, tagged seq 1
    r = rows(tmp_path / "lake")
    assert {x["chunk_id"] for x in r} == {chunk_hash("Alpha."), chunk_hash("Beta.")}
    assert all(len(x["embedding"]) == DIM and x["valid_to"] is None and x["status"] == "current" for x in r)


# ---- CDC classes ---------------------------------------------------------------------------------------------

def test_cdc_classes_on_hand_made_versions_including_a_revert(lake, tmp_path):
    a, b, b2, c, d = "Alpha para.", "Beta para.", "Beta para, edited.", "Gamma para.", "Delta para."
    r1, e1 = ingest(lake, "doc", 1, [a, b, c], 10.0)
    assert r1.position_classes == ["new"] * 3 and r1.embedded == 3 and e1.texts == [a, b, c]

    r2, e2 = ingest(lake, "doc", 2, [a, b2, c], 20.0)  # one paragraph edited in place
    assert r2.position_classes == ["unchanged", "modified", "unchanged"]
    assert e2.texts == [b2] and r2.rows_added == 1 and r2.rows_closed == 1

    r3, e3 = ingest(lake, "doc", 3, [a, b, c], 30.0)  # reverts to the v1 text: modified again (vs v2), embedded
    assert r3.position_classes == ["unchanged", "modified", "unchanged"] and e3.texts == [b]

    r4, e4 = ingest(lake, "doc", 4, [a, b, c, d], 40.0)  # appended
    assert r4.position_classes == ["unchanged", "unchanged", "unchanged", "new"] and e4.texts == [d]

    r5, e5 = ingest(lake, "doc", 5, [b, c, d], 50.0)  # first paragraph removed: the rest move up
    assert r5.position_classes == ["moved", "moved", "moved"] and e5.texts == []
    assert r5.classes == {"unchanged": 0, "moved": 3, "modified": 0, "new": 0, "deleted": 1}

    r6, e6 = ingest(lake, "doc", 6, ["  beta   PARA. ", c, d], 60.0)  # only case/whitespace: same hash
    assert r6.position_classes == ["unchanged"] * 3 and r6.seq is None and e6.calls == []

    r = rows(tmp_path / "lake")
    by = {(x["position"], x["text"], x["version_number"]): x for x in r}
    # the revert is a new row whose parent is the edited text; the edited row was closed at v3
    revert = by[(1, b, 3)]
    assert revert["change_type"] == "modified" and revert["parent_hash"] == chunk_hash(b2)
    assert by[(1, b2, 2)]["status"] == "superseded" and by[(1, b2, 2)]["parent_hash"] == chunk_hash(b)
    # v5: the text of "Alpha" left the document (deleted); the moved paragraphs' old rows are superseded
    alpha = by[(0, a, 1)]
    assert alpha["status"] == "deleted" and alpha["change_type"] == "deleted"
    assert {x["change_type"] for x in r if x["version_number"] == 5} == {"moved"}
    assert lake.document_as_of("doc", 55.0) == "\n\n".join([b, c, d])
    assert lake.document_as_of("doc", 25.0) == "\n\n".join([a, b2, c])
    assert lake.document_as_of("doc", 5.0) is None


def test_only_new_and_modified_paragraphs_reach_the_embedder(lake):
    ingest(lake, "doc", 1, [f"Paragraph {i}." for i in range(10)], 1.0)
    res, rec = ingest(lake, "doc", 2, [f"Paragraph {i}." for i in range(9)] + ["Paragraph nine, now edited."], 2.0)
    assert rec.texts == ["Paragraph nine, now edited."] and res.reembed_share == pytest.approx(0.1)


def test_hashes_are_scoped_per_document(lake):
    shared = "Expense reports are due on the fifth working day."
    ingest(lake, "x", 1, ["X intro.", shared], 10.0)
    _, rec = ingest(lake, "y", 1, ["Y intro.", shared], 11.0)
    assert shared in rec.texts  # no global de-duplication: y's copy is y's own paragraph
    res, _ = ingest(lake, "x", 2, ["X intro."], 20.0)  # deleted from x only
    assert res.rows_deleted == 1
    snap = lake.cold.snapshot()
    states = {(snap.doc_id[i], snap.status[i]) for i in range(len(snap)) if snap.text[i] == shared}
    assert states == {("x", "deleted"), ("y", "current")}
    hits = lake.query(EMB.encode([shared])[0], None, k=1).hits
    assert (hits[0].doc_id, hits[0].text) == ("y", shared)
    hist = lake.query(EMB.encode([shared])[0], 15.0, k=2).hits  # before the deletion both copies were valid
    assert {h.doc_id for h in hist} == {"x", "y"} and all(h.text == shared for h in hist)


# ---- history rows --------------------------------------------------------------------------------------------

def test_superseded_and_deleted_rows_are_closed_never_left_open(lake, tmp_path):
    ingest(lake, "p", 1, ["Scope.", "Limit is 10.", "Contacts."], 10.0)
    ingest(lake, "p", 2, ["Scope.", "Limit is 20.", "Contacts."], 20.0)
    ingest(lake, "p", 3, ["Scope.", "Limit is 30."], 30.0)
    ingest(lake, "p", 4, ["Limit is 40."], 40.0)
    r = rows(tmp_path / "lake")
    closed = [x for x in r if x["status"] != "current"]
    assert closed and all(x["valid_to"] is not None for x in closed)
    assert all(x["valid_to"] is None for x in r if x["status"] == "current")
    when = {x["text"]: (to_us(x["valid_from"]), None if x["valid_to"] is None else to_us(x["valid_to"]))
            for x in r}
    assert when["Limit is 10."] == (us(10.0), us(20.0))  # closed at the next version's effective time
    assert when["Limit is 20."] == (us(20.0), us(30.0))
    assert when["Contacts."] == (us(10.0), us(30.0))  # unchanged in v2: one row for v1 and v2
    assert when["Scope."] == (us(10.0), us(40.0))
    assert when["Limit is 40."] == (us(40.0), None)
    assert len(r) == 6  # unchanged paragraphs never got a second row
    for t, expected in ((15.0, 3), (25.0, 3), (35.0, 2), (45.0, 1)):  # exactly one row per live position
        assert len(lake.document_as_of("p", t).split("\n\n")) == expected
    chk = lake.check()
    assert chk["consistent"] and chk["open_rows_not_current"] == 0 and chk["closed_rows_marked_current"] == 0


def test_versions_must_come_in_effective_time_order(lake):
    ingest(lake, "d", 1, ["A."], 10.0)
    with pytest.raises(BenchError, match="not after the document's last change"):
        ingest(lake, "d", 2, ["B."], 10.0)
    ingest(lake, "other", 1, ["C."], 5.0)  # other documents have their own clock
