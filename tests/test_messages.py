"""Message wording (data_gen.catalog.messages): a reviewer cannot tell rumors from confirmations and
announcements by their words. Certainty frames, claim forms and source forms are drawn from pools shared by
every kind, with a number of draws that depends on nothing; every message fits one chunk, states its value
once (notes none, and never the topic's phrase) and carries a number."""

from __future__ import annotations

import re
from collections import Counter
from datetime import date, timedelta

import numpy as np
import pytest

from data_gen.catalog import TOPICS
from data_gen.catalog.base import draw_fillers
from data_gen.catalog.messages import (ASSERTIVE_FRAMES, ATTRIBUTIONS, CLAIM_FORMS, EMAIL_SENDERS, EMAIL_SUBJECTS,
                                       FORWARD_LINE, HEDGED_FRAMES, KINDS, MEETING_OPENINGS, MESSAGE_MAX, NOTE_BODIES,
                                       PEOPLE, PLAIN_FRAMES, SLACK_OPENINGS, SOURCES, TAILS, TEAMS, render_message)

N_PER_KIND = 2000
VALUE_KINDS = ("rumor", "confirmation", "announcement")
# The hostile reviewer's hedge phrases (issue 30) and ours.
HEDGE = re.compile(r"\b(i heard|heard|pretty sure|reckons?|not official|heads up|i believe|believe|says|said|"
                   r"i think|think|not sure|could be wrong|if i remember|someone|apparently|supposedly|rumou?r|"
                   r"told me|mentioned|might|maybe|probably|unless)\b", re.I)
ASSERTIVE = re.compile(r"\b(confirmed|can confirm|for the record|definitely|to be clear|checked|no doubt|"
                       r"officially|certainly|settled)\b", re.I)
DIGIT = re.compile(r"\d")
# The longest fields of the issue, and the catalog's longest audience and value.
LONGEST = dict(who="fully remote employees in the United States",
               topic="international relocation support allowance", doc="International Relocation Support Policy",
               person="Fatima", other="Daniel", v="1200 requests per minute",
               date="28 September 2024", ext="8999", ticket="REQ-99999", section="9.9", headcount="4,899", days="15",
               room="9.40", form="F-999")
BRIEF_LONGEST = {**LONGEST, "who": "office staff in the United Kingdom", "v": "$12,500 per move"}


def _human(rng) -> str:
    d = date(2023, 1, 1) + timedelta(days=int(rng.integers(0, 730)))
    return f"{d.day} {d:%B %Y}"


def _fields(rng, kind: str) -> dict[str, str]:
    """Catalog-like fields, drawn the same way whatever the kind (the kind only removes the value of a note)."""
    topic = TOPICS[int(rng.integers(len(TOPICS)))]
    scope = topic.scopes[int(rng.integers(len(topic.scopes)))]
    person, other = (PEOPLE[int(i)] for i in rng.permutation(len(PEOPLE))[:2])
    f = {**draw_fillers(rng), "who": scope.who, "topic": topic.topic, "doc": topic.title, "person": person,
         "other": other, "date": _human(rng), "v": topic.render(topic.values[int(rng.integers(len(topic.values)))])}
    if kind == "note":
        del f["v"]
    return f


def _corpus(seed: int = 7, n: int = N_PER_KIND) -> dict[str, list[tuple[str, dict, str | None, str]]]:
    """n messages per kind: (source, fields, parent, text). Sources uniform, half are replies to an earlier
    message of any kind; ``future`` as the generator sets it (announcements before the date they announce)."""
    rng = np.random.default_rng(seed)
    text_rng = np.random.default_rng(seed + 1)
    out: dict[str, list] = {k: [] for k in KINDS}
    earlier: list[str] = []
    for i in range(n * len(KINDS)):
        kind = KINDS[i % len(KINDS)]
        source = SOURCES[int(rng.integers(len(SOURCES)))]
        fields = _fields(rng, kind)
        parent = earlier[int(rng.integers(len(earlier)))] if earlier and rng.random() < 0.5 else None
        text = render_message(text_rng, kind=kind, source=source, fields=fields, parent=parent,
                              future=kind == "announcement")
        out[kind].append((source, fields, parent, text))
        earlier.append(text)
    return out


