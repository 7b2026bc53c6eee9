"""``dataset=lvl_corpus``: a corpus shaped like LiveVectorLake's evaluation (100 documents x 5 versions over
about six months), with ground truth for every edit, so change detection, re-embedding share and temporal
accuracy can be measured instead of restated.

Each document is the policy of one catalog family (a (topic, scope) pair of ``data_gen.catalog``; the first
``n_documents`` families in a seeded order), written as five paragraphs separated by blank lines, in an order
of the document's own: an overview (the topic's ``scope`` templates), the fact (the family's value), the
procedure, the contacts, and a boilerplate paragraph shared word for word by every document (per-document
hashing must keep them apart). Templates are rendered with the scope's audience (``{who}``), number fillers
drawn per document and ``{date}`` the date of the version the text was written for. At each version step,
seeded: every paragraph may be modified (the fact gets a new value; other paragraphs are reworded with
another template), a paragraph may be inserted or deleted, and a paragraph modified earlier may revert to an
earlier text. The ground truth of each step (per position: unchanged / moved / modified / new / deleted, and
whether a modified text is a revert) goes to ``edits.jsonl``; the full text of every document version to
``documents.jsonl``; the corpus holds one row per paragraph text with its validity window (the cold tier a
correct system should end with), a row of a modified paragraph superseding the row it replaces.

Schema v2 (as ``data_gen.generator``): ids are opaque (``data_gen.common.OpaqueIds``), corpus rows are shuffled
and carry only :data:`smartvector_bench.core.dataset.CORPUS_META`; each row's ``offset_start`` / ``offset_end``
is its span in the document version it was created in. Labels go to ``labels/`` (doc_type ``policy``; kind ``statement`` for the
fact, ``scope`` / ``procedure`` / ``contacts``, ``note`` for the boilerplate; the fact's value), each
document's fact timeline to ``labels/families.jsonl``. Queries ask the family's value now and as of a date
inside an earlier version (the topic's ``questions`` / ``historical_questions``); their judgments follow
:func:`smartvector_bench.core.evaluation.judgments.judge_at`: the fact row in force at ``as_of`` (grade 2) is the one
relevant row; earlier fact rows stating a superseded value are stale; there are no rumors. Whole documents go to dev
or test.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import timedelta

import numpy as np

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.judgments import GRADE_AUTHORITATIVE, Timeline, judge_at
from smartvector_bench.core.timeutil import format_iso, parse_iso

from .catalog.base import draw_fillers
from .common import FamilySpec, OpaqueIds, catalog_families, check_span, seeded_rng

PARAGRAPHS = ("scope", "fact", "procedure", "contacts", "boilerplate")  # "scope" is the overview
LABEL_KIND = {"fact": "statement", "scope": "scope", "procedure": "procedure", "contacts": "contacts",
              "boilerplate": "note"}
BOILERPLATE = ("This document is part of the company handbook. Printed copies are not controlled; the online "
               "version is the reference.")
INSERTED_SUFFIX = " This section was added in a later revision."
SOURCE, AUTHORITY = "policy_doc", 0.9


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
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 1:
            raise BenchError(f"dataset.{key}={v}: must be a number in [0, 1]")
    for key in ("n_documents", "n_versions", "version_gap_days"):
        v = d.get(key, 1)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise BenchError(f"dataset.{key}={v}: must be an integer >= 1")
    for key in ("historical_per_document", "seed"):
        v = d.get(key, 0)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise BenchError(f"dataset.{key}={v}: must be an integer >= 0")
    n_docs, fraction = d.get("n_documents", LvlParams.n_documents), d.get("test_fraction", LvlParams.test_fraction)
    if not 1 <= int(round(n_docs * fraction)) <= n_docs - 1:
        raise BenchError(f"dataset.test_fraction={fraction}: with dataset.n_documents={n_docs} it puts "
                         f"{int(round(n_docs * fraction))} documents in test; each split needs at least one")
    n_families = len(catalog_families())
    if d.get("n_documents", 100) > n_families:
        raise BenchError(f"dataset.n_documents={d['n_documents']}: at most {n_families} (one document per "
                         "catalog family)")
    if d.get("n_versions", 5) < 2 and d.get("historical_per_document", 1) > 0:
        raise BenchError(f"dataset.n_versions={d['n_versions']}: historical queries need at least 2 versions "
                         "(or set dataset.historical_per_document=0)")
    p = LvlParams(**d)
    # The latest timestamp: the queries' "now", half a gap after the last version.
    check_span(p.start, "version_gap_days", p.version_gap_days, per_unit=p.n_versions - 0.5,
               given=f"dataset.n_versions={p.n_versions}")
    return p


@dataclass
class Paragraph:
    kind: str  # one of PARAGRAPHS
    text: str
    value: int | None  # the fact's value (fact paragraphs only)
    history: list[tuple[str, int | None]]  # earlier (text, value) of this paragraph (for reverts)
    since: int  # version from which the current text holds
    row_id: str  # corpus id of the current text


@dataclass
class ChunkLabel:
    family: str
    kind: str
    value: int | None


@dataclass
class LvlQuery:
    text: str
    family: str
    query_time: float  # days from start
    as_of: float
    category: str
    relevant: list[tuple[str, int]] = field(default_factory=list)  # (corpus id, grade)
    stale: list[str] = field(default_factory=list)
    rumor: list[str] = field(default_factory=list)
    answer: int = 0
    id: str = ""
    split: str = ""


@dataclass
class LvlFamily:
    key: str
    topic: str
    timeline: Timeline  # day offsets from start
    n_versions: int
    fact_edits: int  # fact modifications (new value) and reverts
    fact_reverts: int


def generate_lvl(p: LvlParams) -> tuple[list[dict], list[dict], list[dict], list[LvlQuery], dict[str, ChunkLabel],
                                         list[LvlFamily]]:
    """(corpus rows, document versions, ground-truth edits, queries, chunk labels by id, families).

    Times in the corpus rows, documents and edits are ISO strings; queries and families keep day offsets from
    ``p.start`` (the writer formats them)."""
    start = parse_iso(p.start)

    def iso(day: float) -> str:
        return format_iso(start + timedelta(days=float(day)))

    def human(day: float) -> str:
        d = start + timedelta(days=float(day))
        return f"{d.day} {d:%B %Y}"

    dates = [float(k * p.version_gap_days) for k in range(p.n_versions)]
    now = dates[-1] + p.version_gap_days / 2
    catalog = catalog_families()
    order = seeded_rng(p.seed, "lvl", "documents").permutation(len(catalog))[: p.n_documents]
    specs: list[FamilySpec] = [catalog[int(i)] for i in order]
    ids = OpaqueIds(seeded_rng(p.seed, "lvl", "ids"))
    rows: list[dict] = []
    documents: list[dict] = []
    edits: list[dict] = []
    queries: list[LvlQuery] = []
    expected: list[str] = []  # per query, the fact row in force at its as_of
    labels: dict[str, ChunkLabel] = {}
    families: list[LvlFamily] = []
    by_id: dict[str, dict] = {}

    for spec in specs:
        topic, key = spec.topic, spec.key
        rng = seeded_rng(p.seed, "lvl", key)
        fill = draw_fillers(seeded_rng(p.seed, "lvl", "fillers", key))
        layout = [PARAGRAPHS[i] for i in seeded_rng(p.seed, "lvl", "layout", key).permutation(len(PARAGRAPHS))]
        doc_id = ids.new("d")
        values = [int(v) for v in rng.permutation(topic.values)]

        def render(kind: str, template: int, version: int, value: int | None = None) -> str:
            if kind == "boilerplate":
                return BOILERPLATE
            pool = getattr(topic, kind)
            kw = {**fill, "who": spec.scope.who, "topic": topic.topic, "doc": topic.title,
                  "published": human(dates[version]), "effective": human(dates[version])}  # one date per version here
            if value is not None:
                kw["v"] = topic.render(value)
            return pool[template % len(pool)].format(**kw)

        def new_row(para_kind: str, text: str, value: int | None, version: int, replaces: str | None) -> str:
            row_id = ids.new("c")
            row = {"_id": row_id, "title": spec.title, "text": text, "metadata": {
                "doc_id": doc_id, "version": version + 1, "source": SOURCE, "authority": AUTHORITY,
                "created_at": iso(dates[version]), "valid_from": iso(dates[version]), "valid_to": None,
                "depends_on": [], "supersedes": replaces, "offset_start": 0, "offset_end": 0}}
            rows.append(row)
            by_id[row_id] = row
            labels[row_id] = ChunkLabel(key, LABEL_KIND[para_kind], value)
            return row_id

        def close(row_id: str, version: int) -> None:
            by_id[row_id]["metadata"]["valid_to"] = iso(dates[version])

        def publish(paras: list[Paragraph], version: int) -> None:
            """The document version's text, and the offsets of the rows created for it."""
            text = "\n\n".join(x.text for x in paras)
            pos = 0
            for x in paras:
                if by_id[x.row_id]["metadata"]["version"] == version + 1:  # created for this version
                    by_id[x.row_id]["metadata"].update(offset_start=pos, offset_end=pos + len(x.text))
                pos += len(x.text) + 2
            documents.append({"doc_id": doc_id, "version": version + 1, "effective_at": iso(dates[version]),
                              "text": text})

        fact_value = values[0]
        paras: list[Paragraph] = []
        for kind in layout:
            template = int(rng.integers(3))
            value = fact_value if kind == "fact" else None
            text = render(kind, template, 0, value)
            paras.append(Paragraph(kind, text, value, [], 0, new_row(kind, text, value, 0, None)))
        fact_rows = [next(x.row_id for x in paras if x.kind == "fact")]
        value_at = [fact_value]  # the fact's value in each version
        publish(paras, 0)
        edits.append({"doc_id": doc_id, "version": 1, "changes": [
            {"position": i, "old_position": None, "class": "new", "revert": False} for i in range(len(paras))]})
        used_values = {fact_value}
        fact_edits = fact_reverts = 0

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
            revertible = [i for i, x in enumerate(old) if not modify[i] and any(h != x.text for h, _ in x.history)]
            for i, x in enumerate(old):
                if not modify[i]:
                    continue
                value = None
                if x.kind == "fact":
                    fresh = [val for val in values if val not in used_values] or values
                    value = fresh[new_value_pick % len(fresh)]
                    text = render("fact", template, v, value)
                elif x.kind == "boilerplate":
                    text = BOILERPLATE + " Last reviewed this quarter."
                else:
                    text = render(x.kind, template + i, v)
                if text == x.text:
                    modify[i] = False
                    continue
                x.history.append((x.text, x.value))
                close(x.row_id, v)
                x.text, x.value, x.since = text, value, v
                x.row_id = new_row(x.kind, text, value, v, x.row_id)
                if x.kind == "fact":
                    fact_value = value
                    used_values.add(value)
                    fact_edits += 1
            reverted = None
            if do_revert and revertible:
                i = revertible[revert_pick % len(revertible)]
                x = old[i]
                earlier, earlier_value = next(h for h in x.history if h[0] != x.text)  # the oldest text it differs from
                x.history.append((x.text, x.value))
                close(x.row_id, v)
                x.text, x.value, x.since = earlier, earlier_value, v
                x.row_id = new_row(x.kind, earlier, earlier_value, v, x.row_id)
                modify[i] = True
                reverted = i
                if x.kind == "fact":
                    fact_value = earlier_value
                    fact_edits += 1
                    fact_reverts += 1
            new_paras = list(old)
            deleted = None
            if do_delete and len(old) > 2:
                choices = [i for i, x in enumerate(old) if x.kind != "fact" and not modify[i]]
                if choices:
                    deleted = choices[del_pick % len(choices)]
                    close(old[deleted].row_id, v)
                    new_paras = [x for i, x in enumerate(old) if i != deleted]
            if do_insert:
                kind = ("procedure", "contacts", "scope")[template % 3]
                text = render(kind, template + 7, v) + INSERTED_SUFFIX
                inserted = min(ins_pos, len(new_paras))
                new_paras.insert(inserted, Paragraph(kind, text, None, [], v, new_row(kind, text, None, v, None)))
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
            publish(paras, v)
            edits.append({"doc_id": doc_id, "version": v + 1, "changes": changes})

        # The fact's timeline: a step at each version whose value differs from the previous version's.
        steps = [(dates[k], value_at[k]) for k in range(p.n_versions) if k == 0 or value_at[k] != value_at[k - 1]]
        timeline = Timeline(np.array([d for d, _ in steps], dtype=np.float64),
                            np.array([val for _, val in steps], dtype=np.float64))
        families.append(LvlFamily(key, topic.key, timeline, p.n_versions, fact_edits, fact_reverts))

        # Queries: the family's value now, and as of a date inside an earlier version.
        qrng = seeded_rng(p.seed, "lvl", "queries", key)
        who = spec.scope.who
        question = topic.questions[int(qrng.integers(len(topic.questions)))]
        doc_queries = [(LvlQuery(question.format(who=who), key, now, now, "current"), fact_rows[-1])]
        for h in range(p.historical_per_document):
            k = int(qrng.integers(p.n_versions - 1))
            as_of = float(np.floor((dates[k] + qrng.uniform(0.2, 0.8) * p.version_gap_days) * 1440) / 1440)
            tpl = topic.historical_questions[h % len(topic.historical_questions)]
            doc_queries.append((LvlQuery(tpl.format(who=who, date=human(as_of)), key, now, as_of, "historical"),
                                fact_rows[k]))
        for q, in_force in doc_queries:
            queries.append(q)
            expected.append(in_force)  # checked against the judgment below, once every row is closed

    # Judgments from the labels (smartvector_bench.core.evaluation.judgments), over each family's rows.
    def days(value: str | None) -> float:
        return np.inf if value is None else (parse_iso(value) - start).total_seconds() / 86400.0

    fam_of = {f.key: f for f in families}
    members: dict[str, list[str]] = {}
    for r in rows:
        members.setdefault(labels[r["_id"]].family, []).append(r["_id"])
    for q, in_force in zip(queries, expected):
        rids = members[q.family]
        meta = [by_id[r]["metadata"] for r in rids]
        value = np.array([np.nan if labels[r].value is None else float(labels[r].value) for r in rids])
        j = judge_at(np.arange(len(rids)), np.full(len(rids), "policy", dtype=object), value,
                     np.array([days(m["created_at"]) for m in meta]), np.array([days(m["valid_from"]) for m in meta]),
                     np.array([days(m["valid_to"]) for m in meta]), fam_of[q.family].timeline, q.as_of, "policy")
        relevant = [rids[int(i)] for i in j.relevant]
        if relevant != [in_force] or list(j.grades) != [GRADE_AUTHORITATIVE]:
            raise AssertionError(f"lvl_corpus {q.family}: the judgment at {iso(q.as_of)} is {relevant}, expected the "
                                 f"fact row in force {in_force}")
        q.relevant = [(relevant[0], GRADE_AUTHORITATIVE)]
        q.stale = [rids[int(i)] for i in j.stale]
        q.rumor = [rids[int(i)] for i in j.rumor]
        q.answer = int(j.truth)

    # Shuffled rows and queries (nothing in the order says which row or query is which), whole documents per split.
    rows = [rows[int(i)] for i in seeded_rng(p.seed, "lvl", "corpus_order").permutation(len(rows))]
    queries = [queries[int(i)] for i in seeded_rng(p.seed, "lvl", "query_order").permutation(len(queries))]
    for i, q in enumerate(queries, 1):
        q.id = f"q{i:04d}"
    keys = sorted(fam_of)
    keys = [keys[int(i)] for i in seeded_rng(p.seed, "lvl", "splits").permutation(len(keys))]
    n_test = int(round(len(keys) * p.test_fraction))
    split_of = {k: ("test" if rank < n_test else "dev") for rank, k in enumerate(keys)}
    for q in queries:
        q.split = split_of[q.family]
    return rows, documents, edits, queries, labels, families
