"""Checks on catalog topics (the rules in :mod:`data_gen.catalog.base`), as plain functions returning the
problems found, so tests and catalog authors run the same code:

    python -m data_gen.catalog.checks                    # every topic of the catalog
    python -m data_gen.catalog.checks topics/x.json ...  # the topics of these files (e.g. one being written)
"""

from __future__ import annotations

import re
import string
import sys
from itertools import product
from pathlib import Path

from smartvector_bench.core.chunking import chunk_sentences

from .base import (FILLERS, MIN_COUNTS, MIN_VALUES, N_SCOPES, QUESTION_FIELDS, QUESTION_MAX, SECTION_MAX,
                   SECTION_MIN, SECTIONS, VALUE_SECTIONS, CatalogError, Topic, load_catalog, load_topics)

_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
_DIGIT = re.compile(r"[0-9]")
SAMPLE_DATE = "28 September 2024"
# A non-value section may share at most this many content words with the topic's questions: a section that
# restates the question outranks the answer on cosine, and a reviewer's "kind" rule would then learn to skip it.
QUESTION_OVERLAP_MAX = 2
_STOP = set("the a an and or of to for in on at by is are be with from as that this these those their its it any "
            "all each per can may must will not no into than then who what which how when where does do did was "
            "were has have had our your you we they them under over after before within about up".split())
BASE_PLACEHOLDERS = {"who", "topic", "doc"} | set(FILLERS)


def fields(template: str) -> list[str]:
    """Placeholder names of a format string, in order."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def fillers(which: int) -> dict[str, str]:
    """All fillers at their shortest (which=0) or longest (which=1) rendering."""
    return {k: v[which] for k, v in FILLERS.items()}


def renderings(topic: Topic, template: str, value_section: bool):
    """Every rendering a check must see: each scope x (each value | none) x shortest / longest fillers."""
    values = topic.values if value_section else (None,)
    for scope, value, which in product(topic.scopes, values, (0, 1)):
        kw = {**fillers(which), "who": scope.who, "topic": topic.topic, "doc": topic.title}
        if value is not None:
            kw["v"] = topic.render(value)
        yield scope, value, template.format(**kw)


def content_words(text: str) -> set[str]:
    """Lower-case words of 3+ letters that are not stop words (placeholders removed)."""
    return {w for w in re.findall(r"[a-z]+", re.sub(r"\{\w+\}", " ", text).lower()) if len(w) >= 3 and w not in _STOP}


def question_overlap(topic: Topic, template: str) -> set[str]:
    """Content words a section template shares with the topic's questions, audience words excluded."""
    audience = set().union(*(content_words(s.who) for s in topic.scopes))
    asked = set().union(*(content_words(q) for q in topic.questions + topic.historical_questions
                          + topic.dependent_questions))
    return (content_words(template) & asked) - audience


