"""The seeded versioned-policy generator.

For each policy family drawn from the catalog: a policy document with several versions (each a new
effective date and a new value of the family's fact), optionally a runbook whose configuration step
depends on the policy fact, and low-authority chatter (slack, email, meeting notes), a share of which
contradicts the fact with a wrong value (contradiction injection). Then queries with one gold chunk each.

Randomness comes from named sub-streams of the seed (``_rng(seed, purpose, family)``), so changing one
knob (say the contradiction rate) leaves every other draw (dates, values, wording) as it was.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from smartvector_bench.chunking import chunk_sentences
from smartvector_bench.errors import BenchError
from smartvector_bench.timeutil import format_iso, parse_iso

from .families import FAMILIES, NEUTRAL_TEMPLATES, PEOPLE, RUMOR_TEMPLATES, Family
from .params import GeneratorParams

CATEGORY_ORDER = ("current", "recently_updated", "contested", "dependent", "historical")


@dataclass
class ChunkRecord:
    id: str
    title: str
    text: str
    doc_id: str
    family: str
    version: int
    source: str
    authority: float
    created_at: str
    valid_from: str
    valid_to: str | None
    depends_on: list[str]
    supersedes: str | None
    chunk_index: int
    offset_start: int
    offset_end: int
    kind: str  # fact / scope / procedure / contacts / runbook_step / ... / rumor / chatter

    def to_beir(self) -> dict:
        return {
            "_id": self.id, "title": self.title, "text": self.text,
            "metadata": {
                "doc_id": self.doc_id, "family": self.family, "version": self.version, "source": self.source,
                "authority": self.authority, "created_at": self.created_at, "valid_from": self.valid_from,
                "valid_to": self.valid_to, "depends_on": self.depends_on, "supersedes": self.supersedes,
                "chunk_index": self.chunk_index, "offset_start": self.offset_start,
                "offset_end": self.offset_end, "kind": self.kind,
            },
        }


@dataclass
class QueryRecord:
    id: str
    text: str
    family: str
    query_time: str
    as_of: str
    category: str
    gold: str
    stale: list[str]
    rumor: list[str]
    split: str = ""

    def to_beir(self) -> dict:
        return {
            "_id": self.id, "text": self.text,
            "metadata": {
                "family": self.family, "query_time": self.query_time, "as_of": self.as_of,
                "category": self.category, "gold": self.gold, "stale": self.stale, "rumor": self.rumor,
                "split": self.split,
            },
        }


@dataclass
class Documents:
    """What one family contributes, plus the handles queries need."""

    chunks: list[ChunkRecord] = field(default_factory=list)
    fact_ids: list[str] = field(default_factory=list)  # policy fact chunk per version
    fact_windows: list[tuple[float, float]] = field(default_factory=list)  # valid [from, to) in days
    values: list[int] = field(default_factory=list)
    runbook_step_ids: list[str] = field(default_factory=list)
    rumor_ids: list[str] = field(default_factory=list)


def _rng(seed: int, *purpose: str) -> np.random.Generator:
    """An independent, stable random stream per (seed, purpose...)."""
    key = [seed] + [zlib.crc32(p.encode()) for p in purpose]
    return np.random.default_rng(key)


def _weighted(rng: np.random.Generator, weights: dict[str, float]) -> str:
    names = sorted(weights)
    p = np.array([weights[n] for n in names], dtype=float)
    return names[int(rng.choice(len(names), p=p / p.sum()))]


class Generator:
    def __init__(self, params: GeneratorParams):
        self.p = params
        self.start = parse_iso(params.start)

    # -- time helpers: offsets in days from `start` ------------------------------------------------------
    def iso(self, offset_days: float) -> str:
        return format_iso(self.start + timedelta(days=float(offset_days)))

    def _version_dates(self, family: Family, n: int, recent: bool) -> np.ndarray:
        """Sorted effective dates (day offsets) of n versions in [0, horizon - 3], at least min gap apart.

        ``recent``: the latest version takes effect within ``recent_days`` of now.
        """
        rng = _rng(self.p.seed, "dates", family.key)
        hi = self.p.horizon_days - 3
        gap = self.p.min_version_gap_days
        last = None
        if recent:
            last = float(np.floor(rng.uniform(max(0, self.p.horizon_days - self.p.recent_days), hi)))
            hi, n = last - gap, n - 1
        if n > 0 and (n - 1) * gap > hi:
            raise BenchError(f"dataset.min_version_gap_days={gap} leaves no room for the versions in "
                             f"dataset.horizon_days={self.p.horizon_days}")
        # Uniform order statistics with a minimum gap: draw in the shrunk interval, then spread.
        points = np.floor(np.sort(rng.uniform(0, hi - (n - 1) * gap, size=n)) + gap * np.arange(n))
        return points if last is None else np.append(points, last)

    # -- documents -----------------------------------------------------------------------------------------
    def family_documents(self, family: Family, n_versions: int, has_runbook: bool, n_chatter: int,
                         n_rumors: int, recent: bool = False) -> Documents:
        p = self.p
        out = Documents()
        rng_text = _rng(p.seed, "wording", family.key)
        rng_src = _rng(p.seed, "sources", family.key)
        rng_val = _rng(p.seed, "values", family.key)
        rng_time = _rng(p.seed, "publish", family.key)

        dates = self._version_dates(family, n_versions, recent)
        values = [int(v) for v in rng_val.choice(family.values, size=n_versions, replace=False)]
        out.values = values
        policy_source = _weighted(rng_src, p.policy_sources)
        templates = {sec: int(rng_text.integers(len(getattr(family, sec))))
                     for sec in ("scope", "fact", "procedure", "contacts")}
        policy_doc = f"POL-{family.key}"
        prev_ids: list[str] = []
        for k in range(n_versions):
            if k > 0 and rng_text.random() < p.fact_reword_prob and len(family.fact) > 1:
                choices = [i for i in range(len(family.fact)) if i != templates["fact"]]
                templates["fact"] = int(rng_text.choice(choices))
            v = family.render(values[k])
            sections = [("scope", None), ("fact", v), ("procedure", None), ("contacts", None)]
            text = "\n".join(getattr(family, sec)[templates[sec]].format(v=val, title=family.title,
                                                                          topic=family.topic)
                             for sec, val in sections)
            valid_from = dates[k]
            valid_to = dates[k + 1] if k + 1 < n_versions else None
            lead = float(rng_time.integers(p.publish_lead_days[0], p.publish_lead_days[1] + 1))
            created = max(0.0, valid_from - lead)
            ids = self._add_document(out, doc_id=policy_doc, title=f"{family.title} (version {k + 1})",
                                     text=text, family=family, version=k + 1, source=policy_source,
                                     created=created, valid_from=valid_from, valid_to=valid_to,
                                     kinds=[s for s, _ in sections], prev_ids=prev_ids)
            out.fact_ids.append(ids[1])
            out.fact_windows.append((valid_from, np.inf if valid_to is None else valid_to))
            prev_ids = ids

        if has_runbook:
            self._add_runbook(out, family, dates, values, rng_text, rng_src, rng_time)
        self._add_chatter(out, family, dates, values, n_chatter, n_rumors)
        return out

    def _add_document(self, out: Documents, *, doc_id: str, title: str, text: str, family: Family,
                      version: int, source: str, created: float, valid_from: float, valid_to: float | None,
                      kinds: list[str], prev_ids: list[str], depends: dict[int, list[str]] | None = None,
                      ) -> list[str]:
        chunks = chunk_sentences(text, self.p.chunk_chars)
        if len(chunks) != len(kinds):
            raise BenchError(f"family {family.key!r}: {doc_id} v{version} made {len(chunks)} chunks, expected "
                             f"{len(kinds)} (one per section); dataset.chunk_chars={self.p.chunk_chars} "
                             f"does not fit the catalog's 101..199-character sections")
        ids = [f"{doc_id}-v{version}-c{c.index}" for c in chunks]
        for c, cid, kind in zip(chunks, ids, kinds):
            deps = list((depends or {}).get(c.index, []))
            out.chunks.append(ChunkRecord(
                id=cid, title=title, text=c.text, doc_id=doc_id, family=family.key, version=version,
                source=source, authority=self.p.authority[source], created_at=self.iso(created),
                valid_from=self.iso(valid_from), valid_to=None if valid_to is None else self.iso(valid_to),
                depends_on=deps, supersedes=prev_ids[c.index] if prev_ids else None, chunk_index=c.index,
                offset_start=c.start, offset_end=c.end, kind=kind,
            ))
        return ids

    def _add_runbook(self, out: Documents, family: Family, dates: np.ndarray, values: list[int],
                     rng_text: np.random.Generator, rng_src: np.random.Generator,
                     rng_time: np.random.Generator) -> None:
        p = self.p
        source = _weighted(rng_src, p.runbook_sources)
        t = {sec: int(rng_text.integers(len(getattr(family, sec))))
             for sec in ("runbook_prereq", "runbook_step", "runbook_verify")}
        doc_id = f"RB-{family.key}"
        # Revised after each policy version takes effect (never after `now`, never before the last revision).
        revs = []
        for k, d in enumerate(dates):
            lag = float(rng_time.integers(p.runbook_lag_days[0], p.runbook_lag_days[1] + 1))
            limit = p.horizon_days - 1 if k + 1 == len(dates) else dates[k + 1] - 1
            revs.append(min(d + lag, max(d, limit)))
        prev_ids: list[str] = []
        for k, rev in enumerate(revs):
            v = family.render(values[k])
            sections = [("runbook_prereq", None), ("runbook_step", v), ("runbook_verify", None)]
            text = "\n".join(getattr(family, sec)[t[sec]].format(v=val, title=family.title, topic=family.topic)
                             for sec, val in sections)
            version = k + 1
            step_id = f"{doc_id}-v{version}-c1"
            # The step applies the policy fact in force; the verification checks the step (a 2-hop chain).
            depends = {1: [out.fact_ids[k]], 2: [step_id]}
            ids = self._add_document(out, doc_id=doc_id, title=f"{family.runbook_title} (revision {version})",
                                     text=text, family=family, version=version, source=source, created=rev,
                                     valid_from=rev, valid_to=revs[k + 1] if k + 1 < len(revs) else None,
                                     kinds=[s for s, _ in sections], prev_ids=prev_ids, depends=depends)
            out.runbook_step_ids.append(ids[1])
            prev_ids = ids

    def _add_chatter(self, out: Documents, family: Family, dates: np.ndarray, values: list[int],
                     n_chatter: int, n_rumors: int) -> None:
        p = self.p
        rng = _rng(p.seed, "chatter", family.key)
        latest = dates[-1]
        unused = [v for v in family.values if v not in values]
        for m in range(n_chatter):
            # Draw everything for every slot, so the rate only decides which slots are rumours.
            source = _weighted(rng, p.chatter_sources)
            person = PEOPLE[int(rng.integers(len(PEOPLE)))]
            question = family.chatter_questions[int(rng.integers(len(family.chatter_questions)))]
            rumor_tpl = RUMOR_TEMPLATES[int(rng.integers(len(RUMOR_TEMPLATES)))]
            neutral_tpl = NEUTRAL_TEMPLATES[int(rng.integers(len(NEUTRAL_TEMPLATES)))]
            newer = rng.random() < p.rumor_newer_prob
            frac = rng.uniform(0.05, 0.95)
            repeat_old = rng.random() < p.rumor_repeats_old_value
            old_pick = int(rng.integers(max(1, len(values) - 1)))
            new_pick = int(rng.integers(max(1, len(unused))))
            hour = float(rng.integers(8, 19)) / 24
            is_rumor = m < n_rumors
            if is_rumor:
                if newer or len(dates) == 1:  # after the current version took effect
                    lo, hi = latest, p.horizon_days - 1
                else:  # while the previous version was in force
                    lo, hi = dates[-2], latest
                created = np.floor(lo + frac * (hi - lo)) + hour
                wrong = values[old_pick] if (repeat_old and len(values) > 1) or not unused else unused[new_pick]
                text = rumor_tpl.format(question=question, topic=family.topic, title=family.title,
                                        v=family.render(wrong), person=person)
                kind = "rumor"
            else:
                created = np.floor(frac * (p.horizon_days - 1)) + hour
                text = neutral_tpl.format(question=question, topic=family.topic, title=family.title,
                                          person=person)
                kind = "chatter"
            doc_id = f"{source.upper()}-{family.key}-{m + 1}"
            ids = self._add_document(out, doc_id=doc_id, title=f"{source.replace('_', ' ')}: {family.topic}",
                                     text=text, family=family, version=1, source=source, created=created,
                                     valid_from=created, valid_to=None, kinds=[kind], prev_ids=[])
            if is_rumor:
                out.rumor_ids.extend(ids)

    # -- queries -------------------------------------------------------------------------------------------
    def family_queries(self, family: Family, docs: Documents, has_runbook: bool) -> list[QueryRecord]:
        p, q = self.p, self.p.queries
        rng = _rng(p.seed, "queries", family.key)
        records: list[QueryRecord] = []
        latest_from = docs.fact_windows[-1][0]

        def asked() -> float:
            return p.horizon_days + float(rng.uniform(0, p.query_window_days))

        current_texts = rng.permutation(len(family.questions))
        for i in range(q.current_per_family):
            t = asked()
            if docs.rumor_ids:
                category = "contested"
            elif p.horizon_days - latest_from <= p.recent_days:
                category = "recently_updated"
            else:
                category = "current"
            records.append(QueryRecord(
                id="", text=family.questions[int(current_texts[i % len(current_texts)])], family=family.key,
                query_time=self.iso(t), as_of=self.iso(t), category=category, gold=docs.fact_ids[-1],
                stale=docs.fact_ids[:-1], rumor=list(docs.rumor_ids)))
        if len(docs.fact_ids) > 1:
            for i in range(q.historical_per_family):
                k = int(rng.integers(len(docs.fact_ids) - 1))  # a superseded version
                lo, hi = docs.fact_windows[k]
                as_of = np.floor(lo + rng.uniform(0.2, 0.8) * (hi - lo)) + 0.5
                tpl = family.historical_questions[i % len(family.historical_questions)]
                date = self.start + timedelta(days=float(as_of))
                t = asked()
                records.append(QueryRecord(
                    id="", text=tpl.format(date=f"{date.day} {date:%B %Y}"), family=family.key,
                    query_time=self.iso(t), as_of=self.iso(as_of), category="historical",
                    gold=docs.fact_ids[k], stale=docs.fact_ids[:k], rumor=list(docs.rumor_ids)))
        if has_runbook:
            order = rng.permutation(len(family.dependent_questions))
            for i in range(q.dependent_per_family):
                t = asked()
                records.append(QueryRecord(
                    id="", text=family.dependent_questions[int(order[i % len(order)])], family=family.key,
                    query_time=self.iso(t), as_of=self.iso(t),
                    # "dependent": the runbook step's dependency (the policy fact) changed at least once.
                    category="dependent" if len(docs.fact_ids) > 1 else "current",
                    gold=docs.runbook_step_ids[-1], stale=docs.runbook_step_ids[:-1],
                    rumor=list(docs.rumor_ids)))
        return records

    # -- the whole dataset ---------------------------------------------------------------------------------
    def plan(self) -> list[tuple[Family, int, bool, int, int, bool]]:
        """(family, versions, has_runbook, chatter, rumours, recently_updated) per family.

        Counts depend on the config only, never on the seed: the seed picks which families, values, dates
        and wording, so every seed gives the same shape.
        """
        p = self.p
        if p.n_families > len(FAMILIES):
            raise BenchError(f"dataset.n_families={p.n_families}: the catalog has {len(FAMILIES)} families")
        order = _rng(p.seed, "families").permutation(len(FAMILIES))[: p.n_families]
        families = [FAMILIES[int(i)] for i in order]
        for i, fam in enumerate(families):
            if p.versions[i % len(p.versions)] >= len(fam.values):
                raise BenchError(f"dataset.versions={list(p.versions)}: family {fam.key!r} has {len(fam.values)} "
                                 f"values; each version needs a new one and rumours an unused one, so use at most "
                                 f"{len(fam.values) - 1} versions")
        n_runbooks = int(round(p.runbook_fraction * p.n_families))
        total_chatter = p.n_families * p.chatter_per_family
        n_rumors = int(round(p.contradiction_rate * total_chatter))
        # Rumours are dealt family by family in a seeded order, filling each family's chatter slots, so
        # some facts are contested (several rumours) and others are not. Recent updates are dealt from the
        # other end of the same order, so at moderate rates they land on uncontested facts.
        deal = _rng(p.seed, "contradictions").permutation(p.n_families)
        rumors = np.zeros(p.n_families, dtype=int)
        for idx in deal:
            rumors[idx] = min(p.chatter_per_family, n_rumors - rumors.sum())
        recent = np.zeros(p.n_families, dtype=bool)
        recent[deal[::-1][: int(round(p.recent_fraction * p.n_families))]] = True
        return [(fam, p.versions[i % len(p.versions)], i < n_runbooks, p.chatter_per_family, int(rumors[i]),
                 bool(recent[i])) for i, fam in enumerate(families)]

    def generate(self) -> tuple[list[ChunkRecord], list[QueryRecord]]:
        chunks: list[ChunkRecord] = []
        queries: list[QueryRecord] = []
        for family, n_versions, has_runbook, n_chatter, n_rumors, recent in self.plan():
            docs = self.family_documents(family, n_versions, has_runbook, n_chatter, n_rumors, recent)
            chunks.extend(docs.chunks)
            queries.extend(self.family_queries(family, docs, has_runbook))
        for i, rec in enumerate(queries, 1):
            rec.id = f"q{i:04d}"
        self._assign_splits(queries)
        return chunks, queries

    def _assign_splits(self, queries: list[QueryRecord]) -> None:
        """Stratified by category: in each category a seeded shuffle puts round(n * test_fraction) in test."""
        rng = _rng(self.p.seed, "splits")
        for category in CATEGORY_ORDER:
            members = [q for q in queries if q.category == category]
            order = rng.permutation(len(members))
            n_test = int(round(len(members) * self.p.test_fraction))
            for rank, i in enumerate(order):
                members[int(i)].split = "test" if rank < n_test else "dev"
