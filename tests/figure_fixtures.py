"""The fake results/ tree the paper_figures/ tests (tests/test_figures_*.py) run every figure script on: the
committed JSON result files (both profiles' metrics.json, the re-embedding cost, lvl_eval: complete, so their
result classes validate them) and small hand-made CSVs (the shortcut audit, sweeps, the feedback loop's test and
dev rows, perf); each figure's input and how to break it; the ``results`` and ``made`` fixtures; and
``_drawn``, a figure as drawn."""

from __future__ import annotations

import csv
import importlib
import json
import shutil
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

# The v2 systems list in the main table's order (the large profile runs every one but smartvector_ref).
SYSTEMS = ("plain_cosine", "bm25", "bm25_valid", "valid_cosine", "recent_cosine", "smartvector", "smartvector_ref",
           "livevectorlake", "kg_smartvector", "metadata_filter", "oracle")
SWEEP_SYSTEMS = {  # as in conf/experiment/<preset>.yaml
    "contradiction_sweep": ("plain_cosine", "valid_cosine", "smartvector", "livevectorlake", "kg_smartvector",
                            "oracle"),
    "ablation": ("plain_cosine", "valid_cosine", "smartvector"),
    "seeds": SYSTEMS,
    "half_life": ("smartvector",),
}
TIDY_METRICS = ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5", "leakage_at_10")
TIDY_HEAD = ["sweep", "job", "job_dir", "status", "overrides"]
TIDY_TAIL = (["system", "split", "n_queries"]
             + [f"{m}{s}" for m in TIDY_METRICS for s in ("", "_lo", "_hi")]
             + ["mcnemar_p", "dataset_sha256", "dataset_seed", "git_sha", "config_sha256"])
FEEDBACK_FIELDS = ("round", "time", "days_from_now", "system", "split", "n_queries", "top1", "top1_lo", "top1_hi",
                   "stale_rate", "rumor_rate", "ece", "corrections", "acceptances", "dormant_in_force")
AUDIT_FIELDS = ("profile", "seed", "dataset_sha256", "rule", "kind", "keep", "dev_top1", "test_top1", "test_gain",
                "n_test", "n_test_families")
AUDIT_RULES = (("valid_cosine", "baseline"), ("has_digit", "surface"), ("position", "surface"),
               ("dependency_target", "surface"), ("dependency_source", "surface"), ("id_pattern", "surface"),
               ("kind", "surface"), ("source", "trust"), ("authority", "trust"))


# -- the fake results tree -------------------------------------------------------------------------------------

COMMITTED = REPO / "results"
# The JSON inputs are the committed result files (complete, so their result classes validate them), copied and,
# where a test needs it, mutated; the CSV inputs (no result class) are hand-made below.
JSON_INPUTS = ("main/metrics.json", "main_large/metrics.json", "facts/metrics.json", "reembed_cost/reembed_cost.json",
               "lvl_eval/lvl_eval.json")


def committed(rel: str) -> dict:
    return json.loads((COMMITTED / rel).read_text(encoding="utf-8"))


def audit_rows(profiles=("versioned_policies", "versioned_policies_large"), seeds=(1, 2, 3)) -> list[dict]:
    rows = []
    for p, profile in enumerate(profiles):
        for seed in seeds:
            base = round(0.3 - 0.05 * p + 0.01 * seed, 6)
            for j, (rule, kind) in enumerate(AUDIT_RULES):
                gain = 0.0 if rule == "valid_cosine" else round((0.2 if rule == "kind" else 0.01 * (j % 3 - 1))
                                                                 + 0.005 * seed, 6)
                rows.append({"profile": profile, "seed": seed, "dataset_sha256": f"sha{p}{seed}", "rule": rule,
                             "kind": kind, "keep": "" if rule == "valid_cosine" else "a|b",
                             "dev_top1": round(base + gain + 0.02, 6), "test_top1": round(base + gain, 6),
                             "test_gain": gain, "n_test": 70 if p == 0 else 574 + seed % 2,
                             "n_test_families": 6 if p == 0 else 50})
    return rows


def feedback_rows() -> list[dict]:
    rows = []
    for r in range(6):
        for i, s in enumerate(("smartvector_live", "smartvector_frozen", "plain_cosine")):
            for split in ("test", "dev"):  # test: held out from feedback; dev: gave it (in sample)
                top1 = round(0.1 + 0.1 * r / (i + 1) + (0.05 if split == "dev" else 0.0), 4)
                rows.append({"round": r, "time": f"2025-01-{r + 1:02d}T00:00:00Z", "days_from_now": -35 + 7 * r,
                             "system": s, "split": split, "n_queries": 70 if split == "test" else 68, "top1": top1,
                             "top1_lo": round(top1 - 0.08, 4), "top1_hi": round(top1 + 0.08, 4),
                             "stale_rate": 0.0, "rumor_rate": 0.05, "ece": 0.3, "corrections": 3 * r,
                             "acceptances": 2 * r, "dormant_in_force": 10 if i < 2 else ""})
    return rows