def check_topic(topic: Topic) -> list[str]:
    out: list[str] = []
    where = topic.key

    def bad(msg: str) -> None:
        out.append(f"{where}: {msg}")

    if not _SNAKE.match(topic.key):
        bad("key must be snake_case")
    if len(topic.scopes) != N_SCOPES:
        bad(f"needs exactly {N_SCOPES} scopes, has {len(topic.scopes)}")
    keys = [s.key for s in topic.scopes]
    if len(set(keys)) != len(keys) or not all(_SNAKE.match(k) for k in keys):
        bad(f"scope keys must be unique snake_case: {keys}")
    if len({s.who for s in topic.scopes}) != len(topic.scopes):
        bad("scope audiences (who) must differ")
    for s in topic.scopes:
        if _DIGIT.search(s.who) or _DIGIT.search(s.title):
            bad(f"scope {s.key}: no digits in who/title")
    vals = list(topic.values)
    if len(vals) < MIN_VALUES or vals != sorted(set(vals)) or not all(isinstance(v, int) for v in vals):
        bad(f"values must be >= {MIN_VALUES} distinct increasing integers: {vals}")
    if fields(topic.phrase) != ["n"]:
        bad(f"phrase must contain {{n}} once: {topic.phrase!r}")
    rendered_values = [topic.render(v) for v in vals]
    for name, minimum in MIN_COUNTS.items():
        got = getattr(topic, name)
        if len(got) < minimum:
            bad(f"{name}: needs >= {minimum} templates, has {len(got)}")
        if len(set(got)) != len(got):
            bad(f"{name}: duplicate templates")
    for name in SECTIONS:
        value_section = name in VALUE_SECTIONS
        allowed = BASE_PLACEHOLDERS | ({"v"} if value_section else set())
        for i, tpl in enumerate(getattr(topic, name)):
            tag = f"{name}[{i}]"
            names = fields(tpl)
            unknown = set(names) - allowed
            if unknown:
                bad(f"{tag}: unknown placeholders {sorted(unknown)}")
                continue
            if value_section and names.count("v") != 1:
                bad(f"{tag}: must contain {{v}} exactly once")
            if value_section and "who" not in names:
                bad(f"{tag}: must contain {{who}}")
            if not value_section and "topic" in names:
                bad(f"{tag}: no {{topic}} outside fact and runbook_step (it restates what the questions ask)")
            if names.count("who") > 1:
                bad(f"{tag}: use {{who}} at most once")
            shared = question_overlap(topic, tpl)
            if not value_section and len(shared) > QUESTION_OVERLAP_MAX:
                bad(f"{tag}: shares {len(shared)} words with the questions {sorted(shared)} (at most "
                    f"{QUESTION_OVERLAP_MAX}): reword so it does not restate what the questions ask")
            if "\n" in tpl:
                bad(f"{tag}: no newlines")
            for scope, value, text in renderings(topic, tpl, value_section):
                if not SECTION_MIN <= len(text) <= SECTION_MAX:
                    bad(f"{tag} ({scope.key}, {value}): {len(text)} characters, need {SECTION_MIN}..{SECTION_MAX}:"
                        f" {text!r}")
                    break
                if not _DIGIT.search(text.replace(topic.render(value), "") if value is not None else text):
                    bad(f"{tag}: needs a number besides the value (a filler such as {{ext}} or {{date}})")
                    break
                if len(chunk_sentences(text, 200)) != 1:
                    bad(f"{tag}: the chunker splits it: {text!r}")
                    break
                others = [r for v, r in zip(vals, rendered_values) if v != value]
                hit = next((r for r in others if re.search(rf"(?<![0-9$]){re.escape(r)}(?![0-9])", text)), None)
                if hit:
                    bad(f"{tag} ({scope.key}): states another value {hit!r}: {text!r}")
                    break
    for name in QUESTION_FIELDS:
        for i, tpl in enumerate(getattr(topic, name)):
            tag = f"{name}[{i}]"
            names = fields(tpl)
            allowed = {"who", "date"} if name == "historical_questions" else {"who"}
            if set(names) - allowed or "who" not in names:
                bad(f"{tag}: placeholders must be {sorted(allowed)} and include who: {names}")
                continue
            if name == "historical_questions" and "date" not in names:
                bad(f"{tag}: must contain {{date}}")
            if _DIGIT.search(tpl):
                bad(f"{tag}: no digits in questions")
            if not tpl.endswith("?"):
                bad(f"{tag}: must end with '?'")
            for scope in topic.scopes:
                text = tpl.format(who=scope.who, date=SAMPLE_DATE)
                if len(text) > QUESTION_MAX:
                    bad(f"{tag} ({scope.key}): {len(text)} characters, at most {QUESTION_MAX}")
                    break
    return out


def check_catalog(topics) -> list[str]:
    out = [p for t in topics for p in check_topic(t)]
    keys = [t.key for t in topics]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        out.append(f"duplicate topic keys: {dup}")
    return out


def main(argv: list[str] | None = None) -> int:
    files = sys.argv[1:] if argv is None else argv
    try:
        topics = tuple(t for f in files for t in load_topics(Path(f))) if files else load_catalog()
    except CatalogError as exc:
        print(f"data_gen.catalog.checks: error: {exc}", file=sys.stderr)
        return 2
    problems = check_catalog(topics)
    for p in problems:
        print(p)
    print(f"{len(topics)} topics, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
