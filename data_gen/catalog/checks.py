"""Checks on catalog topics (the rules in :mod:`data_gen.catalog.base`), as plain functions returning the
problems found, so tests and catalog authors run the same code:

    python -m data_gen.catalog.checks                    # every topic of the catalog
    python -m data_gen.catalog.checks topics/x.json ...  # the topics of these files (e.g. one being written)

:func:`check_topic` checks one topic on its own (lengths, numbers, placeholders, question overlap, the wording
of dependent questions, revision-relative words); :func:`check_catalog` adds the rules that need every topic:
each question names its fact (:func:`fact_naming_problems`) and no two families ask near-duplicate questions
(:func:`near_duplicate_problems`). Given some files, the catalog-wide rules compare those files' topics only.
"""

from __future__ import annotations

import re
import string
import sys
from dataclasses import dataclass
from itertools import product
from pathlib import Path

from smartvector_bench.core.dataset.chunking import chunk_sentences

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

# A question about the policy or the system must not ask what the system *is* configured to: its label is the
# policy's value, and a lagging runbook configures another one. Dependent questions ask what the system
# *should* be set to (a word of _NORMATIVE).
_IS_CONFIGURED = re.compile(r"\b(?:is|are|was|were)\s+(?:currently\s+|now\s+|still\s+)?(?:configured|set)\b"
                            r"|\bcurrently\s+(?:configured|set)\b", re.I)
_NORMATIVE = re.compile(r"\b(?:should|must|need to|do I)\b", re.I)

# Revision-relative wording: true of some versions of a document only (a first version has no "previous
# rules"; a lagging runbook's last revision keeps the old value, so its check cannot find "the new setting").
# Forbidden in the sections that state no value (all but VALUE_SECTIONS): nothing in them may depend on whether,
# or how, the value changed.
_SETTING_NOUNS = (r"(?:setting|value|figure|rule|limit|threshold|ceiling|configuration|schedule|interval|timing|"
                  r"quota|entitlement|rate|amount|expiry|lifetime|cut-off|deadline|terms|version)s?")
REVISION_WORDS: tuple[tuple[str, re.Pattern], ...] = (
    ("new <setting>", re.compile(rf"\bnew\s+(?:[\w-]+\s+)?{_SETTING_NOUNS}\b", re.I)),
    ("old/earlier <setting>", re.compile(rf"\b(?:old|older|earlier|former|prior)\s+(?:[\w-]+\s+)?{_SETTING_NOUNS}\b",
                                         re.I)),
    ("previous", re.compile(r"\bprevious(?:ly)?\b", re.I)),
    ("updated", re.compile(r"\bupdated\b", re.I)),
    ("changed", re.compile(r"\b(?:changed|unchanged)\b", re.I)),
    ("newer", re.compile(r"\bnewer\b", re.I)),
    ("<setting> changes", re.compile(rf"\b{_SETTING_NOUNS}\s+changes\b", re.I)),
)

# -- naming the fact: a word of the topic's own name --------------------------------------------------------
# Words are compared by a crude stem, so that inflections match (escalates ~ escalation, parents ~ parental):
# the word without a plural -s, cut to its first five letters.
STEM_LETTERS = 5
# Near-duplicate questions: Jaccard similarity of their stemmed content words, generic question words left out.
NEAR_DUPLICATE_JACCARD = 0.6
# Words that any question about any fact may use: when, how sure, what to do with a value. They say nothing
# about which fact is asked, so near-duplicate questions are compared without them.
GENERIC_QUESTION_WORDS = set("""current currently today now right moment present quick question check
still same changed change policy rule rules force value amount figure set setting configure configured configuration
enter entered goes should use apply applies applied much many long often tell know could would please there
anyone get""".split())


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
            if not value_section:
                for label, hit in revision_words(tpl):
                    bad(f"{tag}: revision-relative wording {hit!r} ({label}): it is true of some versions only; "
                        f"word it so that it holds for every version: {tpl!r}")
            for scope, value, text in renderings(topic, tpl, value_section):
                if not SECTION_MIN <= len(text) <= SECTION_MAX:
                    bad(f"{tag} ({scope.key}, {value}): {len(text)} characters, need {SECTION_MIN}..{SECTION_MAX}:"
                        f" {text!r}")
                    break
                if not _DIGIT.search(text.replace(topic.render(value), "") if value is not None else text):
                    bad(f"{tag}: needs a number besides the value (a filler such as {{ext}} or {{published}})")
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
            for problem in question_wording_problems(name, tpl):
                bad(f"{tag}: {problem}")
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


def revision_words(template: str) -> list[tuple[str, str]]:
    """(rule, matched text) for each revision-relative phrase (:data:`REVISION_WORDS`) in a template."""
    return [(label, m.group(0)) for label, pattern in REVISION_WORDS for m in pattern.finditer(template)]


def question_wording_problems(field: str, template: str) -> list[str]:
    """A question asks what the policy says (its label): never what a system *is* configured to; and a dependent
    question asks what the system *should* be set to for {who}."""
    out = []
    hit = _IS_CONFIGURED.search(template)
    if hit:
        out.append(f"asks what is configured ({hit.group(0)!r}), but its label is the policy's value: ask what it "
                   f"should be set to: {template!r}")
    if field == "dependent_questions" and not _NORMATIVE.search(template):
        out.append(f"a dependent question asks what the system should be set to (with 'should', 'must', "
                   f"'need to' or 'do I'): {template!r}")
    return out


