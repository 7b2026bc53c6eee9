"""The text catalog (data_gen.catalog): its rules hold for every topic and message template, the checker
that enforces them does fail on a bad topic, and the JSON files it is read from load losslessly or fail with
one line naming the file, the topic and the field."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from data_gen.catalog import TOPICS
from data_gen.catalog.base import FILLERS, PARTS, SECTION_MAX, SECTION_MIN, CatalogError, Scope, load_topics
from data_gen.catalog.checks import check_catalog, check_topic, fields
from smartvector_bench.core.errors import BenchError
from data_gen.catalog.messages import (ANNOUNCEMENT_TEMPLATES, CONFIRMATION_TEMPLATES, MESSAGE_MAX, NOTE_TEMPLATES,
                                       PEOPLE, RUMOR_TEMPLATES)
from data_gen.generator import catalog_families

DIGIT = re.compile(r"[0-9]")
VALUE_POOLS = {"rumor": RUMOR_TEMPLATES, "confirmation": CONFIRMATION_TEMPLATES,
               "announcement": ANNOUNCEMENT_TEMPLATES}
ALL_POOLS = {**VALUE_POOLS, "note": NOTE_TEMPLATES}
MESSAGES = [pytest.param(kind, i, tpl, id=f"{kind}[{i}]") for kind, pool in ALL_POOLS.items()
            for i, tpl in enumerate(pool)]


def test_catalog_passes_its_own_checks():
    problems = check_catalog(TOPICS)
    if problems:
        print("\n".join(problems))
    assert problems == [], f"{len(problems)} catalog problems (printed above), first: {problems[0]}"


def test_catalog_has_at_least_60_families():
    families = catalog_families()
    assert len(families) >= 60
    assert len({f.key for f in families}) == len(families)  # family keys are unique
    assert len({t.key for t in TOPICS}) == len(TOPICS)


def _longest(strings) -> str:
    return max(strings, key=len)


def _worst_case_kwargs() -> dict[str, str]:
    """The longest rendering of every placeholder a message can use, across the whole catalog."""
    kw = {name: _longest(pair) for name, pair in FILLERS.items()}
    kw.update(
        who=_longest(s.who for t in TOPICS for s in t.scopes),
        topic=_longest(t.topic for t in TOPICS),
        doc=_longest(t.title for t in TOPICS),
        person=_longest(PEOPLE),
        v=_longest(t.render(v) for t in TOPICS for v in t.values),
    )
    return kw


def test_worst_case_kwargs_really_are_the_longest():
    kw = _worst_case_kwargs()
    assert len(kw["who"]) >= max(len(s.who) for t in TOPICS for s in t.scopes)
    assert len(kw["v"]) >= max(len(t.render(v)) for t in TOPICS for v in t.values)
    assert len(kw["date"]) == len("28 September 2024")


@pytest.mark.parametrize("kind, i, template", MESSAGES)
def test_message_renders_within_one_chunk_and_has_a_number(kind, i, template):
    kw = _worst_case_kwargs()
    allowed = set(kw)
    assert set(fields(template)) <= allowed, f"unknown placeholders in {template!r}"
    text = template.format(**kw)
    assert len(text) <= MESSAGE_MAX, f"{kind}[{i}] renders to {len(text)} > {MESSAGE_MAX}: {text!r}"
    assert DIGIT.search(text), text
    # The number does not come from the value alone: a message stating no digit-bearing value has one too.
    assert DIGIT.search(template.format(**{**kw, "v": "VALUE"})), f"{kind}[{i}]: only the value is a number"
    assert "\n" not in template


def test_message_max_fits_the_chunker():
    assert MESSAGE_MAX <= SECTION_MAX


@pytest.mark.parametrize("kind", sorted(VALUE_POOLS))
def test_value_messages_state_the_value_once(kind):
    for i, tpl in enumerate(VALUE_POOLS[kind]):
        assert fields(tpl).count("v") == 1, f"{kind}[{i}]: {tpl!r}"


def test_notes_state_no_value_and_do_not_name_the_topic():
    for i, tpl in enumerate(NOTE_TEMPLATES):
        names = fields(tpl)
        assert "v" not in names, f"note[{i}]: {tpl!r}"
        assert "topic" not in names, f"note[{i}]: {tpl!r}"


def test_message_pools_have_distinct_templates():
    for kind, pool in ALL_POOLS.items():
        assert len(pool) >= 2 and len(set(pool)) == len(pool), kind
    assert len(set(PEOPLE)) == len(PEOPLE) and not any(DIGIT.search(p) for p in PEOPLE)


# -- the checker itself ---------------------------------------------------------------------------------------

BASE = TOPICS[0]
LONG = ("The covered population for {who} is described at length here, with every exception, every carve-out and "
        "every local agreement spelled out in full detail, see section {section} of the handbook for more.")
NO_DIGIT = ("Managers who are not sure whether a person is covered by this part of the document should check with HR "
            "before approving.")
# A scope section stating one of the topic's values (rendered with the topic's phrase).
OTHER_VALUE = ("Staff who moved into a role among {who} before {date} keep a floor of "
               + BASE.render(BASE.values[1]) + " carried over from their previous contract terms.")
TOPIC_IN_CONTACTS = ("People Operations owns the {topic} rules; questions from {who} go to the HR desk on extension "
                     "{ext} on weekdays.")


def _overlapping_template(topic) -> str:
    """A scope section that repeats three content words of the topic's questions."""
    from data_gen.catalog.checks import content_words

    audience = set().union(*(content_words(s.who) for s in topic.scopes))
    asked = sorted(set().union(*(content_words(q) for q in topic.questions)) - audience)
    words = " ".join(asked[:3])
    return (f"This part, reviewed on {{date}}, mentions {words} for {{who}} in passing; the fine print is kept in "
            "section {section}.")


