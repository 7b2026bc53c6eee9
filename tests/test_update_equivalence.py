"""Update strategies (full, cdc, surgical) against a from-scratch rebuild, by property.

Hypothesis checks that every strategy leaves a document's store exactly as a rebuild would make it, on
random documents and random edit sequences and on the edit stream; a deliberately buggy surgical update (the
reference implementation's offset bug) shows that the same check catches that class of bug.
"""

from __future__ import annotations

from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from smartvector_bench.core.dataset.chunking import Chunk
from smartvector_bench.systems.updates import STRATEGIES, Chunker, DocumentStore, UpdateResult, surgical
from smartvector_bench.systems.updates.edits import EDIT_TYPES, make_edits
from smartvector_bench.systems.updates.store import compare, embed_texts
from smartvector_bench.systems.updates.surgical import changed_ranges

from .update_cases import C40, DIM, DOC, FakeEmbedder, embedder_for, problems


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
