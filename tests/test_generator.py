"""The versioned-policy generator (benchmark v2): shape, determinism, opaque corpus, labels, judgments, splits,
scenarios and config errors."""

from __future__ import annotations

import copy
import functools
import json
import re
from collections import Counter

import numpy as np
import pytest

from data_gen.catalog import TOPICS
from data_gen.generator import KIND_OF, Generator, catalog_families
from data_gen.params import params_from_config
from data_gen.writer import render_files, write_dataset
from smartvector_bench.core.dataset import CATEGORIES, CORPUS_META, LABEL_FILES, QUERY_META, load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.labels import DOC_TYPES, KINDS, judge_at
from smartvector_bench.core.timeutil import iso_to_days

from .conftest import compose_config

ID = re.compile(r"^[cd][0-9a-f]{10}$")
FILES = ["corpus.jsonl", "labels/chunks.jsonl", "labels/families.jsonl", "labels/queries.jsonl", "manifest.json",
         "qrels/dev.tsv", "qrels/test.tsv", "queries.jsonl"]
TOPIC_BY_KEY = {t.key: t for t in TOPICS}


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


@functools.cache
def _base_cfg() -> dict:
    """The default ``dataset`` config, composed once (composing costs ~0.2 s); tests change keys of a copy."""
    return compose_config()["dataset"]


def _cfg(**changes) -> dict:
    cfg = copy.deepcopy(_base_cfg())
    cfg.update(changes)
    return cfg


@functools.cache
def _render_cached(changes: tuple) -> dict[str, str]:
    return render_files(params_from_config(_cfg(**dict(changes))))


def _render(**changes) -> dict[str, str]:
    """The rendered files of the default config with ``changes`` (cached: the generator is deterministic, and
    test_same_seed_and_config_give_byte_identical_files checks that without the cache)."""
    return _render_cached(tuple(sorted(changes.items())))


@pytest.fixture(scope="module")
def default_files() -> dict[str, str]:
    return _render()


@pytest.fixture(scope="module")
def large_files() -> dict[str, str]:
    return render_files(params_from_config(compose_config(["dataset=versioned_policies_large"])["dataset"]))


@pytest.fixture(scope="module")
def corpus(default_files) -> dict[str, dict]:
    return {r["_id"]: r for r in _rows(default_files["corpus.jsonl"])}


@pytest.fixture(scope="module")
def queries(default_files) -> list[dict]:
    return _rows(default_files["queries.jsonl"])


@pytest.fixture(scope="module")
def chunk_labels(default_files) -> dict[str, dict]:
    return {r["_id"]: r for r in _rows(default_files["labels/chunks.jsonl"])}


@pytest.fixture(scope="module")
def query_labels(default_files) -> dict[str, dict]:
    return {r["_id"]: r for r in _rows(default_files["labels/queries.jsonl"])}


@pytest.fixture(scope="module")
def families(default_files) -> dict[str, dict]:
    return {r["family"]: r for r in _rows(default_files["labels/families.jsonl"])}


@pytest.fixture(scope="module")
def ds(default_dataset):
    return load_dataset(default_dataset)


# -- shape and determinism ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 42, 7])
def test_default_shape_is_258_vectors_and_138_queries(seed):
    files = _render(seed=seed)
    manifest = json.loads(files["manifest.json"])
    assert len(files["corpus.jsonl"].splitlines()) == 258
    assert len(files["queries.jsonl"].splitlines()) == 138
    assert len(files["labels/chunks.jsonl"].splitlines()) == 258
    assert len(files["labels/queries.jsonl"].splitlines()) == 138
    assert len(files["labels/families.jsonl"].splitlines()) == 12
    assert manifest["counts"]["vectors"] == 258 and manifest["counts"]["queries"] == 138
    assert manifest["counts"]["families"] == 12
    assert manifest["config"]["seed"] == seed


def test_default_profile_has_every_category(default_files):
    cats = json.loads(default_files["manifest.json"])["counts"]["queries_by_category"]
    assert set(cats) == set(CATEGORIES)


def test_large_profile_has_over_1000_queries_over_60_families(large_files):
    queries = _rows(large_files["queries.jsonl"])
    labels = _rows(large_files["labels/queries.jsonl"])
    fams = _rows(large_files["labels/families.jsonl"])
    assert len(queries) >= 1000
    assert len({r["family"] for r in labels}) >= 60
    assert len(fams) >= 60
    assert len({f["topic"] for f in fams}) == len(TOPICS)  # every topic takes part
    manifest = json.loads(large_files["manifest.json"])
    assert manifest["counts"]["queries"] == len(queries)
    assert min(manifest["counts"]["families_by_split"].values()) >= 30