@pytest.fixture(scope="module")
def corpus():
    return _corpus()


def _share(texts, pattern) -> float:
    return sum(bool(pattern.search(t)) for t in texts) / len(texts)


def _texts(corpus, *kinds) -> list[str]:
    return [m[3] for k in kinds for m in corpus[k]]


# -- vocabulary --------------------------------------------------------------------------------------------------

def test_pools_are_large_enough_and_distinct():
    for name, pool, least in (("hedged frames", HEDGED_FRAMES, 6), ("assertive frames", ASSERTIVE_FRAMES, 6),
                              ("plain frames", PLAIN_FRAMES, 6), ("claim forms", CLAIM_FORMS, 6),
                              ("email subjects", EMAIL_SUBJECTS, 5), ("slack openings", set(SLACK_OPENINGS), 4),
                              ("meeting openings", MEETING_OPENINGS, 4), ("note bodies", NOTE_BODIES, 8),
                              ("attributions", ATTRIBUTIONS, 4), ("tails", TAILS, 6),
                              ("email senders", set(EMAIL_SENDERS), 4)):
        assert len(pool) >= least, name
        assert len(set(pool)) == len(pool), name
    assert len(set(PEOPLE)) == len(PEOPLE) and not any(DIGIT.search(p) for p in PEOPLE)


def test_every_frame_level_is_what_its_name_says():
    """The test's regexes read the frames as the pools intend, so the rate tests below measure something."""
    assert all(HEDGE.search(f) for f in HEDGED_FRAMES)
    assert all(ASSERTIVE.search(f) for f in ASSERTIVE_FRAMES)
    assert not any(ASSERTIVE.search(f) for f in HEDGED_FRAMES + PLAIN_FRAMES)


def test_dated_claim_forms_only_add_the_date():
    """A dated form has every word of its undated twin, so dating (always for announcements) adds date words
    and removes none."""
    words = lambda s: set(re.findall(r"[a-z]+", re.sub(r"\{\w+\}", " ", s)))  # noqa: E731
    for undated, dated in CLAIM_FORMS:
        assert "{date}" in dated and "{date}" not in undated
        assert words(undated) <= words(dated), (undated, dated)
        for form in (undated, dated):
            assert form.count("{v}") == 1 and ("{who}" in form or "{X}" in form), form


# -- rule 1: certainty is drawn independently of kind ---------------------------------------------------------------

@pytest.mark.parametrize("name, pattern", [("hedge", HEDGE), ("assertive", ASSERTIVE)])
def test_certainty_rates_do_not_depend_on_kind(corpus, name, pattern):
    rumor = _share(_texts(corpus, "rumor"), pattern)
    truthful = _share(_texts(corpus, "confirmation", "announcement"), pattern)
    rates = {k: round(_share(_texts(corpus, k), pattern), 3) for k in KINDS}
    print(name, rates)
    assert abs(rumor - truthful) <= 0.05, (name, rates)
    assert 0.2 <= rumor <= 0.8, (name, rates)  # the pattern does occur, in a share of every kind
    assert abs(_share(_texts(corpus, "note"), pattern) - rumor) <= 0.10, (name, rates)


def test_every_kind_has_hedged_assertive_and_plain_messages(corpus):
    for kind in KINDS:
        texts = _texts(corpus, kind)
        hedged = [t for t in texts if HEDGE.search(t)]
        assertive = [t for t in texts if ASSERTIVE.search(t) and not HEDGE.search(t)]
        plain = [t for t in texts if not HEDGE.search(t) and not ASSERTIVE.search(t)]
        assert min(len(hedged), len(assertive), len(plain)) >= len(texts) // 10, kind


