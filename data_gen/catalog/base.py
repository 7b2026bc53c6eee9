"""The text catalog's types: a policy *topic* (a kind of fact with its own wording) and its *scopes* (the
populations, regions or products it is set for). A benchmark family is one (topic, scope) pair: its own
fact, with its own history of values, and its own documents.

Placeholders in templates:

- ``{who}``: the scope's audience (``Scope.who``), e.g. "warehouse staff";
- ``{v}``: the value, rendered with the topic's ``phrase`` (only in ``fact`` and ``runbook_step``);
- ``{topic}``: the topic's short noun phrase; ``{doc}``: the topic's document title (``Topic.title``);
- the document version's two dates: ``{published}``, the day the version was published (a policy's
  ``created_at``; a runbook's revision date), for "published on", "the version of", "revised on", "approved
  on"; and ``{effective}``, the day its value takes effect (a policy's ``valid_from``; for a runbook, the
  revision date too), for "From {effective}, ...", "effective {effective}". A policy version is published
  ``dataset.publish_lead_days`` before it takes effect, so the two differ: a sentence gives the date it means;
- number fillers (:data:`FILLERS`), drawn per family and fixed across versions: ``{ext}``, ``{ticket}``,
  ``{section}``, ``{headcount}``, ``{days}``, ``{room}``, ``{form}``;
- questions: ``{who}``; historical questions also ``{date}`` (the as-of date).

Rules (checked by :mod:`data_gen.catalog.checks` and tests/test_catalog.py):

- every policy and runbook section, rendered with any scope, value and the longest fillers, is 101..193
  characters and contains a digit: the scale tool appends a team marker of up to 6 characters (" ~3875") to a
  chunk, and the 200-character sentence chunker (smartvector-rag's) must still make one chunk per section;
- no section other than ``fact`` and ``runbook_step`` contains a rendering of any of the topic's values, and
  such a section shares at most two content words with the topic's questions (so that it does not restate
  what they ask); ``{who}`` appears at most once per section (required in ``fact`` and ``runbook_step``);
- those sections use no revision-relative wording ("the new setting", "the updated limit", "the previous
  rules", "changed"): it would be true of some versions only (a first version has no previous rules; a
  lagging runbook's last revision keeps the old value);
- questions contain no digit and contain ``{who}``; each names its fact: it has a word of its topic's name
  (``topic`` phrase or ``title``) that no other topic's name has, so "What leave limit goes into the
  Workday time off plan?" is refused where annual, sick and parental leave are all topics; and each
  topic's ``topic`` phrase has such a word;
- no question asks what a system *is* configured to (its label is the policy's value, which a lagging
  runbook does not configure); dependent questions ask what the system *should* be set to for {who};
- no two families of different topics ask near-duplicate questions (similar words, or the same words
  once their audiences are removed).

The topics themselves are text data, kept in ``topics/<part>.json`` (:data:`PARTS`; each file's ``about`` says
which topics it holds) and built into :class:`Topic` objects by :func:`load_catalog`, in file order: the
generator draws families in catalog order, so reordering topics changes every generated dataset.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from importlib import resources

from smartvector_bench.core.errors import BenchError

# Section fillers: name -> (shortest rendering, longest rendering). The generator draws the number fillers per
# family (draw_fillers); the two dates are the document version's own.
FILLERS: dict[str, tuple[str, str]] = {
    "ext": ("2000", "8999"),                 # phone extension, 4 digits
    "ticket": ("REQ-10000", "REQ-99999"),    # a ticket or request number
    "section": ("1.1", "9.9"),               # a section number of the handbook
    "headcount": ("120", "4,900"),           # how many people or accounts are covered
    "published": ("1 May 2024", "28 September 2024"),  # the day the version was published (revised)
    "effective": ("1 May 2024", "28 September 2024"),  # the day the version's value takes effect
    "days": ("2", "15"),                     # a small count of working days (notice, reminders)
    "room": ("1.01", "9.40"),                # a meeting room
    "form": ("F-101", "F-999"),              # a form number
}
DATE_FILLERS = ("published", "effective")


def draw_fillers(rng) -> dict[str, str]:
    """One family's (or document's) number fillers, within the ranges of :data:`FILLERS` (the dates of
    :data:`DATE_FILLERS` aside: they are the version's own). The order of the draws is fixed: generated datasets
    depend on it."""
    return {
        "ext": str(int(rng.integers(2000, 9000))),
        "ticket": f"REQ-{int(rng.integers(10000, 100000))}",
        "section": f"{int(rng.integers(1, 10))}.{int(rng.integers(1, 10))}",
        "headcount": f"{int(rng.integers(120, 4900)):,}",
        "days": str(int(rng.integers(2, 16))),
        "room": f"{int(rng.integers(1, 10))}.{int(rng.integers(1, 41)):02d}",
        "form": f"F-{int(rng.integers(101, 1000))}",
    }


@dataclass(frozen=True)
class Scope:
    key: str    # snake_case, unique within its topic, e.g. "warehouse"
    who: str    # the audience as it reads in a sentence, plural, lower case unless a proper noun: "warehouse staff"
    title: str  # the same in title case, for document titles: "Warehouse Staff"


@dataclass(frozen=True)
class Topic:
    key: str                 # snake_case, unique in the catalog
    title: str               # policy document title, e.g. "Annual Leave Policy"
    runbook_title: str       # the operational document that applies the value, naming its system
    topic: str               # short noun phrase, e.g. "annual leave allowance"
    phrase: str              # how a value reads, with {n}: "{n} days", "${n} per day", "every {n} days"
    values: tuple[int, ...]  # >= 7 distinct plausible values, increasing
    scopes: tuple[Scope, ...]             # exactly 5
    fact: tuple[str, ...]                 # >= 6: states {v} for {who}
    scope: tuple[str, ...]                # >= 5: who or what is covered; no value
    procedure: tuple[str, ...]            # >= 5: how to request, apply or comply; no value
    contacts: tuple[str, ...]             # >= 5: owner, where to ask, review; no value
    runbook_step: tuple[str, ...]         # >= 5: the configuration step that applies {v} for {who}
    runbook_prereq: tuple[str, ...]       # >= 5: access and approvals needed; no value
    runbook_verify: tuple[str, ...]       # >= 5: how to check the change; no value
    questions: tuple[str, ...]            # >= 9: asking the value in force now for {who}
    historical_questions: tuple[str, ...]  # >= 3: asking the value for {who} on {date}
    dependent_questions: tuple[str, ...]  # >= 4: asking what to configure in the system for {who}

    def render(self, n: int) -> str:
        return self.phrase.format(n=n)


MIN_COUNTS = {"fact": 6, "scope": 5, "procedure": 5, "contacts": 5, "runbook_step": 5, "runbook_prereq": 5,
              "runbook_verify": 5, "questions": 9, "historical_questions": 3, "dependent_questions": 4}
N_SCOPES = 5
MIN_VALUES = 7
SECTIONS = ("fact", "scope", "procedure", "contacts", "runbook_step", "runbook_prereq", "runbook_verify")
VALUE_SECTIONS = ("fact", "runbook_step")
QUESTION_FIELDS = ("questions", "historical_questions", "dependent_questions")
SECTION_MIN, SECTION_MAX = 101, 193  # 193 + a scale team marker (" ~3875", <= 6) stays within the 200-char chunker
QUESTION_MAX = 160

# The catalog's files, in catalog order: topics/a.json .. topics/d.json, five topics each.
PARTS = ("a", "b", "c", "d")
_TOPIC_FIELDS = tuple(f.name for f in dataclasses.fields(Topic))
_SCOPE_FIELDS = tuple(f.name for f in dataclasses.fields(Scope))
_TEXT_FIELDS = ("key", "title", "runbook_title", "topic", "phrase")


class CatalogError(BenchError):
    """A catalog file is malformed; the message names the file, the topic and the field."""


def _check_fields(where: str, raw, names: tuple[str, ...]) -> None:
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: must be an object with the fields {', '.join(names)}")
    missing = [n for n in names if n not in raw]
    if missing:
        raise CatalogError(f"{where}: missing field {missing[0]!r}")
    unknown = [n for n in raw if n not in names]
    if unknown:
        raise CatalogError(f"{where}: unknown field {unknown[0]!r}; allowed: {', '.join(names)}")


def _list_of(where: str, value, kind: type, what: str) -> list:
    # bool is an int subclass: a JSON true among the values is a typo, not 1
    if not isinstance(value, list) or not all(isinstance(x, kind) and not isinstance(x, bool) for x in value):
        raise CatalogError(f"{where}: must be a list of {what}")
    return value


def _scope(where: str, raw) -> Scope:
    _check_fields(where, raw, _SCOPE_FIELDS)
    for name in _SCOPE_FIELDS:
        if not isinstance(raw[name], str):
            raise CatalogError(f"{where}.{name}: must be a string")
    return Scope(**raw)


def _topic(where: str, raw) -> Topic:
    _check_fields(where, raw, _TOPIC_FIELDS)
    kw: dict = {}
    for name in _TOPIC_FIELDS:
        value, at = raw[name], f"{where}.{name}"
        if name in _TEXT_FIELDS:
            if not isinstance(value, str):
                raise CatalogError(f"{at}: must be a string")
            kw[name] = value
        elif name == "values":
            kw[name] = tuple(_list_of(at, value, int, "integers"))
        elif name == "scopes":
            kw[name] = tuple(_scope(f"{at}[{j}]", s) for j, s in enumerate(_list_of(at, value, dict, "objects")))
        else:
            kw[name] = tuple(_list_of(at, value, str, "strings"))
    return Topic(**kw)


def load_topics(path) -> tuple[Topic, ...]:
    """The topics of one catalog file (a path or an importlib.resources Traversable), in file order. A file
    that is not ``{"about": str, "topics": [topic, ...]}`` with every Topic and Scope field, and no other,
    raises a one-line :class:`CatalogError` naming the file, the topic and the field."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(f"{path}: no such catalog file") from None
    except json.JSONDecodeError as e:
        raise CatalogError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
    _check_fields(str(path), doc, ("about", "topics"))
    topics = _list_of(f"{path}: topics", doc["topics"], dict, "topic objects")
    out = []
    for i, raw in enumerate(topics):
        key = raw.get("key")
        out.append(_topic(f"{path}: topic {key}" if isinstance(key, str) else f"{path}: topics[{i}]", raw))
    return tuple(out)


def load_catalog() -> tuple[Topic, ...]:
    """Every topic of the catalog: the files of :data:`PARTS`, found through importlib.resources so that an
    installed wheel reads its own copy."""
    folder = resources.files(__package__).joinpath("topics")
    return tuple(t for part in PARTS for t in load_topics(folder.joinpath(f"{part}.json")))
