"""paper_figures/: every figure script on a small fake results/ tree (documented layouts): files are written,
bytes are identical on reruns and in a fresh process, a missing input skips the figure with a message, a
malformed input raises an error naming the file and the column or key."""

from __future__ import annotations

import copy
import csv
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

common = importlib.import_module("paper_figures.common")
make_all = importlib.import_module("paper_figures.make_all")
FIGURES = make_all.FIGURES
MODULES = {name: importlib.import_module(f"paper_figures.{name}") for name in FIGURES}

SYSTEMS = ("plain_cosine", "smartvector", "kg_smartvector")
TIDY_METRICS = ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5", "leakage_at_10")
TIDY_HEAD = ["sweep", "job", "job_dir", "status", "overrides"]
TIDY_TAIL = (["system", "split", "n_queries"]
             + [f"{m}{s}" for m in TIDY_METRICS for s in ("", "_lo", "_hi")]
             + ["mcnemar_p", "dataset_sha256", "dataset_seed", "git_sha", "config_sha256"])
FEEDBACK_FIELDS = ("round", "time", "days_from_now", "system", "split", "n_queries", "top1", "top1_lo", "top1_hi",
                   "stale_rate", "rumor_rate", "ece", "corrections", "acceptances", "dormant_in_force")


# -- the fake results tree -------------------------------------------------------------------------------------

def _split_metrics(i: int, split: str) -> dict:
    b = 0.1 * (i + 1) + (0.02 if split == "dev" else 0.0)
    edges = [round(0.1 * k, 1) for k in range(11)]
    counts = [0, 0, 0, 5 + i, 20, 30 - i, 10, 4, 0, 0]
    acc = [None if n == 0 else round(min(1.0, 0.05 * k + 0.1 * i), 3) for k, n in enumerate(counts)]
    conf = [None if n == 0 else round(0.1 * k + 0.05, 3) for k, n in enumerate(counts)]
    cat = {"top1": b, "n_queries": 14, "leakage_at_10": round(0.3 / (i + 1), 4)}
    return {
        "n_queries": 69, "top1": b, "top1_ci": [b - 0.08, b + 0.08],
        "stale_rate": 0.3 - 0.1 * i, "stale_rate_ci": [max(0, 0.2 - 0.1 * i), 0.4 - 0.1 * i],
        "rumor_rate": 0.1, "rumor_rate_ci": [0.05, 0.16],
        "ece": 0.5 - 0.15 * i, "ece_ci": [0.45 - 0.15 * i, 0.56 - 0.15 * i],
        "ece_bins": {"edges": edges, "counts": counts, "accuracy": acc, "mean_confidence": conf, "n_bins": 10},
        "mrr_at_10": b + 0.1, "recall_at_5": b + 0.3, "mcnemar_p": None if i == 0 else 0.2,
        "leakage_at_10": round(0.2 / (i + 1), 4), "leakage_at_10_ci": [0.0, round(0.3 / (i + 1), 4)],
        "by_category": {"historical": cat, "current": dict(cat, leakage_at_10=0.0)},
    }


def metrics_json() -> dict:
    return {"schema_version": 1,
            "systems": {s: {sp: _split_metrics(i, sp) for sp in ("dev", "test")} for i, s in enumerate(SYSTEMS)}}


def _summary(mean: float, n: int = 40) -> dict:
    return {"n_edits": n, "chunks_reembedded_mean": mean, "chunks_reembedded_ci": [mean * 0.9, mean * 1.1],
            "embedding_calls": int(mean * n)}


def reembed_json() -> dict:
    types = ("single_word", "sentence", "paragraph_insert", "paragraph_delete", "revert", "all")
    strategies = {}
    for j, s in enumerate(("full", "cdc", "surgical")):
        strategies[s] = {
            "by_edit_type": {t: _summary(2.0 / (j + 1) + 0.1 * k) for k, t in enumerate(types)},
            "single_word_by_document_chunks": {k: _summary(float(n) if s == "full" else 1.0 + 0.02 * n, 10 + int(n))
                                               for n, k in ((1, "1"), (2, "2"), (3, "3"), (4.57, "4+"))},
        }
    return {"experiment": "reembed_cost", "strategies": strategies,
            "paper_claim": {"edit": "single_word", "full": 4.35, "surgical": 1.0, "reduction": 0.77},
            "edits": {"by_type": {t: 60 for t in types[:-1]}}}