# -- rule 2: the claim wording is independent of kind ---------------------------------------------------------------

def _token_sets(texts):
    return [set(re.findall(r"[a-z]+", t.lower())) for t in texts]


def test_no_word_marks_rumors(corpus):
    rumor = _token_sets(_texts(corpus, "rumor"))
    truthful = _token_sets(_texts(corpus, "confirmation", "announcement"))
    n_all = len(rumor) + len(truthful)
    count_r, count_t = Counter(w for s in rumor for w in s), Counter(w for s in truthful for w in s)
    bad = {}
    for w in set(count_r) | set(count_t):
        if (count_r[w] + count_t[w]) / n_all < 0.02:
            continue
        fr, ft = count_r[w] / len(rumor), count_t[w] / len(truthful)
        ratio = max(fr, ft) / max(min(fr, ft), 1e-9)
        if ratio > 3:
            bad[w] = (round(fr, 3), round(ft, 3))
    assert not bad, f"words with a rumor / (confirmation + announcement) frequency ratio above 3: {bad}"


def test_rumors_and_confirmations_share_every_frequent_phrase(corpus):
    """Bigrams too: no two-word phrase in 2% of either kind is 3 times as frequent in one of them."""
    def bigrams(t):
        w = re.findall(r"[a-z]+", t.lower())
        return set(zip(w, w[1:]))
    rumor = [bigrams(t) for t in _texts(corpus, "rumor")]
    conf = [bigrams(t) for t in _texts(corpus, "confirmation")]
    cr, cc = Counter(b for s in rumor for b in s), Counter(b for s in conf for b in s)
    bad = {b: (cr[b], cc[b]) for b in set(cr) | set(cc)
           if max(cr[b] / len(rumor), cc[b] / len(conf)) >= 0.02 and max(cr[b], cc[b]) > 3 * max(min(cr[b], cc[b]), 1)}
    assert not bad, bad


def test_announcements_are_dated(corpus):
    for _, fields, _, text in corpus["announcement"]:
        body = text.replace(fields["v"], " ")
        assert fields["date"] in body, text
    # rumors and confirmations use the dated forms too
    for kind in ("rumor", "confirmation"):
        dated = sum(f["date"] in t for _, f, _, t in corpus[kind]) / N_PER_KIND
        assert 0.5 <= dated <= 0.85, (kind, dated)


# -- rule 3: forms vary with source, not with kind ------------------------------------------------------------------

def _form(source: str, text: str) -> str:
    first = text.split("\n", 1)[0]
    if source == "email":
        return ("subject " if first.startswith("Subject: ") else "") + (
            "forward" if FORWARD_LINE in text else "") + ("quote" if "\n> " in text else "")
    if source == "meeting_notes":
        return re.sub(r"[\d.,]+|\b(" + "|".join(PEOPLE) + r")\b", "#", first)[:20]
    return re.sub(r"\b(" + "|".join(PEOPLE) + r")\b", "#", first)[:6]


def test_email_has_subject_and_sender(corpus):
    emails = [(f, t) for k in KINDS for s, f, _, t in corpus[k] if s == "email"]
    assert emails
    senders = Counter()
    for f, t in emails:
        lines = t.split("\n")
        head = [line for line in lines if line.startswith("From: ")]
        assert len(head) == 1 and (f["person"] in head[0] or any(team in head[0] for team in TEAMS)), t
        senders[re.sub(r"\b(%s)\b" % "|".join(PEOPLE + TEAMS), "#", head[0])] += 1
        assert not lines[-1].startswith(("Subject: ", "From: ", "> ", "----")), t  # the body comes last
    assert len(senders) >= 4, senders
    with_subject = sum(t.startswith("Subject: ") for _, t in emails) / len(emails)
    assert with_subject >= 0.95, with_subject
    assert any(FORWARD_LINE in t and "Subject: Fwd: " in t for _, t in emails)
    assert any("Subject: Re: " in t for _, t in emails)


