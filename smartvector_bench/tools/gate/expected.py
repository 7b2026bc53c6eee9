"""``results/expected.json``: derived from the published results (``--write-expected``), every change printed
against the file it replaces, and read back with its kinds checked."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.metrics import names as M
from smartvector_bench.tools.gate import files
from smartvector_bench.tools.gate.common import EXPERIMENTS, BadInput, rel
from smartvector_bench.tools.gate.paths import Outputs, csv_number, experiment_dir, is_number, load_outputs
from smartvector_bench.tools.gate.report import fmt

EXPECTED_SCHEMA = "1.0"

# -- deriving expected.json from stored results ---------------------------------------------------------------

# Keys never regression-checked: wall times and latencies (they vary between runs and machines), paths of
# temporary folders, config echoes, per-item lists, provenance (checked by the publisher, not here).
SKIP_KEY = re.compile(r"(^|_)s$|_ms$|latency|wall_time|timings|path$|^cold_table$|^db_|^kept$|^lake_path_setting$"
                      r"|^provenance$|^config$|^params$|^settings$|^weights$|^records$|_per_edit$|^series$"
                      r"|^replay$|^paper_claim$|^status_policy$|^patched$|^package$")
SKIP_ECE_BIN_KEYS = ("edges",)  # fixed by n_bins (recomputed by the main invariants)
# Per-bin ECE accuracy and mean confidence (None in an empty bin): kind exact6, the stored precision.
ECE_BIN_LISTS = re.compile(r"\.ece_bins\.(accuracy|mean_confidence)$")
# Roots per experiment kind (top-level keys of the result JSON) whose leaves are checked.
ROOTS_BY_KIND = {
    "main": ("schema_version", "dataset", "embedder", "experiment", "systems", "system_info", "power",
             "calibration"),
    "shortcut_audit": ("schema_version", "experiment", "embedder", "summary"),
    "reembed_cost": ("schema_version", "dataset", "embedder", "edits", "strategies"),
    "feedback_loop": ("schema_version", "dataset", "experiment", "feedback", "summary", "detection_quality"),
    "lvl_eval": ("schema_version", "experiment", "embedder", "query_embedder", "dataset", "ingest", "reembedding",
                 "change_detection", "lake", "temporal", "claims", "verdicts", "rules", "csv_files"),
}
ROOTS = {n: ROOTS_BY_KIND[p.kind] for n, p in EXPERIMENTS.items()}
# lvl_eval's timing figures (keys with wall, latency, _ms, warm-up and table-load times, the host's load, the
# latency samples; and the hot / cold latency verdicts, whose rule is about wall time) depend on the machine:
# never compared. Everything else (counts, shares, top-1, precision / recall, the other verdicts) is exact6.
# These three are by experiment kind.
EXTRA_SKIP = {"lvl_eval": re.compile(r"wall|latency|_ms|warmup|load_s$|loadavg|^host$|^samples$|^plots$")}
EXACT6_KINDS = ("lvl_eval",)
# main's system_info: numbers and flags only (its strings are descriptions).
NUMERIC_ONLY_UNDER = {"main": ("system_info",)}
# Not accuracy metrics: float noise of the vector comparison. The flags derived from them are checked exactly.
ABS_TOLERANCES = [
    (re.compile(r"\.equivalent_to_rebuild\.max_abs_vector_diff$"), 1e-6,
     "largest |incremental - rebuilt| vector component: float noise of the model's forward pass; anything "
     "within experiment.vector_atol (1e-6) is the same vector, and the `vectors` flag is checked exactly"),
    (re.compile(r"\.equivalent_to_rebuild\.max_score_gap_at_differing_ranks$"), 1e-6,
     "score gap between near-tied chunks at differing ranks: float noise; `top_10` is checked exactly"),
]
CSV_ALL_ROWS_COLUMNS = (M.TOP1,)  # checked on every row of the per-round CSV (the plotted curve)


def _leaves(x: Any, path: str, numeric_only: bool = False, skip: re.Pattern | None = None):
    if isinstance(x, dict):
        for k, v in x.items():
            if SKIP_KEY.search(str(k)) or "." in str(k) or (skip is not None and skip.search(str(k))):
                continue
            if k in SKIP_ECE_BIN_KEYS and path.endswith(".ece_bins"):
                continue
            if ECE_BIN_LISTS.search(f"{path}.{k}") and isinstance(v, list) \
                    and all(i is None or is_number(i) for i in v):
                yield f"{path}.{k}", v
                continue
            yield from _leaves(v, f"{path}.{k}", numeric_only, skip)
    elif isinstance(x, list):
        if all(is_number(i) for i in x) and x:
            yield path, x
        elif all(isinstance(i, str) for i in x) and not numeric_only:
            yield path, x
        elif all(isinstance(i, (dict, list)) for i in x):
            for i, v in enumerate(x):
                yield from _leaves(v, f"{path}.{i}", numeric_only, skip)
    elif x is None or isinstance(x, (bool, int, float, str)):
        if numeric_only and not (is_number(x) or isinstance(x, bool)):
            return
        yield path, x


def _entry(path: str, value: Any) -> dict:
    if ECE_BIN_LISTS.search(path) and isinstance(value, list):
        return {"value": value, "tolerance": 0.0, "kind": "exact6"}
    for pattern, tol, why in ABS_TOLERANCES:
        if pattern.search(path) and (value is None or is_number(value)):
            return {"value": value, "tolerance": tol, "kind": "abs", "why": why}
    numeric = is_number(value) or (isinstance(value, list) and value and all(is_number(i) for i in value))
    if value is None or numeric:
        if isinstance(value, float) and not math.isfinite(value):
            raise BadInput(f"{path}: stored value is {value}; refusing to derive an expected value from it")
        exp = EXPERIMENTS.get(path.split(".", 1)[0])
        kind = "exact6" if exp is not None and exp.kind in EXACT6_KINDS else "exact4"
        return {"value": value, "tolerance": 0.0, "kind": kind}
    return {"value": value, "tolerance": 0.0, "kind": "exact"}


def derive_metrics(out: Outputs) -> dict[str, dict]:
    """Every expected entry of one experiment, from its stored outputs (the rules above, nothing typed)."""
    metrics: dict[str, dict] = {}
    kind = EXPERIMENTS[out.name].kind
    for root in ROOTS[out.name]:
        if root not in out.doc:
            continue
        numeric_only = root in NUMERIC_ONLY_UNDER.get(kind, ())
        for path, value in _leaves(out.doc[root], f"{out.name}.{root}", numeric_only, EXTRA_SKIP.get(kind)):
            metrics[path] = _entry(path, value)
    exp = EXPERIMENTS[out.name]
    if exp.csv_file and out.csv_rows is not None:
        metrics[f"{out.name}.csv.columns"] = {"value": list(out.csv_header or []), "tolerance": 0.0,
                                              "kind": "columns"}
        rounds = [int(r["round"]) for r in out.csv_rows if r.get("round", "").isdigit()]
        last = str(max(rounds)) if rounds else None
        value_cols = [c for c in out.csv_header or [] if c not in exp.csv_key and c not in ("time",)]
        for r in out.csv_rows:
            sel = ",".join(f"{k}={r[k]}" for k in exp.csv_key)
            # A per-round CSV: every column of the last round, the plotted curve of the others; any other CSV:
            # every value column of every row.
            cols = value_cols if last is None or r.get("round") == last else CSV_ALL_ROWS_COLUMNS
            for col in cols:
                metrics[f"{out.name}.csv[{sel}].{col}"] = _entry(col, csv_number(r[col]))
    return metrics


NOTES = [
    "Generated by `python -m smartvector_bench.tools.gate --write-expected` from the published results/<experiment>/ "
    "files (their PROVENANCE.json is summarised under `sources`); never edit values by hand: republish "
    "(`make results`) and regenerate.",
    "kind exact4: compared after rounding both sides to 4 decimals, tolerance 0. Every accuracy metric is "
    "deterministic on one machine: the dataset is seeded, embeddings come from the same model and packages, "
    "ties break by corpus index, bootstrap intervals are seeded; two reruns of each experiment gave identical "
    "metrics apart from wall times and temporary paths.",
    "Reruns (make results, make regress) use the default config with the real model, the embedding cache off "
    "and one math thread per process (OMP_NUM_THREADS=1; the embedder encodes one text per forward pass on one "
    "math thread, so a vector depends on its text alone, not on batch, cache or thread count); the exact command and environment are in results/<experiment>/PROVENANCE.json.",
    "kind abs is used only for float noise of the re-embedding equivalence check (each entry says why); the "
    "boolean verdicts derived from those values are checked exactly.",
    "Not regression-checked at all: wall times and latencies (timings_s, wall_time_s, *_s, *_ms, latency "
    "percentiles). They depend on the machine and on its load (two identical main runs here: smartvector_ref "
    "indexing 54.8 s vs 59.4 s, LiveVectorLake hot-query p95 19.9 ms vs 14.1 ms), so any tolerance would either "
    "flake or check nothing. Also skipped: temporary folder paths, config echoes (the config sha256 is in "
    "PROVENANCE.json), per-edit lists (their means, intervals and call counts are checked).",
    "Invariants checked on every run besides these values: see smartvector_bench/tools/gate/ (ranges, "
    "mrr_at_1 == top1 from the run files, n_queries against the run files and the dataset, ece bin counts, and "
    "stale/rumour rates, ECE and its bins, MRR@10, recall@5, nDCG@10 recomputed from the run files and the "
    "dataset's judgments by the gate's own code).",
    "p-values (mcnemar_p, permutation_p, *.p_value) are kind exact4 and are also compared on a log10 scale "
    "(|log10 got - log10 expected| <= 0.01), so a p below 5e-5 no longer compares as 0.0000. kind exact6: the "
    "ECE bins' accuracy and mean_confidence, at their stored 6 decimals up to one unit of the last (None for an "
    "empty bin).",
    "On another CPU family a rerun's scores move in their last bits and near-tied hits swap; a missed value of "
    "a main-kind rerun's systems or calibration passes only when its run files equal the committed ones up to "
    "near-tied hits (scores within 1e-5) and today's evaluator gives the committed value from the committed "
    "run files (smartvector_bench/tools/gate/host_noise.py).",
    "lvl_eval: every figure but its timings is kind exact6 (counts, shares, top-1, precision / recall, the "
    "verdicts whose rule is not about wall time); keys with wall, latency, _ms, warm-up and table-load times, the "
    "host's load and the latency samples are not recorded. `make regress` reruns it with experiment.repeats=1 "
    "(the repetitions only feed the latency percentiles). Sweeps (results/<preset>/) have no entries here: the "
    "gate recomputes their summary.json from their tidy.csv and reruns a few jobs of each "
    "(smartvector_bench/tools/gate/sweeps.py and sweep_reruns.py).",
    "manifest: sha256 and size of every file under the results root (this file excepted). `make regress` first "
    "checks the committed files against it (an edited, missing or unrecorded file fails; so does a file that "
    "differs from its PROVENANCE.json) and recomputes every expected value and invariant from them, then reruns.",
]


def write_expected(results_root: Path, path: Path, only: list[str] | None) -> dict:
    """Derive the expected file from every published experiment under ``results_root`` (or ``only`` these,
    keeping the file's other experiments), print what changed against the file there before, write it."""
    only = [n for n in only or [] if n in EXPERIMENTS] or None
    names = only or [n for n in EXPERIMENTS if n in ROOTS and experiment_dir(results_root, n) is not None]
    if not names:
        raise BadInput(f"{results_root}: no published experiment found (expected {', '.join(EXPERIMENTS)} "
                       "folders; run `python -m smartvector_bench.tools.publish` first)")
    before = _old_expected(path)
    old = {}
    if path.exists() and only:
        old = read_expected(path)
    doc = {"schema_version": EXPECTED_SCHEMA, "notes": NOTES,
           "generated_by": f"python -m smartvector_bench.tools.gate --write-expected --results-from {rel(results_root)}",
           "sources": dict(old.get("sources") or {}), "experiments": dict(old.get("experiments") or {})}
    for name in names:
        folder = experiment_dir(results_root, name)
        if folder is None:
            raise BadInput(f"{results_root}: no {name} results ({name}/{EXPERIMENTS[name].result_file})")
        out = load_outputs(name, folder)
        if out.error:
            raise BadInput(out.error)
        doc["experiments"][name] = derive_metrics(out)
        doc["sources"][name] = _source(folder, name)
    doc["counts"] = {n: len(m) for n, m in doc["experiments"].items()}
    doc["manifest"] = files.build_manifest(results_root, path)
    changes = expected_changes(before, doc)
    for line in changes:
        print(line)
    if not changes:
        print(f"{rel(path)} unchanged" if before is not None else f"{rel(path)}: new file")
    atomic_write_json(path, doc)
    path.chmod(0o644)
    return doc


def _old_expected(path: Path) -> dict | None:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _flat(x: Any, path: str, out: dict) -> dict:
    """Leaves of a JSON tree by dotted path; an expected entry ({"value", "kind", ...}) and a list are leaves."""
    if isinstance(x, dict) and x and not ("kind" in x and "value" in x) and not ("sha256" in x and "bytes" in x):
        for k, v in x.items():
            _flat(v, f"{path}.{k}" if path else str(k), out)
    else:
        out[path] = x
    return out


def expected_changes(old: dict | None, new: dict) -> list[str]:
    """One line per changed, added or removed entry of the expected file (values, their kinds and tolerances,
    the manifest's files, the sources), ``path: old -> new``; [] when nothing changed."""
    if old is None:
        return [f"new expected file: {sum(len(m) for m in new['experiments'].values())} values, manifest of "
                f"{new['manifest']['n_files']} files"]
    lines = []
    for part in ("experiments", "manifest", "sources", "schema_version", "generated_by", "notes"):
        a, b = _flat(old.get(part), part, {}), _flat(new.get(part), part, {})
        for k in b:
            if k not in a:
                lines.append(f"added {k}: {_change_text(b[k])}")
            elif a[k] != b[k]:
                lines.append(f"changed {k}: {_change_text(a[k])} -> {_change_text(b[k])}")
        lines += [f"removed {k}: {_change_text(a[k])}" for k in a if k not in b]
    return lines


def _change_text(x: Any) -> str:
    if isinstance(x, dict) and "kind" in x and "value" in x:
        extra = "" if x["kind"] in ("exact4", "exact6", "exact") and not x.get("tolerance") else \
            f" +/- {x.get('tolerance')}"
        return f"{fmt(x['value'], 80)} ({x['kind']}{extra})"
    if isinstance(x, dict) and "sha256" in x:
        return f"sha256 {str(x['sha256'])[:12]}, {x.get('bytes')} bytes"
    return fmt(x, 80)


def _source(folder: Path, name: str) -> dict:
    result = folder / EXPERIMENTS[name].result_file
    src = {"folder": rel(folder), "file": result.name,
           "sha256": hashlib.sha256(result.read_bytes()).hexdigest()}
    prov_file = folder / "PROVENANCE.json"
    if prov_file.is_file():
        prov = json.loads(prov_file.read_text(encoding="utf-8"))
        src.update({k: prov.get(k) for k in ("command_line", "git", "config_sha256", "dataset_sha256",
                                             "published_at")})
    return src


def read_expected(path: Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the expected values ({exc.strerror}); generate them with "
                       "--write-expected") from exc
    except ValueError as exc:
        raise BadInput(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("experiments"), dict):
        raise BadInput(f"{path}: no 'experiments' object")
    for name, metrics in doc["experiments"].items():
        if name not in EXPERIMENTS:
            raise BadInput(f"{path}: unknown experiment {name!r}; allowed: {', '.join(EXPERIMENTS)}")
        for metric, spec in metrics.items():
            if not isinstance(spec, dict) or spec.get("kind") not in ("exact4", "exact6", "exact", "abs", "columns"):
                raise BadInput(f"{path}: {metric}: needs a kind (exact4, exact6, exact, abs or columns)")
            if spec["kind"] == "abs" and not spec.get("why"):
                raise BadInput(f"{path}: {metric}: an abs tolerance needs a 'why'")
    return doc
