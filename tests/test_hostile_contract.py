"""Hostile plug-ins (issue 28, "a plug-in's output is trusted"): the output contract
(smartvector_bench/core/run/contract.py) and the guarded call on small arrays, each breach one line naming the system,
the call and (for a ranking) the query and the rule; and every in-tree system's runs, fresh and published, keep
the contract."""

from __future__ import annotations

import signal

import numpy as np
import pytest

from smartvector_bench.core.run.contract import RetrieverFault, check_info, check_search, check_signals, retriever_call
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run, read_run_jsonl, read_run_lines
from smartvector_bench.core.scratch import Terminated

from .conftest import REPO, compose_config


# ---- the contract on small arrays ------------------------------------------------------------------------

IDS = ["qa", "qb", "qc"]
N = 10


def good() -> Run:
    """Three queries, k = 4: full, padded after two hits, and no hit at all (NaN confidence)."""
    ranked = np.array([[3, 1, 7, 0], [5, 2, -1, -1], [-1, -1, -1, -1]], dtype=np.int64)
    scores = np.array([[0.9, 0.8, 0.8, 0.1], [0.5, 0.4, np.nan, np.nan], [np.nan] * 4])
    return Run("x", ranked, scores, np.array([0.9, 0.5, np.nan]))


def swapped(field: str, value) -> Run:
    """good() with one field replaced after construction (a plug-in may build its Run any way it likes)."""
    r = good()
    setattr(r, field, value)
    return r


def broken(field: str, row: int, col, value) -> Run:
    r = good()
    getattr(r, field)[row if col is None else (row, col)] = value
    return r


def test_the_contract_accepts_a_good_run_and_names_it():
    run = good()
    run.ranked = run.ranked.astype(np.int32)  # any integer dtype, returned as int64
    out = check_search("my_ret", run, IDS, 4, N)
    assert out.system == "my_ret" and out.ranked.dtype == np.int64 and out.scores.dtype == np.float64
    assert np.array_equal(out.ranked, good().ranked)
    assert check_search("my_ret", good(), IDS, 5, N).ranked.shape == (3, 4)  # fewer ranks than k
    no_hit_zero = broken("confidence", 2, None, 0.0)  # a query with no hit may say 0 instead of NaN
    assert check_search("my_ret", no_hit_zero, IDS, 4, N).confidence[2] == 0.0
    empty = Run("x", np.zeros((3, 0), dtype=np.int64), np.zeros((3, 0)), np.full(3, np.nan))
    assert check_search("my_ret", empty, IDS, 4, N).ranked.shape == (3, 0)


@pytest.mark.parametrize("run, rule", [
    (broken("ranked", 1, 0, -5), "query qb: id -5 at rank 1 is out of range [0, 10)"),
    (broken("ranked", 0, 3, 10), "query qa: id 10 at rank 4 is out of range [0, 10)"),
    (broken("ranked", 0, 2, 3), "query qa: id 3 at rank 3 repeats rank 1; ids must be unique per query"),
    (broken("scores", 0, 1, np.nan), "query qa: score nan at rank 2 (id 1) is not finite"),
    (broken("scores", 1, 0, -np.inf), "query qb: score -inf at rank 1 (id 5) is not finite"),
    (broken("ranked", 1, 3, 9), "query qb: padding -1 at rank 3 comes before a hit (id 9 at rank 4); -1 may only "
                                "pad the end of a ranking"),
    (broken("scores", 1, 2, 0.3), "query qb: padding -1 at rank 3 has score 0.3; padding takes a NaN score"),
    (broken("confidence", 0, None, 5.0), "query qa: confidence 5 is outside [0, 1]"),
    (broken("confidence", 1, None, -0.1), "query qb: confidence -0.1 is outside [0, 1]"),
    (broken("confidence", 0, None, np.nan), "query qa: confidence nan with 4 hit(s); NaN is allowed only for a "
                                            "query with no hit"),
    (broken("confidence", 2, None, np.inf), "query qc: confidence inf is outside [0, 1]"),
    ({"ranked": good().ranked}, "returned a dict, not a smartvector_bench.core.run.Run"),
    (swapped("ranked", good().ranked.astype(np.float64)), "Run.ranked has dtype float64; it must hold integer "
                                                          "corpus rows"),
    (swapped("ranked", good().ranked.astype(bool)), "Run.ranked has dtype bool; it must hold integer corpus rows"),
    (swapped("scores", good().scores.astype(object)), "Run.scores has dtype object; it must hold real numbers"),
    (swapped("confidence", good().confidence.tolist()), "Run.confidence is a list, not a numpy array"),
    (Run("x", good().ranked[:2], good().scores[:2], good().confidence[:2]),
     "Run.ranked has shape (2, 4); expected (3, <= 3): one row per query, at most k=3 ranks"),
    (swapped("scores", good().scores[:, :3]), "Run.scores has shape (3, 3); expected (3, 4), the shape of "
                                              "Run.ranked"),
    (swapped("confidence", np.zeros((3, 2))), "Run.confidence has shape (3, 2); expected (3,): one per query"),
])
def test_each_rule_is_one_line_naming_the_system_query_and_rule(run, rule):
    k = 3 if rule.startswith("Run.ranked has shape (2") else 4
    with pytest.raises(RetrieverFault) as info:
        check_search("my_ret", run, IDS, k, N)
    assert str(info.value) == "systems: my_ret.search broke the output contract: " + rule


