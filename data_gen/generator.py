"""The seeded versioned-policy generator (benchmark v3).

A *family* is one (topic, scope) pair of the catalog (``data_gen.catalog``): one fact, say the annual
leave allowance of warehouse staff, whose value changes over time. For each family drawn:

- a **policy document** with several versions (each a new effective date and value), its four sections
  (scope, fact, procedure, contacts) in an order of the family's own; a revision rewords each other section
  with probability ``section_edit_rate`` (new wording, contacts and numbers), as real revisions do;
- for ``runbook_fraction`` of the families a **runbook** (technical doc or wiki) whose configuration step
  applies the value, revised after each policy version. A *lagging* runbook gets its last revision without the
  new value: an authoritative source, window open, stating the old value;
- **messages** (slack, email, meeting notes; :mod:`data_gen.chatter`): injected rumors stating a wrong value,
  confirmations of the value in force when written (which can go out of date), notes that state no value,
  and an announcement of the latest change before the policy document is revised (the revision is not yet
  published when the queries are asked, so the old policy version is still open and only the message is right).

Which families get which scenario is a factorial design (:mod:`data_gen.scenarios`): versions, lagging
source, early announcement, recent change, rumors, confirmations and notes are drawn independently, each at
its own rate. Every chunk's length and digit count are drawn from one distribution whatever its role
(:mod:`data_gen.layout`), and message wording is drawn independently of whether the message is right
(:mod:`data_gen.catalog.messages`).

Dependency edges join answer and non-answer chunks alike: runbook step -> policy fact, runbook prerequisite
-> policy scope, verification -> step, procedure -> contacts, cross-policy references (scope -> another
family's contacts) and message replies. Ids are opaque, the corpus rows are shuffled, and labels (family,
kind, value) go to ``labels/``; judgments follow :mod:`smartvector_bench.core.evaluation.judgments`.

Why this module is long: a family is one story told in order (time line, policy with its revisions, runbook,
cross references, queries and their judgments); scenarios, messages, layout, splits and the text live in their
own modules.

Randomness comes from named sub-streams of the seed (``seeded_rng(seed, purpose, family)``), so changing one
knob (say the contradiction rate) leaves every other draw as it was. The numbers of vectors, documents,
families and queries depend on the config only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from smartvector_bench.core.dataset.chunking import chunk_sentences
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.judgments import Judgment, Timeline, judge_at
from smartvector_bench.core.timeutil import format_iso, parse_iso

from .catalog.base import draw_fillers
from .chatter import add_messages, certainty_levels
from .common import FamilySpec, OpaqueIds, catalog_families, seeded_rng, weighted_choice as _weighted
from .layout import draw_furniture, fit, fit_version
from .params import GeneratorParams
from .scenarios import FamilyPlan, plan_families

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
class Family:
    """What one family contributes, plus the handles queries need."""

    plan: FamilyPlan
    timeline: Timeline
    chunks: list[ChunkRecord] = field(default_factory=list)
    scope_ids: list[str] = field(default_factory=list)  # policy scope chunk per version
    contacts_ids: list[str] = field(default_factory=list)
    contacts_created: list[float] = field(default_factory=list)


@dataclass
class SectionState:
    """A section's wording between revisions: template index, number fillers and furniture draws."""

    template: int
    fill: dict[str, str]
    furniture: dict