def feedback_rows() -> list[dict]:
    rows = []
    for r in range(6):
        for i, s in enumerate(("smartvector_live", "smartvector_frozen", "plain_cosine")):
            for split in ("test", "dev"):
                top1 = round(0.1 + 0.1 * r / (i + 1), 4)
                rows.append({"round": r, "time": f"2025-01-{r + 1:02d}T00:00:00Z", "days_from_now": -35 + 7 * r,
                             "system": s, "split": split, "n_queries": 69, "top1": top1,
                             "top1_lo": round(top1 - 0.08, 4), "top1_hi": round(top1 + 0.08, 4),
                             "stale_rate": 0.0, "rumor_rate": 0.05, "ece": 0.3, "corrections": 3 * r,
                             "acceptances": 2 * r, "dormant_in_force": 10 if i < 2 else ""})
    return rows


def tidy_rows(sweep: str, keys: dict[str, list], seeds=(1, 2, 3)) -> tuple[list[str], list[dict]]:
    """One row per job (a combination of ``keys`` and a seed) x system x split, plus a failed job."""
    import itertools

    cols = TIDY_HEAD + [k for k in keys if k != "dataset.seed"] + ["dataset.seed"] + TIDY_TAIL
    combos = list(itertools.product(*keys.values(), seeds))
    rows = []
    for job, (*vals, seed) in enumerate(combos):
        setting = dict(zip(keys, vals))
        for i, system in enumerate(SYSTEMS):
            for split in ("dev", "test"):
                x = sum(float(v) if not isinstance(v, str) else len(v) for v in vals)
                top1 = round((0.15 + 0.2 * i + 0.01 * seed + 0.001 * x) % 0.95, 6)
                row = {"sweep": sweep, "job": job, "job_dir": f"multirun/{sweep}/{job}", "status": "complete",
                       "overrides": " ".join(f"{k}={v}" for k, v in setting.items()) + f" dataset.seed={seed}",
                       "dataset.seed": seed, "system": system, "split": split, "n_queries": 69,
                       "mcnemar_p": "" if system == "plain_cosine" else 0.3, "dataset_sha256": f"sha{seed}",
                       "dataset_seed": seed, "git_sha": "abc", "config_sha256": f"cfg{job}", **setting}
                for m in TIDY_METRICS:
                    row[m], row[f"{m}_lo"], row[f"{m}_hi"] = top1, round(top1 - 0.05, 6), round(top1 + 0.05, 6)
                rows.append(row)
    # A failed job: no metrics at all. The figures must ignore it (empty numbers would be malformed).
    rows.append({c: "" for c in cols} | {"sweep": sweep, "job": len(combos), "status": "failed", "system": "",
                                         "split": "test"})
    return cols, rows


def write_csv(path: Path, cols, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(cols), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True), encoding="utf-8")


TEMPORAL = "retrievers.smartvector.temporal.half_life_days"
CONFIDENCE = "retrievers.smartvector.confidence.half_life_days"
SWEEPS = {
    "contradiction_sweep": {"dataset.contradiction_rate": [0.0, 0.25, 0.5]},
    "ablation": {"weights": ["paper", "no_semantic", "no_temporal", "only_semantic", "only_temporal"]},
    "seeds": {},
    "half_life": {TEMPORAL: [30, 90, 365], CONFIDENCE: [30, 180]},
}


PERF_FIELDS = ("case", "system", "n_vectors", "vectors", "metric", "unit", "median", "p05", "p95", "p99")


def perf_rows() -> list[dict]:
    out = []
    for j, system in enumerate(("faiss_flat", "smartvector_exhaustive", "smartvector_rerank")):
        for n in (10_000, 100_000):
            t = 0.01 * (j + 1) * n / 10_000
            out.append({"case": "search_batch", "system": system, "n_vectors": n, "vectors": "synthetic",
                        "metric": "batch_s", "unit": "s", "median": t, "p05": 0.9 * t, "p95": 1.2 * t, "p99": 1.3 * t})
            out.append({"case": "search_latency", "system": system, "n_vectors": n, "vectors": "synthetic",
                        "metric": "query_ms", "unit": "ms", "median": 10 * t, "p05": 9 * t, "p95": 14 * t,
                        "p99": 20 * t})
    out.append({"case": "asof_latency", "system": "livevectorlake_asof", "n_vectors": 12_000, "vectors": "synthetic",
                "metric": "query_ms", "unit": "ms", "median": 4.0, "p05": 3.0, "p95": 6.0, "p99": 9.0})
    return out