def test_same_seed_and_config_give_byte_identical_files(default_files):
    again = render_files(params_from_config(compose_config()["dataset"]))  # a fresh config and generator
    assert sorted(again) == FILES
    for name in FILES:
        assert again[name] == default_files[name], name


def test_write_dataset_writes_exactly_the_rendered_files(tmp_path, default_files):
    manifest = write_dataset(params_from_config(_cfg()), tmp_path / "d")
    written = sorted(str(p.relative_to(tmp_path / "d")) for p in (tmp_path / "d").rglob("*") if p.is_file())
    assert written == FILES
    for name in FILES:
        assert (tmp_path / "d" / name).read_bytes() == default_files[name].encode("utf-8"), name
    loaded = load_dataset(tmp_path / "d")
    assert loaded.sha256 == manifest["dataset_sha256"]
    assert manifest["schema_version"] and manifest["config"]["seed"] == 42


def test_another_seed_gives_another_corpus(default_files):
    other = _render(seed=7)
    assert other["corpus.jsonl"] != default_files["corpus.jsonl"]
    assert other["labels/families.jsonl"] != default_files["labels/families.jsonl"]
    ids = {r["_id"] for r in _rows(default_files["corpus.jsonl"])}
    assert not ids & {r["_id"] for r in _rows(other["corpus.jsonl"])}
    assert json.loads(other["manifest.json"])["dataset_sha256"] != json.loads(default_files["manifest.json"])[
        "dataset_sha256"]


def _invariant_counts(files: dict[str, str]) -> dict:
    counts = json.loads(files["manifest.json"])["counts"]
    fams = _rows(files["labels/families.jsonl"])
    labels = _rows(files["labels/chunks.jsonl"])
    scen = [f["scenario"] for f in fams]
    return {
        **{k: counts[k] for k in ("vectors", "documents", "families", "queries", "families_by_split")},
        "doc_types": sorted(Counter(r["doc_type"] for r in labels).items()),
        "kinds_without_messages": sorted(Counter(r["kind"] for r in labels if r["doc_type"] != "message").items()),
        "versions": sorted(Counter(s["versions"] for s in scen).items()),
        **{key: sum(int(s[key]) for s in scen) for key in ("runbook", "rumors", "recent", "announced", "lagging",
                                                          "confirmations", "notes")},
        "queries_per_family": sorted(Counter(Counter(r["family"] for r in _rows(files["labels/queries.jsonl"]))
                                             .values()).items()),
    }


def test_counts_do_not_depend_on_the_seed(default_files):
    base = _invariant_counts(default_files)
    assert base["rumors"] == 2 * round(0.5 * 12) and base["announced"] == 3 and base["lagging"] >= 1
    for seed in (0, 1, 7):
        assert _invariant_counts(_render(seed=seed)) == base, seed


def test_contradiction_rate_keeps_families_dates_and_values(default_files):
    def timelines(files):
        return [(f["family"], f["topic"], f["timeline"]) for f in _rows(files["labels/families.jsonl"])]

    def policy_facts(files):
        labels = {r["_id"]: r for r in _rows(files["labels/chunks.jsonl"])}
        return sorted((labels[r["_id"]]["family"], r["metadata"]["version"], r["metadata"]["valid_from"], r["text"])
                      for r in _rows(files["corpus.jsonl"]) if labels[r["_id"]]["doc_type"] == "policy")

    base_t, base_p = timelines(default_files), policy_facts(default_files)
    rumours = {}
    for rate in (0.0, 0.25, 1.0):
        files = _render(contradiction_rate=rate)
        assert timelines(files) == base_t, rate
        assert policy_facts(files) == base_p, rate  # the policy documents do not move either
        rumours[rate] = sum(f["scenario"]["rumors"] for f in _rows(files["labels/families.jsonl"]))
        # rumours are added to their families' messages; every other chunk stays
        assert len(files["corpus.jsonl"].splitlines()) == 258 - 12 + rumours[rate]
    assert rumours[0.0] == 0 and rumours[0.25] == 2 * round(0.25 * 12)
    assert rumours[0.0] < rumours[0.25] < rumours[1.0]


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


