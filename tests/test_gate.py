"""The regression gate (smartvector_bench/tools/gate/): what it must fail on any machine, and what it must not.

A small run of experiment=main (tiny dataset, hashing embedder) is the committed folder; a copy of it is the
"rerun", edited to carry each mutation. "Another host" is the same comparison with the machine fingerprint of
the rerun changed, which turns on the rounding bounds of ``tolerances.py``: every mutation must fail both ways,
naming the file and the query or figure; rounding within the bounds must pass only on another host."""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest

from smartvector_bench.tools.gate import cli as gate_cli, tolerances as T
from smartvector_bench.tools.gate.committed import check_committed
from smartvector_bench.tools.gate.files import read_expected
from smartvector_bench.tools.gate.rankings import line_diff
from smartvector_bench.tools.gate.replay import replay_main
from smartvector_bench.systems.discovery import in_tree

from .conftest import TINY, compose_config

SMALL = TINY + ["embedder=hashing", "experiment.n_boot=100", "experiment.n_permutations=200"]
HOSTS = ["same host", "another host"]


@pytest.fixture(scope="module")
def committed_root(tmp_path_factory) -> Path:
    """A results root holding one small main run, with its manifest."""
    root = tmp_path_factory.mktemp("gate") / "results"
    importlib.import_module("experiments.main").run(compose_config(["experiment=main", *SMALL]), root / "main")
    shutil.rmtree(root / "main" / "dataset")  # not published: the gate regenerates it from the recorded config
    assert gate_cli.main(["--write-expected", "--results-from", str(root), "--expected",
                          str(root / "expected.json")]) == 0
    return root


@pytest.fixture
def root(committed_root, tmp_path) -> Path:
    dst = tmp_path / "results"
    shutil.copytree(committed_root, dst)
    return dst


def rerun_copy(root: Path, host: str) -> Path:
    """A copy of the committed main folder standing for a rerun, on this host or (fingerprint changed) another."""
    fresh = root.parent / "rerun"
    shutil.copytree(root / "main", fresh)
    if host == "another host":
        edit_json(fresh / "metrics.json", lambda d: d["provenance"].update(machine_fingerprint="0" * 16))
    return fresh


def edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    fn(doc)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def edit_lines(path: Path, fn) -> list[str]:
    """Apply ``fn`` to every query line of a run file; returns the ids of the lines it changed."""
    lines = path.read_text(encoding="utf-8").splitlines()
    changed, out = [], [lines[0]]
    for line in lines[1:]:
        rec = json.loads(line)
        new = fn(json.loads(line))
        if new != rec:
            changed.append(rec["query_id"])
        out.append(json.dumps(new))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return changed


def misses(rows) -> list[str]:
    return [f"{r.metric}: {r.note}" for r in rows if not r.ok]


def compare(root: Path, fresh: Path):
    return gate_cli.compare_main("main", root / "main", fresh)


def committed_misses(root: Path) -> list[str]:
    rows, _ = check_committed(root / "expected.json", read_expected(root / "expected.json"))
    return [f"{r.file}: {r.metric}: {r.note}" for r in rows if not r.ok]


# -- what passes -----------------------------------------------------------------------------------------------

def test_the_committed_small_run_passes_and_replays_exactly(root):
    rows, _ = check_committed(root / "expected.json", read_expected(root / "expected.json"))
    assert [r for r in rows if not r.ok] == []
    replayed = [r for r in rows if "today's code" in str(r.expected)]
    assert len(replayed) > 20 and all(r.tolerance.startswith("exact") for r in replayed)


@pytest.mark.parametrize("host", HOSTS)
def test_an_identical_rerun_passes(root, host):
    rows = compare(root, rerun_copy(root, host))
    assert misses(rows) == [] and sum("ranked lists" in r.metric for r in rows) == len(in_tree())  # every system


def test_rounding_within_the_bounds_passes_only_on_another_host(root):
    def nudge(rec):
        rec["scores"] = [s + 0.3 * T.SCORE_NOISE * max(1, abs(s)) for s in rec["scores"]]
        rec["confidence"] = rec["confidence"] + 1e-7 if rec["confidence"] is not None else None
        return rec
    for host, ok in (("same host", False), ("another host", True)):
        fresh = rerun_copy(root, host)
        assert edit_lines(fresh / "run_plain_cosine.jsonl", nudge)
        bad = misses(compare(root, fresh))
        assert (bad == []) is ok, bad
        shutil.rmtree(fresh)


