"""dataset=lvl_corpus: LiveVectorLake-shaped corpus with ground-truth edits, in schema v2 (opaque ids, v2 corpus
fields only, labels/ and graded qrels, a manifest load_dataset checks)."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from data_gen.generator import catalog_families
from data_gen.lvl_corpus import BOILERPLATE
from data_gen.params import params_from_config
from data_gen.writer import render_files, write_dataset
from smartvector_bench.core.dataset import CORPUS_META, LABEL_FILES, QUERY_META, load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.dataset.documents import load_versions
from smartvector_bench.core.timeutil import iso_to_days

from .conftest import compose_config


def _params(*overrides: str):
    return params_from_config(compose_config(["dataset=lvl_corpus", *overrides])["dataset"])


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return render_files(_params())


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = tmp_path_factory.mktemp("lvl") / "d"
    write_dataset(_params(), path)
    return path


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def _docs(files) -> dict[tuple[str, int], dict]:
    return {(d["doc_id"], d["version"]): d for d in _rows(files["documents.jsonl"])}


def _in_force(docs: dict, doc_id: str, t: float) -> dict:
    """The version of ``doc_id`` in force at ``t`` (the last one effective at or before it)."""
    versions = [d for (i, _), d in docs.items() if i == doc_id and iso_to_days(d["effective_at"]) <= t]
    return max(versions, key=lambda d: d["version"])


def test_shape_like_livevectorlake(files):
    m = json.loads(files["manifest.json"])["counts"]
    assert m["documents"] == 100 and m["document_versions"] == 500 and m["queries"] == 200
    assert m["families"] == 100 and m["families_by_split"] == {"dev": 50, "test": 50}
    assert m["queries_by_category"] == {"current": 100, "historical": 100}
    assert m["queries_by_split"] == {"dev": 100, "test": 100}
    assert m["relevant_per_query_mean"] == 1.0
    assert set(m["vectors_by_kind"]) == {"statement", "scope", "procedure", "contacts", "note"}
    assert sum(m["vectors_by_kind"].values()) == m["vectors"] == len(files["corpus.jsonl"].splitlines())
    edits = _rows(files["edits.jsonl"])
    classes = Counter(c["class"] for e in edits if e["version"] > 1 for c in e["changes"])
    assert classes["modified"] > 0 and classes["new"] > 0 and classes["deleted"] > 0 and classes["unchanged"] > 0
    assert classes["moved"] > 0 and m["edits_by_class"] == dict(sorted(classes.items()))
    assert sum(c["revert"] for e in edits for c in e["changes"]) > 0
    # every document is one catalog family, each family at most once
    fams = [f["family"] for f in _rows(files["labels/families.jsonl"])]
    assert len(fams) == len(set(fams)) == 100
    assert set(fams) == {f.key for f in catalog_families()}


def test_deterministic(files):
    assert render_files(_params()) == files
    other = render_files(_params("dataset.seed=7"))
    assert other["corpus.jsonl"] != files["corpus.jsonl"] and other["queries.jsonl"] != files["queries.jsonl"]


def test_ground_truth_matches_the_documents_and_the_corpus_windows(files):
    docs = _rows(files["documents.jsonl"])
    corpus = _rows(files["corpus.jsonl"])
    edits = {(e["doc_id"], e["version"]): e["changes"] for e in _rows(files["edits.jsonl"])}
    prev: dict[str, list[str]] = {}
    for d in docs:
        paras = d["text"].split("\n\n")
        changes = [c for c in edits[(d["doc_id"], d["version"])] if c["class"] != "deleted"]
        assert [c["position"] for c in changes] == list(range(len(paras)))
        before = prev.get(d["doc_id"])
        for c, text in zip(changes, paras):
            if c["class"] in ("unchanged", "moved"):
                assert before[c["old_position"]] == text
                assert (c["position"] == c["old_position"]) == (c["class"] == "unchanged")
            if c["class"] == "modified":
                assert before[c["old_position"]] != text
            if c["revert"]:
                assert c["class"] == "modified" and text in "\n\n".join(
                    x["text"] for x in docs if x["doc_id"] == d["doc_id"] and x["version"] < d["version"] - 1)
        deleted = [c["old_position"] for c in edits[(d["doc_id"], d["version"])] if c["class"] == "deleted"]
        for pos in deleted:
            assert before[pos] not in paras
        # the rows valid at the version's effective time are exactly its paragraphs
        t = iso_to_days(d["effective_at"])
        valid = sorted(r["text"] for r in corpus if r["metadata"]["doc_id"] == d["doc_id"]
                       and iso_to_days(r["metadata"]["valid_from"]) <= t < iso_to_days(r["metadata"]["valid_to"]))
        assert valid == sorted(paras)
        prev[d["doc_id"]] = paras
    boiler = [d for d in docs if BOILERPLATE in d["text"].split("\n\n")]
    assert len({d["doc_id"] for d in boiler}) == 100  # one paragraph shared word for word by every document


def test_offsets_are_spans_in_the_version_the_row_was_created_in(files):
    docs = _docs(files)
    by_id = {r["_id"]: r for r in _rows(files["corpus.jsonl"])}
    for r in by_id.values():
        m = r["metadata"]
        text = docs[(m["doc_id"], m["version"])]["text"]
        assert text[m["offset_start"]:m["offset_end"]] == r["text"]
        assert m["created_at"] == m["valid_from"] == docs[(m["doc_id"], m["version"])]["effective_at"]
        if m["supersedes"] is not None:  # a modified paragraph's new text replaces the old one's row
            old = by_id[m["supersedes"]]["metadata"]
            assert old["doc_id"] == m["doc_id"] and old["valid_to"] == m["valid_from"]
    targets = [r["metadata"]["supersedes"] for r in by_id.values() if r["metadata"]["supersedes"]]
    assert targets and len(targets) == len(set(targets))


def test_nothing_in_the_corpus_names_the_family_kind_or_position(files):
    corpus = _rows(files["corpus.jsonl"])
    queries = _rows(files["queries.jsonl"])
    names = {f.key for f in catalog_families()} | {f.topic.key for f in catalog_families()} | {
        f.scope.key for f in catalog_families()}
    names |= {"fact", "scope", "procedure", "contacts", "boilerplate", "statement", "note", "lvl"}
    opaque_chunk, opaque_doc = re.compile(r"^c[0-9a-f]{10}$"), re.compile(r"^d[0-9a-f]{10}$")
    for r in corpus:
        assert set(r) == {"_id", "title", "text", "metadata"}
        assert set(r["metadata"]) == set(CORPUS_META), sorted(set(r["metadata"]) ^ set(CORPUS_META))
        assert opaque_chunk.match(r["_id"]) and opaque_doc.match(r["metadata"]["doc_id"])
    for q in queries:
        assert set(q) == {"_id", "text", "metadata"} and set(q["metadata"]) == set(QUERY_META)
        assert re.match(r"^q\d{4}$", q["_id"])
    ids = [r["_id"] for r in corpus] + [r["metadata"]["doc_id"] for r in corpus] + [
        d["doc_id"] for d in _rows(files["documents.jsonl"])] + [q["_id"] for q in queries]
    for i in ids:
        lowered = i.lower()
        assert not any(n in lowered for n in names), i
    assert len({r["_id"] for r in corpus}) == len(corpus)
    # rows are shuffled: the corpus order does not group a document's rows, nor list them by position
    doc_seq = [r["metadata"]["doc_id"] for r in corpus]
    assert sum(a != b for a, b in zip(doc_seq, doc_seq[1:])) > 0.9 * len(corpus)
    # the fact's place in the document is the document's own: its rank by offset does not mark it
    labels = {x["_id"]: x for x in _rows(files["labels/chunks.jsonl"])}
    first = [r for r in corpus if r["metadata"]["version"] == 1]
    fact_rank = Counter()
    for doc_id in {r["metadata"]["doc_id"] for r in first}:
        rows = sorted((r for r in first if r["metadata"]["doc_id"] == doc_id),
                      key=lambda r: r["metadata"]["offset_start"])
        fact_rank[[labels[r["_id"]]["kind"] for r in rows].index("statement")] += 1
    assert len(fact_rank) == 5 and max(fact_rank.values()) < 40, fact_rank
    # the queries are shuffled too: the categories are not in a fixed alternation
    cats = [q["metadata"]["category"] for q in queries]
    assert cats[:50] != ["current", "historical"] * 25 and cats[:50] != ["historical", "current"] * 25


def test_labels_describe_every_row(files):
    corpus = {r["_id"]: r for r in _rows(files["corpus.jsonl"])}
    labels = _rows(files["labels/chunks.jsonl"])
    assert [x["_id"] for x in labels] == list(corpus)  # one label per row, in corpus order
    topics = {f.key: f.topic for f in catalog_families()}
    doc_family: dict[str, str] = {}
    for x in labels:
        r = corpus[x["_id"]]
        assert x["doc_type"] == "policy" and x["family"] in topics
        assert doc_family.setdefault(r["metadata"]["doc_id"], x["family"]) == x["family"]  # one family per document
        assert (x["value"] is not None) == (x["kind"] == "statement")
        if x["kind"] == "statement":
            assert topics[x["family"]].render(x["value"]) in r["text"]
        if x["kind"] == "note":
            assert r["text"].startswith(BOILERPLATE)
        assert r["title"] == next(f.title for f in catalog_families() if f.key == x["family"])
    # the timeline is the fact's value in each version, one step per change
    docs = _docs(files)
    facts = {}
    for x in labels:
        if x["kind"] == "statement":
            facts.setdefault(x["family"], []).append(corpus[x["_id"]])
    for f in _rows(files["labels/families.jsonl"]):
        timeline = [(s["effective_from"], s["value"]) for s in f["timeline"]]
        doc_id = facts[f["family"]][0]["metadata"]["doc_id"]
        per_version = []
        for v in range(1, 6):
            d = docs[(doc_id, v)]
            t = iso_to_days(d["effective_at"])
            row = [r for r in facts[f["family"]] if iso_to_days(r["metadata"]["valid_from"]) <= t
                   < iso_to_days(r["metadata"]["valid_to"])]
            assert len(row) == 1 and row[0]["text"] in d["text"].split("\n\n")
            value = next(x["value"] for x in labels if x["_id"] == row[0]["_id"])
            if not per_version or per_version[-1][1] != value:
                per_version.append((d["effective_at"], value))
        assert timeline == per_version, f["family"]


def test_queries_are_judged_by_the_fact_row_in_force(written):
    _check_judgments(written)


def test_judgments_under_heavy_churn_with_reverted_facts(tmp_path):
    """Many edits and reverts: a fact can return to an earlier value, whose old row is then not stale (it states
    the truth) but not relevant either (its window is closed)."""
    path = tmp_path / "churn"
    write_dataset(_params("dataset.n_documents=30", "dataset.p_modify=0.6", "dataset.p_revert=1.0",
                          "dataset.p_insert=0.5", "dataset.p_delete=0.5"), path)
    families = _rows((path / "labels" / "families.jsonl").read_text())
    assert sum(f["scenario"]["fact_reverts"] for f in families) > 0
    returns = [f for f in families if len({s["value"] for s in f["timeline"]}) < len(f["timeline"])]
    assert returns  # some fact's value came back
    _check_judgments(path)
    ds = load_dataset(path)
    lab, q, c = ds.labels, ds.queries, ds.corpus
    closed_but_true = 0
    for i in np.nonzero(q.category == "current")[0]:
        fam = np.nonzero((lab.chunk_family == q.family[i]) & (lab.chunk_kind == "statement"))[0]
        closed_but_true += sum(lab.chunk_value[j] == lab.chunk_value[q.gold[i]] and j != q.gold[i] for j in fam)
    assert closed_but_true > 0


def _check_judgments(written) -> None:
    ds = load_dataset(written)
    c, q, lab = ds.corpus, ds.queries, ds.labels
    assert lab is not None and ds.sha256 == json.loads((written / "manifest.json").read_text())["dataset_sha256"]
    docs = {(d["doc_id"], d["version"]): d for d in _rows((written / "documents.jsonl").read_text())}
    answers = {x["_id"]: x["answer"] for x in _rows((written / "labels" / "queries.jsonl").read_text())}
    assert (q.relevant.counts() == 1).all() and (q.grades.indices == 2).all()
    gold = q.gold
    assert (gold == q.relevant.indices).all()
    assert ((c.valid_from[gold] <= q.as_of) & (q.as_of < c.valid_to[gold])).all()
    now = q.as_of[q.category == "current"]
    assert (now > c.valid_from.max()).all() and (q.as_of[q.category == "historical"] < now.min()).all()
    for i in range(len(q)):
        g = int(gold[i])
        assert lab.chunk_kind[g] == "statement" and lab.chunk_family[g] == q.family[i]
        truth = lab.timelines[q.family[i]].value_at(q.as_of[i])
        assert lab.chunk_value[g] == truth == answers[q.ids[i]]
        # independently: the gold text is a paragraph of the document version in force at as_of
        d = _in_force(docs, str(c.doc_id[g]), float(q.as_of[i]))
        assert c.texts[g] in d["text"].split("\n\n")
        # stale: the family's earlier fact rows whose value is no longer the truth; no rumors
        fam = np.nonzero((lab.chunk_family == q.family[i]) & (lab.chunk_kind == "statement"))[0]
        expected = sorted(int(j) for j in fam if c.created_at[j] <= q.as_of[i] and c.valid_to[j] <= q.as_of[i]
                          and lab.chunk_value[j] != truth)
        assert sorted(q.stale.row(i).tolist()) == expected
        assert len(q.rumor.row(i)) == 0
    assert sum(len(q.stale.row(i)) for i in range(len(q))) > 0
    # whole families per split: no family in both
    split_of = {}
    for fam, split in zip(q.family, q.split):
        assert split_of.setdefault(fam, split) == split


def test_the_manifest_covers_the_labels_and_the_ground_truth(tmp_path):
    written = tmp_path / "d"
    write_dataset(_params("dataset.n_documents=3"), written)
    manifest = json.loads((written / "manifest.json").read_text())
    assert set(manifest["files"]) == {"corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv",
                                      *LABEL_FILES, "documents.jsonl", "edits.jsonl"}
    assert manifest["schema_version"] == "2.0" and manifest["config"]["name"] == "lvl_corpus"
    label = written / "labels" / "families.jsonl"
    label.write_text(label.read_text().replace('"value":', '"value": ', 1))
    with pytest.raises(BenchError, match=r"families\.jsonl: sha256 differs"):
        load_dataset(written)


def test_edited_ground_truth_is_detected(tmp_path):
    write_dataset(_params("dataset.n_documents=3"), tmp_path / "d")
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert len(load_versions(tmp_path / "d", manifest)) == 15
    edits = tmp_path / "d" / "edits.jsonl"
    edits.write_text(edits.read_text().replace('"unchanged"', '"moved"', 1))
    with pytest.raises(BenchError, match=r"edits\.jsonl: sha256 differs"):
        load_versions(tmp_path / "d", manifest)


def test_bad_settings_name_the_key():
    with pytest.raises(BenchError, match=r"dataset\.p_modify=1\.5"):
        _params("dataset.p_modify=1.5")
    with pytest.raises(BenchError, match=r"dataset\.n_documents=101"):
        _params("dataset.n_documents=101")
    with pytest.raises(BenchError, match=r"dataset\.n_versions=1"):
        _params("dataset.n_versions=1")
