"""The shortcut audit: cue rules learned on dev must find a planted cue, ignore a useless one, and start from
exactly valid_cosine; every new cue's values on hand-made corpora; surface_gbm finds a planted shortcut, gains
nothing without one, never reads test labels, times, authority or source, and repeats its picks; the
experiment's summary bars surface_gbm, reports the metadata rules, and computes its diagnostics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.shortcut_audit import run as run_audit
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus, Labels, Queries, load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.systems import build_retriever
from smartvector_bench.core.shortcuts import audit, learn_set

from .conftest import compose_config, write_tiny


def _toy(n_fam: int = 20, seed: int = 0):
    """Per family: an answer chunk and a distractor with a higher cosine; a planted cue marks the answer."""
    rng = np.random.default_rng(seed)
    n = 2 * n_fam
    ids = [f"c{int(rng.integers(16 ** 10)):010x}" for _ in range(n)]
    corpus = Corpus(
        ids=ids, titles=[""] * n, texts=["x 1"] * n, doc_id=np.array([f"d{i}" for i in range(n)], dtype=object),
        version=np.ones(n, dtype=np.int64), source=np.array(["wiki"] * n, dtype=object), authority=np.full(n, 0.5),
        created_at=np.zeros(n), valid_from=np.zeros(n), valid_to=np.full(n, np.inf),
        depends_on=Ragged.from_lists([[] for _ in range(n)]), supersedes=np.full(n, -1, dtype=np.int64),
        offset_start=np.zeros(n, dtype=np.int64), offset_end=np.ones(n, dtype=np.int64),
        index_of={c: i for i, c in enumerate(ids)})
    answer = np.arange(0, n, 2)
    cos = np.full((n_fam, n), 0.1)
    cos[np.arange(n_fam), answer] = 0.5
    cos[np.arange(n_fam), answer + 1] = 0.6  # the distractor wins on cosine
    fam = np.array([f"f{i}" for i in range(n_fam)], dtype=object)
    queries = Queries(
        ids=[f"q{i}" for i in range(n_fam)], texts=[""] * n_fam, query_time=np.ones(n_fam), as_of=np.ones(n_fam),
        category=np.array(["current"] * n_fam, dtype=object),
        split=np.array(["dev" if i % 2 else "test" for i in range(n_fam)], dtype=object),
        relevant=Ragged.from_lists([[int(a)] for a in answer]), grades=Ragged.from_lists([[2]] * n_fam),
        stale=Ragged.from_lists([[] for _ in range(n_fam)]), rumor=Ragged.from_lists([[] for _ in range(n_fam)]),
        family=fam)
    kind = np.array(["statement" if i % 2 == 0 else "scope" for i in range(n)], dtype=object)
    labels = Labels(chunk_family=np.repeat(fam, 2), chunk_doc_type=np.array(["policy"] * n, dtype=object),
                    chunk_kind=kind, chunk_value=np.where(np.arange(n) % 2 == 0, 1.0, np.nan), query_family=fam,
                    query_asks=np.array(["policy"] * n_fam, dtype=object), timelines={})
    return cos, corpus, queries, labels


def test_a_planted_cue_is_found_and_a_useless_one_is_not():
    cos, corpus, queries, labels = _toy()
    out = audit(cos, corpus, queries, labels, cues=("kind", "id_pattern", "has_digit"))
    assert out["rules"]["valid_cosine"]["test_top1"] == 0.0  # the distractor always wins on cosine
    assert out["rules"]["kind"]["keep"] == ["statement"]
    assert out["rules"]["kind"]["test_top1"] == 1.0
    assert out["rules"]["has_digit"]["test_gain"] == 0.0  # every text has a digit: nothing to learn
    assert out["rules"]["id_pattern"]["test_gain"] <= 0.5  # random ids: what dev learns does not carry over


def test_learn_set_prefers_keeping_everything_on_ties():
    # Two levels, neither changes anything: the full set (= valid_cosine) is kept.
    table = np.array([[[0.5, 0.0], [0.4, 1.0]]])
    hit = np.array([[True, False]])
    assert learn_set(table, hit, ["a", "b"]).tolist() == [True, True]


def test_audit_baseline_is_the_valid_cosine_system(tmp_path):
    folder = write_tiny(tmp_path / "ds")
    ds = load_dataset(folder)
    emb = build_embedder({"kind": "hashing", "dim": 64})
    cv, qv = emb.encode(ds.corpus.texts), emb.encode(ds.queries.texts)
    out = audit(qv @ cv.T, ds.corpus, ds.queries, ds.labels)
    r = build_retriever("valid_cosine", {"_target_": "smartvector_bench.systems.valid_cosine.ValidCosine"})
    r.index(ds.corpus, cv, 0.0)
    run = r.search(qv, ds.queries.as_of, 10)
    expected = ds.queries.relevant.contains(run.top1)
    assert np.array_equal(out["correct"]["valid_cosine"], expected)


@pytest.mark.slow
def test_experiment_writes_its_table(tmp_path):
    cfg = compose_config(["experiment=shortcut_audit", "embedder=hashing", "experiment.seeds=[1]",
                          "experiment.profiles=[versioned_policies]", "experiment.progress=false"])
    result = run_audit(cfg, tmp_path)
    assert (tmp_path / "table.md").read_text().startswith("# Shortcut audit")
    doc = json.loads((tmp_path / "shortcut_audit.json").read_text())
    rules = doc["summary"]["by_profile"]["versioned_policies"]
    assert {"valid_cosine", "kind", "position", "dependency_target", "id_pattern", "has_digit", "source",
            "authority", "hedge", "certainty", "length_rank", "length_bin", "digit_count", "surface_gbm",
            "email_source", "newest_created"} <= set(rules)
    assert rules["surface_gbm"]["kind"] == "surface" and rules["newest_created"]["kind"] == "metadata"
    assert result["summary"]["worst_surface_rule"] is not None
    assert result["summary"]["worst_metadata_rule"] is not None
    gbm = doc["runs"][0]["rules"]["surface_gbm"]
    assert set(gbm["importance"]) == set(doc["experiment"]["surface_gbm"]["features"])
    diag = doc["diagnostics"]["versioned_policies"]["1"]
    assert {"by_class", "by_judgment"} <= set(diag["hedge"]) and "policy" in diag["longest_section"]
    assert "**Diagnostics**" in (tmp_path / "table.md").read_text()
    rows = (tmp_path / "shortcut_audit.csv").read_text().splitlines()
    assert rows[0].startswith("profile,seed,dataset_sha256,rule")
    assert len(rows) == 1 + len(rules)


def test_an_external_dataset_or_an_unlabelled_profile_is_refused_in_one_line(tmp_path):
    from smartvector_bench.core.errors import BenchError

    base = ["experiment=shortcut_audit", "embedder=hashing", "experiment.seeds=[1]", "experiment.progress=false"]
    with pytest.raises(BenchError, match=rf"^dataset\.path={tmp_path}: experiment=shortcut_audit does not read a "
                                         r"dataset folder; [^\n]*labels/[^\n]*$"):
        run_audit(compose_config(base + [f"dataset.path={tmp_path}"]), tmp_path / "out")
    with pytest.raises(BenchError, match=r"^experiment\.profiles: 'lvl_corpus' is a lvl_corpus dataset, without the "
                                         r"labels/"):
        run_audit(compose_config(base + ["experiment.profiles=[lvl_corpus]"]), tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- the new cues on hand-made corpora ------------------------------------------------------------------------


def _corpus(texts, doc_id=None, version=None, source=None, created=None, offsets=None, depends=None,
            authority=None) -> Corpus:
    n = len(texts)
    ids = [f"c{i:04x}{(7 * i) % 16:x}" for i in range(n)]
    start = np.asarray(offsets if offsets is not None else np.zeros(n), dtype=np.int64)
    created = np.asarray(created if created is not None else np.zeros(n), dtype=np.float64)
    return Corpus(
        ids=ids, titles=[""] * n, texts=list(texts),
        doc_id=np.array(doc_id if doc_id is not None else [f"d{i}" for i in range(n)], dtype=object),
        version=np.asarray(version if version is not None else np.ones(n), dtype=np.int64),
        source=np.array(source if source is not None else ["wiki"] * n, dtype=object),
        authority=np.asarray(authority if authority is not None else np.full(n, 0.5), dtype=np.float64),
        created_at=created, valid_from=created.copy(), valid_to=np.full(n, np.inf),
        depends_on=Ragged.from_lists(depends if depends is not None else [[] for _ in range(n)]),
        supersedes=np.full(n, -1, dtype=np.int64), offset_start=start,
        offset_end=start + np.array([len(t) for t in texts], dtype=np.int64),
        index_of={c: i for i, c in enumerate(ids)})


def test_hedge_certainty_and_digit_cues_count_what_they_say():
    from smartvector_bench.core.shortcuts import cue_values

    texts = ["I heard it is 5, pretty sure. Not official.",        # 3 hedges; 'official' after 'not': no certainty
             "Confirmed: the policy says 30 days, for the record.",  # 3 certainty phrases
             "Apparently 1234567 people.",                          # 1 hedge, 7 digits
             "Effective today, rumours aside.",                     # 1 certainty, 1 hedge, no digit
             "Ticket 1234567890123", "Call 12345", "Room 1234567890", "Heads up: it's official now"]
    v = cue_values(_corpus(texts), None)
    assert v["hedge"].tolist() == ["2+", "0", "1", "1", "0", "0", "0", "1"]
    assert v["certainty"].tolist() == ["0", "2+", "0", "1", "0", "0", "0", "1"]
    assert v["digit_count"].tolist() == ["1-3", "1-3", "7-9", "0", "13+", "4-6", "10-12", "0"]
    assert v["has_digit"].tolist() == ["True", "True", "True", "False", "True", "True", "True", "False"]


def test_every_required_hedge_and_certainty_phrase_is_in_the_lexicons():
    from smartvector_bench.core.shortcuts import CERTAINTY_RE, HEDGE_RE, lexicon_count

    hedges = ["i heard", "pretty sure", "reckons", "not official", "i think", "i believe", "apparently", "rumour",
              "rumor", "someone said", "heads up", "not sure", "probably", "supposedly", "as far as i know",
              "if i recall"]
    certain = ["confirmed", "for the record", "definitely", "official", "checked with", "per section", "policy says"]
    assert lexicon_count([f"x {h.upper()} y" for h in hedges], HEDGE_RE).tolist() == [1] * len(hedges)
    assert lexicon_count([f"x {c} y" for c in certain], CERTAINTY_RE).tolist() == [1] * len(certain)
    assert lexicon_count(["unheard of", "surely", "rumoursome", "I’m pretty sure"], HEDGE_RE).tolist() == [0, 0, 0, 1]


def test_length_rank_and_length_bin():
    from smartvector_bench.core.shortcuts import cue_values, length_rank

    # doc a v1: lengths 10, 30, 20, 5, 20 (ties: the lower offset first); doc a v2: one chunk; doc b: two
    lengths = [10, 30, 20, 5, 20, 3, 7, 9]
    corpus = _corpus(["x" * k for k in lengths], doc_id=["a"] * 6 + ["b"] * 2, version=[1, 1, 1, 1, 1, 2, 1, 1],
                     offsets=[0, 10, 40, 60, 20, 0, 0, 7])
    assert length_rank(corpus).tolist() == [3, 0, 2, 4, 1, 0, 1, 0]
    assert cue_values(corpus, None)["length_rank"].tolist() == ["3+", "0", "2", "3+", "1", "0", "1", "0"]
    ten = _corpus(["y" * k for k in range(1, 11)])
    assert cue_values(ten, None)["length_bin"].tolist() == ["q1", "q1", "q2", "q2", "q3", "q3", "q4", "q4", "q5",
                                                            "q5"]


def test_email_source_is_a_metadata_cue():
    from smartvector_bench.core.shortcuts import RULE_KIND, cue_values

    v = cue_values(_corpus(["a", "b", "c"], source=["email", "slack", "policy_doc"]), None)
    assert v["email_source"].tolist() == ["True", "False", "False"]
    assert RULE_KIND["email_source"] == RULE_KIND["newest_created"] == "metadata"
    assert {RULE_KIND[r] for r in ("hedge", "certainty", "length_rank", "length_bin", "digit_count",
                                   "surface_gbm")} == {"surface"}


# -- planted shortcuts ----------------------------------------------------------------------------------------


WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def _planted(plant: str | None, n_fam: int = 120, seed: int = 0):
    """Per family: one document version of four sections and one query; the answer is one section. ``longest``:
    it is the longest; ``hedged``: it alone carries a hedge; None: nothing marks it, and the cosine ranks it
    first 70% of the time. Other families' sections have a lower cosine."""
    rng = np.random.default_rng(seed)
    texts, doc, offs, answer = [], [], [], []
    for f in range(n_fam):
        a = int(rng.integers(4))
        sections = [" ".join(rng.choice(WORDS, size=int(k))) for k in rng.integers(4, 16, size=4)]
        while plant == "longest" and len(sections[a]) <= max(len(t) for j, t in enumerate(sections) if j != a):
            sections[a] += " " + str(rng.choice(WORDS))
        if plant == "hedged":
            sections[a] = "Pretty sure " + sections[a]
        off = 0
        for text in sections:
            texts.append(text)
            doc.append(f"d{f}")
            offs.append(off)
            off += len(text) + 1
        answer.append(4 * f + a)
    n = len(texts)
    corpus = _corpus(texts, doc_id=doc, offsets=offs)
    cos = rng.uniform(0.0, 0.3, size=(n_fam, n))
    for f in range(n_fam):
        cos[f, 4 * f:4 * f + 4] = rng.uniform(0.4, 0.6, size=4)
        if plant is None and rng.random() < 0.7:
            cos[f, answer[f]] = 0.65
    split = np.array(["dev" if f % 2 else "test" for f in range(n_fam)], dtype=object)
    fam = np.array([f"f{f}" for f in range(n_fam)], dtype=object)
    queries = Queries(
        ids=[f"q{f}" for f in range(n_fam)], texts=[""] * n_fam, query_time=np.ones(n_fam), as_of=np.ones(n_fam),
        category=np.array(["current"] * n_fam, dtype=object), split=split,
        relevant=Ragged.from_lists([[a] for a in answer]), grades=Ragged.from_lists([[2]] * n_fam),
        stale=Ragged.from_lists([[] for _ in range(n_fam)]), rumor=Ragged.from_lists([[] for _ in range(n_fam)]),
        family=fam)
    return cos, corpus, queries


