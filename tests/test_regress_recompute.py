"""The regression gate's own recomputation of main's metrics from the run files (``recompute.recompute_rows``),
p-values on a log scale and the ECE bins in the expected values.

Fast: one tiny ``main`` run (hashing embedder), copied per test. An edit is re-blessed with ``--write-expected``
(new expected values and manifest) so that only the recomputation from the run files and the dataset can
catch it, unless a test says otherwise."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from smartvector_bench.tools.gate import cli as gate_cli, files as gate_files, invariants, recompute
from smartvector_bench.tools.gate.committed import check_committed
from smartvector_bench.tools.gate.expected import read_expected
from smartvector_bench.tools.gate.paths import compare
from smartvector_bench.tools.gate.report import Row

from .conftest import REPO
from .test_regress import _run_small, committed_fails


@pytest.fixture(scope="module")
def tiny_main(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tiny_main")
    _run_small("main", root / "main")
    assert gate_cli.main(["--write-expected", "--results-from", str(root), "--expected", str(root / "expected.json"),
                         "--only", "main"]) == 0
    return root


@pytest.fixture
def root(tiny_main, tmp_path) -> Path:
    dst = tmp_path / "results"
    shutil.copytree(tiny_main, dst)
    return dst


def _metrics(root: Path) -> dict:
    return json.loads((root / "main" / "metrics.json").read_text())


def _write_metrics(root: Path, doc: dict) -> None:
    (root / "main" / "metrics.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def _rebless(root: Path) -> None:
    """New expected values and manifest from the edited files: only the invariants can catch the edit."""
    assert gate_cli.main(["--write-expected", "--results-from", str(root), "--expected", str(root / "expected.json"),
                         "--only", "main"]) == 0


def _rehash(root: Path) -> None:
    """Only the manifest (and the sources hash) follow the edit: the expected values stay."""
    path = root / "expected.json"
    doc = json.loads(path.read_text())
    doc["manifest"] = gate_files.build_manifest(root, path)
    doc["sources"]["main"]["sha256"] = doc["manifest"]["files"]["main/metrics.json"]["sha256"]
    path.write_text(json.dumps(doc, indent=1))


def _rows(root: Path) -> list[Row]:
    rows, _ = check_committed(root / "expected.json", read_expected(root / "expected.json"))
    return rows


def _nudge(x: float, by: float = 0.01) -> float:
    return round(x + by if x + by <= 1.0 else x - by, 6)


def test_an_unaltered_copy_passes_and_everything_is_recomputed(root):
    rows = _rows(root)
    assert [r for r in rows if not r.ok] == []
    recomputed = {r.metric for r in rows if str(r.expected).startswith("recomputed ")}
    m = _metrics(root)
    for system, per in m["systems"].items():
        for split in ("dev", "test"):
            for key in ("stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5", "ndcg_at_10"):
                assert f"systems.{system}.{split}.{key}" in recomputed
            for key in ("brier", "auroc"):  # once the evaluator writes them (issue 14)
                if key in per[split]:
                    assert f"systems.{system}.{split}.{key}" in recomputed
            for i in range(per[split]["ece_bins"]["n_bins"]):
                for key in ("counts", "accuracy", "mean_confidence"):
                    assert f"systems.{system}.{split}.ece_bins.{key}.{i}" in recomputed
            for cat in per[split]["by_category"]:
                assert f"systems.{system}.{split}.by_category.{cat}.stale_rate" in recomputed
        flags = {r.metric for r in rows if r.file.endswith(f"run_{system}.jsonl")}
        assert {f"{s} {f} flags" for s in ("dev", "test") for f in ("correct", "stale", "rumor")} <= flags
    # the recomputation used the dataset's judgments, not the run file's flags
    assert all("the dataset's judgments" in r.note for r in rows if str(r.expected).startswith("recomputed "))


@pytest.mark.parametrize("key", ["stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5", "ndcg_at_10"])
def test_a_stored_metric_edit_is_caught_by_the_recomputation(root, key):
    m = _metrics(root)
    m["systems"]["smartvector"]["test"][key] = _nudge(m["systems"]["smartvector"]["test"][key])
    _write_metrics(root, m)
    _rebless(root)
    # the calibration block (once the evaluator writes one) repeats the raw test ECE: it no longer agrees
    cal = [("main/metrics.json", f"calibration.smartvector.{method}.{key}")
           for method in (m.get("calibration") or {}).get("smartvector", {}) if key in invariants.CALIBRATION_RAW]
    assert sorted(committed_fails(root)) == sorted([("main/metrics.json", f"systems.smartvector.test.{key}"), *cal])


def test_a_small_edit_is_caught_at_6_decimals_and_ece_within_1e_6(root):
    m = _metrics(root)
    s = m["systems"]["plain_cosine"]["dev"]
    s["stale_rate"] = round(s["stale_rate"] + 1e-6, 6)  # invisible at 4 decimals
    s["ece"] = round(s["ece"] + 3e-6, 6)
    _write_metrics(root, m)
    _rebless(root)
    assert committed_fails(root) == [("main/metrics.json", "systems.plain_cosine.dev.stale_rate"),
                                     ("main/metrics.json", "systems.plain_cosine.dev.ece")]


def test_a_by_category_edit_is_caught(root):
    m = _metrics(root)
    cats = m["systems"]["oracle"]["test"]["by_category"]
    cat = sorted(cats)[0]
    cats[cat]["recall_at_5"] = _nudge(cats[cat]["recall_at_5"])
    _write_metrics(root, m)
    _rebless(root)
    assert committed_fails(root) == [("main/metrics.json", f"systems.oracle.test.by_category.{cat}.recall_at_5")]


@pytest.mark.parametrize("key", ["accuracy", "mean_confidence"])
def test_an_ece_bin_edit_is_caught(root, key):
    m = _metrics(root)
    bins = m["systems"]["smartvector"]["dev"]["ece_bins"]
    i = next(i for i, n in enumerate(bins["counts"]) if n > 0)
    bins[key][i] = _nudge(bins[key][i])
    _write_metrics(root, m)
    _rehash(root)  # the expected values stay: the exact6 entry and the recomputation both fail
    metric = f"systems.smartvector.dev.ece_bins.{key}"
    assert committed_fails(root) == [("main/metrics.json", metric), ("main/metrics.json", f"{metric}.{i}")]
    _rebless(root)  # re-blessed: the recomputation alone
    assert committed_fails(root) == [("main/metrics.json", f"{metric}.{i}")]


def test_the_expected_values_hold_the_ece_bins(root):
    exp = json.loads((root / "expected.json").read_text())["experiments"]["main"]
    m = _metrics(root)
    for key in ("accuracy", "mean_confidence"):
        entry = exp[f"main.systems.bm25.test.ece_bins.{key}"]
        assert entry == {"value": m["systems"]["bm25"]["test"]["ece_bins"][key], "tolerance": 0.0, "kind": "exact6"}
        assert None in entry["value"] or all(isinstance(v, float) for v in entry["value"])
    assert "main.systems.bm25.test.ece_bins.edges" not in exp


def test_a_run_file_stale_flag_edit_fails_naming_the_run_file(root):
    path = root / "main" / "run_plain_cosine.jsonl"
    lines = path.read_text().splitlines()
    i = next(i for i, ln in enumerate(lines[1:], 1) if json.loads(ln)["split"] == "test")
    row = json.loads(lines[i])
    row["stale"] = not row["stale"]
    lines[i] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    _rebless(root)
    # the flag now also disagrees with the line's own rank-1 label (run file 1.1)
    assert committed_fails(root) == [("main/run_plain_cosine.jsonl", "test stale flags"),
                                     ("main/run_plain_cosine.jsonl", "rank-1 labels")]
    bad = [r for r in _rows(root) if not r.ok][0]
    assert bad.got == "1 differ" and row["query_id"] in bad.note


def test_a_changed_top1_id_changes_the_recomputed_stale_rate(root):
    """Put a stale chunk of a test query at rank 1 (flags and metrics.json untouched): the recomputation from the
    ids sees a stale top-1 that the stored stale_rate and the stale flag do not."""
    from smartvector_bench.core.dataset import load_dataset

    ds = load_dataset(root / "main" / "dataset")
    stale = {qid: [ds.corpus.ids[int(r)] for r in ds.queries.stale.row(i)] for i, qid in enumerate(ds.queries.ids)}
    path = root / "main" / "run_oracle.jsonl"
    lines = path.read_text().splitlines()
    for i, ln in enumerate(lines[1:], 1):
        row = json.loads(ln)
        if row["split"] == "test" and not row["stale"] and stale[row["query_id"]]:
            first = stale[row["query_id"]][0]
            row["ranked"] = [first] + [c for c in row["ranked"] if c != first][:9]
            lines[i] = json.dumps(row)
            break
    else:
        pytest.fail("no test query with a stale set on the tiny dataset")
    path.write_text("\n".join(lines) + "\n")
    _rebless(root)
    fails = committed_fails(root)
    assert ("main/metrics.json", "systems.oracle.test.stale_rate") in fails
    assert ("main/run_oracle.jsonl", "test stale flags") in fails


# -- p-values on a log scale ---------------------------------------------------------------------------------------

P = "main.systems.smartvector.test.mcnemar_p"


@pytest.mark.parametrize("path", [P, "main.systems.x.dev.permutation_p", "main.systems.x.dev.mcnemar.p_value",
                                  "feedback_loop.summary.last_round_mcnemar_live_vs.plain_cosine.p_value"])
def test_p_values_compare_on_a_log_scale(path):
    spec = {"value": 1e-6, "tolerance": 0.0, "kind": "exact4"}
    assert compare(spec, 1.0001e-6, path) == (True, "")
    ok, why = compare(spec, 3e-6, path)
    assert not ok and "log10" in why
    assert not compare(spec, 0.0, path)[0]
    assert compare({**spec, "value": 0.0}, 0.0, path)[0]
    assert not compare({**spec, "value": 0.0}, 1e-300, path)[0]
    assert not compare({**spec, "value": 0.5}, 0.5002, path)[0]  # still 4 decimals as well
    assert compare(spec, 3e-6, "main.systems.x.dev.top1")[0]  # not a p-value: 4 decimals only


@pytest.mark.parametrize("stored, ok", [(3e-6, False), (1.0001e-6, True)])
def test_a_committed_p_value_edit(root, stored, ok):
    m = _metrics(root)
    m["systems"]["smartvector"]["test"]["mcnemar_p"] = 1e-6
    _write_metrics(root, m)
    _rebless(root)
    assert committed_fails(root) == []
    m["systems"]["smartvector"]["test"]["mcnemar_p"] = stored
    _write_metrics(root, m)
    _rehash(root)
    assert committed_fails(root) == ([] if ok else [("main/metrics.json", "systems.smartvector.test.mcnemar_p")])


# -- the real results ---------------------------------------------------------------------------------------------

def test_expected_values_regenerated_on_a_copy_of_results_pass(tmp_path):
    """--write-expected on a copy of the committed results/ (never on results/ itself): the committed check of
    the copy passes, and it takes seconds (both datasets regenerated from their seeds)."""
    dst = tmp_path / "results"
    shutil.copytree(REPO / "results", dst)
    assert gate_cli.main(["--write-expected", "--results-from", str(dst), "--expected", str(dst / "expected.json")]) == 0
    t0 = time.perf_counter()
    rows = _rows(dst)
    assert time.perf_counter() - t0 < 60
    assert [r for r in rows if not r.ok] == []
    assert sum(str(r.expected).startswith("recomputed ") for r in rows) > 3000
    exp = json.loads((dst / "expected.json").read_text())["experiments"]
    assert exp["main"]["main.systems.smartvector.test.ece_bins.accuracy"]["kind"] == "exact6"


# -- Brier and AUROC (issue 14's calibration metrics), recomputed when metrics.json has them -------------------------

def test_brier_and_auroc_by_hand():
    # None counts as 0.0: ((0.9-1)^2 + (0.2-0)^2 + 0 + (0.5-1)^2) / 4
    assert recompute.recompute_brier([0.9, 0.2, None, 0.5], [True, False, False, True]) == pytest.approx(0.075)
    # pairs (correct, wrong): 0.9>0.5, 0.9>0.1, 0.5=0.5 (half), 0.5>0.1 -> 3.5 / 4
    assert recompute.recompute_auroc([0.9, 0.5, 0.5, 0.1], [True, True, False, False]) == pytest.approx(0.875)
    assert recompute.recompute_auroc([float("nan"), 0.3], [False, True]) == 1.0  # NaN counts as 0.0
    assert recompute.recompute_auroc([0.2, 0.7], [True, True]) is None  # one class
    from smartvector_bench.core.metrics import calibration  # the evaluator's module agrees on the same inputs

    conf, ok = [0.9, 0.5, 0.5, 0.1, 0.7, 0.0], [True, True, False, False, False, True]
    assert recompute.recompute_auroc(conf, ok) == pytest.approx(calibration.auroc(conf, ok))
    assert recompute.recompute_brier(conf, ok) == pytest.approx(calibration.brier(conf, ok))


def _score_inputs():
    judgments = recompute.Judgments(qrels={f"q{i}": {f"c{i}": 1} for i in range(6)}, stale={}, rumor={})
    conf = [0.9, 0.5, 0.5, 0.1, 0.7, None]
    hit = [True, True, False, False, False, True]
    run_rows = [{"query_id": f"q{i}", "split": "test", "category": "current", "confidence": c,
                 "ranked": [f"c{i}" if h else "other"], "correct": h, "stale": False, "rumor": False}
                for i, (c, h) in enumerate(zip(conf, hit))]
    brier = round(recompute.recompute_brier(conf, hit), 6)
    auroc = round(recompute.recompute_auroc(conf, hit), 6)
    return judgments, run_rows, brier, auroc


def _score_rows(per_split, run_rows, judgments):
    rows = recompute.recompute_rows("main", "x", per_split, run_rows, judgments)
    return {r.metric: r for r in rows if r.metric.rsplit(".", 1)[-1] in ("brier", "auroc")}


def test_stored_brier_and_auroc_are_recomputed_from_the_run_file():
    judgments, run_rows, brier, auroc = _score_inputs()
    rows = _score_rows({"test": {"brier": brier, "auroc": auroc}}, run_rows, judgments)
    assert set(rows) == {"main.systems.x.test.brier", "main.systems.x.test.auroc"}
    assert all(r.ok for r in rows.values())
    # Brier within 1e-6 (the run file's 6-decimal confidences), not beyond; AUROC anywhere in the range the
    # rounded ties allow (here one tie: [4/9, 5/9]), not outside it
    rows = _score_rows({"test": {"brier": round(brier + 1e-6, 6), "auroc": round(auroc + 3e-6, 6)}},
                       run_rows, judgments)
    assert rows["main.systems.x.test.brier"].ok and rows["main.systems.x.test.auroc"].ok
    assert not _score_rows({"test": {"brier": round(brier + 3e-6, 6)}}, run_rows, judgments)[
        "main.systems.x.test.brier"].ok
    for outside in (4 / 9 - 3e-6, 5 / 9 + 3e-6):
        assert not _score_rows({"test": {"auroc": round(outside, 6)}}, run_rows, judgments)[
            "main.systems.x.test.auroc"].ok
    # a split of one class: AUROC must be None
    one = [dict(r, ranked=[r["query_id"].replace("q", "c")]) for r in run_rows]
    rows = _score_rows({"test": {"brier": 0.5, "auroc": None}}, one, judgments)
    assert rows["main.systems.x.test.auroc"].ok and not rows["main.systems.x.test.brier"].ok
    assert not _score_rows({"test": {"auroc": 0.5}}, one, judgments)["main.systems.x.test.auroc"].ok
    # absent keys: nothing recomputed
    assert _score_rows({"test": {"top1": 0.5}}, run_rows, judgments) == {}


def test_the_calibration_block_must_repeat_the_splits_raw_figures():
    systems = {"x": {"test": {"ece": 0.2, "brier": 0.25, "auroc": 0.7, "n_queries": 6,
                              "ece_bins": {"counts": [1, 5]}}, "dev": {"n_queries": 4}}}
    rep = {"ece": 0.2, "brier": 0.25, "auroc": 0.7, "n_test": 6, "n_dev": 4, "bins": {"counts": [1, 5]},
           "ece_calibrated": 0.1}
    cal = {"x": {"platt": dict(rep), "isotonic": dict(rep)}}
    rows = invariants.calibration_rows("main", cal, systems)
    assert rows and all(r.ok for r in rows)
    cal["x"]["isotonic"].update(auroc=0.71, n_dev=5)
    cal["x"]["platt"]["bins"] = {"counts": [2, 4]}
    bad = [r.metric for r in invariants.calibration_rows("main", cal, systems) if not r.ok]
    assert bad == ["main.calibration.x.platt.bins.counts", "main.calibration.x.isotonic.auroc",
                   "main.calibration.x.isotonic.n_dev"]
    bad = [r.metric for r in invariants.calibration_rows("main", {"y": {"platt": rep}}, systems) if not r.ok]
    assert bad == ["main.calibration.y"]


def test_brier_auroc_and_calibration_in_a_metrics_file_are_checked(root):
    """A main run whose metrics.json gains the keys (as issue 14 will write them): recomputed and checked."""
    from smartvector_bench.core.metrics import calibration

    m = _metrics(root)
    for system in m["systems"]:
        lines = (root / "main" / f"run_{system}.jsonl").read_text().splitlines()[1:]
        rr = [json.loads(ln) for ln in lines]
        for split in ("dev", "test"):
            sel = [r for r in rr if r["split"] == split]
            conf = [0.0 if r.get("confidence") is None else r["confidence"] for r in sel]
            ok = [bool(r["correct"]) for r in sel]
            au = calibration.auroc(conf, ok)
            m["systems"][system][split].update(brier=round(calibration.brier(conf, ok), 6),
                                               auroc=None if au is None else round(au, 6))
    test = m["systems"]["smartvector"]["test"]
    m["calibration"] = {"smartvector": {"platt": {"ece": test["ece"], "brier": test["brier"], "auroc": test["auroc"],
                                                  "n_test": test["n_queries"]}}}
    _write_metrics(root, m)
    _rebless(root)
    rows = _rows(root)
    assert [r for r in rows if not r.ok] == []
    assert any(r.metric == "systems.smartvector.test.brier" and str(r.expected).startswith("recomputed")
               for r in rows)
    m["systems"]["smartvector"]["test"]["brier"] = _nudge(test["brier"])
    m["calibration"]["smartvector"]["platt"]["brier"] = m["systems"]["smartvector"]["test"]["brier"]
    _write_metrics(root, m)
    _rebless(root)
    assert committed_fails(root) == [("main/metrics.json", "systems.smartvector.test.brier")]


def test_auroc_bounds_cover_every_order_that_rounding_hides():
    from smartvector_bench.tools.gate.recompute import auroc_bounds, recompute_auroc

    # full precision: the correct query is above the wrong one; the run file's 6 decimals tie them
    full = [0.1234561, 0.1234559, 0.9]
    correct = [True, False, False]
    rounded = [round(c, 6) for c in full]
    assert rounded[0] == rounded[1]
    truth = recompute_auroc(full, correct)          # 0.5: above one wrong, below the other
    lo, hi = auroc_bounds(rounded, correct)
    assert (lo, hi) == (0.0, 0.5) and lo <= truth <= hi
    assert recompute_auroc(rounded, correct) == 0.25  # the tie-half value, which the gate must not demand
    assert auroc_bounds([0.2, 0.3], [True, True]) is None
    assert auroc_bounds([0.9, 0.1], [True, False]) == (1.0, 1.0)  # no tie: the bounds meet