def test_slack_and_meeting_notes_open_in_several_ways(corpus):
    slack = [t for k in KINDS for s, _, _, t in corpus[k] if s == "slack"]
    notes = [t for k in KINDS for s, _, _, t in corpus[k] if s == "meeting_notes"]
    assert not any(t.startswith(("Meeting notes", "Minutes")) for t in slack)
    assert any(t.startswith("> ") for t in slack)
    openings = Counter(re.sub(r"[\d.]+|\b(%s)\b" % "|".join(PEOPLE), "#", t.split("\n", 1)[0])[:12] for t in notes)
    assert len(openings) >= 4 and max(openings.values()) <= 0.4 * len(notes), openings.most_common(6)
    assert sum(t.startswith("Meeting notes, room") for t in notes) <= 0.3 * len(notes)


def test_forms_are_drawn_independently_of_kind(corpus):
    for source in SOURCES:
        dist = {}
        for kind in KINDS:
            forms = Counter(_form(source, t) for s, _, _, t in corpus[kind] if s == source)
            n = sum(forms.values())
            dist[kind] = {f: c / n for f, c in forms.items()}
        names = set().union(*dist.values())
        for f in names:
            shares = [dist[k].get(f, 0.0) for k in KINDS]
            assert max(shares) - min(shares) <= 0.08, (source, f, shares)


def test_announcements_come_from_every_source():
    rng = np.random.default_rng(3)
    for source in SOURCES:
        text = render_message(rng, kind="announcement", source=source, fields=_fields(rng, "announcement"),
                              parent=None, future=True)
        assert ("Subject: " in text) == (source == "email")


def test_unknown_sources_render_like_slack():
    a = render_message(np.random.default_rng(5), kind="rumor", source="teams_chat", fields=LONGEST, parent=None,
                       future=False)
    b = render_message(np.random.default_rng(5), kind="rumor", source="slack", fields=LONGEST, parent=None,
                       future=False)
    assert a == b


# -- rule 4: the value once, the audience, no value or topic in notes, a number everywhere ----------------------------

def _count(text: str, v: str) -> int:
    return len(re.findall(r"(?<![\w$.,])" + re.escape(v) + r"(?![\w])", text))


def test_value_kinds_state_the_value_once_and_name_the_audience(corpus):
    for kind in VALUE_KINDS:
        for _, fields, _, text in corpus[kind]:
            assert text.count(fields["v"]) == 1 and _count(text, fields["v"]) == 1, text
            assert fields["who"] in text, text


def test_notes_state_no_value_and_not_the_topic(corpus):
    for _, fields, parent, text in corpus["note"]:
        assert fields["topic"].lower() not in text.lower(), text
        topic = next(t for t in TOPICS if t.topic == fields["topic"])
        assert not any(_count(text, topic.render(v)) for v in topic.values), text


def test_every_message_has_a_number(corpus):
    for kind in KINDS:
        assert all(DIGIT.search(m[3]) for m in corpus[kind]), kind


def test_a_value_without_digits_still_gets_a_number():
    rng = np.random.default_rng(2)
    for i in range(600):
        fields = {**_fields(rng, "rumor"), "v": "unlimited"}
        text = render_message(rng, kind=VALUE_KINDS[i % 3], source=SOURCES[i % 3 - 1], fields=fields, parent=None,
                              future=False)
        assert DIGIT.search(text) and text.count("unlimited") == 1, text


def test_quotes_hold_no_digit_and_only_the_parents_words(corpus):
    quoted = 0
    for kind in KINDS:
        for _, fields, parent, text in corpus[kind]:
            for line in text.split("\n"):
                if line.startswith("> "):
                    quoted += 1
                    assert parent is not None and not DIGIT.search(line), text
                    q = line[2:].removesuffix("...")
                    assert q in parent and len(q) <= 50, (q, parent)
    assert quoted >= 500