@pytest.mark.parametrize("plant, cue, keep", [("longest", "length_rank", ["0"]), ("hedged", "hedge", ["1"])])
def test_a_planted_shortcut_is_found_by_its_rule_and_by_surface_gbm(plant, cue, keep):
    cos, corpus, queries = _planted(plant)
    out = audit(cos, corpus, queries, None, cues=(cue, "surface_gbm"))
    assert out["rules"]["valid_cosine"]["test_top1"] < 0.4  # the cosine is no help inside the family
    assert out["rules"][cue]["keep"] == keep
    assert out["rules"][cue]["test_top1"] == 1.0
    gbm = out["rules"]["surface_gbm"]
    assert gbm["kind"] == "surface" and gbm["fitted"]
    assert gbm["test_gain"] >= 0.5, gbm
    # Permutation importance on dev: the planted feature, beside the cosine rank that finds the family
    feature = {"longest": "length_rank", "hedged": "hedges"}[plant]
    assert gbm["importance"][feature] >= 0.5
    assert sorted(gbm["importance"], key=gbm["importance"].get)[-2:] in (["cosine_rank", feature],
                                                                        [feature, "cosine_rank"])


def test_a_corpus_without_a_shortcut_gives_no_gain():
    cos, corpus, queries = _planted(None)
    out = audit(cos, corpus, queries, None)
    assert out["rules"]["valid_cosine"]["test_top1"] > 0.6
    for rule in ("length_rank", "length_bin", "hedge", "certainty", "digit_count", "position", "surface_gbm",
                 "newest_created", "email_source"):
        assert abs(out["rules"][rule]["test_gain"]) <= 0.05, (rule, out["rules"][rule])


