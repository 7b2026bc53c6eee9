"""Invariants that must hold for any run, checked on every committed and rerun output: ranges, sums and
cross-checks for main (and its large and handbook presets, with the recomputation of ``recompute.py``),
reembed_cost and feedback_loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smartvector_bench.core.cli_errors import one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.metrics import names as M
from smartvector_bench.core.run import read_run_lines
from smartvector_bench.tools.gate.common import EXPERIMENTS
from smartvector_bench.tools.gate.paths import Outputs, bad_number, csv_number
from smartvector_bench.tools.gate.recompute import SCORE_METRICS, SPLITS, load_judgments, recompute_rows
from smartvector_bench.tools.gate.report import Row, fmt, invariant
from smartvector_bench.tools.gate.runfile import fusion_rows, run_file_rows

# MRR@1 is not stored by the evaluator (it equals top1): the gate recomputes it from the run file's ranked lists.
MRR_AT_1 = "mrr_at_1"
# In [0, 1] where a split has them; which ones it must have is MainMetrics' to check (every metric with an
# interval but leakage_at_10, each beside its [lo, hi]), as it reads the file.
UNIT_METRICS = (*M.CI_METRICS, MRR_AT_1, M.PERMUTATION_P)
CATEGORY_METRICS = M.CI_METRICS


def in_unit(metric: str, x: Any) -> Row:
    bad = bad_number(x)
    if bad:
        return invariant(metric, "in [0, 1]", x, False, bad)
    return invariant(metric, "in [0, 1]", x, 0.0 <= x <= 1.0, "" if 0.0 <= x <= 1.0 else "out of range")


def _read_run_file(path: Path) -> tuple[dict | None, list[dict] | None, str | None]:
    """The header and lines by core.run's reader (UTF-8, JSON, ``_meta``, format version); not its per-line
    ``read_run_rows``, which stops at the first bad line and fills absent 1.1 fields with None: the gate reports
    every malformed line and a 1.1 line missing a field (``runfile.run_file_rows``)."""
    if not path.is_file():
        return None, None, f"{path.name} not found"
    try:
        meta, lines = read_run_lines(path)
    except BenchError as exc:
        return None, None, one_line(exc)
    return meta, [rec for _, rec in lines], None


def _retriever_config(m: dict, system: str) -> dict | None:
    cfg = (((m.get("provenance") or {}).get("config") or {}).get("retrievers") or {}).get(system)
    return cfg if isinstance(cfg, dict) else None


def main_invariants(out: Outputs) -> list[Row]:
    """Invariants of every split of every system in a main metrics.json (as MainMetrics read it: a non-empty
    ``systems`` of split objects, the dataset's counts) and its run files."""
    m = out.doc
    rows: list[Row] = []
    systems = m["systems"]
    n_total = m["dataset"][M.N_QUERIES]
    baseline = m["experiment"].get("baseline")
    judgments, gold_note = load_judgments(out.folder, m)
    gold = judgments.relevant if judgments is not None else None
    for name, per_split in systems.items():
        base = f"{out.name}.systems.{name}"
        meta, run_rows, err = _read_run_file(out.folder / f"run_{name}.jsonl")
        if err:
            rows.append(invariant(f"{base} run file", f"run_{name}.jsonl", "MISSING", False, err))
        split_sum = 0
        for split in SPLITS:
            p = f"{base}.{split}"
            s = per_split.get(split)
            if s is None:  # MainMetrics reads any set of splits; the gate needs dev and test
                rows.append(invariant(p, "split metrics", "MISSING", False, f"key {p} missing"))
                continue
            for key in UNIT_METRICS:
                if key not in s:
                    continue
                rows.append(in_unit(f"{p}.{key}", s[key]))
                if key in M.CI_METRICS:  # its [lo, hi], a pair as MainMetrics read it
                    ci = s[M.ci(key)]
                    rows += [in_unit(f"{p}.{M.ci(key)}.{i}", v) for i, v in enumerate(ci)]
                    if all(bad_number(v) is None for v in ci):
                        rows.append(invariant(f"{p}.{M.ci(key)}", "lo <= hi", ci, ci[0] <= ci[1]))
            for key in SCORE_METRICS:
                if key in s:
                    rows += _score_unit_rows(p, key, s)
            if M.MCNEMAR_P not in s:  # not required by MainMetrics (a run without a baseline stores None)
                rows.append(invariant(f"{p}.{M.MCNEMAR_P}", "key present", "MISSING", False,
                                      f"key {p}.{M.MCNEMAR_P} missing"))
            elif s[M.MCNEMAR_P] is None and baseline not in systems:
                rows.append(invariant(f"{p}.{M.MCNEMAR_P}", "None (no baseline run)", None, True))
            else:
                rows.append(in_unit(f"{p}.{M.MCNEMAR_P}", s[M.MCNEMAR_P]))
            n = s[M.N_QUERIES]  # an integer, as MainMetrics read it; a split of no query is the gate's to refuse
            if n <= 0:
                rows.append(invariant(f"{p}.{M.N_QUERIES}", "a positive integer", n, False, "not positive"))
                continue
            split_sum += n
            top1, mrr10 = s[M.TOP1], s[M.MRR_AT_10]
            if bad_number(top1) is None and bad_number(mrr10) is None:
                rows.append(invariant(f"{p}.{M.MRR_AT_10}", f">= {M.TOP1}", mrr10, mrr10 >= top1 - 1e-9))
            if MRR_AT_1 in s and bad_number(s[MRR_AT_1]) is None and bad_number(top1) is None:
                rows.append(invariant(f"{p}.{MRR_AT_1}", f"== {M.TOP1} ({top1})", s[MRR_AT_1],
                                 abs(s[MRR_AT_1] - top1) <= 5e-7))
            bins = (s.get("ece_bins") or {}).get("counts")
            if not isinstance(bins, list) or any(not isinstance(c, int) for c in bins):
                rows.append(invariant(f"{p}.ece_bins.counts", f"sums to n_queries ({n})", "MISSING", False,
                                 "ece_bins.counts missing or not integers"))
            else:
                rows.append(invariant(f"{p}.ece_bins.counts", f"sum == {M.N_QUERIES} ({n})", sum(bins), sum(bins) == n))
            cats = s.get("by_category")
            if isinstance(cats, dict) and cats:
                total = sum(c.get(M.N_QUERIES) or 0 for c in cats.values())
                rows.append(invariant(f"{p}.by_category", f"{M.N_QUERIES} sum == {n}", total, total == n))
                for cat, cm in cats.items():
                    for key in CATEGORY_METRICS:
                        if key in cm:
                            rows.append(in_unit(f"{p}.by_category.{cat}.{key}", cm[key]))
            if run_rows is not None:
                judged = [r for r in run_rows if r.get("split") == split]
                rows.append(invariant(f"{p}.{M.N_QUERIES}", f"== judged {split} queries in run_{name}.jsonl "
                                      f"({len(judged)})", n, n == len(judged)))
                if judged and bad_number(top1) is None:
                    if gold is not None:
                        hits = [bool(r.get("ranked")) and r["ranked"][0] in gold.get(r.get("query_id"), set())
                                for r in judged]
                        how = "a relevant chunk (qrels) at rank 1 in the run file"
                    else:
                        hits = [bool(r.get("correct")) for r in judged]
                        how = "correct flags in the run file"
                    mrr1 = sum(hits) / len(judged)
                    rows.append(invariant(f"{p}.{MRR_AT_1}", f"== {M.TOP1} ({top1})", round(mrr1, 6),
                                     abs(mrr1 - top1) <= 5e-7, how))
        if run_rows is not None:
            rows += recompute_rows(out.name, name, per_split, run_rows, judgments)
            rows += run_file_rows(out.name, name, meta, run_rows, judgments)
            rows += fusion_rows(out.name, name, run_rows, _retriever_config(m, name))
        rows.append(invariant(f"{base}.dev+test {M.N_QUERIES}", f"== dataset.{M.N_QUERIES} ({n_total})", split_sum,
                              split_sum == n_total))
        if run_rows is not None:
            rows.append(invariant(f"{base} run file rows", f"== dataset.{M.N_QUERIES} ({n_total})", len(run_rows),
                             len(run_rows) == n_total))
        if meta is not None:
            want = m["dataset"]["sha256"]
            rows.append(invariant(f"{base} run file _meta.dataset_sha256", "== metrics.json dataset.sha256",
                             meta.get("dataset_sha256"), meta.get("dataset_sha256") == want))
    rows += calibration_rows(out.name, m["calibration"], systems)
    if gold is None:
        rows.append(invariant(f"{out.name} gold source", "dataset gold", "-", True, gold_note))
    return rows


def _score_unit_rows(p: str, key: str, s: dict) -> list[Row]:
    """brier / auroc and their intervals in [0, 1]; AUROC (and its bounds) may be None: a split of one class,
    which the recomputation checks."""
    rows = []
    if not (key == M.AUROC and s[key] is None):
        rows.append(in_unit(f"{p}.{key}", s[key]))
    ci = s.get(M.ci(key))
    if ci is None:
        return rows
    if not (isinstance(ci, list) and len(ci) == 2):  # not one of MainMetrics' interval metrics: checked here
        return rows + [invariant(f"{p}.{M.ci(key)}", "[lo, hi]", ci, False, "not a pair")]
    if key == M.AUROC and None in ci:
        return rows
    rows += [in_unit(f"{p}.{M.ci(key)}.{i}", v) for i, v in enumerate(ci)]
    if all(bad_number(v) is None for v in ci):
        rows.append(invariant(f"{p}.{M.ci(key)}", "lo <= hi", ci, ci[0] <= ci[1]))
    return rows


CALIBRATION_RAW = (M.ECE, M.BRIER, M.AUROC)  # the report's raw test figures: the split's own


def calibration_rows(name: str, cal: Any, systems: dict) -> list[Row]:
    """The ``calibration`` block ({system: {method: calibration_report}}, fitted on dev, applied to test): its raw
    (uncalibrated) test ece / brier / auroc equal ``systems.<system>.test``'s, n_dev / n_test the splits'
    n_queries, its raw test bins' counts the split's ECE bin counts."""
    if not isinstance(cal, dict):
        return [invariant(f"{name}.calibration", "{system: {method: report}}", type(cal).__name__, False,
                     "not an object")]
    rows = []
    for system, methods in cal.items():
        base = f"{name}.calibration.{system}"
        per_split = systems.get(system) if isinstance(systems, dict) else None
        if not isinstance(per_split, dict) or not isinstance(methods, dict):
            rows.append(invariant(base, "a system of metrics.json", "MISSING", False, f"no systems.{system}"))
            continue
        test, dev = per_split.get("test") or {}, per_split.get("dev") or {}
        for method, rep in methods.items():
            p = f"{base}.{method}"
            if not isinstance(rep, dict):
                rows.append(invariant(p, "a report", type(rep).__name__, False, "not an object"))
                continue
            for key in CALIBRATION_RAW:
                if key in test or key in rep:
                    want, got = test.get(key, "MISSING"), rep.get(key, "MISSING")
                    rows.append(invariant(f"{p}.{key}", f"== systems.{system}.test.{key} ({fmt(want)})", got,
                                     got == want and got != "MISSING", "the raw test figure"))
            for key, split in (("n_test", test), ("n_dev", dev)):
                if key in rep:
                    rows.append(invariant(f"{p}.{key}", f"== {M.N_QUERIES} ({split.get(M.N_QUERIES)})", rep[key],
                                     rep[key] == split.get(M.N_QUERIES)))
            counts = (rep.get("bins") or {}).get("counts") if isinstance(rep.get("bins"), dict) else None
            if counts is not None:
                want = (test.get("ece_bins") or {}).get("counts")
                rows.append(invariant(f"{p}.bins.counts", f"== systems.{system}.test.ece_bins.counts", counts,
                                 counts == want))
    return rows


def reembed_invariants(out: Outputs) -> list[Row]:
    r, rows = out.doc, []
    n_edits = r["config"].get("n_edits")
    for name, st in r["strategies"].items():
        p = f"reembed_cost.strategies.{name}.by_edit_type"
        by = st["by_edit_type"]  # with its group "all", as ReembedCost read it
        rows.append(invariant(f"{p}.all.n_edits", f"== config.n_edits ({n_edits})", by["all"].get("n_edits"),
                         by["all"].get("n_edits") == n_edits))
        parts = sum((v.get("n_edits") or 0) for k, v in by.items() if k != "all")
        rows.append(invariant(f"{p}.*.n_edits", f"sum == {n_edits}", parts, parts == n_edits))
        for group, g in by.items():
            per, mean = g.get("chunks_reembedded_per_edit"), g.get("chunks_reembedded_mean")
            if isinstance(per, list) and per and bad_number(mean) is None:
                rows.append(invariant(f"{p}.{group}.chunks_reembedded_mean", "== mean of per-edit counts", mean,
                                 abs(sum(per) / len(per) - mean) <= 5e-7))
    return rows


def feedback_invariants(out: Outputs) -> list[Row]:
    rows: list[Row] = []
    series = out.doc["series"]
    if out.csv_rows is None:
        return rows
    rows.append(invariant("feedback_loop.csv rows", f"== len(feedback_loop.json series) ({len(series)})",
                          len(out.csv_rows), len(out.csv_rows) == len(series)))
    bad = []
    for i, r in enumerate(out.csv_rows):
        for col in (M.TOP1, M.lo(M.TOP1), M.hi(M.TOP1), M.STALE_RATE, M.RUMOR_RATE, M.ECE):
            if col in r:
                v = csv_number(r[col])
                if bad_number(v) or not 0.0 <= v <= 1.0:
                    bad.append(f"row {i + 2} {col}={r[col]!r}")
    rows.append(invariant("feedback_loop.csv rates", "every rate in [0, 1]", f"{len(bad)} bad", not bad,
                     "; ".join(bad[:5])))
    return rows


BY_KIND = {"main": main_invariants, "reembed_cost": reembed_invariants, "feedback_loop": feedback_invariants,
           "shortcut_audit": lambda out: [], "lvl_eval": lambda out: []}
INVARIANTS = {n: BY_KIND[p.kind] for n, p in EXPERIMENTS.items()}
