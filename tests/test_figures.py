"""paper_figures/: every figure script on a results/ tree of the committed JSON result files (both profiles'
metrics.json, the re-embedding cost, lvl_eval: complete, so their result classes validate them) and small
hand-made CSVs (the shortcut audit, sweeps, the feedback loop's test and dev rows, perf): files are written,
bytes are identical on reruns and in a fresh process, a missing input skips the figure with a message, a
malformed input (a missing key or column, a value of the wrong type) raises a one-line error naming the file and
the column or key; the systems appear in the main table's order and captions say families."""

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

import re

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from smartvector_bench.core.results import ResultError  # noqa: E402

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


@pytest.mark.parametrize("name", ["fig_main", "fig_main_large", "fig_shortcut_audit"])
def test_script_alone_in_a_fresh_process_gives_identical_bytes(made, results, tmp_path, name):
    """A figure script run on its own, in another process with another hash seed, writes the same bytes."""
    out, _ = made
    out2 = tmp_path / "figures"
    env = dict(os.environ, PYTHONHASHSEED="12345", MPLBACKEND="Agg")
    cmd = [sys.executable, str(REPO / "paper_figures" / f"{name}.py"), "--results", str(results), "--out", str(out2)]
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    assert f"{name}.png" in p.stdout and f"{name}.pdf" in p.stdout
    assert _bytes(out2, name) == _bytes(out, name)


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
    with pytest.raises(ResultError) as e:  # the result class's validation or the figure's own check
        MODULES[name].make(broken, tmp_path / "figures")
    msg = str(e.value)
    assert str(path) in msg and must_name in msg and "\n" not in msg
    assert not (tmp_path / "figures" / f"{name}.png").exists()


# figure -> (dotted key of its JSON input, a value of the wrong type, the key the message must name)
WRONG_TYPE = {
    "fig_main": ("systems.smartvector.test.top1", "high", "systems.smartvector.test.top1"),
    "fig_main_large": ("systems.oracle.test.n_queries", 5.5, "systems.oracle.test.n_queries"),
    "fig_reliability": ("systems.bm25.test.ece_bins.edges", [0.5, 0.1], "systems.bm25.test.ece_bins.edges"),
    "fig_leakage": ("systems.bm25.test.by_category.historical.leakage_at_10", "0",
                    "systems.bm25.test.by_category.historical.leakage_at_10"),
    "fig_reembed_cost": ("strategies.full.equivalent_to_rebuild.equivalent", "yes",
                         "strategies.full.equivalent_to_rebuild.equivalent"),
    "fig_lvl_eval": ("reembedding.by_step", [], "reembedding.by_step"),
}


def _set_key(obj: dict, dotted: str, value) -> None:
    *head, last = dotted.split(".")
    for k in head:
        obj = obj[k]
    obj[last] = value


@pytest.mark.parametrize("name", sorted(WRONG_TYPE))
def test_wrong_type_or_missing_top_level_key_names_file_and_key(name, results, tmp_path, capsys):
    """A JSON input of the wrong shape fails its figure alone, in one line naming the file and the key;
    make_all goes on with the others and exits 1."""
    key, value, must_name = WRONG_TYPE[name]
    broken = tmp_path / "results"
    path = broken / INPUTS[name]
    path.parent.mkdir(parents=True)
    obj = committed(INPUTS[name])
    _set_key(obj, key, value)
    write_json(path, obj)
    with pytest.raises(ResultError, match=rf"^{path}: {re.escape(must_name)}: "):
        MODULES[name].make(broken, tmp_path / "figures")
    del obj["provenance"]  # every result file has it
    write_json(path, obj)
    with pytest.raises(ResultError, match=rf"^{path}: provenance: missing"):
        MODULES[name].make(broken, tmp_path / "figures")
    assert make_all.main(["--results", str(broken), "--out", str(tmp_path / "figures")]) == 1
    err = capsys.readouterr().err
    assert f"{name}: ERROR, malformed input: {path}: provenance: missing" in err and "Traceback" not in err
    # a figure script alone: exit 2, one line on stderr
    cmd = [sys.executable, str(REPO / "paper_figures" / f"{name}.py"), "--results", str(broken), "--out",
           str(tmp_path / "figures")]
    p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg"),
                       cwd=tmp_path, timeout=300)
    assert p.returncode == 2 and p.stderr.startswith(f"error: {path}: provenance: missing")
    assert p.stderr.count("\n") == 1, p.stderr


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