def _scrambled_test_labels(queries: Queries, n: int, seed: int = 1) -> Queries:
    rng = np.random.default_rng(seed)
    rel = [queries.relevant.row(q).tolist() if queries.split[q] == "dev" else [int(rng.integers(n))]
           for q in range(len(queries))]
    return Queries(ids=queries.ids, texts=queries.texts, query_time=queries.query_time, as_of=queries.as_of,
                   category=queries.category, split=queries.split, relevant=Ragged.from_lists(rel),
                   grades=queries.grades, stale=queries.stale, rumor=queries.rumor, family=queries.family)


def test_surface_gbm_never_reads_test_labels_times_authority_or_source():
    cos, corpus, queries = _planted("longest")
    test = queries.split == "test"
    first = audit(cos, corpus, queries, None, cues=("surface_gbm",))
    scrambled = audit(cos, corpus, _scrambled_test_labels(queries, len(corpus)), None, cues=("surface_gbm",))
    assert scrambled["rules"]["surface_gbm"]["test_top1"] < first["rules"]["surface_gbm"]["test_top1"]
    assert np.array_equal(first["picks"]["surface_gbm"][test], scrambled["picks"]["surface_gbm"][test])
    # Other times (every chunk still in force), authorities and sources: the same features and picks
    from smartvector_bench.core.shortcut_learned import chunk_features

    cos, corpus, queries = _planted(None, n_fam=60, seed=4)
    rng = np.random.default_rng(2)
    other = _corpus(corpus.texts, doc_id=corpus.doc_id, offsets=corpus.offset_start,
                    created=-rng.uniform(0, 100, len(corpus)), authority=rng.uniform(0, 1, len(corpus)),
                    source=rng.choice(["email", "slack", "policy_doc"], len(corpus)))
    assert np.array_equal(chunk_features(corpus), chunk_features(other))
    a, b = (audit(cos, c, queries, None, cues=("surface_gbm",))["picks"]["surface_gbm"] for c in (corpus, other))
    assert np.array_equal(a, b)