def test_the_first_bad_query_is_named_and_scores_must_fall_when_asked():
    run = broken("ranked", 2, 0, 12)
    run.ranked[1, 1] = 99
    with pytest.raises(RetrieverFault, match=r": query qb: id 99 at rank 2 is out of range"):
        check_search("my_ret", run, IDS, 4, N)
    rising = broken("scores", 0, 3, 0.95)
    check_search("my_ret", rising, IDS, 4, N, ordered=False)  # what the harness asks (docs/systems.md)
    with pytest.raises(RetrieverFault, match=r"^systems: my_ret\.search broke the output contract: query qa: score "
                                             r"0\.95 at rank 4 is above 0\.8 at rank 3; scores must not increase"):
        check_search("my_ret", rising, IDS, 4, N)


# ---- the guarded call ----------------------------------------------------------------------------------

def _raise(exc: BaseException):
    with retriever_call("my_ret", "search"):
        raise exc


@pytest.mark.parametrize("exc, line", [
    (ValueError("boom"), "systems: my_ret.search raised ValueError: boom"),
    (SystemExit(3), "systems: my_ret.search raised SystemExit: 3"),
    (KeyError("a\nb"), "systems: my_ret.search raised KeyError: 'a\\nb'"),
    (RuntimeError("two\n  lines"), "systems: my_ret.search raised RuntimeError: two lines"),
    (MemoryError(), "systems: my_ret.search raised MemoryError"),
    (BenchError("model file missing"), "systems: my_ret.search: model file missing"),
])
def test_an_exception_inside_a_call_is_one_line_naming_system_and_call(exc, line):
    with pytest.raises(BenchError) as info:
        _raise(exc)
    assert str(info.value) == line
    assert isinstance(info.value, RetrieverFault) == (not isinstance(exc, BenchError))


def test_a_long_message_is_cut():
    with pytest.raises(RetrieverFault) as info:
        _raise(ValueError("x" * 5000))
    assert str(info.value) == "systems: my_ret.search raised ValueError: " + "x" * 300 + "..."


def test_the_harness_signals_and_a_named_bench_error_pass_unchanged():
    for exc in (Terminated(signal.SIGTERM), KeyboardInterrupt(), BenchError("my_ret needs metadata.x")):
        with pytest.raises(type(exc)) as info:
            _raise(exc)
        assert info.value is exc


# ---- describe() and hit_signals ------------------------------------------------------------------------

class Thing:
    pass


def test_describe_must_return_a_dict_json_holds():
    shared = {"a": 1}
    assert check_info("my_ret", "describe", {"x": [shared, shared], "y": None}) == {"x": [shared, shared], "y": None}
    loop: dict = {}
    loop["self"] = loop
    deep: list = []
    node = deep
    for _ in range(5000):  # deeper than json's recursion limit
        node.append([])
        node = node[0]
    allowed = "; allowed: dict with string keys, list, string, finite number, bool, null"
    for value, line in (
            (Thing(), "systems: my_ret.describe returned a Thing, not a dict (metrics.json's system_info.my_ret)"),
            ({"fit": {"loss": float("nan")}},
             "systems: my_ret.describe returned a dict metrics.json cannot hold: describe()['fit']['loss'] is nan "
             "(NaN and infinity are not JSON)" + allowed),
            ({"obj": [1, Thing()]},
             "systems: my_ret.describe returned a dict metrics.json cannot hold: describe()['obj'][1] is a Thing"
             + allowed),
            ({"n": np.int64(3)}, "systems: my_ret.describe returned a dict metrics.json cannot hold: describe()['n'] "
                                 "is an int64" + allowed),
            ({1: "a"}, "systems: my_ret.describe returned a dict metrics.json cannot hold: describe() is keyed by 1 "
                       "(keys must be strings)" + allowed),
            (loop, "systems: my_ret.describe returned a dict metrics.json cannot hold: describe()['self'] is a "
                   "container that holds itself" + allowed)):
        with pytest.raises(RetrieverFault) as info:
            check_info("my_ret", "describe", value)
        assert str(info.value) == line
    with pytest.raises(RetrieverFault, match=r"^systems: my_ret\.describe returned a dict metrics\.json cannot "
                                             r"hold: describe\(\) is not JSON \(RecursionError: maximum recursion depth"):
        check_info("my_ret", "describe", {"deep": deep})