# -- mutations that must fail on every host --------------------------------------------------------------------

def _flip_exact_ties(rec):
    """The opposite tie rule: exactly tied neighbours swapped (the higher corpus index first)."""
    ids, s = rec["ranked"], rec["scores"]
    for i in range(len(ids) - 1):
        if s[i] == s[i + 1]:
            ids[i], ids[i + 1] = ids[i + 1], ids[i]
    return rec


@pytest.mark.parametrize("host", HOSTS)
def test_a_tie_rule_change_fails(root, host):
    fresh = rerun_copy(root, host)
    changed = edit_lines(fresh / "run_bm25.jsonl", _flip_exact_ties)
    assert changed, "the small run has exact ties in BM25"
    bad = misses(compare(root, fresh))
    assert len(bad) == 1 and bad[0].startswith("main run_bm25.jsonl: ranked lists")
    assert "exactly tied" in bad[0] or host == "same host"
    assert any(q in bad[0] for q in changed)


@pytest.mark.parametrize("host", HOSTS)
def test_one_flipped_top1_fails_naming_the_query(root, host):
    fresh = rerun_copy(root, host)
    done = []

    def flip(rec):
        s = rec["scores"]
        if not done and len(s) > 1 and s[0] - s[1] > 2 * T.score_bound(s[0], False):
            rec["ranked"][:2] = rec["ranked"][1::-1]
            done.append(rec["query_id"])
        return rec
    edit_lines(fresh / "run_valid_cosine.jsonl", flip)
    bad = misses(compare(root, fresh))
    assert len(bad) == 1 and "run_valid_cosine.jsonl" in bad[0] and f"{done[0]}:" in bad[0], bad


@pytest.mark.parametrize("exact", [True, False])
def test_an_evaluator_change_fails_the_replay(root, monkeypatch, exact):
    import experiments.main as main_mod
    real = main_mod.evaluate_split

    def shifted(*a, **kw):
        out = real(*a, **kw)
        out["ece"] = out["ece"] + 0.001
        return out
    monkeypatch.setattr(main_mod, "evaluate_split", shifted)
    bad = misses(replay_main("main", root / "main", exact, "x"))
    assert len(bad) == 1 and bad[0].startswith("main: metrics.json systems") and ".ece:" in bad[0]


def test_an_edited_committed_number_fails_even_with_forged_hashes(root):
    def edit(d):
        d["systems"]["plain_cosine"]["test"]["top1"] += 0.01
    edit_json(root / "main" / "metrics.json", edit)
    prov = root / "main" / "PROVENANCE.json"  # a publication would have one; forge it and the manifest too
    if prov.is_file():
        prov.unlink()
    assert gate_cli.main(["--write-expected", "--results-from", str(root), "--expected",
                          str(root / "expected.json")]) == 0
    bad = committed_misses(root)
    assert len(bad) == 2, bad  # the figure, and table.md, which no longer renders from it
    assert "metrics.json systems" in bad[0] and "plain_cosine.test.top1:" in bad[0]
    assert "table.md" in bad[1]


def test_a_committed_file_without_the_error_anatomy_fails_even_with_forged_hashes(root):
    def strip(d):
        for per in d["systems"].values():
            for m in per.values():
                for key in ("anatomy", "version_accuracy", "version_accuracy_ci"):
                    m.pop(key, None)
    edit_json(root / "main" / "metrics.json", strip)
    prov = root / "main" / "PROVENANCE.json"
    if prov.is_file():
        prov.unlink()
    assert gate_cli.main(["--write-expected", "--results-from", str(root), "--expected",
                          str(root / "expected.json")]) == 0
    bad = committed_misses(root)
    assert any("metrics.json anatomy" in b and "republish" in b for b in bad), bad
    assert any("metrics.json systems" in b and ".anatomy." in b for b in bad), bad


@pytest.mark.parametrize("field", ["labels", "stale", "family"])
def test_a_wrong_hit_label_or_field_in_a_committed_run_file_fails_the_replay(root, field):
    done = []

    def wrong(rec):
        if not done:
            if field == "labels":
                rec["labels"] = ["rumor" if x != "rumor" else "other" for x in rec["labels"]]
            else:
                rec[field] = (not rec["stale"]) if field == "stale" else "another.family"
            done.append(rec["query_id"])
        return rec
    edit_lines(root / "main" / "run_smartvector.jsonl", wrong)
    bad = misses(replay_main("main", root / "main", True, "x"))
    assert len(bad) >= 1 and bad[0].startswith("main: run_smartvector.jsonl labels and fields"), bad
    assert f"{done[0]} {field}:" in bad[0]


