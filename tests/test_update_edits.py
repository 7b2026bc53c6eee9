"""The edit stream of the update strategies (make_edits: seeded, every edit type doing what it says, the
mix checked) and load_documents rebuilding the latest document versions from a dataset."""

from __future__ import annotations

import json

import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.updates import Chunker
from smartvector_bench.systems.updates.edits import EDIT_TYPES, load_documents, make_edits

from .conftest import write_tiny


# -- the edit stream -------------------------------------------------------------------------------------------

CORPUS = {"a": "One fine line here.\nSecond line has 12 items.\nThird one.",
          "b": "Bravo text goes here. It has two sentences.\nAnother bravo line.",
          "c": "Charlie only line with 7 words in it."}


def test_edit_stream_is_seeded_and_complete():
    e1 = make_edits(CORPUS, 200, None, seed=3)
    e2 = make_edits(CORPUS, 200, None, seed=3)
    assert e1 == e2 and make_edits(CORPUS, 200, None, seed=4) != e1
    assert [e.edit_id for e in e1] == list(range(200))
    assert {e.type for e in e1} == set(EDIT_TYPES)
    current = dict(CORPUS)
    for e in e1:
        assert e.old_text == current[e.doc_id] and e.new_text != e.old_text
        assert e.type == e.requested or e.type == "single_word"
        current[e.doc_id] = e.new_text


def test_edit_types_do_what_they_say():
    edits = make_edits(CORPUS, 300, None, seed=0)
    before_last: dict[str, str] = {}
    for e in edits:
        old_lines, new_lines = e.old_text.split("\n"), e.new_text.split("\n")
        if e.type == "paragraph_insert":
            assert len(new_lines) == len(old_lines) + 1
            inserted = [ln for ln in new_lines if ln not in old_lines or new_lines.count(ln) > old_lines.count(ln)]
            assert inserted and any(ln in CORPUS[d] for ln in inserted for d in CORPUS if d != e.doc_id)
        elif e.type == "paragraph_delete":
            assert len(new_lines) == len(old_lines) - 1 and any(ln.strip() for ln in new_lines)
        elif e.type == "revert":
            assert e.new_text == before_last[e.doc_id]
        elif e.type in ("single_word", "sentence"):
            assert len(new_lines) == len(old_lines)
        before_last[e.doc_id] = e.old_text


def test_revert_without_history_falls_back_and_zero_weights_are_never_drawn():
    edits = make_edits(CORPUS, 50, {"revert": 1.0}, seed=1)
    assert edits[0].requested == "revert" and edits[0].type == "single_word"
    assert {e.type for e in edits} == {"revert", "single_word"}
    only = make_edits(CORPUS, 50, {"single_word": 1.0, "sentence": 0.0}, seed=1)
    assert {e.type for e in only} == {"single_word"}


def test_paragraph_delete_never_removes_the_last_section():
    docs = {"x": "Only line.", "y": "First.\nSecond."}
    edits = make_edits(docs, 20, {"paragraph_delete": 1.0}, seed=0)
    assert edits[0].doc_id == "y" and edits[0].type == "paragraph_delete"
    assert all(e.type == "single_word" for e in edits[1:])  # nothing left with two sections


@pytest.mark.parametrize("mix,match", [({"typo": 1.0}, "experiment.mix.typo: unknown edit type; allowed"),
                                       ({"revert": -1.0}, "must be a number >= 0"),
                                       ({"revert": 0.0}, "all weights are 0")])
def test_bad_mix(mix, match):
    from smartvector_bench.systems.updates.edits import check_mix

    with pytest.raises(BenchError, match=match):
        check_mix(mix, "experiment.mix")


def test_load_documents_rebuilds_latest_versions(tmp_path):
    path = write_tiny(tmp_path / "tiny")
    docs = load_documents(path)
    rows = [json.loads(line) for line in (path / "corpus.jsonl").read_text().splitlines()]
    latest = {}
    for r in rows:
        m = r["metadata"]
        latest[m["doc_id"]] = max(latest.get(m["doc_id"], 0), m["version"])
    assert sorted(docs) == sorted(latest)
    for r in rows:
        m = r["metadata"]
        if m["version"] == latest[m["doc_id"]]:
            assert docs[m["doc_id"]][m["offset_start"]:m["offset_end"]] == r["text"]
    # the sentence chunker reproduces the dataset's chunks
    for d, text in docs.items():
        mine = [c.text for c in Chunker("sentences", 200)(text)]
        theirs = [r["text"] for r in sorted((r for r in rows if r["metadata"]["doc_id"] == d
                                             and r["metadata"]["version"] == latest[d]),
                                            key=lambda r: r["metadata"]["offset_start"])]
        assert mine == theirs, d
    # the corpus rows are shuffled: a document's chunks are not in file order, only the offsets order them
    first_line = {}
    for lineno, r in enumerate(rows):
        m = r["metadata"]
        first_line.setdefault((m["doc_id"], m["version"]), []).append((m["offset_start"], lineno))
    assert any([ln for _, ln in sorted(v)] != sorted(ln for _, ln in v) for v in first_line.values())


def test_load_documents_rejects_wrong_offsets(tmp_path):
    path = write_tiny(tmp_path / "tiny")
    lines = (path / "corpus.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    latest: dict[str, int] = {}
    for r in rows:
        latest[r["metadata"]["doc_id"]] = max(latest.get(r["metadata"]["doc_id"], 0), r["metadata"]["version"])
    target = next(i for i, r in enumerate(rows) if r["metadata"]["offset_start"] > 0  # not a document's first chunk
                  and r["metadata"]["version"] == latest[r["metadata"]["doc_id"]])
    rows[target]["metadata"]["offset_start"] += 1
    (path / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(BenchError, match=rf"corpus.jsonl:{target + 1}: .* offsets"):
        load_documents(path)