def test_hit_signals_must_align_with_the_ranking():
    ok = {name: np.zeros((3, 4)) for name in ("semantic", "temporal", "confidence", "relational")}
    assert set(check_signals("sv", ok, (3, 4))) == set(ok)
    with pytest.raises(RetrieverFault, match=r"^systems: sv\.hit_signals broke the output contract: 'temporal' is "
                                             r"a float64 array of shape \(3, 3\); expected a real array of shape "
                                             r"\(3, 4\)"):
        check_signals("sv", {**ok, "temporal": np.zeros((3, 3))}, (3, 4))
    with pytest.raises(RetrieverFault, match=r"'relational' is missing"):
        check_signals("sv", {k: v for k, v in ok.items() if k != "relational"}, (3, 4))


# ---- every in-tree system keeps the contract --------------------------------------------------------------

KEY_RANKED = {"recent_cosine", "metadata_filter", "oracle", "smartvector", "smartvector_soft",  # docs/systems.md
              "smartvector_tuned"}


def test_every_in_tree_system_keeps_the_contract_on_the_tiny_run(tiny_main_run):
    out, metrics = tiny_main_run  # run() itself checked every search; here the files it wrote, read back
    ds = load_dataset(out / "dataset")
    files = sorted(out.glob("run_*.jsonl"))
    assert {f.stem.removeprefix("run_") for f in files} == set(metrics["systems"]) and len(files) >= 13
    falls = set()
    for f in files:
        meta, run = read_run_jsonl(f, ds.queries, ds.corpus)
        checked = check_search(meta["system"], run, ds.queries.ids, meta["k"], len(ds.corpus), ordered=False)
        assert np.array_equal(checked.ranked, run.ranked)
        try:
            check_search(meta["system"], run, ds.queries.ids, meta["k"], len(ds.corpus))
        except RetrieverFault as exc:
            assert "scores must not increase down the ranking" in str(exc)
            falls.add(meta["system"])
    assert falls <= KEY_RANKED  # only the systems that rank by a key before their score


PUBLISHED = sorted({str(f.parent.relative_to(REPO / "results")) for f in (REPO / "results").rglob("run_*.jsonl")})


@pytest.mark.parametrize("folder", PUBLISHED)  # main, main_large, handbook and every stored sweep job
def test_the_published_runs_keep_the_contract(folder):
    """The committed run files (corpus ids, not rows: the range rule is moot) have unique ids, finite scores,
    confidences in [0, 1] and at most k hits per query."""
    files = sorted((REPO / "results" / folder).glob("run_*.jsonl"))
    assert files
    for f in files:
        meta, rows = read_run_lines(f)
        k, recs = meta["k"], [rec for _, rec in rows]
        row_of: dict[str, int] = {}
        ranked = np.full((len(recs), k), -1, dtype=np.int64)
        scores = np.full((len(recs), k), np.nan)
        for i, rec in enumerate(recs):
            ranked[i, :len(rec["ranked"])] = [row_of.setdefault(c, len(row_of)) for c in rec["ranked"]]
            scores[i, :len(rec["scores"])] = [np.nan if s is None else s for s in rec["scores"]]
        conf = np.array([np.nan if rec["confidence"] is None else rec["confidence"] for rec in recs])
        check_search(meta["system"], Run(meta["system"], ranked, scores, conf), [rec["query_id"] for rec in recs],
                     k, len(row_of), ordered=meta["system"] not in KEY_RANKED)
    assert len(PUBLISHED) >= 3


def test_exactly_the_key_ranked_systems_declare_ranks_by_key():
    """The score-order rule is skipped by capability (RanksByKey), never by name: every in-tree system outside
    KEY_RANKED is held to it."""
    from smartvector_bench.systems import build_retriever, configured
    from smartvector_bench.systems.base import RanksByKey

    cfg = compose_config()
    names = configured(cfg["retrievers"])
    declared = {n for n in names if isinstance(build_retriever(n, dict(cfg["retrievers"][n])), RanksByKey)}
    assert declared == KEY_RANKED & set(names)
