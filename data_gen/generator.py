"""The seeded versioned-policy generator (benchmark v2).

A *family* is one (topic, scope) pair of the catalog (``data_gen.catalog``): one fact, say the annual
leave allowance of warehouse staff, whose value changes over time. For each family drawn:

- a **policy document** with several versions (each a new effective date and value), its four sections
  (scope, fact, procedure, contacts) in an order of the family's own, every section carrying numbers;
- for ``runbook_fraction`` of the families a **runbook** (technical doc or wiki) whose configuration step
  applies the value, revised after each policy version. A *lagging* runbook (``lagging_source_rate``) gets
  its last revision without the new value: an authoritative source, window open, stating the old value;
- ``chatter_per_family`` **messages** (slack, email, meeting notes): injected rumours stating a wrong value
  (``contradiction_rate``), confirmations of the value in force when written (which can go out of date),
  notes that state no value, and, for ``early_announcement_rate`` of the families, an HR email that
  announces the latest change before the policy document is revised (the revision is not yet published
  when the queries are asked, so the old policy version is still open and only the email is right).

Dependency edges join answer and non-answer chunks alike: runbook step -> policy fact, runbook prerequisite
-> policy scope, verification -> step, procedure -> contacts, cross-policy references (scope -> another
family's contacts) and message replies. Ids are opaque, the corpus rows are shuffled, and labels (family,
kind, value) go to ``labels/``; judgments follow :mod:`smartvector_bench.core.labels`.

Randomness comes from named sub-streams of the seed (``seeded_rng(seed, purpose, family)``), so changing one knob
(say the contradiction rate) leaves every other draw as it was. The numbers of vectors, documents, families and
queries (per family and per category kind) depend on the config only; which messages confirm and which are
notes is drawn per message (``confirmation_rate``), and so are the categories a query's judgments imply.

Why this module is long: a family is one story told in order (time line, policy, runbook,
messages, cross references, queries); the splits live in ``data_gen.splits``, the seeded streams and ids in
``data_gen.common`` and the text in the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from smartvector_bench.core.chunking import chunk_sentences
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.labels import Judgment, Timeline, judge_at
from smartvector_bench.core.timeutil import format_iso, parse_iso

from .catalog.base import draw_fillers
from .catalog.messages import (ANNOUNCEMENT_TEMPLATES, CONFIRMATION_TEMPLATES, MESSAGE_MAX, NOTE_TEMPLATES,
                               PEOPLE, RUMOR_TEMPLATES)
from .common import FamilySpec, OpaqueIds, catalog_families, seeded_rng
from .params import GeneratorParams

from .splits import CATEGORY_ORDER, assign_family_splits  # noqa: F401  (CATEGORY_ORDER re-exported)
POLICY_SECTIONS = ("scope", "fact", "procedure", "contacts")
RUNBOOK_SECTIONS = ("runbook_prereq", "runbook_step", "runbook_verify")
KIND_OF = {"fact": "statement", "scope": "scope", "procedure": "procedure", "contacts": "contacts",
           "runbook_step": "statement", "runbook_prereq": "prerequisite", "runbook_verify": "verification"}


@dataclass
class ChunkRecord:
    id: str
    title: str
    text: str
    doc_id: str
    version: int
    source: str
    authority: float
    created_at: float  # days from start
    valid_from: float
    valid_to: float  # inf = open
    depends_on: list[str]
    supersedes: str | None
    offset_start: int
    offset_end: int
    # labels (labels/chunks.jsonl; never in the corpus)
    family: str
    doc_type: str
    kind: str
    value: int | None
    message_type: str = ""  # rumor / confirmation / announcement / note (generator bookkeeping, never written)


@dataclass
class QueryRecord:
    id: str
    text: str
    family: str
    query_time: float
    as_of: float
    category: str
    asks: str
    judgment: Judgment | None = None
    split: str = ""


@dataclass
class FamilyPlan:
    spec: FamilySpec
    n_versions: int  # published policy versions
    has_runbook: bool
    n_rumors: int
    recent: bool  # the latest change took effect within recent_days of now
    announced: bool  # the latest change is announced by email and not yet in the policy document
    lagging: bool  # the runbook's last revision kept the old value


@dataclass
class Family:
    """What one family contributes, plus the handles queries need."""

    plan: FamilyPlan
    timeline: Timeline
    chunks: list[ChunkRecord] = field(default_factory=list)
    scope_ids: list[str] = field(default_factory=list)  # policy scope chunk per version
    contacts_ids: list[str] = field(default_factory=list)
    contacts_created: list[float] = field(default_factory=list)


def _weighted(rng: np.random.Generator, weights: dict[str, float]) -> str:
    names = sorted(weights)
    p = np.array([weights[n] for n in names], dtype=float)
    return names[int(rng.choice(len(names), p=p / p.sum()))]


class Generator:
    def __init__(self, params: GeneratorParams):
        self.p = params
        self.start = parse_iso(params.start)
        self._ids = OpaqueIds(seeded_rng(params.seed, "ids"))

    # -- helpers ---------------------------------------------------------------------------------------------
    def iso(self, offset_days: float) -> str:
        return format_iso(self.start + timedelta(days=float(offset_days)))

    def human_date(self, offset_days: float) -> str:
        d = self.start + timedelta(days=float(offset_days))
        return f"{d.day} {d:%B %Y}"

    def new_id(self, prefix: str) -> str:
        return self._ids.new(prefix)

    def _fillers(self, rng: np.random.Generator) -> dict[str, str]:
        return draw_fillers(rng)

    # -- time line -------------------------------------------------------------------------------------------
    def _change_dates(self, fam: FamilySpec, n: int, recent: bool) -> np.ndarray:
        """Sorted effective dates (day offsets) of n changes in [0, horizon - 3], at least min gap apart.

        ``recent``: the latest change takes effect within ``recent_days`` of now (and at least 2 days before).
        """
        rng = seeded_rng(self.p.seed, "dates", fam.key)
        hi = self.p.horizon_days - 3
        gap = self.p.min_version_gap_days
        last = None
        if recent:
            last = float(np.floor(rng.uniform(max(0, self.p.horizon_days - self.p.recent_days), hi)))
            hi, n = last - gap, n - 1
        if n > 0 and (n - 1) * gap > hi:
            raise BenchError(f"dataset.min_version_gap_days={gap} leaves no room for the versions in "
                             f"dataset.horizon_days={self.p.horizon_days}")
        points = np.floor(np.sort(rng.uniform(0, hi - (n - 1) * gap, size=n)) + gap * np.arange(n))
        return points if last is None else np.append(points, last)

    # -- documents -------------------------------------------------------------------------------------------
    def _document(self, fam: Family, *, doc_id: str, title: str, sections: list[tuple[str, str, int | None]],
                  doc_type: str, version: int, source: str, created: float, valid_from: float, valid_to: float,
                  prev_ids: list[str], depends: dict[str, list[str]] | None = None) -> dict[str, str]:
        """Chunk one document version; ``sections`` are (name, text, value); returns {section name: chunk id}."""
        text = "\n".join(t for _, t, _ in sections)
        chunks = chunk_sentences(text, self.p.chunk_chars)
        if len(chunks) != len(sections):
            raise BenchError(f"family {fam.plan.spec.key!r}: a {doc_type} version made {len(chunks)} chunks, expected "
                             f"{len(sections)} (one per section); dataset.chunk_chars={self.p.chunk_chars} does not "
                             f"fit the catalog's 101..199-character sections")
        ids: dict[str, str] = {}
        for c, (name, _, value) in zip(chunks, sections):
            cid = self.new_id("c")
            ids[name] = cid
            fam.chunks.append(ChunkRecord(
                id=cid, title=title, text=c.text, doc_id=doc_id, version=version, source=source,
                authority=self.p.authority[source], created_at=created, valid_from=valid_from, valid_to=valid_to,
                depends_on=list((depends or {}).get(name, [])), supersedes=None, offset_start=c.start,
                offset_end=c.end, family=fam.plan.spec.key, doc_type=doc_type, kind=KIND_OF.get(name, name),
                value=value))
        if prev_ids:
            by_id = {c.id: c for c in fam.chunks[-len(chunks):]}
            for (name, _, _), old in zip(sections, prev_ids):
                by_id[ids[name]].supersedes = old
        return ids

    def family(self, plan: FamilyPlan) -> Family:
        p, spec, topic = self.p, plan.spec, plan.spec.topic
        j = spec.index
        rng_val = seeded_rng(p.seed, "values", spec.key)
        rng_text = seeded_rng(p.seed, "wording", spec.key)
        rng_src = seeded_rng(p.seed, "sources", spec.key)
        rng_time = seeded_rng(p.seed, "publish", spec.key)
        rng_layout = seeded_rng(p.seed, "layout", spec.key)
        fill = self._fillers(seeded_rng(p.seed, "fillers", spec.key))

        n_true = plan.n_versions + int(plan.announced)
        dates = self._change_dates(spec, n_true, plan.recent)
        values = [int(v) for v in rng_val.choice(topic.values, size=n_true, replace=False)]
        fam = Family(plan, Timeline(np.asarray(dates, dtype=np.float64), np.asarray(values, dtype=np.float64)))

        def render(section: str, template: int, value: int | None, date: float) -> str:
            pool = getattr(topic, section)
            kw = {**fill, "who": spec.scope.who, "topic": topic.topic, "doc": topic.title,
                  "date": self.human_date(date)}
            if value is not None:
                kw["v"] = topic.render(value)
            return pool[template % len(pool)].format(**kw)

        # Policy document: the family's own templates and section order, fixed across versions.
        policy_source = _weighted(rng_src, p.policy_sources)
        layout = [POLICY_SECTIONS[i] for i in rng_layout.permutation(len(POLICY_SECTIONS))]
        fact_tpl = j
        policy_doc = self.new_id("d")
        prev: list[str] = []
        fact_ids: list[str] = []
        for k in range(plan.n_versions):
            if k > 0 and rng_text.random() < p.fact_reword_prob:
                fact_tpl = j + 1 if fact_tpl == j else j
            valid_from = dates[k]
            open_end = k + 1 == plan.n_versions
            valid_to = np.inf if open_end else dates[k + 1]
            lead = float(rng_time.integers(p.publish_lead_days[0], p.publish_lead_days[1] + 1))
            created = max(0.0, valid_from - lead)
            sections = [(s, render(s, fact_tpl if s == "fact" else j, values[k] if s == "fact" else None, valid_from),
                         values[k] if s == "fact" else None) for s in layout]
            ids = self._document(fam, doc_id=policy_doc, title=spec.title, sections=sections, doc_type="policy",
                                 version=k + 1, source=policy_source, created=created, valid_from=valid_from,
                                 valid_to=valid_to, prev_ids=prev, depends={"procedure": []})
            by_id = {c.id: c for c in fam.chunks}
            by_id[ids["procedure"]].depends_on.append(ids["contacts"])
            prev = [ids[s] for s in layout]
            fact_ids.append(ids["fact"])
            fam.scope_ids.append(ids["scope"])
            fam.contacts_ids.append(ids["contacts"])
            fam.contacts_created.append(created)

        if plan.has_runbook:
            self._runbook(fam, dates, values, fact_ids, fill, rng_src, rng_time, rng_layout)
        self._messages(fam, dates, values, fill)
        return fam

    def _runbook(self, fam: Family, dates: np.ndarray, values: list[int], fact_ids: list[str], fill: dict,
                 rng_src: np.random.Generator, rng_time: np.random.Generator, rng_layout: np.random.Generator) -> None:
        p, plan, spec, topic = self.p, fam.plan, fam.plan.spec, fam.plan.spec.topic
        j = spec.index
        source = _weighted(rng_src, p.runbook_sources)
        layout = [RUNBOOK_SECTIONS[i] for i in rng_layout.permutation(len(RUNBOOK_SECTIONS))]
        doc_id = self.new_id("d")
        n = plan.n_versions
        revs = []
        for k in range(n):
            lag = float(rng_time.integers(p.runbook_lag_days[0], p.runbook_lag_days[1] + 1))
            limit = p.horizon_days - 1 if k + 1 == n else dates[k + 1] - 1
            revs.append(min(dates[k] + lag, max(dates[k], limit)))
        prev: list[str] = []
        for k, rev in enumerate(revs):
            lagging = plan.lagging and k + 1 == n and n >= 2
            value = values[k - 1] if lagging else values[k]
            tpl = {s: j + (1 if lagging and s != "runbook_step" else 0) for s in layout}  # the edit touched other text
            kw = {**fill, "who": spec.scope.who, "topic": topic.topic, "doc": topic.title,
                  "date": self.human_date(rev), "v": topic.render(value)}
            sections = []
            for s in layout:
                pool = getattr(topic, s)
                sections.append((s, pool[tpl[s] % len(pool)].format(**kw), value if s == "runbook_step" else None))
            # The step applies the policy fact in force; the prerequisite points to the policy's scope section;
            # the verification checks the step (a two-hop chain).
            ids = self._document(fam, doc_id=doc_id, title=topic.runbook_title + f": {spec.scope.title}",
                                 sections=sections, doc_type="runbook", version=k + 1, source=source, created=rev,
                                 valid_from=rev, valid_to=revs[k + 1] if k + 1 < n else np.inf, prev_ids=prev,
                                 depends={"runbook_step": [fact_ids[k]], "runbook_prereq": [fam.scope_ids[k]]})
            by_id = {c.id: c for c in fam.chunks}
            by_id[ids["runbook_verify"]].depends_on.append(ids["runbook_step"])
            prev = [ids[s] for s in layout]

    def _messages(self, fam: Family, dates: np.ndarray, values: list[int], fill: dict) -> None:
        p, plan, spec, topic = self.p, fam.plan, fam.plan.spec, fam.plan.spec.topic
        rng = seeded_rng(p.seed, "chatter", spec.key)
        n_slots = p.chatter_per_family
        latest = dates[-1]
        unused = [int(v) for v in topic.values if v not in values]
        slots: list[str] = []
        if plan.announced and n_slots:
            slots.append("announcement")
        slots += ["rumor"] * min(plan.n_rumors, n_slots - len(slots))
        made: list[tuple[float, str]] = []  # (created, chunk id) for replies
        for m in range(n_slots):
            # Draw everything for every slot, so the rates only decide what each slot becomes.
            source = _weighted(rng, p.chatter_sources)
            person = PEOPLE[int(rng.integers(len(PEOPLE)))]
            tpl = {name: int(rng.integers(len(pool))) for name, pool in (
                ("rumor", RUMOR_TEMPLATES), ("confirmation", CONFIRMATION_TEMPLATES),
                ("announcement", ANNOUNCEMENT_TEMPLATES), ("note", NOTE_TEMPLATES))}
            newer = rng.random() < p.rumor_newer_prob
            frac = rng.uniform(0.05, 0.95)
            repeat_old = rng.random() < p.rumor_repeats_old_value
            confirm = rng.random() < p.confirmation_rate
            old_pick, new_pick = int(rng.integers(10 ** 6)), int(rng.integers(10 ** 6))
            lead = float(rng.integers(p.announcement_lead_days[0], p.announcement_lead_days[1] + 1))
            reply = rng.random() < p.reply_rate
            reply_pick = int(rng.integers(10 ** 6))
            hour = float(rng.integers(8, 19)) / 24
            msg_fill = self._fillers(rng)
            kind = slots[m] if m < len(slots) else ("confirmation" if confirm else "note")
            if kind == "announcement":
                source = "email"
                created = max(0.0, latest - lead) + hour
                value, date = values[-1], latest
            elif kind == "rumor":
                if newer or len(dates) == 1:  # after the latest change took effect
                    lo, hi = latest, p.horizon_days - 1
                else:  # while the previous value was in force
                    lo, hi = dates[-2], latest
                created = np.floor(lo + frac * (hi - lo)) + hour
                in_force = int(np.searchsorted(dates, created, side="right")) - 1
                old = [values[i] for i in range(max(0, in_force))]  # superseded when the message is written
                pool = old if (repeat_old and old) or not unused else unused
                value, date = pool[(old_pick if pool is old else new_pick) % len(pool)], created
            else:
                created = np.floor(dates[0] + frac * (p.horizon_days - 1 - dates[0])) + hour
                value = fam.timeline.value_at(created) if kind == "confirmation" else None
                value = None if value is None else int(value)
                date = created
            kw = {**msg_fill, "who": spec.scope.who, "topic": topic.topic, "doc": topic.title, "person": person,
                  "date": self.human_date(date)}
            if value is not None:
                kw["v"] = topic.render(value)
            template = {"rumor": RUMOR_TEMPLATES, "confirmation": CONFIRMATION_TEMPLATES,
                        "announcement": ANNOUNCEMENT_TEMPLATES, "note": NOTE_TEMPLATES}[kind][tpl[kind]]
            text = template.format(**kw)
            if len(text) > MESSAGE_MAX:
                raise BenchError(f"family {spec.key!r}: a message renders to {len(text)} characters (> {MESSAGE_MAX}); "
                                 f"shorten the template {template!r}")
            earlier = [cid for t, cid in made if t < created]
            deps = {"message": [earlier[reply_pick % len(earlier)]]} if reply and earlier else None
            ids = self._document(fam, doc_id=self.new_id("d"), title=f"{source.replace('_', ' ')}: {topic.topic}",
                                 sections=[("message", text, value)], doc_type="message", version=1, source=source,
                                 created=created, valid_from=created, valid_to=np.inf, prev_ids=[], depends=deps)
            fam.chunks[-1].kind = "statement" if value is not None else "note"
            fam.chunks[-1].message_type = kind
            made.append((created, ids["message"]))

    # -- queries ---------------------------------------------------------------------------------------------
    def judge(self, fam: Family, rows: dict[str, int], arrays: dict, as_of: float, asks: str) -> Judgment:
        idx = np.array([rows[c.id] for c in fam.chunks], dtype=np.int64)
        return judge_at(idx, arrays["doc_type"][idx], arrays["value"][idx], arrays["created_at"][idx],
                        arrays["valid_from"][idx], arrays["valid_to"][idx], fam.timeline, as_of, asks)

    def family_queries(self, fam: Family) -> list[QueryRecord]:
        p, q, plan, topic = self.p, self.p.queries, fam.plan, fam.plan.spec.topic
        who = plan.spec.scope.who
        rng = seeded_rng(p.seed, "queries", plan.spec.key)
        records: list[QueryRecord] = []
        dates = fam.timeline.effective_from

        def asked() -> float:
            return p.horizon_days + float(rng.uniform(0, p.query_window_days))

        order = rng.permutation(len(topic.questions))
        for i in range(q.current_per_family):
            t = asked()
            records.append(QueryRecord("", topic.questions[int(order[i % len(order)])].format(who=who), plan.spec.key,
                                       t, t, "current", "policy"))
        if len(dates) > 1:
            for i in range(q.historical_per_family):
                k = int(rng.integers(len(dates) - 1))  # a superseded value's window [D_k, D_k+1)
                lo, hi = dates[k], dates[k + 1]
                as_of = float(np.floor(lo + rng.uniform(0.05, 0.95) * (hi - lo))) + 0.5
                tpl = topic.historical_questions[i % len(topic.historical_questions)]
                records.append(QueryRecord("", tpl.format(who=who, date=self.human_date(as_of)), plan.spec.key,
                                           asked(), as_of, "historical", "policy"))
        if plan.has_runbook:
            order = rng.permutation(len(topic.dependent_questions))
            for i in range(q.dependent_per_family):
                t = asked()
                records.append(QueryRecord("", topic.dependent_questions[int(order[i % len(order)])].format(who=who),
                                           plan.spec.key, t, t, "dependent" if len(dates) > 1 else "current", "runbook"))
        return records

    def _categorise(self, rec: QueryRecord, fam: Family) -> None:
        """``contested``: an injected rumour (a message wrong when written) exists at as_of; else
        ``recently_updated`` if the value changed within recent_days; else ``current``. (A confirmation that
        has gone out of date is in the query's rumour set but does not make the fact contested.)"""
        if rec.category in ("historical", "dependent"):
            return
        if any(c.message_type == "rumor" and c.created_at <= rec.as_of for c in fam.chunks):
            rec.category = "contested"
        elif rec.as_of - fam.timeline.effective_from[-1] <= self.p.recent_days:
            rec.category = "recently_updated"

    # -- the whole dataset -----------------------------------------------------------------------------------
    def plan(self) -> list[FamilyPlan]:
        """One plan per family. Counts depend on the config only, never on the seed: the seed picks which
        families, values, dates, wording and which families get each scenario."""
        p = self.p
        catalog = catalog_families()
        if p.n_families > len(catalog):
            raise BenchError(f"dataset.n_families={p.n_families}: the catalog has {len(catalog)} families")
        order = seeded_rng(p.seed, "families").permutation(len(catalog))[: p.n_families]
        specs = [catalog[int(i)] for i in order]
        for i, spec in enumerate(specs):
            need = p.versions[i % len(p.versions)] + 2  # one more for an announced change, one unused for rumours
            if need > len(spec.topic.values):
                raise BenchError(f"dataset.versions={list(p.versions)}: topic {spec.topic.key!r} has "
                                 f"{len(spec.topic.values)} values; use at most {len(spec.topic.values) - 2} versions")
        n = p.n_families
        n_runbooks = int(round(p.runbook_fraction * n))
        n_rumors = int(round(p.contradiction_rate * n * p.chatter_per_family))
        n_announced = min(n, int(round(p.early_announcement_rate * n)))
        n_recent = max(int(round(p.recent_fraction * n)), n_announced)
        deal = seeded_rng(p.seed, "contradictions").permutation(n)
        back = deal[::-1]
        announced = np.zeros(n, dtype=bool)
        announced[back[:n_announced]] = True
        recent = np.zeros(n, dtype=bool)
        recent[back[:n_recent]] = True
        slots = np.full(n, p.chatter_per_family) - (announced & (p.chatter_per_family > 0))
        rumors = np.zeros(n, dtype=int)
        for idx in deal:  # rumours fill families in a seeded order, so some facts are contested and others not
            rumors[idx] = min(int(slots[idx]), n_rumors - int(rumors.sum()))
        versions = [p.versions[i % len(p.versions)] for i in range(n)]
        can_lag = [i for i in seeded_rng(p.seed, "lagging").permutation(n).tolist()
                   if i < n_runbooks and not announced[i] and versions[i] >= 2]
        lagging = set(can_lag[: int(round(p.lagging_source_rate * n_runbooks))])
        return [FamilyPlan(spec, versions[i], i < n_runbooks, int(rumors[i]), bool(recent[i]), bool(announced[i]),
                           i in lagging) for i, spec in enumerate(specs)]

    def generate(self) -> tuple[list[ChunkRecord], list[QueryRecord], list[Family]]:
        families = [self.family(plan) for plan in self.plan()]
        self._cross_references(families)
        chunks = [c for f in families for c in f.chunks]
        perm = seeded_rng(self.p.seed, "corpus_order").permutation(len(chunks))
        chunks = [chunks[int(i)] for i in perm]
        rows = {c.id: i for i, c in enumerate(chunks)}
        arrays = {
            "doc_type": np.array([c.doc_type for c in chunks], dtype=object),
            "value": np.array([np.nan if c.value is None else float(c.value) for c in chunks]),
            "created_at": np.array([c.created_at for c in chunks]),
            "valid_from": np.array([c.valid_from for c in chunks]),
            "valid_to": np.array([c.valid_to for c in chunks]),
        }
        queries: list[QueryRecord] = []
        for fam in families:
            for rec in self.family_queries(fam):
                rec.judgment = self.judge(fam, rows, arrays, rec.as_of, rec.asks)
                if len(rec.judgment.relevant) == 0:
                    raise AssertionError(f"{fam.plan.spec.key}: a query at {self.iso(rec.as_of)} has no relevant chunk")
                self._categorise(rec, fam)
                queries.append(rec)
        if not queries:  # else the loader finds an empty queries.jsonl, naming no key
            q = self.p.queries
            raise BenchError(f"dataset.queries: no query generated: current_per_family={q.current_per_family}, "
                             f"historical_per_family={q.historical_per_family} (needs families with 2+ versions: "
                             f"dataset.versions), dependent_per_family={q.dependent_per_family} (needs runbook "
                             "families: dataset.runbook_fraction > 0); raise one that applies")
        perm = seeded_rng(self.p.seed, "query_order").permutation(len(queries))
        queries = [queries[int(i)] for i in perm]
        for i, rec in enumerate(queries, 1):
            rec.id = f"q{i:04d}"
        assign_family_splits(queries, self.p.test_fraction, seeded_rng(self.p.seed, "splits"))
        return chunks, queries, families

    def _cross_references(self, families: list[Family]) -> None:
        """A policy's scope section refers to another family's contacts section (the version that existed when
        the scope section was written), for ``cross_reference_rate`` of the families."""
        if len(families) < 2:
            return
        rng = seeded_rng(self.p.seed, "cross_references")
        for i, fam in enumerate(families):
            refer = rng.random() < self.p.cross_reference_rate
            other = families[(i + 1 + int(rng.integers(len(families) - 1))) % len(families)]
            if not refer:
                continue
            by_id = {c.id: c for c in fam.chunks}
            for sid in fam.scope_ids:
                created = by_id[sid].created_at
                known = [cid for cid, t in zip(other.contacts_ids, other.contacts_created) if t <= created]
                if known:
                    by_id[sid].depends_on.append(known[-1])