def test_csv_line_numbers_count_blank_lines_and_extra_fields_are_malformed(results, tmp_path):
    path = tmp_path / "results" / "seeds" / "tidy.csv"
    shutil.copytree(results / "seeds", path.parent)
    lines = path.read_text(encoding="utf-8").splitlines()
    i = next(k for k, line in enumerate(lines) if ",test," in line)
    cells = lines[i].split(",")
    cells[cells.index("test") + 2] = "n/a"  # top1, after split and n_queries
    path.write_text("\n".join(lines[:i] + ["", ",".join(cells)] + lines[i + 1:]) + "\n", encoding="utf-8")
    with pytest.raises(common.FigureInputError, match=rf"tidy\.csv:{i + 2}: column top1: expected a number"):
        MODULES["fig_seeds"].make(tmp_path / "results", tmp_path / "figures")
    path.write_text("\n".join(lines[:i] + [lines[i] + ",extra"] + lines[i + 1:]) + "\n", encoding="utf-8")
    with pytest.raises(common.FigureInputError, match=rf"{path}: .*line {i + 1}"):
        MODULES["fig_seeds"].make(tmp_path / "results", tmp_path / "figures")


def test_invalid_json_is_malformed(tmp_path):
    path = tmp_path / "results" / "main" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"systems": ', encoding="utf-8")
    with pytest.raises(ResultError, match="metrics.json: not readable as JSON"):
        MODULES["fig_main"].make(tmp_path / "results", tmp_path / "figures")


def test_paper_claims_come_from_paper_claims_module(made, results, tmp_path, monkeypatch):
    from smartvector_bench.core import paper_claims

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


# -- v2: systems, captions, the new figures ------------------------------------------------------------------

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


def _texts(fig) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def _ticks_top_down(ax) -> list[str]:
    pairs = sorted(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels())), reverse=True)
    return [label for _, label in pairs]


def test_system_order_is_the_main_table_order():
    shuffled = sorted(SYSTEMS, key=lambda s: s[::-1])
    assert common.system_order(shuffled) == list(SYSTEMS)
    assert common.system_order(["zzz", "oracle", "aaa", "plain_cosine"]) == ["plain_cosine", "oracle", "aaa", "zzz"]
    assert "metadata_filter" in common.SYSTEM_ORDER and "valid_cosine" in common.BASELINES
    assert common.CEILINGS == ("oracle",)
    col = common.colours(SYSTEMS)
    assert set(col) == set(SYSTEMS) and all(s in common.PALETTE for s in SYSTEMS)
    assert len(set(col.values())) == len(SYSTEMS)  # every system of the main table has its own colour
    assert common.PAPER_COLOUR not in col.values()  # red stays for the paper's claims


@pytest.mark.parametrize("name", ["fig_main", "fig_main_large"])
def test_main_figures_show_every_system_in_table_order(name, results, tmp_path, monkeypatch):
    fig = _drawn(name, results, tmp_path, monkeypatch)
    systems = committed(INPUTS[name])["systems"]
    order = [s for s in common.SYSTEM_ORDER if s in systems]
    assert len(order) == len(systems)  # every system of the committed run has its place in the table's order
    assert _ticks_top_down(fig.axes[0]) == order
    text = " ".join(_texts(fig))
    assert "cluster bootstrap" in text and "over families" in text and "over queries" not in text
    n = "574 queries in 50 families" if name == "fig_main_large" else "70 queries in 6 families"
    assert n in text
    assert ("versioned_policies_large" in text) == (name == "fig_main_large")
    assert "reads the labels" in text  # the oracle is told apart as a ceiling


@pytest.mark.parametrize("name", ["fig_main", "fig_main_large", "fig_reliability", "fig_leakage", "fig_feedback_loop",
                                  "fig_reembed_cost"])