def test_no_corpus_field_names_a_family_or_a_kind(corpus):
    forbidden = _family_keys() | set(KINDS) | set(KIND_OF) | {t.key for t in TOPICS} | {"rumor", "rumour",
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


# -- splits -------------------------------------------------------------------------------------------------------

def test_splits_share_no_family_and_no_relevant_chunk(ds):
    q = ds.queries
    fams = {s: set(q.family[q.split == s]) for s in ("dev", "test")}
    assert fams["dev"] and fams["test"]
    assert not fams["dev"] & fams["test"]
    rel = {s: set(q.relevant.take(np.nonzero(q.split == s)[0]).indices.tolist()) for s in ("dev", "test")}
    assert rel["dev"] and rel["test"] and not rel["dev"] & rel["test"]


def test_splits_are_balanced_by_category(queries):
    per = Counter((q["metadata"]["category"], q["metadata"]["split"]) for q in queries)
    for cat in {c for c, _ in per}:
        total = per[(cat, "dev")] + per[(cat, "test")]
        assert abs(per[(cat, "test")] - total / 2) <= max(2, 0.25 * total), (cat, per)


def test_several_queries_have_more_than_one_relevant_chunk(ds):
    n = ds.queries.relevant.counts()
    assert (n >= 1).all()
    assert (n > 1).sum() >= 10


# -- judgments ----------------------------------------------------------------------------------------------------

def test_judgments_equal_judge_at_recomputed_from_labels(ds, query_labels):
    c, q, lab = ds.corpus, ds.queries, ds.labels
    assert lab is not None
    for i, qid in enumerate(q.ids):
        fam = q.family[i]
        rows = np.nonzero(lab.chunk_family == fam)[0]
        j = judge_at(rows, lab.chunk_doc_type[rows], lab.chunk_value[rows], c.created_at[rows], c.valid_from[rows],
                     c.valid_to[rows], lab.timelines[fam], float(q.as_of[i]), lab.query_asks[i])
        assert q.relevant.row(i).tolist() == j.relevant.tolist(), qid
        assert q.grades.row(i).tolist() == j.grades.tolist(), qid
        assert sorted(q.stale.row(i).tolist()) == j.stale.tolist(), qid
        assert sorted(q.rumor.row(i).tolist()) == j.rumor.tolist(), qid
        assert query_labels[qid]["answer"] == j.truth, qid


def test_relevant_stale_and_rumour_chunks_hold_at_as_of(ds, query_labels):
    c, q, lab = ds.corpus, ds.queries, ds.labels
    for i, qid in enumerate(q.ids):
        as_of, fam = float(q.as_of[i]), q.family[i]
        answer = query_labels[qid]["answer"]
        asks = lab.query_asks[i]
        assert asks in ("policy", "runbook")
        rel, grades = q.relevant.row(i), q.grades.row(i)
        stale, rumor = q.stale.row(i), q.rumor.row(i)
        assert len(rel) >= 1
        assert list(grades) == sorted(grades, reverse=True) and set(grades.tolist()) <= {1, 2}
        for r, g in zip(rel.tolist(), grades.tolist()):
            assert c.created_at[r] <= as_of, (qid, r)
            assert c.valid_from[r] <= as_of < c.valid_to[r], (qid, r)
            assert lab.chunk_family[r] == fam and lab.chunk_value[r] == answer, (qid, r)
            assert (g == 2) == (lab.chunk_doc_type[r] == asks), (qid, r)
        for r in stale.tolist():
            assert c.created_at[r] <= as_of and lab.chunk_family[r] == fam
            assert lab.chunk_doc_type[r] != "message" and lab.chunk_value[r] != answer
        for r in rumor.tolist():
            assert c.created_at[r] <= as_of and lab.chunk_family[r] == fam
            assert lab.chunk_doc_type[r] == "message" and lab.chunk_value[r] != answer
        sets = [set(rel.tolist()), set(stale.tolist()), set(rumor.tolist())]
        assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2]), qid


def test_categories_follow_the_judgments(ds):
    q, lab = ds.queries, ds.labels
    cat = q.category
    contested = cat == "contested"
    assert (q.rumor.counts()[contested] > 0).all()
    # contested = an injected rumour exists (the family's scenario); an out-of-date confirmation alone does not
    # make a fact contested, so current / recently_updated queries may still have a rumour set.
    scenario = {json.loads(x)["family"]: json.loads(x)["scenario"]
                for x in (ds.path / "labels" / "families.jsonl").read_text().splitlines()}
    injected = np.array([scenario[f]["rumors"] > 0 for f in q.family])
    assert injected[contested].all()
    assert not injected[(cat == "current") | (cat == "recently_updated")].any()
    assert (lab.query_asks[cat == "dependent"] == "runbook").all()
    assert (lab.query_asks[cat != "dependent"] == "policy").all()
    hist = cat == "historical"
    assert (q.as_of[hist] < q.query_time[hist]).all()


def test_queries_never_appear_verbatim_in_the_corpus(corpus, queries):
    texts = [r["text"].lower() for r in corpus.values()]
    for q in queries:
        needle = q["text"].lower().rstrip("?")
        assert not any(needle in t for t in texts), q["text"]
        assert not re.search(r"[0-9]", q["text"]) or q["metadata"]["category"] == "historical", q["text"]


