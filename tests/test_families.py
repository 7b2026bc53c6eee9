"""Checks on the text catalog in data_gen.families (see the module docstring for the rules).

Every check loops over all combinations (family x template x value, and family x chatter question x
value x person for chatter) and reports the family, the field and the rendered text on failure.
"""

from __future__ import annotations

import re
import string
from itertools import product

import pytest

from data_gen.families import FAMILIES, NEUTRAL_TEMPLATES, PEOPLE, RUMOR_TEMPLATES, Family

SECTIONS = ("fact", "scope", "procedure", "contacts", "runbook_step", "runbook_prereq", "runbook_verify")
VALUE_SECTIONS = ("fact", "runbook_step")  # the only sections that state the value
QUESTION_FIELDS = ("questions", "historical_questions", "dependent_questions")  # benchmark queries
MIN_CHATTER_QUESTIONS = 4
NEAR_COPY_JACCARD = 0.8  # a chatter question this close (word sets) to a benchmark question is a leak
MIN_COUNTS = {
    "fact": 3,
    "scope": 2,
    "procedure": 2,
    "contacts": 2,
    "runbook_step": 2,
    "runbook_prereq": 2,
    "runbook_verify": 2,
    "questions": 6,
    "historical_questions": 2,
    "dependent_questions": 3,
}
SECTION_MIN, SECTION_MAX = 101, 199
CHATTER_MAX = 199
CHATTER_PLACEHOLDERS = {"question", "topic", "title", "v", "person"}
SAMPLE_DATE = "28 September 2024"  # the longest kind of human date the generator renders

# Concrete systems a runbook may be written for; each family's runbook_title must name one.
SYSTEMS = (
    "Workday", "Okta", "PagerDuty", "Concur", "Jamf", "pgBackRest", "Snowflake", "Envoy", "Navan",
    "BambooHR", "ServiceNow", "SailPoint", "GlobalProtect", "Coupa", "Cornerstone", "Splunk",
)

# Number words that a reader could take for a value; they may not appear outside the value itself.
NUMBER_WORDS = re.compile(
    r"\b(zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
    r"thousand|dozen|twice|thrice|half|fortnight|fortnightly|biweekly)\b",
    re.IGNORECASE,
)

ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|etc|approx|vs|cf|no|nr|mr|mrs|ms|dr|st|inc|ltd|min|max|hrs|sec)\.\s",
                           re.IGNORECASE)