def test_surface_gbm_is_deterministic():
    cos, corpus, queries = _planted("hedged", seed=3)
    a = audit(cos, corpus, queries, None, cues=("surface_gbm", "newest_created"))
    b = audit(cos, corpus, queries, None, cues=("surface_gbm", "newest_created"))
    assert np.array_equal(a["picks"]["surface_gbm"], b["picks"]["surface_gbm"])
    assert a["rules"]["surface_gbm"] == b["rules"]["surface_gbm"]


def test_surface_gbm_folds_hold_out_whole_families_of_dev_queries():
    from smartvector_bench.core.shortcut_learned import dev_folds

    groups = np.array(["a", "b", "a", "c", "d", "b", "e", "c"], dtype=object)
    dev = np.array([True, True, True, True, True, True, True, False])
    fold = dev_folds(groups, dev, k=3)
    assert fold[7] == -1 and set(fold[:7]) == {0, 1, 2}
    assert fold[0] == fold[2] and fold[1] == fold[5]  # a family never straddles two folds
    assert (dev_folds(groups, np.array([True, False, True] + [False] * 5)) == -1).all()  # one family: no folds


def test_newest_created_learns_its_window_on_dev():
    """Per family three close sections, the answer the newest of them at a random cosine rank; other families'
    sections are newer still but further down: only the top-3 window finds the answer."""
    rng = np.random.default_rng(0)
    n_fam = 40
    created = np.full(4 * n_fam, 50.0)
    cos = rng.uniform(0.0, 0.3, size=(n_fam, 4 * n_fam))
    answer = []
    for f in range(n_fam):
        rows = 4 * f + rng.permutation(3)
        created[rows] = [10.0, 5.0, 7.0]  # rows[0] is the newest of the three
        cos[f, 4 * f:4 * f + 3] = rng.uniform(0.5, 0.6, size=3)
        answer.append(int(rows[0]))
    corpus = _corpus(["same text"] * (4 * n_fam), created=created)
    queries = Queries(
        ids=[f"q{f}" for f in range(n_fam)], texts=[""] * n_fam, query_time=np.full(n_fam, 100.0),
        as_of=np.full(n_fam, 100.0), category=np.array(["current"] * n_fam, dtype=object),
        split=np.array(["dev" if f % 2 else "test" for f in range(n_fam)], dtype=object),
        relevant=Ragged.from_lists([[a] for a in answer]), grades=Ragged.from_lists([[2]] * n_fam),
        stale=Ragged.from_lists([[] for _ in range(n_fam)]), rumor=Ragged.from_lists([[] for _ in range(n_fam)]),
        family=np.array([f"f{f}" for f in range(n_fam)], dtype=object))
    out = audit(cos, corpus, queries, None, cues=("newest_created",))
    r = out["rules"]["newest_created"]
    assert r["kind"] == "metadata" and r["keep"] == ["top-3"] and r["test_top1"] == 1.0
    assert out["rules"]["valid_cosine"]["test_top1"] < 0.6


