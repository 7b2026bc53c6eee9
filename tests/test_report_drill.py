"""The report's query drill-down data (tools/report/drill.py) from old run files (flags only) and new ones (text,
as_of, per-hit labels, the four signals), and the page built from a run folder holding the new kind."""

from __future__ import annotations

import json
import shutil

import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.report import cli, drill

from .conftest import REPO
from .report_dom import parse

META = json.dumps({"_meta": {"system": "x", "k": 10}})


def _run_file(folder, system, lines):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"run_{system}.jsonl").write_text("\n".join([META] + [json.dumps(x) for x in lines]) + "\n")


def _old(qid, ranked, **flags):
    return {"query_id": qid, "split": "test", "category": "current", "family": "f", "ranked": ranked,
            "scores": [0.9 - 0.01 * i for i in range(len(ranked))], "confidence": 0.5,
            "correct": False, "stale": False, "rumor": False, **flags}


def test_old_run_files_label_hit_1_from_flags_and_the_rest_from_qrels(tmp_path):
    _run_file(tmp_path, "a", [_old("q1", ["c1", "c2", "c3"], stale=True), _old("q2", ["c3", "c4"], correct=True)])
    (tmp_path / "qrels_test.trec").write_text("q1 0 c3 2\nq1 0 c9 0\nq2 0 c3 1\n")
    d = drill.drill_data(tmp_path, ["a", "b"])
    assert d["systems"] == ["a"] and d["missing"] == ["b"] and d["per_hit_labels"] is False
    q1, q2 = d["queries"]["q1"]["hits"]["a"], d["queries"]["q2"]["hits"]["a"]
    assert q1["l"] == "soc" and q2["l"] == "co"
    assert [d["chunks"][i] for i in q1["c"]] == ["c1", "c2", "c3"] and q2["c"][0] == q1["c"][2]
    assert d["queries"]["q1"]["text"] is None and d["queries"]["q1"]["as_of"] is None
    assert "g" not in q1


def test_new_run_files_give_labels_signals_text_and_as_of(tmp_path):
    ranked = [f"c{i}" for i in range(12)]
    line = _old("q1", ranked, correct=True) | {
        "text": "What is the retention period?", "as_of": "2024-03-01T00:00:00Z",
        "labels": ["correct", "stale", "rumor"] + ["other"] * 9,
        "signals": {"semantic": [0.123456] * 12, "temporal": [1.0] * 12, "confidence": [None] * 12,
                    "graph": [0.0] * 12}}
    _run_file(tmp_path, "a", [line])
    d = drill.drill_data(tmp_path, ["a"])
    q = d["queries"]["q1"]
    hit = q["hits"]["a"]
    assert d["per_hit_labels"] is True
    assert (q["text"], q["as_of"]) == ("What is the retention period?", "2024-03-01T00:00:00Z")
    assert len(hit["c"]) == len(hit["s"]) == len(hit["l"]) == 10  # only the top 10
    assert hit["l"] == "csr" + "o" * 7
    assert hit["g"]["semantic"] == [0.123] * 10 and hit["g"]["confidence"] == [None] * 10
    assert set(hit["g"]) == set(drill.SIGNALS)


def test_text_and_as_of_fall_back_to_the_folders_dataset(tmp_path):
    _run_file(tmp_path, "a", [_old("q1", ["c1"])])
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "queries.jsonl").write_text(json.dumps(
        {"_id": "q1", "text": "t?", "metadata": {"as_of": "2024-01-01T00:00:00Z"}}) + "\n")
    q = drill.drill_data(tmp_path, ["a"])["queries"]["q1"]
    assert (q["text"], q["as_of"]) == ("t?", "2024-01-01T00:00:00Z")


@pytest.mark.parametrize("bad", ["{not json", json.dumps({"ranked": []}), json.dumps([1, 2])])
def test_a_malformed_run_line_names_file_and_line(tmp_path, bad):
    (tmp_path / "run_a.jsonl").write_text(META + "\n" + json.dumps(_old("q1", ["c1"])) + "\n" + bad + "\n")
    with pytest.raises(BenchError, match=r"run_a\.jsonl:3: "):
        drill.drill_data(tmp_path, ["a"])