def fields(template: str) -> list[str]:
    """Names of the placeholders in a format string, in order (``{v}`` -> ``v``)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def system_of(family: Family) -> str:
    named = [s for s in SYSTEMS if s in family.runbook_title]
    assert named, f"{family.key}.runbook_title {family.runbook_title!r} names none of {SYSTEMS}"
    return named[0]


def render_section(family: Family, template: str, n: int) -> str:
    return template.format(v=family.render(n), title=family.title, topic=family.topic)


def all_section_templates():
    for family in FAMILIES:
        for section in SECTIONS:
            for template in getattr(family, section):
                yield family, section, template


def all_questions():
    for family in FAMILIES:
        for field in QUESTION_FIELDS:
            for question in getattr(family, field):
                yield family, field, question


def all_chatter_questions():
    for family in FAMILIES:
        for question in family.chatter_questions:
            yield family, question


def normalized(text: str) -> str:
    """Lowercase, punctuation stripped, whitespace collapsed: "What's the VPN timeout?" -> "whats the vpn timeout"."""
    return " ".join(re.sub(r"[^\w\s]", "", text.lower()).split())


def word_set(text: str) -> set[str]:
    return set(normalized(text).split())


def jaccard(a: str, b: str) -> float:
    wa, wb = word_set(a), word_set(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 1.0


def number_words(text: str) -> list[str]:
    return [m.group(0) for m in NUMBER_WORDS.finditer(text)]


def sentence_problems(text: str) -> list[str]:
    """Violations of the sentence rules that the chunker relies on."""
    problems = []
    if "\n" in text or "\r" in text:
        problems.append("contains a newline")
    if not text or text[-1] not in ".!?":
        problems.append("does not end with . ! or ?")
    if text != text.strip():
        problems.append("leading or trailing whitespace")
    if "  " in text:
        problems.append("double space")
    if "..." in text:
        problems.append("ellipsis")
    if ABBREVIATIONS.search(text):
        problems.append(f"abbreviation with a dot inside a sentence: {ABBREVIATIONS.search(text).group(0)!r}")
    # every sentence boundary ([.!?] + whitespace) must start a new sentence with a capital letter; a
    # lowercase word after it means the dot was not the end of a sentence (for example "approx. 5")
    for m in re.finditer(r"[.!?]\s+(\S)", text):
        if not (m.group(1).isupper() or m.group(1) in "#@\"'"):
            problems.append(f"sentence boundary not followed by a capital letter at {m.start()}: {text[m.start():m.start() + 20]!r}")
    # a terminator directly followed by a letter ("v2.Next") glues sentences together for the chunker
    for m in re.finditer(r"[!?][A-Za-z]", text):
        problems.append(f"terminator glued to the next word: {m.group(0)!r}")
    return problems


# -- structure ---------------------------------------------------------------------------------------


def test_there_are_sixteen_distinct_families():
    assert len(FAMILIES) >= 16, f"expected at least 16 families, got {len(FAMILIES)}"
    for family in FAMILIES:
        assert isinstance(family, Family), f"{family!r} is not a Family"


def test_keys_are_snake_case_and_unique():
    keys = [f.key for f in FAMILIES]
    for key in keys:
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", key), f"key {key!r} is not snake_case"
    dupes = {k for k in keys if keys.count(k) > 1}
    assert not dupes, f"duplicate keys: {sorted(dupes)}"


@pytest.mark.parametrize("attr", ["title", "topic", "runbook_title"])
def test_titles_and_topics_are_unique_and_clean(attr):
    texts = [getattr(f, attr) for f in FAMILIES]
    dupes = {t.lower() for t in texts if [x.lower() for x in texts].count(t.lower()) > 1}
    assert not dupes, f"duplicate {attr}: {sorted(dupes)}"
    for family, text in zip(FAMILIES, texts):
        assert text.strip() == text and text, f"{family.key}.{attr} is empty or padded: {text!r}"
        assert not re.search(r"[\d{}\n.!?]", text), f"{family.key}.{attr} has digits, braces or punctuation: {text!r}"


def test_runbook_title_names_a_concrete_system():
    for family in FAMILIES:
        system_of(family)
        assert "Runbook" in family.runbook_title, f"{family.key}.runbook_title should say Runbook"


def test_values_are_increasing_distinct_ints():
    for family in FAMILIES:
        values = family.values
        assert isinstance(values, tuple), f"{family.key}.values is not a tuple"
        assert all(type(v) is int for v in values), f"{family.key}.values has non-ints: {values}"
        assert len(set(values)) >= 6, f"{family.key}.values has fewer than 6 distinct values: {values}"
        assert all(a < b for a, b in zip(values, values[1:])), f"{family.key}.values not strictly increasing: {values}"
        assert all(v > 0 for v in values), f"{family.key}.values must be positive: {values}"
        # realistic spread: versions of one policy stay within a factor of sixty of each other
        assert values[-1] <= 60 * values[0], f"{family.key}.values spread is implausible: {values}"


def test_template_counts():
    for family in FAMILIES:
        for field, minimum in MIN_COUNTS.items():
            templates = getattr(family, field)
            assert isinstance(templates, tuple), f"{family.key}.{field} is not a tuple"
            assert len(templates) >= minimum, f"{family.key}.{field} has {len(templates)} < {minimum} entries"
            assert len(set(templates)) == len(templates), f"{family.key}.{field} has duplicate entries"


def test_phrase_has_exactly_one_n():
    for family in FAMILIES:
        assert fields(family.phrase) == ["n"], f"{family.key}.phrase {family.phrase!r} needs exactly one {{n}}"
        for n in family.values:
            rendered = family.render(n)
            assert str(n) in rendered, f"{family.key}: render({n}) = {rendered!r} does not show the number"
            assert not re.search(r"[.!?]", rendered), f"{family.key}: render({n}) = {rendered!r} has punctuation"


# -- sections ----------------------------------------------------------------------------------------


def test_section_placeholders():
    for family, section, template in all_section_templates():
        names = fields(template)
        assert set(names) <= {"v", "title", "topic"}, f"{family.key}.{section}: unknown placeholder in {template!r}"
        expected_v = 1 if section in VALUE_SECTIONS else 0
        assert names.count("v") == expected_v, (
            f"{family.key}.{section}: expected {{v}} {expected_v} time(s), got {names.count('v')} in {template!r}"
        )


def test_no_stray_numbers_in_sections():
    for family, section, template in all_section_templates():
        without_value = template.replace("{v}", "").format(title=family.title, topic=family.topic)
        assert not re.search(r"\d", without_value), f"{family.key}.{section}: digit outside {{v}} in {template!r}"
        words = number_words(without_value)
        assert not words, f"{family.key}.{section}: number words {words} in {template!r}"


def test_section_lengths_for_every_value():
    failures = []
    for family, section, template in all_section_templates():
        for n in family.values:
            text = render_section(family, template, n)
            if not SECTION_MIN <= len(text) <= SECTION_MAX:
                failures.append(f"{family.key}.{section} n={n}: {len(text)} chars: {text!r}")
    assert not failures, "sections outside 101..199 characters:\n" + "\n".join(failures)


def test_section_sentences():
    failures = []
    for family, section, template in all_section_templates():
        for n in family.values:
            text = render_section(family, template, n)
            for problem in sentence_problems(text):
                failures.append(f"{family.key}.{section} n={n}: {problem}: {text!r}")
    assert not failures, "\n".join(failures)


def test_each_section_is_a_single_chunk():
    """The rule the length bounds exist for: one chunk per section, even when sections are concatenated."""
    from smartvector_bench.chunking import chunk_sentences

    for family in FAMILIES:
        for n in family.values:
            for i in range(max(len(getattr(family, s)) for s in SECTIONS)):
                parts = [render_section(family, getattr(family, s)[i % len(getattr(family, s))], n) for s in SECTIONS]
                chunks = chunk_sentences(" ".join(parts))
                assert [c.text for c in chunks] == parts, f"{family.key} n={n}: sections do not map to chunks"


def test_fact_templates_share_topic_and_vocabulary():
    for family in FAMILIES:
        topic_stems = stems(family.topic)
        fact_stems = [stems(t.replace("{v}", "")) for t in family.fact]
        for template, s in zip(family.fact, fact_stems):
            missing = topic_stems - s
            assert not missing, f"{family.key}.fact misses topic words {sorted(missing)}: {template!r}"
        # versions of one fact chunk: every pair of fact templates shares most of its vocabulary
        for (a, sa), (b, sb) in product(zip(family.fact, fact_stems), repeat=2):
            if a < b:
                overlap = len(sa & sb) / len(sa | sb)
                assert overlap >= 0.4, f"{family.key}.fact templates too different ({overlap:.2f}): {a!r} vs {b!r}"


def test_other_sections_mention_the_topic():
    for family, section, template in all_section_templates():
        if section in ("fact",) or section.startswith("runbook"):
            continue
        text = template.format(v="", title=family.title, topic=family.topic)
        assert stems(family.topic) & stems(text), f"{family.key}.{section} does not mention the topic: {template!r}"


def test_runbook_sections_name_the_system():
    for family in FAMILIES:
        system = system_of(family)
        for section in ("runbook_step", "runbook_prereq", "runbook_verify"):
            for template in getattr(family, section):
                assert system in template, f"{family.key}.{section} does not name {system}: {template!r}"


STOPWORDS = {
    "the", "and", "for", "with", "from", "that", "this", "their", "they", "them", "then", "must", "have",
    "after", "before", "each", "every", "which", "when", "once", "into", "than", "within", "over", "under",
    "while", "until", "least", "more", "most", "been", "being", "also", "there", "what", "your", "about",
}


def stems(text: str) -> set[str]:
    """Crude stems (plural s dropped, then the first five letters) of the content words of a text."""
    words = re.findall(r"[a-z]+", text.lower())
    words = [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]
    return {w[:5] for w in words if len(w) >= 3 and w not in STOPWORDS}


# -- questions ---------------------------------------------------------------------------------------


def test_question_placeholders_and_numbers():
    for family, field, question in all_questions():
        names = fields(question)
        if field == "historical_questions":
            assert names == ["date"], f"{family.key}.{field}: needs exactly one {{date}} and nothing else: {question!r}"
        else:
            assert names == [], f"{family.key}.{field}: placeholders are not allowed: {question!r}"
        assert not re.search(r"\d", question), f"{family.key}.{field}: digit in {question!r}"
        words = number_words(question)
        assert not words, f"{family.key}.{field}: number words {words} in {question!r}"


def test_question_sentences():
    for family, field, question in all_questions():
        text = question.format(date=SAMPLE_DATE) if field == "historical_questions" else question
        assert text.endswith("?"), f"{family.key}.{field}: does not end with '?': {text!r}"
        assert text[0].isupper(), f"{family.key}.{field}: does not start with a capital: {text!r}"
        assert text.count("?") == 1, f"{family.key}.{field}: should be a single question: {text!r}"
        problems = sentence_problems(text)
        assert not problems, f"{family.key}.{field}: {problems}: {text!r}"


def test_questions_are_unique_across_fields_and_families():
    seen: dict[str, str] = {}
    for family, field, question in all_questions():
        key = question.lower()
        assert key not in seen, f"{family.key}.{field}: {question!r} already used by {seen[key]}"
        seen[key] = f"{family.key}.{field}"


def test_questions_are_not_purely_lexical():
    """Some paraphrases must use words that the fact text does not contain (synonyms)."""
    for family in FAMILIES:
        fact_words = stems(" ".join(t.replace("{v}", "") for t in family.fact) + " " + family.topic)
        novel = [q for q in family.questions if stems(q) - fact_words]
        assert len(novel) >= 2, f"{family.key}: fewer than two questions use words outside the fact text"


def test_dependent_questions_ask_about_the_runbook_system():
    for family in FAMILIES:
        system = system_of(family)
        for question in family.dependent_questions:
            assert system in question, f"{family.key}.dependent_questions: {question!r} does not name {system}"


# -- chatter -----------------------------------------------------------------------------------------


def test_chatter_counts_and_people():
    assert len(RUMOR_TEMPLATES) >= 8, f"only {len(RUMOR_TEMPLATES)} rumour templates"
    assert len(NEUTRAL_TEMPLATES) >= 6, f"only {len(NEUTRAL_TEMPLATES)} neutral templates"
    assert len(PEOPLE) >= 8, f"only {len(PEOPLE)} people"
    assert len(set(PEOPLE)) == len(PEOPLE), "duplicate people"
    for person in PEOPLE:
        assert re.fullmatch(r"[A-Z][a-z]+", person), f"{person!r} is not a first name"


def test_rumour_placeholders():
    with_question = 0
    for template in RUMOR_TEMPLATES:
        names = fields(template)
        assert set(names) <= CHATTER_PLACEHOLDERS, f"rumour has unknown placeholders: {template!r}"
        assert names.count("v") == 1, f"rumour needs exactly one {{v}}: {template!r}"
        assert "question" in names or "topic" in names, f"rumour needs {{question}} or {{topic}}: {template!r}"
        assert all(names.count(n) == 1 for n in set(names)), f"rumour repeats a placeholder: {template!r}"
        with_question += "question" in names
        stripped = template.replace("{v}", "")
        assert not re.search(r"\d", stripped), f"rumour has a digit outside {{v}}: {template!r}"
        assert not number_words(stripped), f"rumour has number words: {template!r}"
    assert with_question * 2 >= len(RUMOR_TEMPLATES), "at least half the rumours should quote a {question}"


def test_neutral_placeholders():
    for template in NEUTRAL_TEMPLATES:
        names = fields(template)
        assert set(names) <= CHATTER_PLACEHOLDERS - {"v"}, f"neutral chatter has {{v}} or unknown placeholders: {template!r}"
        assert {"question", "topic", "title"} & set(names), f"neutral chatter needs {{question}}, {{topic}} or {{title}}: {template!r}"
        assert not re.search(r"\d", template), f"neutral chatter has a digit: {template!r}"
        assert not number_words(template), f"neutral chatter has number words: {template!r}"


def _render_chatter(template: str, family: Family, question: str, n: int, person: str) -> str:
    return template.format(question=question, topic=family.topic, title=family.title, v=family.render(n), person=person)


@pytest.mark.parametrize("kind", ["rumour", "neutral"])
def test_chatter_lengths_and_sentences(kind):
    templates = RUMOR_TEMPLATES if kind == "rumour" else NEUTRAL_TEMPLATES
    failures = []
    for family in FAMILIES:
        for template, question, n, person in product(templates, family.chatter_questions, family.values, PEOPLE):
            text = _render_chatter(template, family, question, n, person)
            if len(text) > CHATTER_MAX:
                failures.append(f"{family.key} [{kind}] {len(text)} chars: {text!r}")
            for problem in sentence_problems(text):
                failures.append(f"{family.key} [{kind}] {problem}: {text!r}")
            if kind == "neutral":
                if re.search(r"\d", text):
                    failures.append(f"{family.key} [neutral] digit in {text!r}")
            elif family.render(n) not in text:
                failures.append(f"{family.key} [rumour] value missing in {text!r}")
    assert not failures, f"{len(failures)} problems, first ones:\n" + "\n".join(failures[:20])


# -- chatter questions (fill {question} in chatter; must not leak the benchmark queries) ----------------


def test_chatter_question_counts():
    for family in FAMILIES:
        chatter = family.chatter_questions
        assert isinstance(chatter, tuple), f"{family.key}.chatter_questions is not a tuple"
        assert len(chatter) >= MIN_CHATTER_QUESTIONS, (
            f"{family.key}.chatter_questions has {len(chatter)} < {MIN_CHATTER_QUESTIONS} entries"
        )
        assert len(set(chatter)) == len(chatter), f"{family.key}.chatter_questions has duplicate entries"


def test_chatter_questions_never_equal_a_benchmark_query():
    """No chatter question is any family's query text (case and punctuation ignored)."""
    queries = {normalized(q): f"{f.key}.{field}" for f, field, q in all_questions()}
    failures = [
        f"{family.key}.chatter_questions: {question!r} equals {queries[normalized(question)]}"
        for family, question in all_chatter_questions()
        if normalized(question) in queries
    ]
    assert not failures, "\n".join(failures)