# -- the experiment's summary, table and diagnostics ------------------------------------------------------------


def test_summary_bars_surface_gbm_and_reports_metadata_beside_it():
    import pandas as pd

    from experiments.shortcut_audit import CSV_FIELDS, render, summarise

    rows = [{"profile": "p", "seed": 1, "dataset_sha256": "x", "rule": rule, "kind": kind, "keep": "",
             "dev_top1": 0.5, "test_top1": 0.5 + gain, "test_gain": gain, "n_test": 10, "n_test_families": 2}
            for rule, kind, gain in (("source", "trust", 0.3), ("newest_created", "metadata", 0.1),
                                     ("valid_cosine", "baseline", 0.0), ("surface_gbm", "surface", 0.08),
                                     ("hedge", "surface", 0.01), ("email_source", "metadata", 0.0))]
    summary = summarise(pd.DataFrame(rows, columns=list(CSV_FIELDS)), 0.05)
    assert summary["worst_surface_rule"] == "p/surface_gbm" and not summary["surface_within_bar"]
    assert summary["worst_metadata_rule"] == "p/newest_created" and not summary["metadata_within_bar"]
    assert summary["worst_metadata_mean_gain"] == 0.1
    text = render({"summary": summary, "experiment": {"seeds": [1]}})
    order = [line.split(" | ")[0].lstrip("| ") for line in text.splitlines() if line.startswith("| ")][1:]
    assert order == ["valid_cosine", "hedge", "surface_gbm", "email_source", "newest_created", "source"]
    assert "+8.0 points (p/surface_gbm), **above** the bar of 5 points" in text
    assert "metadata rule: +10.0 points (p/newest_created), **above** the bar" in text
    ok = summarise(pd.DataFrame([r for r in rows if r["rule"] != "surface_gbm"], columns=list(CSV_FIELDS)), 0.05)
    assert ok["surface_within_bar"] and ok["worst_surface_rule"] == "p/hedge"


