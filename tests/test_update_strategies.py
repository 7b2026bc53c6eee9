"""Update strategies (full, cdc, surgical) on hand-made cases, and the document store's own checks.

Every strategy must leave a document's store exactly as a from-scratch rebuild would make it. Hand-made
cases pin the counts (the property checks: tests/test_update_equivalence.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.core.dataset.chunking import Chunk
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.updates import (
    STRATEGIES,
    Chunker,
    DocumentStore,
    UpdateResult,
    cdc,
    full,
    rebuild,
)
from smartvector_bench.systems.updates.store import compare
from smartvector_bench.systems.updates.surgical import affected_chunks, changed_ranges

from .update_cases import C40, DIM, DOC, LINES, FakeEmbedder, build, embedder_for


# -- hand-made cases -------------------------------------------------------------------------------------------

def run_all(text: str, new: str, chunker: Chunker = C40) -> dict[str, tuple[UpdateResult, DocumentStore, FakeEmbedder]]:
    out = {}
    for name, apply in STRATEGIES.items():
        emb = embedder_for(name)
        store = build(text, chunker, emb)
        emb.calls, emb.seen = 0, []
        res = apply(store, new, emb)
        assert emb.calls == res.reembedded, name  # the count is the number of texts sent to the model
        ref = build(new, chunker, embedder_for(name))
        c = compare(store, ref)
        assert c["texts"] and c["offsets"] and c["slices"] and c["max_abs_vector_diff"] == 0.0, (name, c)
        out[name] = (res, store, emb)
    return out


def test_four_line_document_has_one_chunk_per_line():
    assert [c.text for c in C40(DOC)] == LINES


def test_single_word_in_a_middle_chunk():
    new = DOC.replace("claims", "expense claims")
    r = run_all(DOC, new)
    assert r["surgical"][0].reembedded == 1
    assert r["surgical"][2].seen == ["Beta rule: expense claims are due in 30 days."]
    assert r["cdc"][0].reembedded == 1
    assert r["cdc"][0].classes == {"unchanged": 3, "moved": 0, "modified": 1, "new": 0, "deleted": 0}
    assert r["full"][0].reembedded == 4
    # offsets after the edit shift by the length change, those before do not
    chunks = r["surgical"][1].chunks
    assert (chunks[0].start, chunks[2].start) == (0, C40(DOC)[2].start + len("expense "))


@pytest.mark.parametrize("where", ["line_start", "after_chunk_end"])
def test_insertion_at_a_chunk_boundary_touches_both_sides(where):
    old = C40(DOC)
    line = "Echo note: read the FAQ first."
    if where == "line_start":  # at the first character of chunk 2
        new = DOC[:old[2].start] + line + "\n" + DOC[old[2].start:]
        pos = old[2].start
    else:  # right after the last character of chunk 1
        new = DOC[:old[1].end] + "\n" + line + DOC[old[1].end:]
        pos = old[1].end
    assert affected_chunks(old, len(DOC), [(pos, pos, pos, pos)]) == [1, 2]
    assert affected_chunks(old, len(DOC), changed_ranges(DOC, new)) == [1, 2]
    r = run_all(DOC, new)
    assert r["surgical"][0].reembedded == 1 and r["surgical"][2].seen == [line]
    assert [c.text for c in r["surgical"][1].chunks] == LINES[:2] + [line] + LINES[2:]
    assert r["cdc"][0].classes == {"unchanged": 2, "moved": 2, "modified": 1, "new": 0, "deleted": 0}
    assert r["cdc"][0].reembedded == 1
    assert r["full"][0].reembedded == 5


def test_deleting_the_first_chunk_re_embeds_nothing_incrementally():
    new = "\n".join(LINES[1:])
    r = run_all(DOC, new)
    assert r["surgical"][0].reembedded == 0
    assert r["cdc"][0].classes == {"unchanged": 0, "moved": 3, "modified": 0, "new": 0, "deleted": 1}
    assert r["cdc"][0].reembedded == 0
    assert r["full"][0].reembedded == 3
    assert [(c.index, c.start) for c in r["surgical"][1].chunks] == [(0, 0), (1, 38), (2, 72)]


def test_previous_chunk_absorbs_a_sentence():
    text = ("Intro. This opening sentence is rather long.\nGamma line is also quite long here.\n"
            "Delta is the last line.")
    old = [c.text for c in C40(text)]
    assert old == ["Intro.", "This opening sentence is rather long.", "Gamma line is also quite long here.",
                   "Delta is the last line."]
    new = text.replace("This opening sentence is rather long.", "This one is short.")
    r = run_all(text, new)
    res, store, emb = r["surgical"]
    # the edit was inside chunk 1 only, but chunk 0 changed: it absorbed the shortened sentence
    assert res.affected == (1,) and res.window == (0, 1)
    assert [c.text for c in store.chunks] == ["Intro. This one is short.", "Gamma line is also quite long here.",
                                              "Delta is the last line."]
    assert res.reembedded == 1 and emb.seen == ["Intro. This one is short."]
    assert r["cdc"][0].classes == {"unchanged": 0, "moved": 2, "modified": 1, "new": 0, "deleted": 1}


def test_revert_restores_the_original_store():
    edited = DOC.replace("30 days", "45 days")
    for name, apply in STRATEGIES.items():
        emb = embedder_for(name)
        original = build(DOC, C40, emb)
        store = original.copy()
        apply(store, edited, emb)
        emb.calls = 0
        res = apply(store, DOC, emb)
        assert store.text == DOC and store.chunks == original.chunks, name
        assert np.array_equal(store.vectors, original.vectors), name
        assert res.reembedded == (4 if name == "full" else 1) == emb.calls, name


def test_no_change_re_embeds_nothing_except_full():
    assert run_all(DOC, DOC)["surgical"][0].reembedded == 0
    assert run_all(DOC, DOC)["cdc"][0].reembedded == 0
    assert run_all(DOC, DOC)["full"][0].reembedded == 4


def test_cdc_hashes_are_per_document():
    shared = "Shared paragraph: both documents say this."
    emb = FakeEmbedder(normalised=True)
    chunker = Chunker("paragraphs")
    a = DocumentStore.build("A", f"A intro.\n\n{shared}\n\nA outro.", chunker, emb, dim=DIM)
    b = DocumentStore.build("B", f"B intro.\n\n{shared}\n\nOnly in B.", chunker, emb, dim=DIM)
    b_before = b.copy()
    res = cdc.apply(a, "A intro.\n\nA outro.", emb)
    assert res.classes["moved"] == 1 and res.classes["deleted"] == 1 and res.reembedded == 0
    # B is untouched: its text, chunks, hashes and vectors still hold the shared paragraph
    assert b.text == b_before.text and b.chunks == b_before.chunks and b.hashes == b_before.hashes
    assert np.array_equal(b.vectors, b_before.vectors) and any(c.text == shared for c in b.chunks)
    # a paragraph that only B has is new to A (no global hash set), even after B went through cdc too
    cdc.apply(b, b.text + "\n\nB appendix.", emb)
    res = cdc.apply(a, "A intro.\n\nA outro.\n\nOnly in B.", emb)
    assert res.classes["new"] == 1 and res.reembedded == 1


def test_cdc_reuses_vectors_on_normalised_match():
    emb = FakeEmbedder(normalised=True)
    store = build(DOC, C40, emb)
    res = cdc.apply(store, DOC.replace("Beta rule:", "BETA  rule:"), emb)
    assert res.classes["unchanged"] == 4 and res.reembedded == 0
    assert store.chunks[1].text == "BETA  rule: claims are due in 30 days."  # texts and offsets still exact
    assert not store.problems()


def test_full_counts_every_chunk():
    emb = FakeEmbedder()
    store = build(DOC, C40, emb)
    assert full.apply(store, DOC + "\nEcho line: this one is long enough.", emb).reembedded == 5


def test_strategies_share_one_protocol():
    for name, apply in STRATEGIES.items():
        emb = embedder_for(name)
        res = apply(build(DOC, C40, emb), DOC + " More.", emb)
        assert isinstance(res, UpdateResult) and res.strategy == name
        assert (res.classes is not None) == (name == "cdc")


# -- store helpers ---------------------------------------------------------------------------------------------

def test_store_problems_and_compare_detect_misalignment():
    emb = FakeEmbedder()
    store = build(DOC, C40, emb)
    assert store.problems() == []
    bad = store.copy()
    bad.chunks[1] = Chunk(1, bad.chunks[1].start + 1, bad.chunks[1].end, bad.chunks[1].text)
    assert bad.problems() and not compare(bad, rebuild(store, emb))["offsets"]
    short = store.copy()
    short.vectors = short.vectors[:-1]
    assert short.problems() and compare(short, rebuild(store, emb))["max_abs_vector_diff"] is None


def test_chunker_validation():
    with pytest.raises(BenchError, match="allowed: sentences, paragraphs"):
        Chunker("words")
    assert Chunker("paragraphs").separator == "\n\n" and Chunker().separator == "\n"
