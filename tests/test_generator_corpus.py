"""The versioned-policy generator's corpus: opaque ids and metadata (labels live only in labels/), texts cut into
sections with consistent offsets and times, statements at several positions, dependencies and supersession, and
labels that agree with the texts."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from data_gen.catalog import TOPICS
from data_gen.generator import KIND_OF, catalog_families
from smartvector_bench.core.dataset import CORPUS_META, QUERY_META
from smartvector_bench.core.evaluation.judgments import DOC_TYPES, KINDS
from smartvector_bench.core.timeutil import iso_to_days

from .generator_cases import _rows
from .generator_cases import corpus, default_files, ds, families, queries  # noqa: F401 - the default profile (fixtures)

ID = re.compile(r"^[cd][0-9a-f]{10}$")


TOPIC_BY_KEY = {t.key: t for t in TOPICS}


@pytest.fixture(scope="module")
def chunk_labels(default_files) -> dict[str, dict]:
    return {r["_id"]: r for r in _rows(default_files["labels/chunks.jsonl"])}


# -- an opaque corpus -------------------------------------------------------------------------------------------

def _family_keys() -> set[str]:
    return {f.key for f in catalog_families()}


def test_ids_are_opaque(corpus):
    topic_keys = {t.key for t in TOPICS}
    scope_keys = {s.key for t in TOPICS for s in t.scopes}
    numbered = re.compile(r"[-_.][a-z]{1,3}\d|v\d+$|[-_]\d+$")
    for cid, row in corpus.items():
        doc = row["metadata"]["doc_id"]
        for i in (cid, doc):
            assert ID.match(i), i
            assert not numbered.search(i), i
            assert not any(k in i for k in topic_keys | scope_keys), i
        assert cid.startswith("c") and doc.startswith("d")
        assert row["metadata"]["supersedes"] is None or ID.match(row["metadata"]["supersedes"])
        assert all(ID.match(d) for d in row["metadata"]["depends_on"])
    assert len({r["metadata"]["doc_id"] for r in corpus.values()} & set(corpus)) == 0


def test_corpus_and_query_metadata_have_exactly_the_loader_keys(corpus, queries):
    for row in corpus.values():
        assert set(row) == {"_id", "title", "text", "metadata"}
        assert set(row["metadata"]) == set(CORPUS_META), row["_id"]
    for q in queries:
        assert set(q) == {"_id", "text", "metadata"}
        assert set(q["metadata"]) == set(QUERY_META), q["_id"]


def _values(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _values(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _values(v)
    else:
        yield obj


BRITISH = "rumour"  # external spelling: a corpus field must not name the label in either spelling


def test_no_corpus_field_names_a_family_or_a_kind(corpus):
    forbidden = _family_keys() | set(KINDS) | set(KIND_OF) | {t.key for t in TOPICS} | {"rumor", BRITISH,
                                                                                        "confirmation",
                                                                                        "announcement"}
    for row in corpus.values():
        for v in _values(row):
            assert not (isinstance(v, str) and v in forbidden), (row["_id"], v)


def test_labels_live_only_in_labels(default_files):
    keys = _family_keys()
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv"):
        text = default_files[name]
        hits = [k for k in keys if k in text]
        assert not hits, (name, hits[:3])
    assert any(k in default_files["labels/chunks.jsonl"] for k in keys)
    labelled = set(_rows(default_files["labels/chunks.jsonl"])[0])
    assert labelled == {"_id", "family", "doc_type", "kind", "value"}


def test_corpus_rows_are_shuffled_across_families(corpus, chunk_labels):
    fams = [chunk_labels[cid]["family"] for cid in corpus]
    runs = sum(a != b for a, b in zip(fams, fams[1:]))
    assert runs > len(fams) / 2  # not grouped family by family


# -- texts, sections and dependencies ---------------------------------------------------------------------------

def test_every_chunk_text_contains_a_digit(corpus):
    for row in corpus.values():
        assert re.search(r"[0-9]", row["text"]), row


def test_chunks_are_sections_with_consistent_offsets(corpus):
    by_doc: dict[tuple[str, int], list[dict]] = {}
    for row in corpus.values():
        m = row["metadata"]
        by_doc.setdefault((m["doc_id"], m["version"]), []).append(row)
        assert len(row["text"]) == m["offset_end"] - m["offset_start"]
        assert 0 < len(row["text"]) < 360  # dataset.chunk_chars
    for chunks in by_doc.values():
        chunks.sort(key=lambda r: r["metadata"]["offset_start"])
        assert chunks[0]["metadata"]["offset_start"] == 0
        for a, b in zip(chunks, chunks[1:]):  # sections are separated by one newline
            assert b["metadata"]["offset_start"] == a["metadata"]["offset_end"] + 1
        metas = [c["metadata"] for c in chunks]
        for key in ("created_at", "valid_from", "valid_to", "source", "authority"):
            assert len({m[key] for m in metas}) == 1, key  # one document version, one set of times


def test_timestamps_are_iso_utc(corpus, queries):
    iso = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
    for row in corpus.values():
        m = row["metadata"]
        for key in ("created_at", "valid_from"):
            assert iso.match(m[key]), (row["_id"], key)
        assert m["valid_to"] is None or iso.match(m["valid_to"])
    for q in queries:
        assert iso.match(q["metadata"]["query_time"]) and iso.match(q["metadata"]["as_of"])
        if q["metadata"]["category"] == "historical":
            assert iso_to_days(q["metadata"]["as_of"]) < iso_to_days(q["metadata"]["query_time"])
        else:
            assert q["metadata"]["as_of"] == q["metadata"]["query_time"]


def test_policy_statements_sit_at_several_positions(ds):
    lab = ds.labels
    pos = ds.corpus.position()
    statements = (lab.chunk_doc_type == "policy") & (lab.chunk_kind == "statement")
    assert statements.sum() > 0
    assert len(set(pos[statements].tolist())) >= 3
    # Within a family the layout is fixed: the statement keeps its position across versions.
    for fam in set(lab.chunk_family[statements]):
        assert len(set(pos[statements & (lab.chunk_family == fam)].tolist())) == 1, fam


def test_dependency_targets_include_statements_and_other_kinds(ds):
    c, lab = ds.corpus, ds.labels
    targets = c.depends_on.indices
    kinds = Counter(lab.chunk_kind[targets].tolist())
    assert kinds["statement"] > 0
    assert sum(n for k, n in kinds.items() if k != "statement") > 0
    assert {"scope", "contacts"} <= set(kinds)
    # Some dependency crosses families (a policy's scope referring to another family's contacts).
    src = np.repeat(np.arange(len(c)), c.depends_on.counts())
    assert (lab.chunk_family[src] != lab.chunk_family[targets]).any()
    # A chunk only depends on chunks that already existed.
    assert (c.created_at[targets] <= c.created_at[src]).all()


def test_versions_supersede_the_same_section_of_the_previous_version(ds):
    c, lab = ds.corpus, ds.labels
    has = np.nonzero(c.supersedes >= 0)[0]
    assert len(has) > 0
    for i in has:
        j = c.supersedes[i]
        assert c.doc_id[i] == c.doc_id[j] and c.version[i] == c.version[j] + 1
        assert lab.chunk_kind[i] == lab.chunk_kind[j] and lab.chunk_family[i] == lab.chunk_family[j]
        assert c.valid_to[j] == c.valid_from[i]
    assert (lab.chunk_doc_type[has] != "message").all()


def test_labels_agree_with_the_texts(corpus, chunk_labels, families):
    for cid, lab in chunk_labels.items():
        assert lab["doc_type"] in DOC_TYPES and lab["kind"] in KINDS
        topic = TOPIC_BY_KEY[families[lab["family"]]["topic"]]
        if lab["value"] is None:
            assert lab["kind"] != "statement"
        else:
            assert lab["kind"] == "statement"
            assert topic.render(lab["value"]) in corpus[cid]["text"], (cid, lab)
            assert lab["value"] in topic.values