def _replace(pool: tuple[str, ...], i: int, template: str) -> tuple[str, ...]:
    return pool[:i] + (template,) + pool[i + 1:]


def test_checker_accepts_a_good_topic():
    assert check_topic(BASE) == []


def test_checker_reports_each_broken_rule():
    overlap = _overlapping_template(BASE)
    bad = dataclasses.replace(
        BASE,
        scope=_replace(_replace(_replace(_replace(BASE.scope, 0, LONG), 1, NO_DIGIT), 2, OTHER_VALUE), 3, overlap),
        contacts=_replace(BASE.contacts, 0, TOPIC_IN_CONTACTS),
    )
    problems = check_topic(bad)
    text = "\n".join(problems)
    key = BASE.key
    # too long
    assert re.search(rf"^{key}: scope\[0\] \(\w+, None\): \d+ characters, need {SECTION_MIN}\.\.{SECTION_MAX}",
                     text, re.M), text
    # no digit
    assert f"{key}: scope[1]: needs a number besides the value" in text, text
    # another value stated outside the value sections
    rendered = re.escape(repr(BASE.render(BASE.values[1])))
    assert re.search(rf"^{key}: scope\[2\] \(\w+\): states another value {rendered}", text, re.M), text
    # {topic} in contacts
    assert f"{key}: contacts[0]: no {{topic}} outside fact and runbook_step" in text, text
    # question overlap
    assert re.search(rf"^{key}: scope\[3\]: shares 3 words with the questions", text, re.M), text
    # nothing else was reported: each problem is pinned to the template that was broken
    tags = {re.match(rf"{key}: (\w+\[\d+\])", p).group(1) for p in problems}
    assert tags == {"scope[0]", "scope[1]", "scope[2]", "scope[3]", "contacts[0]"}, problems
    # and the catalog-level check reports them too
    assert check_catalog((bad,)) == problems


def test_checker_reports_structural_problems():
    bad = dataclasses.replace(BASE, key="Annual-Leave", scopes=BASE.scopes[:4], values=(3, 2, 1),
                              questions=BASE.questions[:-1] + ("How many days do {who} get in 2025?",))
    text = "\n".join(check_topic(bad))
    assert "key must be snake_case" in text
    assert "needs exactly 5 scopes, has 4" in text
    assert "values must be >= 7 distinct increasing integers" in text
    assert "no digits in questions" in text
    assert check_catalog((BASE, BASE))[-1] == f"duplicate topic keys: ['{BASE.key}']"


# -- the catalog's data files ---------------------------------------------------------------------------------

TOPIC_DIR = resources.files("data_gen.catalog").joinpath("topics")


def _raw(part: str) -> dict:
    return json.loads(TOPIC_DIR.joinpath(f"{part}.json").read_text(encoding="utf-8"))