def test_a_removed_or_stray_file_fails_naming_it(root):
    (root / "main" / "run_bm25.trec").unlink()
    (root / "main" / "notes.txt").write_text("x")
    bad = committed_misses(root)
    assert any("main/run_bm25.trec: sha256" in b for b in bad) and any("main/notes.txt: recorded" in b for b in bad)


def test_a_changed_dataset_byte_fails_the_replay_and_the_rerun(root, monkeypatch):
    import data_gen.build as build

    real = build.write_from_config

    def another_dataset(cfg, target, **kw):  # a generator that now writes other bytes, its manifest consistent
        return real({**cfg, "contradiction_rate": cfg["contradiction_rate"] / 2}, target, **kw)
    import smartvector_bench.tools.report.stored_queries as sq
    monkeypatch.setattr(sq, "write_from_config", another_dataset)
    bad = misses(replay_main("main", root / "main", True, "x"))
    assert len(bad) == 1 and "has dataset sha256" in bad[0] and "metrics.json" in bad[0], bad
    fresh = rerun_copy(root, "another host")
    edit_json(fresh / "metrics.json", lambda d: d["dataset"].update(sha256="f" * 64))
    bad = misses(compare(root, fresh))
    assert len(bad) == 1 and bad[0].startswith("main: dataset sha256: the generator or its config changed")


def test_a_config_change_fails_even_when_the_rankings_agree(root):
    fresh = rerun_copy(root, "same host")
    edit_json(fresh / "metrics.json", lambda d: d["provenance"]["config"]["experiment"].update(n_boot=7))
    bad = misses(compare(root, fresh))
    assert len(bad) == 1 and "experiment.n_boot: 7, committed 100" in bad[0]


def test_a_stray_or_missing_run_file_in_a_rerun_fails(root):
    fresh = rerun_copy(root, "another host")
    (fresh / "run_bm25.jsonl").rename(fresh / "run_bm26.jsonl")
    bad = misses(compare(root, fresh))
    assert len(bad) == 2 and "run_bm25.jsonl" in bad[0] and "run_bm26.jsonl" in bad[1]
    assert all("not written by the" in b for b in bad)


# -- the rules, line by line -----------------------------------------------------------------------------------

def line(ids, scores, conf=0.5):
    return {"ranked": list(ids), "scores": list(scores), "confidence": conf}


B = T.SCORE_NOISE


@pytest.mark.parametrize("a, b, exact_ok, other_ok", [
    (line("xy", [0.9, 0.5]), line("xy", [0.9, 0.5]), True, True),
    (line("xy", [0.9, 0.5]), line("xy", [0.9 + B / 2, 0.5]), False, True),            # rounding
    (line("xy", [0.9, 0.5]), line("xy", [0.9 + 3 * B, 0.5]), False, False),           # more than rounding
    (line("xy", [0.9, 0.9 - B]), line("yx", [0.9 - B, 0.9]), False, True),            # near-tied swap
    (line("xy", [0.9, 0.9]), line("yx", [0.9, 0.9]), False, False),                   # exact tie: the tie rule
    (line("xy", [0.9, 0.8]), line("yx", [0.8, 0.9]), False, False),                   # not tied
    (line("xy", [0.9, 0.5]), line("xz", [0.9, 0.5 + B]), False, True),                # traded at the cut-off
    (line("xyz", [0.9, 0.5, 0.4]), line("xzy", [0.9, 0.5, 0.4]), False, False),       # entered above the cut-off
    (line("xy", [0.9, 0.5]), line("x", [0.9]), False, False),                          # a hit lost
    (line("xy", [0.9, 0.5], 0.5), line("xy", [0.9, 0.5], 0.6), False, False),          # confidence
    (line("xy", [6.0, 2.0]), line("xy", [6.0 + 4 * B, 2.0]), False, True),             # relative to |score|
    (line("xxy", [0.9, 0.9, 0.5]), line("xxy", [0.9 + B, 0.9 + B, 0.5]), False, True),  # one text twice, rescored
    (line("xxy", [0.9, 0.9, 0.5]), line("xyx", [0.9, 0.5, 0.9]), False, False),        # ... and reordered
])
def test_line_rules(a, b, exact_ok, other_ok):
    assert (line_diff(a, b, True) is None) is exact_ok
    assert (line_diff(a, b, False) is None) is other_ok