def test_interval_captions_name_their_resampling_unit(name, results, tmp_path, monkeypatch):
    text = " ".join(_texts(_drawn(name, results, tmp_path, monkeypatch))).replace("\n", " ")
    assert "over queries" not in text
    assert ("over edits" if name == "fig_reembed_cost" else "over families") in text


@pytest.mark.parametrize("name", ["fig_reliability", "fig_leakage", "fig_seeds", "fig_contradiction_sweep"])
def test_baselines_and_oracle_are_drawn(name, results, tmp_path, monkeypatch):
    text = " ".join(_texts(_drawn(name, results, tmp_path, monkeypatch)))
    assert "valid_cosine" in text and "oracle" in text
    if name != "fig_contradiction_sweep":
        assert "bm25_valid" in text and "metadata_filter" in text


def test_fig_main_large_reads_only_the_large_folder(results, tmp_path, capsys):
    part = tmp_path / "results"
    shutil.copytree(results / "main", part / "main")
    o = MODULES["fig_main_large"].make(part, tmp_path / "figures")
    assert o.skipped is not None and "main_large/metrics.json" in capsys.readouterr().out
    shutil.rmtree(part / "main")
    shutil.copytree(results / "main_large", part / "main_large")
    o = MODULES["fig_main_large"].make(part, tmp_path / "figures")
    assert o.skipped is None and (tmp_path / "figures" / "fig_main_large.png").is_file()
    assert not (tmp_path / "figures" / "fig_main.png").exists()


def test_ablation_draws_weight_free_baselines_as_reference_lines(results, tmp_path, monkeypatch):
    fig = _drawn("fig_ablation", results, tmp_path, monkeypatch)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert titles == ["smartvector"]  # plain_cosine and valid_cosine ignore the weights: lines, not panels
    legend = " ".join(_texts(fig))
    assert "valid_cosine" in legend and "plain_cosine" in legend
    # With only the weight-free baselines, they become panels (nothing else to draw them in).
    path = tmp_path / "only" / "ablation" / "tidy.csv"
    write_csv(path, *tidy_rows("ablation", SWEEPS["ablation"], systems=("plain_cosine", "valid_cosine")))
    monkeypatch.undo()
    fig = _drawn("fig_ablation", tmp_path / "only", tmp_path, monkeypatch)
    assert [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()] == ["plain_cosine",
                                                                                         "valid_cosine"]


def test_feedback_loop_draws_test_solid_and_dev_dashed(results, made, tmp_path, monkeypatch):
    fig = _drawn("fig_feedback_loop", results, tmp_path, monkeypatch)
    ax = fig.axes[0]
    styles = {}
    for line in ax.get_lines():
        if len(line.get_xdata()) == 6:  # a series (not the day-0 marker)
            styles.setdefault(line.get_linestyle(), []).append(line)
    assert len(styles["-"]) == 3 and len(styles["--"]) == 3
    solid_tops = sorted(float(max(line.get_ydata())) for line in styles["-"])
    dashed_tops = sorted(float(max(line.get_ydata())) for line in styles["--"])
    assert all(d > s for s, d in zip(solid_tops, dashed_tops))  # the fixture's dev rows are higher
    # Test rows alone: still made (no dashed lines); dev rows alone: skipped, the test split is the main series.
    monkeypatch.undo()  # save for real again
    out, _ = made
    for split, made_it in (("test", True), ("dev", False)):
        root = tmp_path / split
        write_csv(root / "feedback_loop" / "feedback_loop.csv", FEEDBACK_FIELDS,
                  [r for r in feedback_rows() if r["split"] == split])
        o = MODULES["fig_feedback_loop"].make(root, tmp_path / f"f_{split}")
        assert (o.skipped is None) is made_it
        if made_it:
            assert _bytes(tmp_path / f"f_{split}", "fig_feedback_loop") != _bytes(out, "fig_feedback_loop")