def test_diagnostics_hedges_by_message_class_and_longest_sections():
    from experiments.shortcut_audit import diagnostics, render_diagnostics
    from smartvector_bench.core.labels import Timeline

    texts = ["Confirmed: it is 1.", "I heard it is 3, pretty sure.", "Please note: from day 50 it is 2.",
             "Pretty sure it's 1.", "Town hall on Friday.",
             "statement long long long", "scope", "statement", "scope long long long long",
             "prerequisite long long long", "verification", "statement"]
    n = len(texts)
    corpus = _corpus(texts, doc_id=["m0", "m1", "m2", "m3", "m4", "p", "p", "p", "p", "r", "r", "r"],
                     version=[1, 1, 1, 1, 1, 1, 1, 2, 2, 1, 1, 1], offsets=[0, 0, 0, 0, 0, 0, 30, 0, 30, 0, 30, 60],
                     created=[10, 20, 45, 60, 5, 0, 0, 50, 50, 0, 0, 0])
    doc_type = ["message"] * 5 + ["policy"] * 4 + ["runbook"] * 3
    kind = ["statement"] * 4 + ["note", "statement", "scope", "statement", "scope", "prerequisite", "verification",
                                "statement"]
    value = [1, 3, 2, 1, np.nan] + [np.nan] * 7
    labels = Labels(chunk_family=np.array(["f"] * n, dtype=object), chunk_doc_type=np.array(doc_type, dtype=object),
                    chunk_kind=np.array(kind, dtype=object), chunk_value=np.array(value, dtype=float),
                    query_family=np.array(["f"], dtype=object), query_asks=np.array(["policy"], dtype=object),
                    timelines={"f": Timeline(np.array([0.0, 50.0]), np.array([1.0, 2.0]))})
    queries = Queries(ids=["q"], texts=[""], query_time=np.ones(1), as_of=np.ones(1),
                      category=np.array(["current"], dtype=object), split=np.array(["test"], dtype=object),
                      relevant=Ragged.from_lists([[0]]), grades=Ragged.from_lists([[2]]),
                      stale=Ragged.from_lists([[]]), rumor=Ragged.from_lists([[1, 3]]),
                      family=np.array(["f"], dtype=object))
    d = diagnostics(corpus, queries, labels)
    by = d["hedge"]["by_class"]
    assert {c: by[c]["n"] for c in by} == {"rumour": 2, "announcement": 1, "right_when_written": 1, "no_value": 1}
    assert by["rumour"]["hedged"] == 1.0 and by["rumour"]["mean_hedges"] == 1.5
    assert by["right_when_written"]["hedged"] == 0.0 and by["right_when_written"]["certain"] == 1.0
    assert by["announcement"]["certain"] == 1.0
    assert d["hedge"]["by_judgment"]["in_a_rumour_set"] == {"n": 2, "hedged": 1.0, "mean_hedges": 1.5,
                                                            "certain": 0.0}
    assert d["longest_section"]["policy"] == {"versions": 2, "chance": 0.5,
                                              "longest_share": {"statement": 0.5, "scope": 0.5}}
    runbook = d["longest_section"]["runbook"]
    assert runbook["longest_share"] == {"statement": 0.0, "prerequisite": 1.0, "verification": 0.0}
    assert runbook["chance"] == pytest.approx(1 / 3)
    text = "\n".join(render_diagnostics({"p": {"1": d}}))
    assert "| p | 100.0% (0.0%; n=2) | 0.0% (100.0%; n=1) | 0.0% (100.0%; n=1) | 0.0% (0.0%; n=1) |" in text
    assert "| p | runbook | 1 | prerequisite 100.0%, statement 0.0%, verification 0.0% | 33.3% |" in text
