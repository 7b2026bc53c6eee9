"""The shortcut audit's cues: every new cue's values on hand-made corpora; surface_gbm finds a planted shortcut,
gains nothing without one, never reads test labels, times, authority or source, and repeats its picks; and
newest_created learns its window on dev."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Queries
from experiments.shortcut_audit_rules import audit
import experiments.shortcut_audit_gbm  # noqa: F401 - registers surface_gbm, which audit() runs

from .shortcut_cases import _corpus


# -- the new cues on hand-made corpora ------------------------------------------------------------------------


def test_hedge_certainty_and_digit_cues_count_what_they_say():
    from experiments.shortcut_audit_rules import cue_values

    texts = ["I heard it is 5, pretty sure. Not official.",        # 3 hedges; 'official' after 'not': no certainty
             "Confirmed: the policy says 30 days, for the record.",  # 3 certainty phrases
             "Apparently 1234567 people.",                          # 1 hedge, 7 digits
             "Effective today, rumours aside.",  # 1 certainty, 1 hedge, no digit; external spelling
             "Ticket 1234567890123", "Call 12345", "Room 1234567890", "Heads up: it's official now"]
    v = cue_values(_corpus(texts), None)
    assert v["hedge"].tolist() == ["2+", "0", "1", "1", "0", "0", "0", "1"]
    assert v["certainty"].tolist() == ["0", "2+", "0", "1", "0", "0", "0", "1"]
    assert v["digit_count"].tolist() == ["1-3", "1-3", "7-9", "0", "13+", "4-6", "10-12", "0"]
    assert v["has_digit"].tolist() == ["True", "True", "True", "False", "True", "True", "True", "False"]


def test_every_required_hedge_and_certainty_phrase_is_in_the_lexicons():
    from experiments.shortcut_audit_rules import CERTAINTY_RE, HEDGE_RE, lexicon_count

    hedges = ["i heard", "pretty sure", "reckons", "not official", "i think", "i believe", "apparently",
              "rumour",  # external spelling
              "rumor", "someone said", "heads up", "not sure", "probably", "supposedly", "as far as i know",
              "if i recall"]
    certain = ["confirmed", "for the record", "definitely", "official", "checked with", "per section", "policy says"]
    assert lexicon_count([f"x {h.upper()} y" for h in hedges], HEDGE_RE).tolist() == [1] * len(hedges)
    assert lexicon_count([f"x {c} y" for c in certain], CERTAINTY_RE).tolist() == [1] * len(certain)
    near = ["unheard of", "surely", "rumoursome", "I’m pretty sure"]  # external spelling
    assert lexicon_count(near, HEDGE_RE).tolist() == [0, 0, 0, 1]


def test_length_rank_and_length_bin():
    from experiments.shortcut_audit_rules import cue_values, length_rank

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
    from experiments.shortcut_audit_rules import RULE_KIND, cue_values

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
    from experiments.shortcut_audit_gbm import chunk_features

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
    from experiments.shortcut_audit_gbm import dev_folds

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
