"""The gate against another CPU's float noise (tools/gate/host_noise.py, the exact6 unit): a rerun whose ranked
lists equal the committed ones up to near-tied hits passes, and anything else stays a miss."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from smartvector_bench.tools.gate import host_noise, sweep_reruns
from smartvector_bench.tools.gate.host_noise import Replay, RunFileDiff, explain_query, reconcile
from smartvector_bench.tools.gate.paths import compare
from smartvector_bench.tools.gate.report import Row

REPO = Path(__file__).resolve().parents[1]


def _line(ids, scores, conf=None, qid="q1"):
    return {"query_id": qid, "ranked": list(ids), "scores": list(scores),
            "confidence": scores[0] if conf is None else conf}


A = _line("abcde", [0.9, 0.8, 0.7000001, 0.7, 0.5])
SCORE = dict(zip("abcde", A["scores"]))


def _order(ids: str, qid: str = "q1") -> dict:
    """A's hits in another order, each keeping its score."""
    return _line(ids, [SCORE[c] for c in ids], conf=SCORE[ids[0]], qid=qid)


def test_identical_and_rescored_lines_are_noise():
    assert explain_query(A, dict(A)) is None
    assert explain_query(A, _line("abcde", [0.900001, 0.799999, 0.7000001, 0.7, 0.500002])) is None


def test_a_swap_of_near_tied_hits_is_noise_and_of_distinct_hits_is_not():
    assert explain_query(A, _order("abdce")) is None
    why = explain_query(A, {**_order("bacde"), "confidence": 0.9})
    assert why and "not tied" in why


def test_a_score_or_confidence_beyond_the_tolerance_is_not_noise():
    assert "scored" in explain_query(A, _line("abcde", [0.9, 0.8, 0.7000001, 0.7, 0.5001]))
    assert "confidence" in explain_query(A, _line("abcde", [0.9, 0.8, 0.7000001, 0.7, 0.5], conf=0.91))
    assert "hits" in explain_query(A, _line("abcd", [0.9, 0.8, 0.7000001, 0.7]))


def test_a_hit_may_cross_the_cut_off_only_at_a_tie_with_it():
    assert explain_query(A, _line("abcdf", [0.9, 0.8, 0.7000001, 0.7, 0.500001])) is None
    why = explain_query(A, _line("abcdf", [0.9, 0.8, 0.7000001, 0.7, 0.49]))
    assert why and "not tied" in why
    # a re-ranking system: the entering hit sits anywhere, but its score ties the list's lowest
    re = _line("xabcd", [0.7, 0.9, 0.8, 0.75, 0.6])
    assert explain_query(re, _line("xaybc", [0.7, 0.9, 0.6000005, 0.8, 0.75])) is None
    assert "not tied" in explain_query(re, _line("xabcy", [0.7, 0.9, 0.8, 0.75, 0.5]))
    assert "left the list" in explain_query(re, _line("xbcdy", [0.7, 0.8, 0.75, 0.6, 0.600001]))


def test_lists_without_scores_must_be_identical():
    a = _line("ab", [None, None], conf=0.5)
    assert explain_query(a, dict(a)) is None
    assert explain_query(a, _line("ba", [None, None], conf=0.5)) is not None


def _write(path: Path, lines: list[dict]) -> None:
    meta = {"_meta": {"system": "s", "k": 5}}
    path.write_text("\n".join(json.dumps(x) for x in [meta, *lines]) + "\n", encoding="utf-8")


def test_diff_folders_reads_both_files_and_names_what_differs(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "f").mkdir()
    _write(tmp_path / "c" / "run_s.jsonl", [A, {**A, "query_id": "q2"}])
    _write(tmp_path / "f" / "run_s.jsonl", [_order("abdce"), {**_order("bacde", qid="q2"), "confidence": 0.9}])
    d = host_noise.diff_folders(["s", "gone"], tmp_path / "c", tmp_path / "f")
    assert d["s"].n_reordered == 2 and d["s"].n_queries == 2
    assert len(d["s"].unexplained) == 1 and d["s"].unexplained[0].startswith("q2:")
    assert d["gone"].error and not d["gone"].explained
    rows = host_noise.run_file_rows("main", d)
    assert [r.ok for r in rows] == [False, False]


def _rows():
    return [Row("main.systems.s.test.top1", 0.5, 0.51, "4 dp", False, "differs at 4 decimals"),
            Row("main.systems.t.test.top1", 0.5, 0.51, "4 dp", False, "differs at 4 decimals"),
            Row("main.systems.t.test.mcnemar_p", 0.5, 0.51, "4 dp", False, "differs at 4 decimals"),
            Row("main.dataset.n_vectors", 5, 6, "4 dp", False, "differs")]


def _replayed(rows):
    return Replay(n_values=len(rows), matched={r.metric for r in rows})


