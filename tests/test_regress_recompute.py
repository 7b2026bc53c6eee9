"""The regression gate's own recomputation of main's metrics from the run files (``regress.recompute_rows``),
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

from smartvector_bench import regress, regress_files

from .conftest import REPO
from .test_regress import _run_small, committed_fails


@pytest.fixture(scope="module")
def tiny_main(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tiny_main")
    _run_small("main", root / "main")
    assert regress.main(["--write-expected", "--results-from", str(root), "--expected", str(root / "expected.json"),
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
    assert regress.main(["--write-expected", "--results-from", str(root), "--expected", str(root / "expected.json"),
                         "--only", "main"]) == 0


def _rehash(root: Path) -> None:
    """Only the manifest (and the sources hash) follow the edit: the expected values stay."""
    path = root / "expected.json"
    doc = json.loads(path.read_text())
    doc["manifest"] = regress_files.build_manifest(root, path)
    doc["sources"]["main"]["sha256"] = doc["manifest"]["files"]["main/metrics.json"]["sha256"]
    path.write_text(json.dumps(doc, indent=1))


def _rows(root: Path) -> list[regress.Row]:
    rows, _ = regress.check_committed(root / "expected.json", regress.read_expected(root / "expected.json"))
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
    assert committed_fails(root) == [("main/metrics.json", f"systems.smartvector.test.{key}")]


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
    assert committed_fails(root) == [("main/run_plain_cosine.jsonl", "test stale flags")]
    bad = [r for r in _rows(root) if not r.ok][0]
    assert bad.got == "1 differ" and row["query_id"] in bad.note


def test_a_changed_top1_id_changes_the_recomputed_stale_rate(root):
    """Put a stale chunk of a test query at rank 1 (flags and metrics.json untouched): the recomputation from the
    ids sees a stale top-1 that the stored stale_rate and the stale flag do not."""
    from smartvector_bench.dataset import load_dataset

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
    assert regress.compare(spec, 1.0001e-6, path) == (True, "")
    ok, why = regress.compare(spec, 3e-6, path)
    assert not ok and "log10" in why
    assert not regress.compare(spec, 0.0, path)[0]
    assert regress.compare({**spec, "value": 0.0}, 0.0, path)[0]
    assert not regress.compare({**spec, "value": 0.0}, 1e-300, path)[0]
    assert not regress.compare({**spec, "value": 0.5}, 0.5002, path)[0]  # still 4 decimals as well
    assert regress.compare(spec, 3e-6, "main.systems.x.dev.top1")[0]  # not a p-value: 4 decimals only


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
    assert regress.main(["--write-expected", "--results-from", str(dst), "--expected", str(dst / "expected.json")]) == 0
    t0 = time.perf_counter()
    rows = _rows(dst)
    assert time.perf_counter() - t0 < 60
    assert [r for r in rows if not r.ok] == []
    assert sum(str(r.expected).startswith("recomputed ") for r in rows) > 3000
    exp = json.loads((dst / "expected.json").read_text())["experiments"]
    assert exp["main"]["main.systems.smartvector.test.ece_bins.accuracy"]["kind"] == "exact6"
