"""dataset=facts on a small real git repository: hand-checked timelines, labels, dates and every refusal."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from data_gen.facts import facts_params_from_config, load_fact_file, write_facts
from data_gen.facts.queries import name_a_date, overlap
from data_gen.facts.timeline import Span
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.errors import BenchError

from .test_git_history import Repo

TRAVEL = "# Travel\n\n{p}\n\nBook flights through the travel management system and keep every receipt you get.\n"
OLD = "Each traveler gets an incidentals allowance of $5 per day while on official travel away from home."
NEW = "Each traveler gets an incidentals allowance of $10 per day while on official travel away from home."
FAQ_OLD = "Remember that the incidentals allowance of $5 covers tips for porters and hotel staff on a trip."
LEAVE_1 = "Parental leave is 12 weeks of paid leave for each new parent, taken within a year of the birth."
LEAVE_2 = "Parental leave is 16 weeks of paid leave for each new parent, taken within a year of the birth."

FACTS = """\
corpus: demo
facts:
  - id: incidentals
    kind: money
    paths: [docs/travel.md]
    context: incidentals
    value: 'allowance of \\$(\\d+)'
    timeline:
      - {from: 2020-01-01, value: "5"}
      - {from: 2021-06-01, value: "10"}
    questions:
      - How much can I claim each day for small expenses on a work trip?
      - "{Date}, what daily amount could travelers claim for small expenses?"
  - id: parental-leave
    kind: duration
    paths: [docs/leave.md]
    value: '(\\d+) weeks'
    timeline:
      - {from: 2020-01-01, value: "12"}
      - {from: 2022-03-01, value: "16"}
    questions:
      - How long is paid time off for new parents?
      - What was the length of paid time off for new parents {date}?
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Repo:
    r = Repo(tmp_path_factory.mktemp("facts") / "repo")
    r.write("docs/travel.md", TRAVEL.format(p=OLD))
    r.write("docs/faq.md", f"# FAQ\n\n{FAQ_OLD}\n")
    r.write("docs/leave.md", f"# Leave\n\n{LEAVE_1}\n")
    r.commit("2020-01-01")
    r.write("docs/travel.md", TRAVEL.format(p=NEW))  # the FAQ keeps the old amount: a contradiction
    r.commit("2021-06-01")
    r.write("docs/leave.md", f"# Leave\n\n{LEAVE_2}\n")
    r.commit("2022-03-01")
    return r


def _params(repo: Repo, facts: Path, **extra):
    return facts_params_from_config({"name": "facts", "corpora": {"demo": {
        "repo": str(repo.path), "glob": "docs/*.md", "facts": str(facts)}}, **extra})