def test_shortcut_audit_groups_cues_and_draws_valid_cosine(results, tmp_path, monkeypatch):
    fig = _drawn("fig_shortcut_audit", results, tmp_path, monkeypatch)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split("\n")[0] for ax in panels] == ["versioned_policies", "versioned_policies_large"]
    assert "6 families" in panels[0].get_title() and "574-575 test queries in 50 families" in panels[1].get_title()
    rules = [r for r, _ in AUDIT_RULES if r != "valid_cosine"]
    assert _ticks_top_down(panels[0]) == rules  # surface cues first (audit order), then trust signals
    text = " ".join(_texts(fig))
    assert "surface cue" in text and "trust signal" in text and "valid_cosine" in text and "min-max" in text
    # bar colours: one for the surface cues, another for the trust signals
    import matplotlib.colors as mcolors

    bars = sorted((p.get_y(), mcolors.to_hex(p.get_facecolor())) for p in panels[0].patches
                  if p.get_width() > 0 and p.get_height() == pytest.approx(0.65))  # the bars, not the band
    by_rule = dict(zip(reversed(rules), (c for _, c in bars)))
    assert len({by_rule[r] for r in rules[:6]}) == 1 and len({by_rule[r] for r in rules[6:]}) == 1
    assert by_rule["kind"] != by_rule["source"]
    # the reference line is valid_cosine's mean test top-1 over seeds (0.32 = mean of 0.31, 0.32, 0.33)
    vlines = [line for line in panels[0].get_lines() if line.get_linestyle() == ":"]
    assert len(vlines) == 1 and float(vlines[0].get_xdata()[0]) == pytest.approx(0.32)


def test_shortcut_audit_whiskers_are_min_max_over_seeds(results, tmp_path, monkeypatch):
    fig = _drawn("fig_shortcut_audit", results, tmp_path, monkeypatch)
    ax = [a for a in fig.axes if a.get_visible()][0]
    kind = [r for r in audit_rows() if r["profile"] == "versioned_policies" and r["rule"] == "kind"]
    lo, hi = min(r["test_top1"] for r in kind), max(r["test_top1"] for r in kind)
    import numpy as np

    segments = [seg for coll in ax.collections if hasattr(coll, "get_segments") for seg in coll.get_segments()]
    spans = {(round(float(np.min(seg[:, 0])), 6), round(float(np.max(seg[:, 0])), 6)) for seg in segments
             if seg[0, 1] == seg[-1, 1]}  # horizontal whiskers
    assert (round(lo, 6), round(hi, 6)) in spans


def test_shortcut_audit_malformed_and_empty_inputs(results, tmp_path, capsys):
    path = tmp_path / "results" / "shortcut_audit" / "shortcut_audit.csv"
    rows = audit_rows()
    bad = [dict(r) for r in rows]
    bad[5]["test_top1"] = "n/a"
    write_csv(path, AUDIT_FIELDS, bad)
    with pytest.raises(common.FigureInputError, match=r"shortcut_audit\.csv:7: column test_top1: expected a number"):
        MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    bad = [dict(r) for r in rows]
    bad[12]["kind"] = "trust" if bad[12]["kind"] == "surface" else "surface"
    write_csv(path, AUDIT_FIELDS, bad)
    with pytest.raises(common.FigureInputError, match=r"shortcut_audit\.csv:14: column kind"):
        MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    write_csv(path, AUDIT_FIELDS, rows + [rows[3]])
    with pytest.raises(common.FigureInputError, match="duplicate row"):
        MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    write_csv(path, AUDIT_FIELDS, [r for r in rows if r["rule"] == "valid_cosine"])
    o = MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    assert o.skipped is not None and "no cue rules" in capsys.readouterr().out
    # Without valid_cosine's rows the rules are still drawn, with no reference line.
    write_csv(path, AUDIT_FIELDS, [r for r in rows if r["rule"] != "valid_cosine"])
    o = MODULES["fig_shortcut_audit"].make(tmp_path / "results", tmp_path / "figures")
    assert o.skipped is None


def test_make_all_registers_the_new_figures():
    assert {"fig_main_large", "fig_shortcut_audit"} <= set(FIGURES)
    assert FIGURES.index("fig_main") < FIGURES.index("fig_main_large")
    assert set(FIGURES) == set(INPUTS) == set(MALFORMED)