def build_results(root: Path) -> Path:
    write_csv(root / "perf" / "summary.csv", PERF_FIELDS, perf_rows())
    write_json(root / "main" / "metrics.json", metrics_json())
    write_json(root / "reembed_cost" / "reembed_cost.json", reembed_json())
    write_csv(root / "feedback_loop" / "feedback_loop.csv", FEEDBACK_FIELDS, feedback_rows())
    for sweep, keys in SWEEPS.items():
        write_csv(root / sweep / "tidy.csv", *tidy_rows(sweep, keys))
    return root


INPUTS = {"fig_main": "main/metrics.json", "fig_reliability": "main/metrics.json", "fig_leakage": "main/metrics.json",
          "fig_reembed_cost": "reembed_cost/reembed_cost.json", "fig_feedback_loop": "feedback_loop/feedback_loop.csv",
          "fig_contradiction_sweep": "contradiction_sweep/tidy.csv", "fig_ablation": "ablation/tidy.csv",
          "fig_seeds": "seeds/tidy.csv", "fig_half_life": "half_life/tidy.csv",
          "fig_perf": "perf/summary.csv"}


def _drop_key(obj: dict, dotted: str) -> None:
    *head, last = dotted.split(".")
    for k in head:
        obj = obj[k]
    del obj[last]


def _drop_column(path: Path, column: str) -> None:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    cols = [c for c in rows[0] if c != column]
    write_csv(path, cols, [{c: r[c] for c in cols} for r in rows])


# figure -> (how to break its input, what the error must name)
MALFORMED = {
    "fig_main": ("key", "systems.smartvector.test.top1_ci", "top1_ci"),
    "fig_reliability": ("key", "systems.kg_smartvector.test.ece_bins.counts", "ece_bins.counts"),
    "fig_leakage": ("key", "systems.plain_cosine.test.leakage_at_10", "leakage_at_10"),
    "fig_reembed_cost": ("key", "strategies.cdc.by_edit_type.sentence.chunks_reembedded_ci", "chunks_reembedded_ci"),
    "fig_feedback_loop": ("column", "top1_hi", "top1_hi"),
    "fig_contradiction_sweep": ("column", "dataset.contradiction_rate", "dataset.contradiction_rate"),
    "fig_ablation": ("column", "weights", "weights"),
    "fig_seeds": ("column", "top1", "top1"),
    "fig_half_life": ("column", TEMPORAL, TEMPORAL),
    "fig_perf": ("column", "p95", "p95"),
}


# -- fixtures --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return build_results(tmp_path_factory.mktemp("fig") / "results")


@pytest.fixture(scope="module")
def made(results, tmp_path_factory) -> tuple[Path, dict]:
    """Every figure made once: (out_dir, {figure: Outcome})."""
    out = tmp_path_factory.mktemp("fig") / "figures"
    return out, {name: MODULES[name].make(results, out) for name in FIGURES}


def _bytes(out: Path, name: str) -> dict[str, bytes]:
    return {ext: (out / f"{name}.{ext}").read_bytes() for ext in ("png", "pdf")}


# -- tests -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FIGURES)
def test_figure_written_as_png_and_pdf(made, name):
    out, outcomes = made
    o = outcomes[name]
    assert o.skipped is None, o.skipped
    assert sorted(p.name for p in o.files) == [f"{name}.pdf", f"{name}.png"]
    data = _bytes(out, name)
    assert data["png"].startswith(b"\x89PNG\r\n\x1a\n") and len(data["png"]) > 5000
    assert data["pdf"].startswith(b"%PDF-") and len(data["pdf"]) > 2000
    assert b"Software" not in data["png"] and b"CreationDate" not in data["pdf"]
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # no temp files left behind


@pytest.mark.parametrize("name", FIGURES)
def test_rerun_and_restore_are_byte_identical(made, results, name):
    out, _ = made
    before = _bytes(out, name)
    (out / f"{name}.png").unlink()  # a deleted figure comes back identical; the other is rewritten identical
    MODULES[name].make(results, out)
    assert _bytes(out, name) == before


def test_script_alone_in_a_fresh_process_gives_identical_bytes(made, results, tmp_path):
    """A figure script run on its own, in another process with another hash seed, writes the same bytes."""
    out, _ = made
    out2 = tmp_path / "figures"
    env = dict(os.environ, PYTHONHASHSEED="12345", MPLBACKEND="Agg")
    cmd = [sys.executable, str(REPO / "paper_figures" / "fig_main.py"), "--results", str(results), "--out", str(out2)]
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "fig_main.png" in p.stdout and "fig_main.pdf" in p.stdout
    assert _bytes(out2, "fig_main") == _bytes(out, "fig_main")


