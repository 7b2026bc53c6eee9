"""A fact file (``data_gen/facts/<corpus>.yaml``) read into typed :class:`Fact` records, every problem named by
``file:line: fact <id>: key``. The format is documented in docs/facts.md; the history checks are timeline.py's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml

from smartvector_bench.core.errors import BenchError

KINDS = ("money", "duration", "count", "percentage", "date", "name", "rule")
FACT_KEYS = {"id", "kind", "paths", "context", "value", "aliases", "timeline", "questions", "group", "elsewhere",
             "note"}
REQUIRED = ("id", "kind", "paths", "value", "timeline", "questions")
FILE_KEYS = {"corpus", "source", "facts"}
PLACEHOLDERS = ("{date}", "{Date}")
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{1,79}$")


@dataclass(frozen=True)
class Period:
    """From ``start`` (a UTC day) on, the fact's documents state ``value``; None: no single value (the fact is
    not stated there, or two values are)."""

    start: date
    value: str | None


@dataclass(frozen=True)
class Fact:
    id: str
    corpus: str
    kind: str
    paths: tuple[str, ...]          # where it is stated (every path the document had)
    value: re.Pattern               # one group: the value as written
    context: re.Pattern | None      # a paragraph must match it too
    aliases: dict[str, str]         # another spelling -> the canonical value
    timeline: tuple[Period, ...]
    questions: tuple[str, ...]      # 1-3, written by hand; with {date}: historical wording
    group: str | None               # facts of one group go to one split (facts sharing a paragraph lineage join)
    elsewhere: bool                 # statements outside ``paths`` count (grade 1 / stale)
    where: str                      # file:line of the fact, for messages

    def canon(self, written: str) -> str:
        """The canonical value of a spelling found in a paragraph: case and whitespace folded, then aliases."""
        v = " ".join(written.lower().split())
        return self.aliases.get(v, v)

    def extract(self, text: str) -> str | None:
        """The canonical value ``text`` states for this fact, or None (no context, or no value match)."""
        if self.context is not None and not self.context.search(text):
            return None
        m = self.value.search(text)
        return None if m is None else self.canon(m.group(1))

    @property
    def current_questions(self) -> tuple[str, ...]:
        return tuple(q for q in self.questions if not any(p in q for p in PLACEHOLDERS))

    @property
    def historical_questions(self) -> tuple[str, ...]:
        return tuple(q for q in self.questions if any(p in q for p in PLACEHOLDERS))


def _lines(node) -> dict[int, int]:
    """The 1-based line of each item of the ``facts`` sequence node."""
    for key, value in getattr(node, "value", []) or []:
        if getattr(key, "value", None) == "facts" and isinstance(value, yaml.SequenceNode):
            return {i: item.start_mark.line + 1 for i, item in enumerate(value.value)}
    return {}


def _regex(raw, where: str, key: str, groups: int | None) -> re.Pattern:
    if not isinstance(raw, str) or not raw:
        raise BenchError(f"{where}: {key}: must be a regular expression (a non-empty string)")
    try:
        pattern = re.compile(raw, re.IGNORECASE)
    except re.error as exc:
        raise BenchError(f"{where}: {key}: not a regular expression ({exc})") from None
    if groups is not None and pattern.groups != groups:
        raise BenchError(f"{where}: {key}: must have exactly {groups} capturing group (the value as written); it has "
                         f"{pattern.groups} (use (?:...) for the others)")
    return pattern


def _day(raw, where: str) -> date:
    if isinstance(raw, date):
        return raw
    try:
        return date.fromisoformat(str(raw))
    except ValueError:
        raise BenchError(f"{where}: from: {raw!r} is not a date (YYYY-MM-DD)") from None


def parse_fact(raw, corpus: str, where: str) -> Fact:
    if not isinstance(raw, dict):
        raise BenchError(f"{where}: a fact must be a mapping with {', '.join(REQUIRED)}")
    fid = raw.get("id")
    if not isinstance(fid, str) or not _ID.match(fid):
        raise BenchError(f"{where}: id: {fid!r} must be 2-80 characters of a-z, 0-9 and '-'")
    where = f"{where}: fact {fid}"
    unknown = sorted(set(raw) - FACT_KEYS)
    if unknown:
        raise BenchError(f"{where}: {unknown[0]}: unknown key; allowed: {', '.join(sorted(FACT_KEYS))}")
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise BenchError(f"{where}: {missing[0]}: missing (required: {', '.join(REQUIRED)})")
    if raw["kind"] not in KINDS:
        raise BenchError(f"{where}: kind: {raw['kind']!r}; allowed: {', '.join(KINDS)}")
    paths = raw["paths"]
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
        raise BenchError(f"{where}: paths: must be a repository path or a list of them")
    aliases = raw.get("aliases") or {}
    if not isinstance(aliases, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()):
        raise BenchError(f"{where}: aliases: must map a spelling to the canonical value (strings)")
    aliases = {" ".join(k.lower().split()): " ".join(v.lower().split()) for k, v in aliases.items()}
    timeline = raw["timeline"]
    if not isinstance(timeline, list) or not timeline:
        raise BenchError(f"{where}: timeline: must be a list of {{from: YYYY-MM-DD, value: ...}}, oldest first")
    periods = []
    for k, p in enumerate(timeline, 1):
        at = f"{where}: timeline[{k}]"
        if not isinstance(p, dict) or set(p) != {"from", "value"}:
            raise BenchError(f"{at}: must be {{from: YYYY-MM-DD, value: <the value as written, or null>}}")
        v = p["value"]
        if v is not None and not isinstance(v, (str, int, float)):
            raise BenchError(f"{at}: value: must be the value as written (a string) or null")
        periods.append(Period(_day(p["from"], at), None if v is None else " ".join(str(v).lower().split())))
    for a, b in zip(periods, periods[1:]):  # two periods may start on one day (a value that lasted minutes)
        if b.start < a.start:
            raise BenchError(f"{where}: timeline: {b.start} comes before {a.start}; list periods oldest first")
    questions = raw["questions"]
    if isinstance(questions, str):
        questions = [questions]
    if not isinstance(questions, list) or not 1 <= len(questions) <= 3 or \
            not all(isinstance(q, str) and len(q.split()) >= 3 for q in questions):
        raise BenchError(f"{where}: questions: one to three questions, each a sentence written by hand")
    for q in questions:
        if q.count("{") != sum(q.count(p) for p in PLACEHOLDERS):
            raise BenchError(f"{where}: questions: {q!r}: the only placeholders are {{date}} and {{Date}}")
    group = raw.get("group")
    if group is not None and (not isinstance(group, str) or not group):
        raise BenchError(f"{where}: group: must be a name")
    elsewhere = raw.get("elsewhere", True)
    if not isinstance(elsewhere, bool):
        raise BenchError(f"{where}: elsewhere: must be true or false")
    return Fact(fid, corpus, raw["kind"], tuple(paths), _regex(raw["value"], where, "value", 1),
                None if raw.get("context") is None else _regex(raw["context"], where, "context", None), aliases,
                tuple(periods), tuple(questions), group, elsewhere, where)


def load_fact_file(path: str | Path) -> tuple[str, list[Fact]]:
    """(the corpus name, its facts) of one fact file. BenchError naming the file and line of the first problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchError(f"{path}: cannot read the fact file ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            doc = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise BenchError(f"{path}{line}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("corpus"), str) or not isinstance(doc.get("facts"), list):
        raise BenchError(f"{path}: must be a mapping with corpus: <name> and facts: [...]")
    unknown = sorted(set(doc) - FILE_KEYS)
    if unknown:
        raise BenchError(f"{path}: {unknown[0]}: unknown key; allowed: {', '.join(sorted(FILE_KEYS))}")
    lines = _lines(node)
    facts = [parse_fact(raw, doc["corpus"], f"{path}:{lines.get(i, 1)}") for i, raw in enumerate(doc["facts"])]
    seen: dict[str, str] = {}
    for f in facts:
        if f.id in seen:
            raise BenchError(f"{f.where}: id: also used at {seen[f.id]}; fact ids are unique")
        seen[f.id] = f.where
    return doc["corpus"], facts