# -- scenarios ----------------------------------------------------------------------------------------------------

def _now_queries(ds):
    q = ds.queries
    return [i for i in range(len(q)) if q.category[i] != "historical"]


def test_a_current_query_meets_a_lagging_source(ds, families):
    c, q, lab = ds.corpus, ds.queries, ds.labels
    hits = []
    for i in _now_queries(ds):
        as_of = q.as_of[i]
        for r in q.stale.row(i).tolist():
            if c.valid_from[r] <= as_of < c.valid_to[r] and lab.chunk_doc_type[r] == "runbook":
                hits.append((q.ids[i], q.family[i]))
    assert hits, "no current query has an in-force stale runbook chunk"
    lagging = {f for f, row in families.items() if row["scenario"]["lagging"]}
    assert lagging and {f for _, f in hits} <= lagging | {f for f, row in families.items()
                                                         if row["scenario"]["announced"]}


def test_a_current_query_is_answered_only_by_an_announcement(ds, families):
    c, q, lab = ds.corpus, ds.queries, ds.labels
    hits = []
    for i in _now_queries(ds):
        rel = q.relevant.row(i)
        if len(rel) and (lab.chunk_doc_type[rel] == "message").all():
            hits.append(i)
            # The policy document still states the previous value, in an open window: it is stale.
            stale = q.stale.row(i)
            assert any(lab.chunk_doc_type[r] == "policy" and np.isinf(c.valid_to[r]) for r in stale.tolist())
    assert hits, "no current query whose only relevant chunks are messages"
    announced = {f for f, row in families.items() if row["scenario"]["announced"]}
    assert {q.family[i] for i in hits} <= announced


def test_rumours_are_low_authority_messages(ds, default_files):
    c, lab = ds.corpus, ds.labels
    messages = lab.chunk_doc_type == "message"
    assert set(c.source[messages]) <= {"slack", "email", "meeting_notes"}
    assert c.authority[messages].max() < c.authority[~messages].min()
    rumoured = set(ds.queries.rumor.indices.tolist())
    assert rumoured and all(messages[r] for r in rumoured)


# -- config errors ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, key", [
    ({"test_fraction": 0}, "dataset.test_fraction=0"),
    ({"test_fraction": 1}, "dataset.test_fraction=1"),
    ({"test_fraction": 0.01}, "dataset.test_fraction=0.01"),  # rounds to no family in test
    ({"n_families": len(catalog_families()) + 1}, f"dataset.n_families={len(catalog_families()) + 1}"),
    ({"colour": "red"}, "dataset.colour"),
    ({"name": "no_such_generator"}, "dataset.name=no_such_generator"),
    ({"contradiction_rate": 1.5}, "dataset.contradiction_rate"),
    ({"contradiction_rate": -0.1}, "dataset.contradiction_rate"),
    ({"versions": []}, "dataset.versions"),
    ({"publish_lead_days": [5, 1]}, "dataset.publish_lead_days"),
    ({"queries": {"current_per_family": 1, "extra": 1}}, "dataset.queries.extra"),
], ids=lambda x: "-".join(f"{k}={v}" for k, v in x.items()) if isinstance(x, dict) else None)
def test_bad_generator_config_names_the_key(changes, key):
    with pytest.raises(BenchError, match=re.escape(key)):
        Generator(params_from_config(_cfg(**changes))).generate()


@pytest.mark.parametrize("override, key", [("+dataset.colour=red", "dataset.colour"),
                                           ("dataset.name=no_such_generator", "dataset.name")])
def test_bad_override_on_the_command_line_names_the_key(override, key):
    with pytest.raises(BenchError, match=re.escape(key)):
        params_from_config(compose_config([override])["dataset"])


def test_all_families_of_the_catalog_is_allowed():
    n = len(catalog_families())
    assert len(Generator(params_from_config(_cfg(n_families=n))).plan()) == n


def test_existing_out_dir_is_not_overwritten_by_default(tmp_path):
    params = params_from_config(_cfg(n_families=2))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep.txt").write_text("mine")
    with pytest.raises(BenchError, match="overwrite=true"):
        write_dataset(params, tmp_path / "d")
    assert (tmp_path / "d" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no temp folder left behind


def test_tiny_dataset_loads_with_labels(tiny_dataset):
    loaded = load_dataset(tiny_dataset)
    assert loaded.labels is not None
    assert all((tiny_dataset / name).is_file() for name in LABEL_FILES)
    assert len(set(loaded.queries.family)) == 4