def test_chatter_questions_are_not_near_copies_of_questions():
    """Word-set Jaccard with every benchmark question (own family and others) stays below the threshold."""
    failures = []
    for family, question in all_chatter_questions():
        for other in FAMILIES:
            for query in other.questions:
                score = jaccard(question, query)
                if score >= NEAR_COPY_JACCARD:
                    failures.append(
                        f"{family.key}.chatter_questions {question!r} vs {other.key}.questions {query!r}: "
                        f"jaccard {score:.2f}"
                    )
    assert not failures, "chatter questions too close to benchmark questions:\n" + "\n".join(failures)


def test_chatter_questions_are_unique_across_families():
    seen: dict[str, str] = {}
    for family, question in all_chatter_questions():
        key = normalized(question)
        assert key not in seen, f"{family.key}.chatter_questions: {question!r} already used by {seen[key]}"
        seen[key] = family.key


def test_chatter_question_placeholders_and_numbers():
    for family, question in all_chatter_questions():
        assert fields(question) == [], f"{family.key}.chatter_questions: placeholders are not allowed: {question!r}"
        assert "{" not in question and "}" not in question, f"{family.key}.chatter_questions: braces in {question!r}"
        assert not re.search(r"\d", question), f"{family.key}.chatter_questions: digit in {question!r}"
        words = number_words(question)
        assert not words, f"{family.key}.chatter_questions: number words {words} in {question!r}"


