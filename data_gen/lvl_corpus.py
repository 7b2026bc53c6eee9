"""``dataset=lvl_corpus``: a corpus shaped like LiveVectorLake's evaluation (100 documents x 5 versions over
about six months), with ground truth for every edit, so change detection, re-embedding share and temporal
accuracy can be measured instead of restated.

Each document is a policy of one family for one team, written as paragraphs separated by blank lines: an
overview, the fact (the family's value for that team), the procedure, the contacts, and a boilerplate
paragraph shared word for word by every document (per-document hashing must keep them apart). At each
version step, seeded: every paragraph may be modified (the fact gets a new value; other paragraphs are
reworded with another template), a paragraph may be inserted or deleted, and a paragraph modified earlier may
revert to an earlier text. The ground truth of each step (per position: unchanged / modified / new / deleted,
and whether a modified text is a revert) goes to ``edits.jsonl``; the full text of every document version to
``documents.jsonl``; the corpus holds one row per paragraph text with its validity window (the cold tier a
correct system should end with); queries ask each team's value now and as of a past date.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import timedelta


from smartvector_bench.errors import BenchError
from smartvector_bench.timeutil import format_iso, parse_iso

from .families import FAMILIES
from .generator import QueryRecord, _rng

TEAMS = ("Platform", "Payments", "Mobile", "Data", "Security", "Support", "Sales", "Finance", "Legal", "People",
         "Marketing", "Research", "Infrastructure", "Design", "Operations", "Procurement", "Growth", "Identity",
         "Search", "Billing")
BOILERPLATE = ("This document is part of the company handbook. Printed copies are not controlled; the online "
               "version is the reference.")


@dataclass(frozen=True)
class LvlParams:
    seed: int = 42
    n_documents: int = 100
    n_versions: int = 5
    start: str = "2024-01-01T00:00:00Z"
    version_gap_days: int = 36  # five versions over about six months
    p_modify: float = 0.08  # per paragraph and version step
    p_insert: float = 0.1  # per document and step: one new paragraph
    p_delete: float = 0.05  # per document and step: one paragraph removed (never the fact or the last one)
    p_revert: float = 0.1  # per document and step: a previously modified paragraph returns to an earlier text
    historical_per_document: int = 1
    test_fraction: float = 0.5

    def to_dict(self) -> dict:
        return asdict(self)


def lvl_params_from_config(cfg: dict) -> LvlParams:
    allowed = set(LvlParams.__dataclass_fields__) | {"name", "path"}
    unknown = sorted(set(cfg) - allowed)
    if unknown:
        raise BenchError(f"dataset.{unknown[0]}: unknown key for lvl_corpus; allowed: {', '.join(sorted(allowed))}")
    d = {k: v for k, v in cfg.items() if k not in ("name", "path")}
    for key in ("p_modify", "p_insert", "p_delete", "p_revert", "test_fraction"):
        v = d.get(key, 0.0)
        if not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise BenchError(f"dataset.{key}={v}: must be a number in [0, 1]")
    for key in ("n_documents", "n_versions", "version_gap_days"):
        v = d.get(key, 1)
        if not isinstance(v, int) or v < 1:
            raise BenchError(f"dataset.{key}={v}: must be an integer >= 1")
    if d.get("n_documents", 100) > len(FAMILIES) * len(TEAMS):
        raise BenchError(f"dataset.n_documents: at most {len(FAMILIES) * len(TEAMS)}")
    return LvlParams(**d)


@dataclass
class Paragraph:
    kind: str
    text: str
    history: list[str]  # earlier texts of this paragraph (for reverts)
    since: int  # version from which the current text holds
    row_id: str  # corpus id of the current text


def generate_lvl(p: LvlParams) -> tuple[list[dict], list[dict], list[dict], list[QueryRecord]]:
    """(corpus rows, document versions, ground-truth edits, queries)."""
    start = parse_iso(p.start)

    def iso(day: float) -> str:
        return format_iso(start + timedelta(days=float(day)))

    dates = [k * p.version_gap_days for k in range(p.n_versions)]
    now = dates[-1] + p.version_gap_days / 2
    order = _rng(p.seed, "lvl", "documents").permutation(len(FAMILIES) * len(TEAMS))[: p.n_documents]
    pairs = [(FAMILIES[i % len(FAMILIES)], TEAMS[i // len(FAMILIES)]) for i in order.tolist()]
    rows: list[dict] = []
    documents: list[dict] = []
    edits: list[dict] = []
    queries: list[QueryRecord] = []
    by_id: dict[str, dict] = {}

    for d, (fam, team) in enumerate(pairs):
        rng = _rng(p.seed, "lvl", fam.key, team)
        doc_id = f"LVL-{fam.key}-{team.lower()}"
        values = [int(v) for v in rng.permutation(fam.values)]
        value_at: list[int] = []  # the fact's value in each version

        def render(kind: str, template: int, value: int | None = None) -> str:
            if kind == "boilerplate":
                return BOILERPLATE
            tpl = getattr(fam, kind)[template % len(getattr(fam, kind))]
            body = tpl.format(v=fam.render(value) if value is not None else "", title=fam.title, topic=fam.topic)
            return f"{team} team. {body}"

        counter = {"n": 0}

        def new_row(kind: str, text: str, version: int) -> str:
            row_id = f"{doc_id}-r{counter['n']}"
            counter["n"] += 1
            row = {"_id": row_id, "title": f"{fam.title} ({team})", "text": text, "metadata": {
                "doc_id": doc_id, "family": fam.key, "version": version + 1, "source": "policy_doc",
                "authority": 0.9, "created_at": iso(dates[version]), "valid_from": iso(dates[version]),
                "valid_to": None, "depends_on": [], "supersedes": None, "kind": kind}}
            rows.append(row)
            by_id[row_id] = row
            return row_id

        def close(row_id: str, version: int) -> None:
            by_id[row_id]["metadata"]["valid_to"] = iso(dates[version])

        fact_value = values[0]
        paras = []
        for kind in ("scope", "fact", "procedure", "contacts", "boilerplate"):
            template = int(rng.integers(3))
            text = render(kind, template, fact_value if kind == "fact" else None)
            paras.append(Paragraph(kind, text, [], 0, new_row(kind, text, 0)))
        fact_rows = [paras[1].row_id]
        value_at.append(fact_value)
        documents.append({"doc_id": doc_id, "version": 1, "effective_at": iso(dates[0]),
                          "text": "\n\n".join(x.text for x in paras)})
        edits.append({"doc_id": doc_id, "version": 1, "changes": [
            {"position": i, "old_position": None, "class": "new", "revert": False} for i in range(len(paras))]})
        used_values = {fact_value}

        for v in range(1, p.n_versions):
            changes = []
            old = list(paras)
            # Draw everything for every step, so the probabilities only decide what happens.
            modify = rng.random(len(old)) < p.p_modify
            do_insert, do_delete, do_revert = rng.random(3) < (p.p_insert, p.p_delete, p.p_revert)
            ins_pos = int(rng.integers(len(old) + 1))
            del_pick = int(rng.integers(len(old)))
            template = int(rng.integers(3, 6))
            revert_pick = int(rng.integers(10 ** 6))
            new_value_pick = int(rng.integers(10 ** 6))
            revertible = [i for i, x in enumerate(old) if not modify[i] and any(h != x.text for h in x.history)]
            for i, x in enumerate(old):
                if modify[i]:
                    if x.kind == "fact":
                        fresh = [val for val in values if val not in used_values] or values
                        fact_value = fresh[new_value_pick % len(fresh)]
                        used_values.add(fact_value)
                        text = render("fact", template, fact_value)
                    elif x.kind == "boilerplate":
                        text = BOILERPLATE + " Last reviewed this quarter."
                    else:
                        text = render(x.kind, template + i)
                    if text != x.text:
                        x.history.append(x.text)
                        x.text = text
                        close(x.row_id, v)
                        x.row_id = new_row(x.kind, text, v)
                        x.since = v
                    else:
                        modify[i] = False
            reverted = None
            if do_revert and revertible:
                i = revertible[revert_pick % len(revertible)]
                x = old[i]
                earlier = next(h for h in x.history if h != x.text)  # the oldest text it differs from
                x.history.append(x.text)
                x.text = earlier
                close(x.row_id, v)
                x.row_id = new_row(x.kind, earlier, v)
                modify[i] = True
                reverted = i
                if x.kind == "fact":
                    fact_value = _value_in(x.text, values, fam)
            new_paras = list(old)
            deleted = None
            if do_delete and len(old) > 2:
                choices = [i for i, x in enumerate(old) if x.kind not in ("fact",) and not modify[i]]
                if choices:
                    deleted = choices[del_pick % len(choices)]
                    close(old[deleted].row_id, v)
                    new_paras = [x for i, x in enumerate(old) if i != deleted]
            inserted = None
            if do_insert:
                kind = ("procedure", "contacts", "scope")[template % 3]
                text = render(kind, template + 7) + " This section was added in a later revision."
                inserted = min(ins_pos, len(new_paras))
                new_paras.insert(inserted, Paragraph(kind, text, [], v, new_row(kind, text, v)))
            # Ground truth per position of the new version, against the previous version.
            old_ids = {id(x): i for i, x in enumerate(old)}
            # Classes follow what happened to each paragraph (its identity), not its position: a paragraph
            # pushed down by an insert is "moved" (same text, new position), not "modified".
            for pos, x in enumerate(new_paras):
                if id(x) not in old_ids:
                    cls, i = "new", None
                else:
                    i = old_ids[id(x)]
                    cls = "modified" if modify[i] else ("unchanged" if pos == i else "moved")
                changes.append({"position": pos, "old_position": i, "class": cls,
                                "revert": i is not None and i == reverted})
            if deleted is not None:
                changes.append({"position": None, "old_position": deleted, "class": "deleted", "revert": False})
            paras = new_paras
            fact_rows.append(next(x.row_id for x in paras if x.kind == "fact"))
            value_at.append(fact_value)
            documents.append({"doc_id": doc_id, "version": v + 1, "effective_at": iso(dates[v]),
                              "text": "\n\n".join(x.text for x in paras)})
            edits.append({"doc_id": doc_id, "version": v + 1, "changes": changes})

        # Queries: the team's value now, and as of a date inside an earlier version.
        qrng = _rng(p.seed, "lvl", "queries", doc_id)
        question = fam.questions[int(qrng.integers(len(fam.questions)))].rstrip("?")
        distinct = list(dict.fromkeys(fact_rows))  # the fact's row in force per version (repeats if unchanged)
        queries.append(QueryRecord(
            id="", text=f"{question} for the {team} team?", family=fam.key, query_time=iso(now), as_of=iso(now),
            category="current", gold=fact_rows[-1], stale=[r for r in distinct if r != fact_rows[-1]], rumor=[]))
        for h in range(p.historical_per_document):
            k = int(qrng.integers(p.n_versions - 1))
            as_of = dates[k] + qrng.uniform(0.2, 0.8) * p.version_gap_days
            date = start + timedelta(days=float(as_of))
            tpl = fam.historical_questions[h % len(fam.historical_questions)]
            text = tpl.format(date=f"{date.day} {date:%B %Y}").rstrip("?") + f" for the {team} team?"
            gold = fact_rows[k]
            queries.append(QueryRecord(
                id="", text=text, family=fam.key, query_time=iso(now), as_of=iso(as_of), category="historical",
                gold=gold, stale=distinct[: distinct.index(gold)], rumor=[]))

    for i, q in enumerate(queries, 1):
        q.id = f"q{i:04d}"
    rng = _rng(p.seed, "lvl", "splits")
    for cat in ("current", "historical"):
        members = [q for q in queries if q.category == cat]
        order = rng.permutation(len(members))
        n_test = int(round(len(members) * p.test_fraction))
        for rank, i in enumerate(order):
            members[int(i)].split = "test" if rank < n_test else "dev"
    return rows, documents, edits, queries


def _value_in(text: str, values: list[int], fam) -> int:
    """The family value a fact paragraph states (the one whose rendering occurs in it)."""
    for v in sorted(values, key=lambda x: -len(fam.render(x))):
        if fam.render(v) in text:
            return v
    raise ValueError(f"no value of {fam.key} in {text!r}")