@pytest.mark.parametrize("name", FIGURES)
def test_missing_input_skips_with_a_message(name, tmp_path, capsys):
    out = tmp_path / "figures"
    o = MODULES[name].make(tmp_path / "results", out)
    assert o.skipped is not None and o.files == ()
    line = capsys.readouterr().out
    assert name in line and "missing input" in line and INPUTS[name] in line
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("name", FIGURES)
def test_malformed_input_names_file_and_column(name, results, tmp_path):
    broken = tmp_path / "results"
    shutil.copytree(results, broken)
    kind, what, must_name = MALFORMED[name]
    path = broken / INPUTS[name]
    if kind == "key":
        obj = json.loads(path.read_text())
        _drop_key(obj, what)
        write_json(path, obj)
    else:
        _drop_column(path, what)
    with pytest.raises(common.FigureInputError) as e:
        MODULES[name].make(broken, tmp_path / "figures")
    msg = str(e.value)
    assert str(path) in msg and must_name in msg
    assert not (tmp_path / "figures" / f"{name}.png").exists()


def test_non_numeric_value_names_file_line_and_column(results, tmp_path):
    broken = tmp_path / "results"
    shutil.copytree(results, broken)
    path = broken / "seeds" / "tidy.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    i = next(k for k, r in enumerate(rows) if r["split"] == "test")
    rows[i]["top1"] = "n/a"
    write_csv(path, list(rows[0]), rows)
    with pytest.raises(common.FigureInputError, match=rf"tidy\.csv:{i + 2}: column top1: expected a number"):
        MODULES["fig_seeds"].make(broken, tmp_path / "figures")


def test_invalid_json_is_malformed(tmp_path):
    path = tmp_path / "results" / "main" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"systems": ', encoding="utf-8")
    with pytest.raises(common.FigureInputError, match="metrics.json: not valid JSON"):
        MODULES["fig_main"].make(tmp_path / "results", tmp_path / "figures")


def test_paper_claims_come_from_paper_claims_module(made, results, tmp_path, monkeypatch):
    from smartvector_bench import paper_claims

    out, _ = made
    changed = copy.deepcopy(paper_claims.PAPER_MAIN_TABLE)
    changed["smartvector"]["top1"] = 0.9
    monkeypatch.setattr(paper_claims, "PAPER_MAIN_TABLE", changed)
    MODULES["fig_main"].make(results, tmp_path)
    assert (tmp_path / "fig_main.png").read_bytes() != (out / "fig_main.png").read_bytes()


def test_make_all_summary_and_exit_codes(results, tmp_path, capsys):
    # Nothing present: every figure skipped, exit 0.
    assert make_all.main(["--results", str(tmp_path / "none"), "--out", str(tmp_path / "f0")]) == 0
    text = capsys.readouterr().out
    assert "made 0 figure(s)" in text and f"skipped {len(FIGURES)} figure(s)" in text
    # One present input malformed, one valid, the rest missing: the valid one is made, exit 1.
    part = tmp_path / "part"
    shutil.copytree(results / "seeds", part / "seeds")
    shutil.copytree(results / "feedback_loop", part / "feedback_loop")
    _drop_column(part / "feedback_loop" / "feedback_loop.csv", "days_from_now")
    assert make_all.main(["--results", str(part), "--out", str(tmp_path / "f1")]) == 1
    cap = capsys.readouterr()
    assert "made 1 figure(s)" in cap.out and "fig_seeds" in cap.out
    assert "fig_feedback_loop" in cap.err and "days_from_now" in cap.err
    assert sorted(p.name for p in (tmp_path / "f1").iterdir()) == ["fig_seeds.pdf", "fig_seeds.png"]


def test_unusable_rows_are_ignored(results, tmp_path, capsys):
    """Only complete/skipped rows count: a tidy file whose rows all failed skips the figure."""
    path = tmp_path / "results" / "seeds" / "tidy.csv"
    cols, rows = tidy_rows("seeds", {})
    write_csv(path, cols, [dict(r, status="failed") for r in rows])
    o = MODULES["fig_seeds"].make(tmp_path / "results", tmp_path / "figures")
    assert o.skipped is not None and "no usable rows" in capsys.readouterr().out