def tidy_rows(sweep: str, keys: dict[str, list], seeds=(1, 2, 3), systems=None) -> tuple[list[str], list[dict]]:
    """One row per job (a combination of ``keys`` and a seed) x system x split, plus a failed job."""
    import itertools

    systems = SWEEP_SYSTEMS.get(sweep, SYSTEMS) if systems is None else systems
    cols = TIDY_HEAD + [k for k in keys if k != "dataset.seed"] + ["dataset.seed"] + TIDY_TAIL
    combos = list(itertools.product(*keys.values(), seeds))
    rows = []
    for job, (*vals, seed) in enumerate(combos):
        setting = dict(zip(keys, vals))
        for i, system in enumerate(systems):
            for split in ("dev", "test"):
                x = sum(float(v) if not isinstance(v, str) else len(v) for v in vals)
                top1 = round((0.15 + 0.07 * i + 0.01 * seed + 0.001 * x) % 0.95, 6)
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
    "ablation": {"weights": ["paper", "no_semantic", "no_temporal", "no_confidence", "only_semantic",
                             "only_temporal"]},
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


FILTERED_FIELDS = ("system", "k_prime", "n_vectors", "superseded_share", "recall_at_10", "note")


def filtered_rows() -> list[dict]:
    out = []
    for n in (10_000, 100_000):
        for share, drop in (("0.5", 0.1), ("0.9", 0.4), ("0.99", 0.8)):
            out.append({"system": "faiss_flat", "k_prime": "", "n_vectors": n, "superseded_share": share,
                        "recall_at_10": 1.0, "note": ""})
            for k in ("10", "1000"):
                out.append({"system": "faiss_hnsw_post", "k_prime": k, "n_vectors": n, "superseded_share": share,
                            "recall_at_10": round(1 - drop / (1 if k == "10" else 4), 3), "note": ""})
            out.append({"system": "faiss_hnsw_idselector", "k_prime": "ef=128", "n_vectors": n,
                        "superseded_share": share, "recall_at_10": 0.9, "note": ""})
    out.append({"system": "chroma", "k_prime": "", "n_vectors": 100_000, "superseded_share": "",
                "recall_at_10": "", "note": "skipped: not run at 100,000"})
    return out


def build_results(root: Path) -> Path:
    for rel in JSON_INPUTS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(COMMITTED / rel, root / rel)
    write_csv(root / "perf" / "summary.csv", PERF_FIELDS, perf_rows())
    write_csv(root / "perf" / "filtered_ann.csv", FILTERED_FIELDS, filtered_rows())
    write_csv(root / "shortcut_audit" / "shortcut_audit.csv", AUDIT_FIELDS, audit_rows())
    write_csv(root / "feedback_loop" / "feedback_loop.csv", FEEDBACK_FIELDS, feedback_rows())
    for sweep, keys in SWEEPS.items():
        write_csv(root / sweep / "tidy.csv", *tidy_rows(sweep, keys))
    return root


INPUTS = {"fig_main": "main/metrics.json", "fig_main_large": "main_large/metrics.json", "fig_facts": "facts/metrics.json",
          "fig_shortcut_audit": "shortcut_audit/shortcut_audit.csv", "fig_reliability": "main/metrics.json",
          "fig_leakage": "main/metrics.json",
          "fig_reembed_cost": "reembed_cost/reembed_cost.json", "fig_feedback_loop": "feedback_loop/feedback_loop.csv",
          "fig_contradiction_sweep": "contradiction_sweep/tidy.csv", "fig_ablation": "ablation/tidy.csv",
          "fig_seeds": "seeds/tidy.csv", "fig_half_life": "half_life/tidy.csv",
          "fig_perf": "perf/summary.csv", "fig_lvl_eval": "lvl_eval/lvl_eval.json",
          "fig_filtered_ann": "perf/filtered_ann.csv"}



def _drop_column(path: Path, column: str) -> None:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    cols = [c for c in rows[0] if c != column]
    write_csv(path, cols, [{c: r[c] for c in cols} for r in rows])


# figure -> (how to break its input, what the error must name)
MALFORMED = {
    "fig_main": ("key", "systems.smartvector.test.top1_ci", "top1_ci"),
    "fig_main_large": ("key", "systems.valid_cosine.test.stale_rate_ci", "stale_rate_ci"),
    "fig_facts": ("key", "systems.smartvector_tuned.test.top1_ci", "top1_ci"),
    "fig_shortcut_audit": ("column", "test_top1", "test_top1"),
    "fig_reliability": ("key", "systems.oracle.test.ece_bins.counts", "ece_bins.counts"),
    "fig_leakage": ("key", "systems.valid_cosine.test.leakage_at_10", "leakage_at_10"),
    "fig_reembed_cost": ("key", "strategies.cdc.by_edit_type.sentence.chunks_reembedded_ci", "chunks_reembedded_ci"),
    "fig_feedback_loop": ("column", "top1_hi", "top1_hi"),
    "fig_contradiction_sweep": ("column", "dataset.contradiction_rate", "dataset.contradiction_rate"),
    "fig_ablation": ("column", "weights", "weights"),
    "fig_seeds": ("column", "top1", "top1"),
    "fig_half_life": ("column", TEMPORAL, TEMPORAL),
    "fig_perf": ("column", "p95", "p95"),
    "fig_lvl_eval": ("key", "latency.samples.hot.with_embedding_s", "with_embedding_s"),
    "fig_filtered_ann": ("column", "recall_at_10", "recall_at_10"),
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


def _drawn(name: str, results: Path, tmp_path: Path, monkeypatch):
    """Make figure ``name`` and return its Figure object, drawn but not rendered (common.save keeps it)."""
    kept = []

    def keep(fig, out_dir, figname):
        fig.canvas.draw()  # lay out as save would, so texts and positions are final
        kept.append(fig)
        return common.Outcome(figname, (), None)

    monkeypatch.setattr(common, "save", keep)
    MODULES[name].make(results, tmp_path / "drawn")
    assert len(kept) == 1
    return kept[0]