def stem(word: str) -> str:
    """The crude stem words are compared by: no plural -s, the first :data:`STEM_LETTERS` letters."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:STEM_LETTERS]


def stems(text: str, leave_out: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """Stems of a text's content words (placeholders removed), the words of ``leave_out`` left out."""
    return {stem(w) for w in content_words(text) if w not in leave_out}


def distinguishing_words(topics, i: int, which: str = "name") -> set[str]:
    """Content words of topic ``i``'s name (its ``topic`` phrase and ``title``; ``which="topic"``: the phrase
    alone) whose stem is in no other topic's name: the words that tell its fact from every other topic's."""
    topic = topics[i]
    others = set().union(set(), *(stems(t.topic + " " + t.title) for t in topics if t.key != topic.key))
    own = topic.topic if which == "topic" else topic.topic + " " + topic.title
    return {w for w in content_words(own) if stem(w) not in others}


def fact_naming_problems(topics) -> list[str]:
    """Every question names its fact: it contains a distinguishing word of its topic (same stem), so that it
    cannot be read as a question about another topic ("What leave limit goes into the Workday time off plan"
    fits annual, sick and parental leave alike). A topic whose ``topic`` phrase has no distinguishing word is
    a problem too: its questions would have to lean on the title alone. ({who} in every question is checked by
    :func:`check_topic`.)"""
    topics = tuple(topics)
    out = []
    for i, topic in enumerate(topics):
        if not distinguishing_words(topics, i, "topic"):
            out.append(f"{topic.key}: topic {topic.topic!r} has no word that no other topic's name has: "
                       "give it a word of its own, so that questions can name the fact")
        words = distinguishing_words(topics, i)
        keys = {stem(w) for w in words}
        for name in QUESTION_FIELDS:
            for j, tpl in enumerate(getattr(topic, name)):
                if not stems(tpl) & keys:
                    out.append(f"{topic.key}: {name}[{j}]: does not name the fact: it needs a word of the topic's own "
                               f"name ({', '.join(sorted(words)) or 'none'}), which no other topic's name has: "
                               f"{tpl!r}")
    return out


@dataclass(frozen=True)
class _Asked:
    family: str      # topic.scope, the family key
    topic: str       # the topic's key
    tag: str         # field[i]
    template: str
    words: frozenset[str]       # stems of the rendered question, generic words and the sample date left out
    unscoped: frozenset[str]    # the same without the stems of the scope's audience


def rendered_questions(topics) -> list[_Asked]:
    """Every question of every family, rendered (historical questions on :data:`SAMPLE_DATE`)."""
    leave_out = GENERIC_QUESTION_WORDS | content_words(SAMPLE_DATE)
    out = []
    for topic in topics:
        for scope in topic.scopes:
            audience = stems(scope.who)
            for name in QUESTION_FIELDS:
                for i, tpl in enumerate(getattr(topic, name)):
                    try:
                        text = tpl.format(who=scope.who, date=SAMPLE_DATE)
                    except (KeyError, IndexError, ValueError):
                        continue  # a placeholder problem, reported by check_topic
                    words = frozenset(stems(text, leave_out))
                    out.append(_Asked(f"{topic.key}.{scope.key}", topic.key, f"{name}[{i}]", tpl, words,
                                      frozenset(words - audience)))
    return out


def near_duplicate_problems(topics) -> list[str]:
    """No two families ask near-duplicate questions. Each question of each family is rendered with its audience
    (historical ones on a fixed date); two questions of families of different topics are near duplicates if

    - the Jaccard similarity of their words is at least :data:`NEAR_DUPLICATE_JACCARD`, or
    - their words are the same once each family's audience words are removed;

    words being stems (:func:`stem`) of content words, generic question words (:data:`GENERIC_QUESTION_WORDS`)
    and the date left out. At 0.6, two questions of five such words share four, of eight share six: they differ
    by a word or two, not by the fact asked. (Families of one topic share their templates by design and differ
    by their audience, which :func:`check_topic` requires to differ.)"""
    asked = rendered_questions(tuple(topics))
    pairs: set[tuple[int, int]] = set()
    groups: dict[frozenset[str], list[int]] = {}
    index: dict[str, list[int]] = {}  # only questions that share a word can be similar
    for k, a in enumerate(asked):
        groups.setdefault(a.unscoped, []).append(k)
        for w in a.words:
            index.setdefault(w, []).append(k)
    for members in list(groups.values()) + list(index.values()):
        pairs.update((k, m) for k in members for m in members if k < m and asked[k].topic != asked[m].topic)
    out = []
    for k, m in sorted(pairs):
        a, b = asked[k], asked[m]
        jaccard = len(a.words & b.words) / len(a.words | b.words) if a.words | b.words else 1.0
        if a.unscoped == b.unscoped:
            why = f"the same words {sorted(a.unscoped)} once the audience is removed"
        elif jaccard >= NEAR_DUPLICATE_JACCARD:
            why = f"Jaccard {jaccard:.2f} >= {NEAR_DUPLICATE_JACCARD} on {sorted(a.words & b.words)}"
        else:
            continue
        out.append(f"near-duplicate questions in two families: {a.family} {a.tag} {a.template!r} and "
                   f"{b.family} {b.tag} {b.template!r} ({why})")
    return out


def check_catalog(topics) -> list[str]:
    topics = tuple(topics)
    out = [p for t in topics for p in check_topic(t)]
    keys = [t.key for t in topics]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        out.append(f"duplicate topic keys: {dup}")
    out += fact_naming_problems(topics)
    out += near_duplicate_problems(topics)
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