def test_a_reply_never_quotes_another_value():
    rng = np.random.default_rng(11)
    parent = render_message(rng, kind="rumor", source="slack", fields={**LONGEST, "v": "99 days", "date": "1 May 2024"},
                            parent=None, future=False)
    for i in range(300):
        f = {**_fields(rng, "confirmation"), "v": "25 days"}
        text = render_message(rng, kind=("confirmation", "note")[i % 2], source=SOURCES[i % 3],
                              fields=f if i % 2 == 0 else {k: x for k, x in f.items() if k != "v"},
                              parent=parent, future=False)
        assert "99 days" not in text, text


# -- rule 5: one chunk ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("longest", [LONGEST, BRIEF_LONGEST], ids=["catalog", "issue"])
def test_every_message_fits_one_chunk_with_the_longest_fields(longest):
    rng = np.random.default_rng(0)
    long_parent = ("Subject: Fwd: " + longest["doc"] + "\nFrom: Fatima\nNot official, but " + longest["who"]
                   + " words words words words words words words words words words. Ticket " + longest["ticket"] + ".")
    lengths = []
    for i in range(4000):
        kind = KINDS[i % 4]
        fields = dict(longest) if kind != "note" else {k: v for k, v in longest.items() if k != "v"}
        text = render_message(rng, kind=kind, source=SOURCES[(i // 4) % 3], fields=fields,
                              parent=long_parent if i % 3 else None, future=bool(i % 2))
        assert len(text) <= MESSAGE_MAX, text
        if kind != "note":
            assert text.count(longest["v"]) == 1 and longest["who"] in text, text
        else:
            assert longest["topic"] not in text.lower()
        assert DIGIT.search(text), text
        lengths.append(len(text))
    print("max length", max(lengths))
    # optional parts are dropped, not the message: emails keep a sender
    assert max(lengths) <= MESSAGE_MAX


def test_catalog_messages_fit_one_chunk(corpus):
    lengths = [len(m[3]) for k in KINDS for m in corpus[k]]
    print("max length (catalog fields)", max(lengths), "median", int(np.median(lengths)))
    assert max(lengths) <= MESSAGE_MAX


# -- rule 6: the number of draws depends on nothing -----------------------------------------------------------------

def test_draws_do_not_depend_on_kind_source_parent_or_timing():
    states = set()
    for kind in KINDS:
        for source in (*SOURCES, "other"):
            for parent in (None, "Priya: I heard the annual leave allowance for warehouse staff is 25 days."):
                for future in (False, True):
                    rng = np.random.default_rng(42)
                    fields = dict(LONGEST) if kind != "note" else {k: v for k, v in LONGEST.items() if k != "v"}
                    render_message(rng, kind=kind, source=source, fields=fields, parent=parent, future=future)
                    states.add(repr(rng.bit_generator.state))
    assert len(states) == 1


def test_rendering_is_deterministic():
    f = _fields(np.random.default_rng(1), "rumor")
    a = [render_message(np.random.default_rng(s), kind="rumor", source="email", fields=f, parent=None, future=False)
         for s in range(20)]
    b = [render_message(np.random.default_rng(s), kind="rumor", source="email", fields=f, parent=None, future=False)
         for s in range(20)]
    assert a == b and len(set(a)) > 10


def test_bad_arguments_fail_clearly():
    with pytest.raises(ValueError, match="kind"):
        render_message(np.random.default_rng(0), kind="gossip", source="slack", fields=LONGEST, parent=None,
                       future=False)
    with pytest.raises(ValueError, match="v"):
        render_message(np.random.default_rng(0), kind="rumor", source="slack",
                       fields={k: v for k, v in LONGEST.items() if k != "v"}, parent=None, future=False)
