"""Hostile plug-ins (issue 28, "a plug-in's output is trusted"): every retriever's output is checked against the
contract (smartvector_bench/core/contract.py) and every call into it is guarded, so a bad plug-in stops the run
in one line naming the system, the call and (for a ranking) the query and the rule, with no result file written.
Most cases call the checks on small arrays, or experiments.main.run with the hashing embedder on the tiny
dataset; two go through the CLI for the exit code and the single stderr line."""

from __future__ import annotations

import signal
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from experiments import feedback_loop
from experiments import main as main_experiment
from smartvector_bench.core.contract import RetrieverFault, check_info, check_search, check_signals, retriever_call
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run, read_run_jsonl, read_run_lines
from smartvector_bench.core.scratch import Terminated

from .conftest import REPO, TINY, compose_config, run_cli, write_tiny

PLUGIN = '''
import sys

import numpy as np

from smartvector_bench.core.run import Run


class Hostile:
    """Cosine, broken on purpose in the way ``mode`` names."""

    def __init__(self, name: str = "hostile", mode: str = "ok"):
        self.name, self.mode = name, mode

    def check_dataset(self, corpus):
        if self.mode == "check_raises":
            raise KeyError("created_at")

    def index(self, corpus, vectors, serve_time):
        if self.mode == "index_raises":
            raise RuntimeError("disk full")
        self.vectors = np.asarray(vectors, dtype=np.float64)

    def search(self, query_vectors, as_of, k, texts=None, **labels):
        if self.mode == "raises":
            raise ValueError("boom")
        if self.mode == "exits":
            sys.exit(3)
        scores = np.asarray(query_vectors, dtype=np.float64) @ self.vectors.T
        ranked = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        top = np.take_along_axis(scores, ranked, axis=1)
        conf = np.clip(top[:, 0], 0.0, 1.0)
        if self.mode == "negative_id":
            ranked[:, 0] = -5
        elif self.mode == "big_id":
            ranked[:, 0] = len(self.vectors)
        elif self.mode == "duplicates":
            ranked[:] = ranked[:, :1]
        elif self.mode == "nan_score":
            top[:, 1] = np.nan
        elif self.mode == "float_ids":
            ranked = ranked.astype(np.float64)
        elif self.mode == "dict":
            return {"ranked": ranked, "scores": top, "confidence": conf}
        elif self.mode == "confidence_5":
            conf[:] = 5.0
        return Run(self.name, ranked, top, conf)

    def describe(self):
        if self.mode == "describe_object":
            return object()
        if self.mode == "describe_nan":
            return {"rule": "cosine", "fit": {"loss": float("nan")}}
        return {"rule": "cosine", "mode": self.mode}
'''
RUN = ["embedder=hashing", "experiment.n_boot=20", "experiment.n_permutations=20", "print_table=false"]
CONTRACT = "systems: hostile.search broke the output contract: "


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> tuple[Path, Path]:
    """(folder holding the module hostile_ret, config dir with retriever/hostile.yaml), outside the repository."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "src").mkdir()
    (root / "src" / "hostile_ret.py").write_text(PLUGIN, encoding="utf-8")
    (root / "conf" / "retriever").mkdir(parents=True)
    (root / "conf" / "retriever" / "hostile.yaml").write_text(
        "# @package retrievers.hostile\n_target_: hostile_ret.Hostile\nmode: ok\n", encoding="utf-8")
    return root / "src", root / "conf"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("tiny") / "ds")


@pytest.fixture(scope="module")
def first_hits(tiny) -> dict:
    """The first query's id, the corpus size, and the chunks the sound plug-in ranks first and second for that
    query (cosine of the hashing embedder, as in the run)."""
    ds = load_dataset(tiny)
    emb = build_embedder(dict(compose_config(["embedder=hashing"])["embedder"]))
    scores = emb.encode(ds.queries.texts[:1]) @ np.asarray(emb.encode(ds.corpus.texts), dtype=np.float64).T
    order = np.argsort(-scores[0], kind="stable")
    return {"q0": ds.queries.ids[0], "n": len(ds.corpus), "top": int(order[0]), "second": int(order[1])}


@pytest.fixture
def run_hostile(plugin, tiny, monkeypatch, tmp_path):
    """experiments.main.run with retrievers.hostile in ``mode``: (the out folder, the BenchError's message or
    None when the run passed)."""
    monkeypatch.syspath_prepend(str(plugin[0]))

    def go(mode: str, systems: str = "[hostile]") -> tuple[Path, str | None]:
        cfg = compose_config(TINY + RUN + [f"dataset.path={tiny}", f"systems={systems}", "+experiment.progress=false"])
        cfg["retrievers"]["hostile"] = {"_target_": "hostile_ret.Hostile", "mode": mode}
        out = tmp_path / mode
        try:
            main_experiment.run(cfg, out)
        except BenchError as exc:
            return out, str(exc)
        return out, None
    return go


def left_behind(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir()) if out.exists() else []


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


# ---- through experiments.main.run: the cases, nothing written ------------------------------------

def test_a_sound_plugin_runs(run_hostile):
    out, error = run_hostile("ok")
    assert error is None
    assert {"metrics.json", "run_hostile.jsonl", "run_hostile.trec"} <= set(left_behind(out))


HOSTILE = [
    ("negative_id", "{contract}query {q0}: id -5 at rank 1 is out of range [0, {n})"),
    ("big_id", "{contract}query {q0}: id {n} at rank 1 is out of range [0, {n})"),
    ("duplicates", "{contract}query {q0}: id {top} at rank 2 repeats rank 1; ids must be unique per query"),
    ("nan_score", "{contract}query {q0}: score nan at rank 2 (id {second}) is not finite"),
    ("float_ids", "{contract}Run.ranked has dtype float64; it must hold integer corpus rows"),
    ("dict", "{contract}returned a dict, not a smartvector_bench.core.run.Run"),
    ("confidence_5", "{contract}query {q0}: confidence 5 is outside [0, 1]"),
    ("raises", "systems: hostile.search raised ValueError: boom"),
    ("exits", "systems: hostile.search raised SystemExit: 3"),
    ("index_raises", "systems: hostile.index raised RuntimeError: disk full"),
    ("check_raises", "systems: hostile.check_dataset raised KeyError: 'created_at'"),
    ("describe_object", "systems: hostile.describe returned an object, not a dict (metrics.json's "
                        "system_info.hostile)"),
    ("describe_nan", "systems: hostile.describe returned a dict metrics.json cannot hold: describe()['fit']['loss'] "
                     "is nan (NaN and infinity are not JSON); allowed: dict with string keys, list, string, finite "
                     "number, bool, null"),
]


@pytest.mark.parametrize("mode, rule", HOSTILE, ids=[mode for mode, _ in HOSTILE])
def test_a_hostile_plugin_stops_the_run_in_one_line_and_writes_nothing(mode, rule, run_hostile, first_hits):
    out, error = run_hostile(mode)
    assert error == rule.format(contract=CONTRACT, **first_hits)
    assert left_behind(out) == []  # no run file, no metrics.json, no table: nothing at all


def test_a_crashing_check_dataset_stops_systems_all_instead_of_leaving_the_system_out(run_hostile):
    out, error = run_hostile("check_raises", systems="all")
    assert error == "systems: hostile.check_dataset raised KeyError: 'created_at'"
    assert left_behind(out) == []


def test_the_feedback_loop_checks_its_searches():
    class Exits:
        def search(self, qv, as_of, k, texts=None, **labels):
            raise SystemExit(3)

    class Repeats:
        def search(self, qv, as_of, k, texts=None, **labels):
            return Run("x", np.zeros((2, k), dtype=np.int64), np.ones((2, k)), np.ones(2))

    q_t = SimpleNamespace(ids=["q1", "q2"], as_of=np.zeros(2))
    with pytest.raises(RetrieverFault, match=r"^systems: smartvector\.search raised SystemExit: 3$"):
        feedback_loop._search("smartvector", Exits(), np.zeros((2, 4)), q_t, 3, 10)
    with pytest.raises(RetrieverFault, match=r"^systems: plain_cosine\.search broke the output contract: query q1: "
                                             r"id 0 at rank 2 repeats rank 1"):
        feedback_loop._search("plain_cosine", Repeats(), np.zeros((2, 4)), q_t, 3, 10)


# ---- the CLI: exit 2, one line, no run folder left -------------------------------------------------------

@pytest.mark.parametrize("mode, line", [("raises", "systems: hostile.search raised ValueError: boom"),
                                        ("exits", "systems: hostile.search raised SystemExit: 3")],
                         ids=["raises", "exits"])
def test_through_the_cli(mode, line, plugin, tiny, tmp_path):
    src, conf = plugin
    out = tmp_path / "run"
    r = run_cli("smartvector-bench", "--config-dir", str(conf), *RUN, f"dataset.path={tiny}", "systems=[hostile]",
                f"retrievers.hostile.mode={mode}", "+experiment.progress=false", f"hydra.run.dir={out}",
                env={"PYTHONPATH": str(src)})
    assert r.returncode == 2, r.stderr[-2000:]
    assert [ln for ln in r.stderr.splitlines() if ln.strip()] == [f"smartvector-bench: error: {line}"]
    assert not out.exists()


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