def _facts(tmp_path: Path, text: str = FACTS) -> Path:
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def built(repo, tmp_path_factory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("built")
    out = tmp / "ds"
    manifest = write_facts(_params(repo, _facts(tmp)), out)
    return out, manifest


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_labels_by_hand(built):
    out, manifest = built
    corpus = {r["_id"]: r for r in _rows(out / "corpus.jsonl")}
    text_of = {cid: r["text"] for cid, r in corpus.items()}
    queries = {q["_id"]: q for q in _rows(out / "queries.jsonl")}
    labels = {q["_id"]: q for q in _rows(out / "labels" / "queries.jsonl")}
    qrels = {}
    for split in ("dev", "test"):
        for line in (out / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]:
            qid, cid, grade = line.split("\t")
            qrels.setdefault(qid, []).append((text_of[cid], int(grade)))
    by_text = {q["text"]: qid for qid, q in queries.items()}
    now = by_text["How much can I claim each day for small expenses on a work trip?"]
    assert queries[now]["metadata"]["as_of"] == "2022-03-01T00:00:00Z" == queries[now]["metadata"]["query_time"]
    assert qrels[now] == [(NEW, 2)]
    assert sorted(text_of[c] for c in labels[now]["stale"]) == sorted([OLD, FAQ_OLD])  # superseded + contradicting
    past = next(qid for text, qid in by_text.items() if text.endswith("what daily amount could travelers claim for "
                                                                       "small expenses?"))
    text = queries[past]["text"]
    assert text.startswith("In ") and queries[past]["metadata"]["category"] == "historical"
    as_of = queries[past]["metadata"]["as_of"]
    assert "2020-01-15" <= as_of[:10] <= "2021-05-15" and as_of.endswith("-15T12:00:00Z")
    assert sorted(qrels[past]) == sorted([(OLD, 2), (FAQ_OLD, 1)])  # the FAQ agrees then: relevant elsewhere
    assert labels[past]["stale"] == [] and labels[past]["family"] == "incidentals"
    assert {q["metadata"]["category"] for q in queries.values()} == {"current", "historical"}
    assert len(queries) == 4 and manifest["counts"]["facts"] == 2
    # one split per fact group; every chunk of the three documents, with its fact label
    splits = {labels[q]["family"]: queries[q]["metadata"]["split"] for q in queries}
    assert all(queries[q]["metadata"]["split"] == splits[labels[q]["family"]] for q in queries)
    chunk_labels = {r["_id"]: r for r in _rows(out / "labels" / "chunks.jsonl")}
    assert {(text_of[c], r["family"]) for c, r in chunk_labels.items() if r.get("kind") == "statement"} == {
        (OLD, "incidentals"), (NEW, "incidentals"), (FAQ_OLD, "incidentals"), (LEAVE_1, "parental-leave"),
        (LEAVE_2, "parental-leave")}
    assert len(corpus) == 6 and {r["metadata"]["source"] for r in corpus.values()} == {"demo"}


def test_the_loader_reads_it_and_it_is_byte_identical(built, repo, tmp_path):
    out, manifest = built
    ds = load_dataset(out)
    assert len(ds.queries) == 4 and ds.labels is not None
    again = tmp_path / "again"
    write_facts(_params(repo, _facts(tmp_path)), again)
    for name in manifest["files"]:
        assert (again / name).read_bytes() == (out / name).read_bytes(), name
    ov = manifest["counts"]["question_overlap"]
    assert 0 <= ov["mean"] <= ov["max"] < 0.75


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('{from: 2021-06-01, value: "10"}', '{from: 2021-06-02, value: "10"}'),
     r"demo.yaml:3: fact incidentals: timeline\[2\] \(from 2021-06-02, value '10'\): the history gives from "
     r"2021-06-01, value '10'; the history's timeline: 2020-01-01 '5'; 2021-06-01 '10'"),
    (lambda t: t.replace("      - {from: 2021-06-01, value: \"10\"}\n", ""),
     r"fact incidentals: timeline: 1 periods, but the history has a period 2 \(from 2021-06-01, value '10'\)"),
    (lambda t: t.replace("allowance of", "stipend of"),
     r"fact incidentals: value: the value pattern and context match no paragraph of docs/travel.md"),
    (lambda t: t.replace("paths: [docs/leave.md]", "paths: [docs/leaves.md]"),
     r"demo.yaml:\d+: fact parental-leave: paths: no paragraph of the history of \['docs/\*.md'\] was ever "
     r"written under docs/leaves.md"),
    (lambda t: t.replace("How long is paid time off for new parents?", "Parental leave is 16 weeks of paid leave"),
     r"fact parental-leave: questions: 'Parental leave is 16 weeks of paid leave' is copied from a paragraph"),
    (lambda t: t.replace("kind: duration", "kind: length"), r"fact parental-leave: kind: 'length'; allowed: money"),
    (lambda t: t.replace("value: '(\\d+) weeks'", "value: '\\d+ weeks'"),
     r"fact parental-leave: value: must have exactly 1 capturing group"),
    (lambda t: t.replace("    kind: duration\n", "    kind: duration\n    colour: red\n"),
     r"fact parental-leave: colour: unknown key"),
])
def test_refusals_name_the_file_line_fact_and_period(repo, tmp_path, edit, message):
    text = edit(FACTS)
    assert text != FACTS
    out = tmp_path / "ds"
    with pytest.raises(BenchError, match=message):
        write_facts(_params(repo, _facts(tmp_path, text)), out)
    assert not out.exists() and not list(tmp_path.glob(".ds.*"))