class Generator:
    def __init__(self, params: GeneratorParams):
        self.p = params
        self.start = parse_iso(params.start)
        self._ids = OpaqueIds(seeded_rng(params.seed, "ids"))
        self.levels: dict | None = None  # message certainty levels, balanced over the dataset (generate())

    # -- helpers ---------------------------------------------------------------------------------------------
    def iso(self, offset_days: float) -> str:
        return format_iso(self.start + timedelta(days=float(offset_days)))

    def human_date(self, offset_days: float) -> str:
        d = self.start + timedelta(days=float(offset_days))
        return f"{d.day} {d:%B %Y}"

    def new_id(self, prefix: str) -> str:
        return self._ids.new(prefix)

    def furniture(self, rng: np.random.Generator, pool: str) -> dict:
        return draw_furniture(rng, pool, self.p.section_chars, self.p.section_digits)

    @property
    def layout_cap(self) -> int:
        """Furniture never takes a chunk past section_chars' high end (the scale tool appends a team marker)."""
        return self.p.section_chars[1] + 1

    def fit(self, core: str, furniture: dict) -> str:
        return fit(core, furniture, self.layout_cap)

    def fit_version(self, sections: list[tuple[str, str, int | None]], states: dict) -> list[tuple[str, str, int | None]]:
        """(name, core, value) of one document version -> (name, text, value), laid out together (data_gen.layout)."""
        texts = fit_version([t for _, t, _ in sections], [states[n].furniture for n, _, _ in sections],
                            self.layout_cap)
        return [(n, t, v) for (n, _, v), t in zip(sections, texts)]

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
        """Chunk one document version, one chunk per section (chunked on its own, so sections never merge);
        ``sections`` are (name, text, value); returns {section name: chunk id}."""
        ids: dict[str, str] = {}
        offset = 0
        for name, text, value in sections:
            parts = chunk_sentences(text, self.p.chunk_chars)
            if len(parts) != 1:
                raise BenchError(f"family {fam.plan.spec.key!r}: a {doc_type} section made {len(parts)} chunks, "
                                 f"expected 1; dataset.chunk_chars={self.p.chunk_chars} does not fit "
                                 f"dataset.section_chars={list(self.p.section_chars)}")
            c = parts[0]
            cid = self.new_id("c")
            ids[name] = cid
            fam.chunks.append(ChunkRecord(
                id=cid, title=title, text=c.text, doc_id=doc_id, version=version, source=source,
                authority=self.p.authority[source], created_at=created, valid_from=valid_from, valid_to=valid_to,
                depends_on=list((depends or {}).get(name, [])), supersedes=None, offset_start=offset + c.start,
                offset_end=offset + c.end, family=fam.plan.spec.key, doc_type=doc_type, kind=KIND_OF.get(name, name),
                value=value))
            offset += len(text) + 1  # sections are joined by a newline
        if prev_ids:
            by_id = {c.id: c for c in fam.chunks[-len(sections):]}
            for (name, _, _), old in zip(sections, prev_ids):
                by_id[ids[name]].supersedes = old
        return ids

    def _revise(self, states: dict[str, SectionState], names: list[str], pools: dict[str, int], rng, frng,
                reword: dict[str, float], pool: str) -> None:
        """One revision's edits: each section is reworded (a new template, numbers and furniture) with its
        probability. Every draw is made for every section, so the rates decide only what is used."""
        for s in names:
            u, shift = rng.random(), int(rng.integers(1, 10 ** 6))
            fill, furniture = draw_fillers(rng), self.furniture(frng, pool)
            if u < reword[s] and pools[s] > 1:
                old = states[s].template
                states[s] = SectionState((old + 1 + shift % (pools[s] - 1)) % pools[s], fill, furniture)

    def family(self, plan: FamilyPlan) -> Family:
        p, spec, topic = self.p, plan.spec, plan.spec.topic
        j = spec.index
        rng_val = seeded_rng(p.seed, "values", spec.key)
        rng_text = seeded_rng(p.seed, "wording", spec.key)
        rng_furn = seeded_rng(p.seed, "furniture", spec.key)
        rng_src = seeded_rng(p.seed, "sources", spec.key)
        rng_time = seeded_rng(p.seed, "publish", spec.key)
        rng_layout = seeded_rng(p.seed, "layout", spec.key)
        fill = draw_fillers(seeded_rng(p.seed, "fillers", spec.key))

        n_true = plan.n_versions + int(plan.announced)
        dates = self._change_dates(spec, n_true, plan.recent)
        values = [int(v) for v in rng_val.choice(topic.values, size=n_true, replace=False)]
        fam = Family(plan, Timeline(np.asarray(dates, dtype=np.float64), np.asarray(values, dtype=np.float64)))

        # Policy document: the family's own section order; wording carried from version to version.
        policy_source = _weighted(rng_src, p.policy_sources)
        layout = [POLICY_SECTIONS[i] for i in rng_layout.permutation(len(POLICY_SECTIONS))]
        pools = {s: len(getattr(topic, s)) for s in layout}
        states = {s: SectionState(j, dict(fill), self.furniture(rng_furn, "document")) for s in layout}
        reword = {s: p.fact_reword_prob if s == "fact" else p.section_edit_rate for s in layout}
        policy_doc = self.new_id("d")
        prev: list[str] = []
        fact_ids: list[str] = []
        for k in range(plan.n_versions):
            if k > 0:
                self._revise(states, layout, pools, rng_text, rng_furn, reword, "document")
            valid_from = dates[k]
            valid_to = np.inf if k + 1 == plan.n_versions else dates[k + 1]
            lead = float(rng_time.integers(p.publish_lead_days[0], p.publish_lead_days[1] + 1))
            created = max(0.0, valid_from - lead)
            sections = self.fit_version([(s, self._render(fam, s, states[s], values[k] if s == "fact" else None,
                                                          created, valid_from), values[k] if s == "fact" else None)
                                         for s in layout], states)
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
        add_messages(self, fam, dates, values, self.levels)
        return fam

    def _render(self, fam: Family, section: str, state: SectionState, value: int | None, published: float,
                effective: float) -> str:
        """A section's core text: its template with the state's numbers (furniture follows, per version)."""
        spec, topic = fam.plan.spec, fam.plan.spec.topic
        pool = getattr(topic, section)
        kw = {**state.fill, "who": spec.scope.who, "topic": topic.topic, "doc": topic.title,
              "published": self.human_date(published), "effective": self.human_date(effective)}
        if value is not None:
            kw["v"] = topic.render(value)
        return pool[state.template % len(pool)].format(**kw)

    def _runbook(self, fam: Family, dates: np.ndarray, values: list[int], fact_ids: list[str], fill: dict,
                 rng_src: np.random.Generator, rng_time: np.random.Generator, rng_layout: np.random.Generator) -> None:
        p, plan, spec, topic = self.p, fam.plan, fam.plan.spec, fam.plan.spec.topic
        j = spec.index
        rng_text = seeded_rng(p.seed, "runbook wording", spec.key)
        rng_furn = seeded_rng(p.seed, "runbook furniture", spec.key)
        source = _weighted(rng_src, p.runbook_sources)
        layout = [RUNBOOK_SECTIONS[i] for i in rng_layout.permutation(len(RUNBOOK_SECTIONS))]
        pools = {s: len(getattr(topic, s)) for s in layout}
        states = {s: SectionState(j, dict(fill), self.furniture(rng_furn, "document")) for s in layout}
        reword = {s: p.fact_reword_prob if s == "runbook_step" else p.section_edit_rate for s in layout}
        doc_id = self.new_id("d")
        n = plan.n_versions
        revs = []
        for k in range(n):
            lag = float(rng_time.integers(p.runbook_lag_days[0], p.runbook_lag_days[1] + 1))
            limit = p.horizon_days - 1 if k + 1 == n else dates[k + 1] - 1
            revs.append(min(dates[k] + lag, max(dates[k], limit)))
        prev: list[str] = []
        for k, rev in enumerate(revs):
            if k > 0:  # every revision edits alike, lagging or not: the edit itself says nothing of the value
                self._revise(states, layout, pools, rng_text, rng_furn, reword, "document")
            lagging = plan.lagging and k + 1 == n and n >= 2
            value = values[k - 1] if lagging else values[k]
            sections = self.fit_version([(s, self._render(fam, s, states[s], value if s == "runbook_step" else None,
                                                          rev, rev), value if s == "runbook_step" else None)
                                         for s in layout], states)
            # The step applies the policy fact in force; the prerequisite points to the policy's scope section;
            # the verification checks the step (a two-hop chain).
            ids = self._document(fam, doc_id=doc_id, title=topic.runbook_title + f": {spec.scope.title}",
                                 sections=sections, doc_type="runbook", version=k + 1, source=source, created=rev,
                                 valid_from=rev, valid_to=revs[k + 1] if k + 1 < n else np.inf, prev_ids=prev,
                                 depends={"runbook_step": [fact_ids[k]], "runbook_prereq": [fam.scope_ids[k]]})
            by_id = {c.id: c for c in fam.chunks}
            by_id[ids["runbook_verify"]].depends_on.append(ids["runbook_step"])
            prev = [ids[s] for s in layout]

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
        """``contested``: an injected rumor (a message wrong when written) exists at as_of; else
        ``recently_updated`` if the value changed within recent_days; else ``current``. (A confirmation that
        has gone out of date is in the query's rumor set but does not make the fact contested.)"""
        if rec.category in ("historical", "dependent"):
            return
        if any(c.message_type == "rumor" and c.created_at <= rec.as_of for c in fam.chunks):
            rec.category = "contested"
        elif rec.as_of - fam.timeline.effective_from[-1] <= self.p.recent_days:
            rec.category = "recently_updated"

    # -- the whole dataset -----------------------------------------------------------------------------------
    def plan(self) -> list[FamilyPlan]:
        """One plan per family: which families, then their scenario features (data_gen.scenarios). Counts depend
        on the config only, never on the seed."""
        p = self.p
        catalog = catalog_families()
        if p.n_families > len(catalog):
            raise BenchError(f"dataset.n_families={p.n_families}: the catalog has {len(catalog)} families")
        order = seeded_rng(p.seed, "families").permutation(len(catalog))[: p.n_families]
        specs = [catalog[int(i)] for i in order]
        for i, spec in enumerate(specs):
            need = p.versions[i % len(p.versions)] + 2  # one more for an announced change, one unused for rumors
            if need > len(spec.topic.values):
                raise BenchError(f"dataset.versions={list(p.versions)}: topic {spec.topic.key!r} has "
                                 f"{len(spec.topic.values)} values; use at most {len(spec.topic.values) - 2} versions")
        return plan_families(p, specs)

    def generate(self) -> tuple[list[ChunkRecord], list[QueryRecord], list[Family]]:
        plans = self.plan()
        self.levels = certainty_levels(self.p.seed, plans)
        families = [self.family(plan) for plan in plans]
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