def test_reconcile_explains_only_system_misses_whose_run_file_moved_and_whose_value_replays():
    diffs = {"s": RunFileDiff("s", n_queries=2, n_reordered=1, n_rescored=1), "t": RunFileDiff("t", n_queries=2)}
    rows = _rows()
    assert reconcile(rows, diffs, _replayed(rows)) == 2
    assert [r.ok for r in rows] == [True, False, True, False]  # t's own file is identical; a paired test reads s
    assert "host float noise" in rows[0].note


def test_reconcile_explains_nothing_when_a_run_file_differs_beyond_noise_or_the_evaluator_moved():
    bad = {"s": RunFileDiff("s", n_reordered=1, unexplained=["q1: rank 1"]), "t": RunFileDiff("t", n_rescored=1)}
    rows = _rows()
    assert reconcile(rows, bad, _replayed(rows)) == 0 and not any(r.ok for r in rows)
    moved = {"s": RunFileDiff("s", n_reordered=1, n_rescored=1)}
    rows = _rows()
    assert reconcile(rows, moved, Replay(matched=set())) == 0  # today's evaluator does not give the value
    assert reconcile(rows, moved, Replay(error="no dataset")) == 0


def test_exact6_allows_one_unit_of_the_stored_decimal_and_no_more():
    spec = {"kind": "exact6", "value": 0.052071, "tolerance": 0.0}
    assert compare(spec, 0.052072)[0] and compare(spec, 0.05207)[0]
    assert not compare(spec, 0.052073)[0]
    assert not compare({**spec, "value": [0.1, None]}, [0.100002, None])[0]
    tidy = sweep_reruns.compare_tidy
    row = {"sweep": "x", "job": "0", "status": "complete", "dataset.seed": "1", "system": "s", "split": "test",
           "ece_lo": "0.052071"}
    ok = tidy("x", [{**row, "ece_lo": "0.052072"}], [row], ["dataset.seed"], list(row))
    bad = tidy("x", [{**row, "ece_lo": "0.052073"}], [row], ["dataset.seed"], list(row))
    assert [c.ok for c in ok] == [True] and [c.ok for c in bad] == [False]


@pytest.fixture(scope="module")
def main_dataset(tmp_path_factory):
    """The committed main run's dataset, regenerated from its recorded config (checked against its sha256)."""
    from data_gen.params import params_from_config
    from data_gen.writer import write_dataset
    m = json.loads((REPO / "results" / "main" / "metrics.json").read_text(encoding="utf-8"))
    out = tmp_path_factory.mktemp("main_ds") / "dataset"
    write_dataset(params_from_config(dict(m["provenance"]["config"]["dataset"])), out)
    return out


def _expected(name: str) -> dict:
    return json.loads((REPO / "results" / "expected.json").read_text(encoding="utf-8"))["experiments"][name]


def test_the_committed_main_run_files_replay_to_the_committed_metrics(main_dataset):
    exp = _expected("main")
    r = host_noise.replay("main", REPO / "results" / "main", main_dataset, exp)
    assert r.error is None and r.n_values > 2000
    # every ranking metric of every system; only what ranks ties of the 6-decimal stored confidences (AUROC,
    # the calibration maps fitted on them) may move
    tie_sensitive = [m for m in r.misses if m.split(".")[1] == "calibration" or ".auroc" in m]
    assert tie_sensitive == r.misses and len(r.misses) < 0.01 * r.n_values, r.misses[:5]
    ranking = {p for p in exp if p.startswith("main.systems.") and p.rsplit(".", 1)[-1] in
               ("top1", "stale_rate", "rumor_rate", "mrr_at_10", "ndcg_at_10", "leakage_at_10", "ece", "mcnemar_p")}
    assert len(ranking) > 100 and ranking <= r.matched


def test_a_changed_evaluator_is_caught_by_the_replay(main_dataset, monkeypatch):
    import experiments.main as main_mod
    real = main_mod.evaluate_split

    def shifted(*a, **kw):
        out = real(*a, **kw)
        out["top1"] = out["top1"] + 0.01
        return out

    monkeypatch.setattr(main_mod, "evaluate_split", shifted)
    exp = {p: s for p, s in _expected("main").items() if p.endswith(".test.top1")}
    r = host_noise.replay("main", REPO / "results" / "main", main_dataset, exp)
    assert r.error is None and not r.matched and len(r.misses) == len(exp)


def test_replay_refuses_another_dataset(main_dataset, tmp_path):
    other = tmp_path / "ds"
    shutil.copytree(main_dataset, other)
    corpus = next(p for p in other.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".parquet", ".csv"))
    corpus.write_bytes(corpus.read_bytes() + b"\n")
    r = host_noise.replay("main", REPO / "results" / "main", other, _expected("main"))
    assert r.error and not r.matched