def test_a_current_question_for_a_fact_gone_from_the_tip(repo, tmp_path):
    r = Repo(tmp_path / "gone")
    r.write("docs/leave.md", f"# Leave\n\n{LEAVE_1}\n")
    r.write("docs/other.md", f"# Other\n\n{OLD}\n")
    r.commit("2020-01-01")
    (r.path / "docs/leave.md").unlink()
    r.commit("2021-01-01")
    text = "corpus: demo\nfacts:\n"
    text += ("  - id: parental-leave\n    kind: duration\n    paths: [docs/leave.md]\n    value: '(\\d+) weeks'\n"
             '    timeline:\n      - {from: 2020-01-01, value: "12"}\n      - {from: 2021-01-01, value: null}\n'
             "    questions: ['How long is paid time off for new parents?']\n")
    with pytest.raises(BenchError, match=r"fact parental-leave: questions: a current question, but the fact is not "
                                         r"stated at the tip"):
        write_facts(_params(r, _facts(tmp_path, text)), tmp_path / "ds")


def test_yaml_errors_name_the_line(tmp_path):
    path = _facts(tmp_path, "corpus: demo\nfacts:\n  - id: a\n    kind: [unclosed\n")
    with pytest.raises(BenchError, match=r"demo.yaml:\d+: not valid YAML"):
        load_fact_file(path)


def test_named_dates():
    import numpy as np

    day = 86400
    jan1_2020 = 1577836800
    span = Span(jan1_2020 + 3 * 3600, None, "5")  # starts 03:00 on 1 January: January is not whole
    phrase, t = name_a_date(span, jan1_2020 + 70 * day, np.random.default_rng(0))
    assert phrase == "in February 2020" and t == jan1_2020 + (31 + 14) * day + 12 * 3600
    phrase, t = name_a_date(Span(jan1_2020, None, "5"), jan1_2020 + 3 * day, np.random.default_rng(0))
    assert phrase.startswith("on ") and phrase.endswith("January 2020") and (t - 12 * 3600) % day == 0
    assert name_a_date(Span(jan1_2020 + 3600, None, "5"), jan1_2020 + day, np.random.default_rng(0)) is None
    assert overlap("How much can I claim for small expenses {date}?", OLD) == 0.0


def test_a_renamed_document_is_followed_from_any_of_its_paths(tmp_path):
    """An unchanged paragraph keeps the path it was written under; a fact listing only the new path still
    finds every version of its document."""
    r = Repo(tmp_path / "moved")
    r.write("docs/travel.md", TRAVEL.format(p=OLD))
    r.write("docs/leave.md", f"# Leave\n\n{LEAVE_1}\n")
    r.commit("2020-01-01")
    r.git("mv", "docs/travel.md", "docs/trips.md")
    r.commit("2020-06-01")
    r.write("docs/trips.md", TRAVEL.format(p=NEW))
    r.write("docs/leave.md", f"# Leave\n\n{LEAVE_2}\n")
    r.commit("2021-06-01")
    text = FACTS.replace("paths: [docs/travel.md]", "paths: [docs/trips.md]").replace(
        "2022-03-01", "2021-06-01")
    manifest = write_facts(_params(r, _facts(tmp_path, text)), tmp_path / "ds")
    assert manifest["counts"]["facts"] == 2 and manifest["counts"]["queries"] == 4


def test_each_distinct_value_is_asked_before_any_value_twice():
    from data_gen.facts.queries import distinct_first

    periods = [(Span(40, 50, "b"), 4), (Span(30, 40, "a"), 3), (Span(20, 30, "b"), 2), (Span(10, 20, "c"), 1)]
    assert [d for _, d in distinct_first(periods, 3)] == [4, 3, 1]
    assert [d for _, d in distinct_first(periods, 9)] == [4, 3, 1, 2]


def test_a_question_with_no_relevant_chunk_is_refused(repo, tmp_path):
    """Unreachable from a consistent history (each period's value is stated by a paragraph in force through it),
    so the check is driven directly: statements that do not hold the value asked."""
    import numpy as np

    from data_gen.facts.queries import fact_queries
    from data_gen.facts.timeline import derive, statements
    from data_gen.git_history import walk_history

    (f,) = [x for x in load_fact_file(_facts(tmp_path))[1] if x.id == "incidentals"]
    params = _params(repo, _facts(tmp_path))
    history = walk_history(params.corpora[0].git)
    stated = statements(f, history)
    spans = derive(f, history, stated)
    wrong = [s for s in stated if s.value != spans[-1].value]  # the tip's value stated nowhere
    with pytest.raises(BenchError, match=r"fact incidentals: questions: 'How much can I claim each day for small "
                                         r"expenses on a work trip\?' has no relevant chunk as of 2022-03-01"):
        fact_queries(f, history, wrong, spans, history.tip_time, 3, np.random.default_rng(0))