def test_the_score_bound_is_its_formula_and_far_above_the_measured_noise():
    assert T.SCORE_NOISE == pytest.approx((2 * 16 + 8 * 384 ** 0.5) * 2 ** -23)
    assert T.SCORE_NOISE > 20 * 1.07e-6  # the largest score change measured in make regress on an emulated CPU
    assert T.SCORE_NOISE < 1e-4         # far below any change of scoring or data


def test_exact_host_needs_the_same_fingerprint_packages_and_python():
    a = {"machine_fingerprint": "f1", "packages": {"numpy": "2.4"}, "python": "3.11.7"}
    assert T.exact_host(a, dict(a))[0]
    assert not T.exact_host({}, a)[0]
    assert "machine" in T.exact_host(a, {**a, "machine_fingerprint": "f2"})[1]
    assert "numpy" in T.exact_host(a, {**a, "packages": {"numpy": "2.5"}})[1]
    # a package the committed record predates is not compared; one both name is, even when one side lacks it
    newer = {**a, "packages": {**a["packages"], "lancedb": "0.40.0"}}
    assert T.exact_host(a, newer)[0]
    assert "lancedb" in T.exact_host({**newer, "packages": {**newer["packages"], "lancedb": None}}, newer)[1]


def test_same_figure_allows_one_stored_unit_off_an_exact_host_only():
    assert T.same_figure(0.123456, 0.123456, True) and not T.same_figure(0.123457, 0.123456, True)
    assert T.same_figure(0.123457, 0.123456, False) and not T.same_figure(0.123458, 0.123456, False)
    assert T.same_figure("a", "a", False) and not T.same_figure(True, 1, False)


# -- the command line ----------------------------------------------------------------------------------------

def test_the_cli_fails_on_a_mutated_folder_and_names_it(root, capsys):
    fresh = rerun_copy(root, "another host")
    edit_lines(fresh / "run_bm25.jsonl", _flip_exact_ties)
    code = gate_cli.main(["--results-from", str(fresh), "--expected", str(root / "expected.json"), "--only", "main"])
    out = capsys.readouterr()
    assert code == 1 and "main run_bm25.jsonl: ranked lists" in out.out and "REGRESSION" in out.err


def test_a_bad_manifest_is_bad_input(root, capsys):
    (root / "expected.json").write_text("{}")
    assert gate_cli.main(["--expected", str(root / "expected.json"), "--results-from", str(root)]) == 2
    assert "manifest" in capsys.readouterr().err


def test_a_dataset_that_cannot_be_rebuilt_here_is_not_replayed_and_says_why(root):
    edit_json(root / "main" / "metrics.json",
              lambda d: d["provenance"]["config"]["dataset"].update(name="git_history", repo="../nowhere.bundle"))
    rows = replay_main("main", root / "main", True, "x")
    assert len(rows) == 1 and rows[0].ok and rows[0].got == "not replayed here"
    assert "dataset.repo=../nowhere.bundle not found" in rows[0].note


def test_a_configured_system_that_did_not_run_is_not_a_config_change():
    """Every conf/retriever/*.yaml is in every run's config; a sweep job runs a few systems. Adding a retriever
    yaml leaves the stored jobs' compared keys as they were; changing a system that ran does not."""
    from smartvector_bench.tools.gate.cli import ran_config

    def run(retrievers: dict, systems=("smartvector",)) -> dict:
        return {"systems": dict.fromkeys(systems, {}),
                "provenance": {"config": {"print_table": False, "retrievers": retrievers, "dataset": {"seed": 1}}}}

    base = {"smartvector": {"_target_": "a.B", "k": 1}}
    added = {**base, "smartvector_tuned": {"_target_": "a.T"}}
    assert ran_config(run(base)) == ran_config(run(added)) == {"retrievers": base, "dataset": {"seed": 1}}
    assert ran_config(run({"smartvector": {"_target_": "a.B", "k": 2}})) != ran_config(run(base))
    assert "smartvector_tuned" in ran_config(run(added, ("smartvector", "smartvector_tuned")))["retrievers"]