def test_catalog_is_the_listed_files_in_order():
    assert sorted(p.name for p in TOPIC_DIR.iterdir()) == sorted(f"{part}.json" for part in PARTS)
    raw = [t for part in PARTS for t in _raw(part)["topics"]]
    assert [t["key"] for t in raw] == [t.key for t in TOPICS]  # catalog order is file order
    # lossless: the loaded topics, written back as JSON, are the files' topics field for field
    assert [json.loads(json.dumps(dataclasses.asdict(t))) for t in TOPICS] == raw
    assert all(isinstance(_raw(part)["about"], str) and _raw(part)["about"] for part in PARTS)


def test_loaded_topics_have_the_dataclass_types():
    for t in TOPICS:
        hash(t)  # every sequence field is a tuple, as the frozen dataclass declares, not a JSON list
        assert all(type(v) is int for v in t.values), t.key
        assert all(type(s) is Scope for s in t.scopes), t.key
        assert all(isinstance(getattr(t, f), tuple) for f in ("fact", "questions", "runbook_verify")), t.key


def _broken(tmp_path, edit) -> Path:
    """The first catalog file with ``edit(file, first topic)`` applied, written to tmp_path."""
    doc = _raw(PARTS[0])
    edit(doc, doc["topics"][0])
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


KEY0 = TOPICS[0].key
BROKEN = [
    pytest.param(lambda d, t: t.pop("fact"), f"topic {KEY0}: missing field 'fact'", id="missing-field"),
    pytest.param(lambda d, t: t.update(facts=t["fact"]), f"topic {KEY0}: unknown field 'facts'; allowed: key, ",
                 id="unknown-field"),
    pytest.param(lambda d, t: t.pop("key"), "topics[0]: missing field 'key'", id="missing-key"),
    pytest.param(lambda d, t: t["scopes"][2].pop("who"), f"topic {KEY0}.scopes[2]: missing field 'who'",
                 id="scope-missing-field"),
    pytest.param(lambda d, t: t["scopes"][0].update(who=3), f"topic {KEY0}.scopes[0].who: must be a string",
                 id="scope-not-a-string"),
    pytest.param(lambda d, t: t.update(values=[True] + t["values"]), f"topic {KEY0}.values: must be a list of "
                 "integers", id="bool-value"),
    pytest.param(lambda d, t: t.update(fact=t["fact"][0]), f"topic {KEY0}.fact: must be a list of strings",
                 id="string-not-list"),
    pytest.param(lambda d, t: t.update(title=None), f"topic {KEY0}.title: must be a string", id="null-title"),
    pytest.param(lambda d, t: d.pop("about"), "missing field 'about'", id="missing-about"),
]


@pytest.mark.parametrize("edit, message", BROKEN)
def test_broken_catalog_file_gives_one_line_naming_file_topic_and_field(tmp_path, edit, message):
    path = _broken(tmp_path, edit)
    with pytest.raises(CatalogError) as exc:
        load_topics(path)
    text = str(exc.value)
    assert isinstance(exc.value, BenchError)
    assert "\n" not in text
    assert text.startswith(f"{path}: {message}"), text


def test_unreadable_catalog_file_gives_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"about": "x",\n "topics": [,]}')
    with pytest.raises(CatalogError, match=rf"^{re.escape(str(bad))}: line 2: not valid JSON"):
        load_topics(bad)
    with pytest.raises(CatalogError, match=r"nope\.json: no such catalog file$"):
        load_topics(tmp_path / "nope.json")


def test_checks_cli_reports_a_broken_file_in_one_line(tmp_path):
    path = _broken(tmp_path, lambda d, t: t.pop("fact"))
    p = subprocess.run([sys.executable, "-m", "data_gen.catalog.checks", str(path)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2, p
    assert p.stderr.strip() == f"data_gen.catalog.checks: error: {path}: topic {KEY0}: missing field 'fact'"
    good = subprocess.run([sys.executable, "-m", "data_gen.catalog.checks", str(TOPIC_DIR.joinpath("a.json"))],
                          capture_output=True, text=True, timeout=120)
    assert good.returncode == 0 and good.stdout.splitlines()[-1] == "5 topics, 0 problems", good


def test_generator_cli_reports_a_missing_catalog_file_in_one_line(tmp_path):
    # The catalog is read on first use, inside the CLI's error handling: no traceback, exit 2.
    code = ("import sys, data_gen.catalog.base as b; b.PARTS = ('a', 'missing'); from data_gen.cli import main; "
            f"sys.argv = ['smartvector-gen', 'out_dir={tmp_path / 'out'}']; main()")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert re.match(r"^smartvector-gen: error: \S+/topics/missing\.json: no such catalog file$", p.stderr.strip()), \
        p.stderr