def test_a_page_from_new_run_files_shows_their_labels_and_says_nothing_of_old_ones(tmp_path):
    run = tmp_path / "main"
    shutil.copytree(REPO / "results" / "main", run)
    for path in run.glob("run_*.jsonl"):
        lines = path.read_text().splitlines()
        out = [lines[0]]
        for line in lines[1:]:
            rec = json.loads(line)
            n = len(rec["ranked"])
            rec |= {"text": f"text of {rec['query_id']} </script>", "as_of": "2024-06-01T00:00:00Z",
                    "labels": ["stale"] + ["other"] * (n - 1),
                    "signals": {s: [0.5] * n for s in drill.SIGNALS}}
            out.append(json.dumps(rec))
        path.write_text("\n".join(out) + "\n")
    assert cli.run([str(run)]) == 0
    html = (run / "report.html").read_text()
    root = parse(html)
    section = root.one("section", cls="run", data_run="main")
    assert "need a run file written with per-hit labels" not in section.text
    data = json.loads(root.one("script", id="report-data").text)["runs"]["main"]
    q = data["queries"]["q0001"]
    assert q["text"] == "text of q0001 </script>" and q["as_of"] == "2024-06-01T00:00:00Z"
    assert all(h["l"][0] == "s" and set(h["g"]) == set(drill.SIGNALS) for h in q["hits"].values())
    assert html.count("</script>") == 2  # the data's own, and the code's: the query text cannot close either


def test_unknown_labels_are_an_error_not_other(tmp_path):
    _run_file(tmp_path, "a", [_old("q1", ["c1", "c2"]) | {"labels": ["correct", "maybe"]}])
    with pytest.raises(BenchError, match=r"run_a\.jsonl:2: 'labels' holds 'maybe'"):
        drill.drill_data(tmp_path, ["a"])


def test_non_finite_scores_and_signals_become_null_in_the_page_data(tmp_path):
    line = _old("q1", ["c1", "c2"]) | {"scores": [float("nan"), 0.5], "labels": ["other", "other"],
                                       "signals": {"semantic": [float("inf"), 0.25], "temporal": [1.0, None],
                                                   "confidence": [0.5, 0.5], "graph": [float("nan"), 0.0]}}
    _run_file(tmp_path, "a", [line])  # json.dumps writes bare NaN / Infinity, as old writers did
    d = drill.drill_data(tmp_path, ["a"])
    hit = d["queries"]["q1"]["hits"]["a"]
    assert hit["s"] == [None, 0.5] and hit["g"]["semantic"] == [None, 0.25] and hit["g"]["graph"] == [None, 0.0]
    json.dumps(d, allow_nan=False)  # valid JSON for the page


def test_as_of_falls_back_to_the_datasets_query_time(tmp_path):
    _run_file(tmp_path, "a", [_old("q1", ["c1"])])
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "queries.jsonl").write_text(json.dumps(
        {"_id": "q1", "text": "t?", "metadata": {"query_time": "2023-05-01T00:00:00Z"}}) + "\n")
    q = drill.drill_data(tmp_path, ["a"])["queries"]["q1"]
    assert q["as_of"] == "2023-05-01T00:00:00Z"


@pytest.mark.parametrize("rel,data,where", [
    ("dataset/queries.jsonl", b'{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": \n', "dataset/queries.jsonl:2: "),
    ("dataset/queries.jsonl", b'{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "\xff"}\n',
     "dataset/queries.jsonl: not valid UTF-8 at line 2"),
    ("dataset/queries.jsonl", b'[1, 2]\n', "dataset/queries.jsonl:1: expected an object"),
    ("qrels_test.trec", b"q1 0 c1 1\nq1 0 \xff 1\n", "qrels_test.trec: not valid UTF-8 at line 2"),
])
def test_a_malformed_dataset_or_qrels_file_is_one_line_exit_2(tmp_path, capsys, rel, data, where):
    run = tmp_path / "main"
    shutil.copytree(REPO / "results" / "main", run)
    (run / rel).parent.mkdir(exist_ok=True)
    (run / rel).write_bytes(data)
    assert cli.run([str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{run}/{where}" in err, err
    assert "Traceback" not in err and not (run / "report.html").exists()
