"""The perf runner (smartvector_bench/tools/perf/): summary statistics and ratios, the targets table, the files it
writes, and the CLI's bad-input path. Timing itself is never asserted (numbers go to results/perf/)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from smartvector_bench.tools.perf.runner import write_results
from smartvector_bench.tools.perf.summary import summary_rows
from smartvector_bench.tools.perf.targets import evaluate_targets, render_markdown
from smartvector_bench.tools.perf.timing import Row, repeat, rows, timing_stats

from .conftest import REPO


def _batch(system: str, n: int, secs) -> list[Row]:
    return rows("search_batch", system, n, "synthetic", "batch_s", secs, "s")


def fake_runs() -> list[Row]:
    out = []
    for n, flat, rerank, exh in ((10_000, 0.010, 0.030, 0.025), (100_000, 0.1, 0.115, 0.5)):
        out += _batch("faiss_flat", n, [flat, flat * 1.1, flat * 0.9])
        out += _batch("smartvector_rerank", n, [rerank, rerank * 1.2, rerank * 0.8])
        out += _batch("smartvector_exhaustive", n, [exh] * 3)
        out += rows("quality", "smartvector_rerank", n, "synthetic", "top1_agreement", 1.0 if n < 50_000 else 0.985,
                    "share")
    out += rows("memory", "smartvector", 100_000, "synthetic", "metadata_share_of_index", 0.04, "share")
    out += rows("ripple", "ripple_smartvector", 100_000, "synthetic", "update_ms", [0.01, 0.02, 0.03], "ms")
    return out


def test_rows_keep_every_repetition_and_summarize():
    rs = rows("c", "s", 10, "synthetic", "m", [3.0, 1.0, 2.0], "s")
    assert [r.rep for r in rs] == [0, 1, 2] and [r.value for r in rs] == [3.0, 1.0, 2.0]
    assert rows("c", "s", 10, "synthetic", "m", 5.0, "s")[0].rep == -1
    s = timing_stats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["median"] == 3.0 and s["n"] == 5 and s["min"] == 1.0 and s["max"] == 100.0
    calls = []
    secs = repeat(lambda: calls.append(1), reps=4, warmup=2)
    assert len(secs) == 4 and len(calls) == 6 and all(x >= 0 for x in secs)


def test_summary_ratio_is_against_flat_at_the_same_size():
    summary = summary_rows(fake_runs())
    get = {(r["system"], r["n_vectors"], r["metric"]): r for r in summary}
    assert get[("faiss_flat", 100_000, "batch_s")]["ratio_vs_flat"] == pytest.approx(1.0)
    assert get[("smartvector_rerank", 100_000, "batch_s")]["ratio_vs_flat"] == pytest.approx(1.15)
    assert get[("smartvector_exhaustive", 10_000, "batch_s")]["ratio_vs_flat"] == pytest.approx(2.5)
    assert get[("smartvector_rerank", 10_000, "batch_s")]["median"] == pytest.approx(0.030)
    assert get[("smartvector_rerank", 10_000, "top1_agreement")]["ratio_vs_flat"] == ""  # not a time


def test_targets_verdicts_met_missed_and_not_measured():
    t = {x["id"]: x for x in evaluate_targets(summary_rows(fake_runs()))}
    assert t["T1"]["verdict"] == "met" and t["T1"]["measured"] == pytest.approx(1.15)  # 100K: 0.115 / 0.1
    assert t["T2"]["verdict"] == "met"
    assert t["T3"]["verdict"] == "met" and t["T3"]["measured"] == pytest.approx(0.02)
    assert t["T7"]["verdict"] == "missed" and t["T7"]["measured"] == pytest.approx(0.985)  # worst size counts
    assert t["A1"]["verdict"] == "missed" and t["A1"]["measured"] == pytest.approx(2.5)  # bar: <= 2x at 10K
    assert t["T4"]["verdict"] == "not measured" and np.isnan(t["T4"]["measured"])


def test_t6_takes_the_faster_exact_mode_and_names_both():
    runs = []
    for system, qps in (("smartvector_ref", [50.0, 50.0]), ("smartvector", [3000.0, 3100.0]),
                        ("smartvector_rerank_vs_ref", [6000.0, 6000.0])):
        runs += rows("search_batch", system, 10_000, "synthetic", "qps", qps, "1/s")
    t6 = {x["id"]: x for x in evaluate_targets(summary_rows(runs))}["T6"]
    assert t6["measured"] == pytest.approx(120.0) and t6["verdict"] == "met"
    assert "exhaustive 3050.0 q/s (61x)" in t6["detail"] and "certified re-rank 6000.0 q/s (120x)" in t6["detail"]
    only = [r for r in runs if r.system != "smartvector_rerank_vs_ref"]
    t6 = {x["id"]: x for x in evaluate_targets(summary_rows(only))}["T6"]
    assert t6["measured"] == pytest.approx(61.0) and t6["verdict"] == "missed"
    t6 = {x["id"]: x for x in evaluate_targets([])}["T6"]
    assert t6["verdict"] == "not measured"


def test_files_written_with_provenance(tmp_path):
    cfg = {"profile": "test", "seed": 0, "search": {}}
    write_results(tmp_path, cfg, fake_runs(), 1.0)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["PROVENANCE.json", "perf.md", "runs.csv", "summary.csv", "targets.csv"]
    prov = json.loads((tmp_path / "PROVENANCE.json").read_text())
    assert prov["profile"] == "test" and prov["schema_version"] and prov["git"]["sha"]
    assert set(prov["files"]) == {"perf.md", "runs.csv", "summary.csv", "targets.csv"}
    with (tmp_path / "runs.csv").open() as fh:
        runs = list(csv.DictReader(fh))
    assert len(runs) == len(fake_runs())
    md = (tmp_path / "perf.md").read_text()
    assert "| T1 |" in md and "smartvector_rerank" in md


def test_markdown_handles_an_empty_run():
    md = render_markdown([], evaluate_targets([]), {"profile": "x"})
    assert md.count("not measured") >= 7


def test_cli_bad_input_names_the_key_and_writes_nothing(tmp_path):
    out = tmp_path / "perf"
    p = subprocess.run([sys.executable, "-m", "smartvector_bench.tools.perf.cli", "bench_profile=quick",
                        f"out_dir={out}", "search.sizes=[0]"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 2, p.stderr
    assert "n_vectors=0" in p.stderr
    assert not out.exists()


def test_t1_takes_the_faster_exact_mode_and_reports_hnsw_beside_it():
    runs = _batch("faiss_flat", 1_000_000, [4.0, 4.0]) + _batch("smartvector_rerank", 1_000_000, [9.0, 9.0])
    runs += _batch("smartvector_exhaustive", 1_000_000, [8.0, 8.0])
    runs += _batch("smartvector_rerank_hnsw", 1_000_000, [2.4, 2.4])
    runs += rows("quality", "smartvector_rerank_hnsw", 1_000_000, "synthetic", "top1_agreement", 0.999, "share")
    t = {x["id"]: x for x in evaluate_targets(summary_rows(runs))}
    assert t["T1"]["measured"] == pytest.approx(2.0) and t["T1"]["verdict"] == "missed"
    assert "exhaustive 2.00x" in t["T1"]["detail"] and "certified re-rank 2.25x" in t["T1"]["detail"]
    assert t["T1h"]["measured"] == pytest.approx(0.6) and t["T1h"]["verdict"] == "met"
    assert "0.9990" in t["T1h"]["detail"]


def test_missed_1m_consolidation_target_names_its_phases_largest_first():
    from smartvector_bench.tools.perf.summary import summary_rows
    from smartvector_bench.tools.perf.targets import evaluate_targets
    from smartvector_bench.tools.perf.timing import rows

    system = "smartvector_distinct_k10"
    runs = rows("consolidation", system, 1_000_000, "synthetic", "seconds", [400.0], "s")
    for phase, v in (("candidates_s", 150.0), ("contradictions_s", 200.0), ("edges_s", 30.0)):
        runs += rows("consolidation", system, 1_000_000, "synthetic", phase, [v], "s")
    t5t = next(t for t in evaluate_targets(summary_rows(runs)) if t["id"] == "T5t")
    assert t5t["verdict"] == "missed"
    assert t5t["detail"] == "contradictions 200.0 s; candidates 150.0 s; edges 30.0 s"


def test_1m_consolidation_memory_target_breaks_the_peak_down_by_phase():
    system = "smartvector_distinct_k10"
    runs = rows("consolidation", system, 1_000_000, "synthetic", "seconds", [30.0], "s")
    runs += rows("consolidation", system, 1_000_000, "synthetic", "peak_rss_mb", [3400.0], "MB")
    runs += rows("consolidation", system, 1_000_000, "synthetic", "rss_before_mb", [2660.0], "MB")
    for phase, v in (("setup", 690.0), ("candidates", 740.0), ("contradictions", 620.0)):
        runs += rows("consolidation", system, 1_000_000, "synthetic", f"phase_peak_rss_mb.{phase}", [v], "MB")
    t5m = next(t for t in evaluate_targets(summary_rows(runs)) if t["id"] == "T5m")
    assert t5m["verdict"] == "met" and t5m["measured"] == pytest.approx(3400.0)
    assert t5m["detail"] == ("seconds 30.0; RSS before the run 2660 MB (the dataset); peak above it by phase: "
                             "candidates +740 MB, setup +690 MB, contradictions +620 MB")
    t5t = next(t for t in evaluate_targets(summary_rows(runs)) if t["id"] == "T5t")
    assert "MB" not in t5t["detail"]  # the memory rows are not phases of the time


def test_t1_detail_carries_the_float32_kernel_profile():
    from smartvector_bench.tools.perf.summary import summary_rows
    from smartvector_bench.tools.perf.targets import evaluate_targets
    from smartvector_bench.tools.perf.timing import rows

    n = 100_000
    runs = rows("search_batch", "faiss_flat", n, "synthetic", "batch_s", [1.0], "s")
    runs += rows("search_batch", "smartvector_rerank", n, "synthetic", "batch_s", [1.5], "s")
    runs += rows("search_batch", "smartvector_exhaustive", n, "synthetic", "batch_s", [1.3], "s")
    for m, v in (("blas_products_s", 0.5), ("scan_s", 0.9), ("rescore_s", 0.2)):
        runs += rows("search_profile", "smartvector_exhaustive", n, "synthetic", m, [v], "s")
    t1 = next(t for t in evaluate_targets(summary_rows(runs)) if t["id"] == "T1")
    assert t1["measured"] == pytest.approx(1.3) and t1["verdict"] == "missed"
    assert t1["detail"].endswith("; float32 kernel per batch: blas_products 0.5 s, scan 0.9 s, rescore 0.2 s")


def test_provenance_is_taken_before_the_run_writes_its_own_files(tmp_path, monkeypatch):
    """Otherwise git sees the bench's freshly written (tracked) result files and records every run as dirty."""
    from smartvector_bench.tools.perf import runner

    seen = []
    monkeypatch.setattr(runner, "provenance", lambda cfg: seen.append(sorted(p.name for p in tmp_path.iterdir()))
                        or {"git": {"sha": "x", "dirty": False}})
    runner.write_results(tmp_path, {"profile": "quick"}, [], 1.0)
    assert seen == [[]]
    assert (tmp_path / "PROVENANCE.json").is_file() and (tmp_path / "perf.md").is_file()