def test_chatter_question_sentences():
    for family, question in all_chatter_questions():
        assert question.endswith("?"), f"{family.key}.chatter_questions: does not end with '?': {question!r}"
        assert question[0].isupper(), f"{family.key}.chatter_questions: does not start with a capital: {question!r}"
        assert question.count("?") == 1, f"{family.key}.chatter_questions: should be a single question: {question!r}"
        problems = sentence_problems(question)
        assert not problems, f"{family.key}.chatter_questions: {problems}: {question!r}"


def test_chatter_questions_stay_on_topic():
    """Close in meaning to the formal questions: each shares content words with the topic or the questions."""
    for family, question in all_chatter_questions():
        vocabulary = stems(family.topic + " " + " ".join(family.questions))
        assert stems(question) & vocabulary, f"{family.key}.chatter_questions: {question!r} shares no topic words"


def test_module_is_plain_data():
    import data_gen.families as mod

    source = open(mod.__file__, encoding="utf-8").read()
    imports = re.findall(r"^\s*(?:import|from)\s+(\S+)", source, flags=re.MULTILINE)
    assert set(imports) <= {"__future__", "dataclasses"}, f"families.py should be plain data, imports {imports}"
    for banned in ("open(", "random", "print("):
        assert banned not in source, f"families.py should be plain data, found {banned!r}"
