"""Update strategies (full, cdc, surgical) and the edit stream.

Every strategy must leave a document's store exactly as a from-scratch rebuild would make it. Hand-made
cases pin the counts; hypothesis checks the equivalence on random documents and random edit sequences,
and a deliberately buggy surgical update (the reference implementation's offset bug) shows that the same
check catches that class of bug.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from smartvector_bench.core.chunking import Chunk
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.updates import (
    STRATEGIES,
    Chunker,
    DocumentStore,
    UpdateResult,
    cdc,
    full,
    normalise,
    rebuild,
    surgical,
)
from smartvector_bench.systems.updates.edits import EDIT_TYPES, load_documents, make_edits
from smartvector_bench.systems.updates.store import compare, embed_texts
from smartvector_bench.systems.updates.surgical import affected_chunks, changed_ranges

from .conftest import write_tiny

DIM = 8


def _vec(key: str) -> np.ndarray:
    raw = np.frombuffer(hashlib.sha256(key.encode("utf-8")).digest(), dtype=np.uint8)[:DIM]
    return raw.astype(np.float32) / 255.0


class FakeEmbedder:
    """Deterministic: a vector from the sha256 of the text (of the normalised text if ``normalised``), so
    vectors compare exactly; counts every text it is sent."""

    def __init__(self, normalised: bool = False):
        self.normalised = normalised
        self.calls = 0
        self.seen: list[str] = []

    def __call__(self, texts):
        texts = list(texts)
        self.calls += len(texts)
        self.seen.extend(texts)
        return np.stack([_vec(normalise(t) if self.normalised else t) for t in texts]) if texts \
            else np.zeros((0, DIM), np.float32)


def embedder_for(name: str) -> FakeEmbedder:
    # cdc reuses a vector when the *normalised* text hash matches, so it is exact for embedders that are
    # invariant under the normalisation (as MiniLM's uncased tokenizer is); the others must match raw text.
    return FakeEmbedder(normalised=(name == "cdc"))


def build(text: str, chunker: Chunker, embed) -> DocumentStore:
    return DocumentStore.build("doc", text, chunker, embed, dim=DIM)


def problems(apply, chunker: Chunker, text: str, new_texts: list[str], embed) -> list[str]:
    """Apply each new text in turn; after each, compare the store with a from-scratch rebuild."""
    store = build(text, chunker, embed)
    out = []
    for step, new in enumerate(new_texts):
        apply(store, new, embed)
        ref = build(new, chunker, embed)
        c = compare(store, ref)
        if store.text != new:
            out.append(f"step {step}: store text is not the new text")
        if not c["texts"]:
            out.append(f"step {step}: chunk texts differ")
        if not c["offsets"]:
            out.append(f"step {step}: offsets differ")
        if not c["slices"]:
            out.append(f"step {step}: text[start:end] != chunk.text")
        if c["max_abs_vector_diff"] != 0.0:
            out.append(f"step {step}: vectors differ ({c['max_abs_vector_diff']})")
        if out:
            break
    return out


# -- hand-made cases -------------------------------------------------------------------------------------------

C40 = Chunker("sentences", 40)
LINES = ["Alpha policy covers all staff.", "Beta rule: claims are due in 30 days.",
         "Gamma step: file the form online.", "Delta contact: the finance team."]
DOC = "\n".join(LINES)


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


# -- property: every strategy equals a from-scratch rebuild ----------------------------------------------------

WORDS = st.sampled_from(["a", "bb", "The", "ccc", "1.5", "v2.3", "dddddd", "e", "Ff", "gg."])
SENTENCE = st.builds(lambda ws, end: " ".join(ws) + end, st.lists(WORDS, min_size=1, max_size=8),
                     st.sampled_from([".", "!", "?", "", ". "]))
SEP = st.sampled_from([" ", "\n", "\n", " ", "\n\n", "  ", "\n \n"])
CHUNKERS = st.sampled_from([Chunker("sentences", 12), Chunker("sentences", 30), Chunker("sentences", 80),
                            Chunker("sentences", 200), Chunker("paragraphs")])


@st.composite
def documents(draw) -> str:
    sents = draw(st.lists(SENTENCE, min_size=0, max_size=12))
    text = ""
    for s in sents:
        text += (draw(SEP) if text else "") + s
    return text


@st.composite
def edit_sequences(draw, text: str) -> list[str]:
    out, cur = [], text
    for _ in range(draw(st.integers(1, 5))):
        i = draw(st.integers(0, len(cur)))
        j = draw(st.integers(i, min(len(cur), i + draw(st.integers(0, 60)))))
        repl = draw(st.one_of(st.just(""), SENTENCE, SEP, st.text(alphabet="ab .!?\n\t", max_size=12),
                              st.builds(lambda s, p: p + s, SENTENCE, SEP)))
        cur = cur[:i] + repl + cur[j:]
        out.append(cur)
    return out


@st.composite
def cases(draw):
    chunker = draw(CHUNKERS)
    text = draw(documents())
    return chunker, text, draw(edit_sequences(text))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_strategy_equals_rebuild_on_random_edits(case):
    chunker, text, new_texts = case
    for name, apply in STRATEGIES.items():
        assert problems(apply, chunker, text, new_texts, embedder_for(name)) == [], name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents(), min_size=1, max_size=4), st.integers(0, 2**32 - 1), CHUNKERS,
       st.dictionaries(st.sampled_from(EDIT_TYPES), st.floats(0.1, 1.0), min_size=1))
def test_every_strategy_equals_rebuild_on_the_edit_stream(texts, seed, chunker, mix):
    docs = {f"d{i}": t or "Seed sentence." for i, t in enumerate(texts)}
    edits = make_edits(docs, 12, mix, seed, chunker.separator)
    for name, apply in STRATEGIES.items():
        emb = embedder_for(name)
        stores = {d: DocumentStore.build(d, t, chunker, emb, dim=DIM) for d, t in docs.items()}
        for e in edits:
            assert stores[e.doc_id].text == e.old_text
            apply(stores[e.doc_id], e.new_text, emb)
        for d, store in stores.items():
            c = compare(store, DocumentStore.build(d, store.text, chunker, embedder_for(name), dim=DIM))
            assert c["texts"] and c["offsets"] and c["slices"] and c["max_abs_vector_diff"] == 0.0, (name, d)


# -- the property check catches the reference implementation's bug class ---------------------------------------

def buggy_surgical(store: DocumentStore, new_text: str, embed) -> UpdateResult:
    """The reference implementation's surgical update: chunks overlapping a changed range are re-created
    with the whole document's length change applied to their end offset (start left alone); later chunks
    are shifted; sentence grouping is never reconsidered."""
    old_text = store.text
    delta = len(new_text) - len(old_text)
    ranges = changed_ranges(old_text, new_text)
    first = ranges[0][0] if ranges else len(old_text)
    hit = {c.index for c in store.chunks if any(i1 <= c.end and i2 >= c.start for i1, i2, _, _ in ranges)}
    chunks, todo = [], []
    for c in store.chunks:
        if c.index in hit:
            start, end = c.start, c.end + delta
            todo.append(c.index)
        elif c.start >= first:
            start, end = c.start + delta, c.end + delta
        else:
            start, end = c.start, c.end
        chunks.append(Chunk(c.index, start, end, new_text[start:end]))
    vectors = store.vectors.copy()
    if todo:
        vectors[todo] = embed_texts(embed, [chunks[i].text for i in todo], store.dim)
    store.replace(new_text, chunks, vectors)
    return UpdateResult("buggy", len(todo), len(chunks), len(chunks))


def test_property_catches_the_reference_offset_bug_fixed_case():
    # a word edit in chunk 1 and another in chunk 2: chunk 2 is re-created with an unshifted start
    new = DOC.replace("claims", "expense claims").replace("file the", "file all of the")
    assert problems(buggy_surgical, C40, DOC, [new], FakeEmbedder())
    assert problems(surgical.apply, C40, DOC, [new], FakeEmbedder()) == []


def test_property_catches_the_reference_offset_bug_found_by_hypothesis():
    case = find(cases(), lambda c: bool(problems(buggy_surgical, c[0], c[1], c[2], FakeEmbedder())),
                settings=settings(max_examples=2000, deadline=None, database=None))
    chunker, text, new_texts = case
    assert problems(surgical.apply, chunker, text, new_texts, FakeEmbedder()) == []


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
