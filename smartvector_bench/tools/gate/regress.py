"""``python -m smartvector_bench.tools.gate.regress``: the CI regression gate (``make regress``).

Why: every number the project publishes under ``results/`` must be one the gate can reproduce or recompute, so
a hand edit, a collector or evaluator bug, or a code change that moves a metric fails CI naming the number.

First checks the committed results (``results/``, every file recorded in the ``manifest`` of
``results/expected.json``; see ``smartvector_bench.tools.gate.files``): a recorded file missing or with another
sha256, a file present but not recorded, or one that differs from its ``PROVENANCE.json`` fails naming the file;
then every expected value and invariant is recomputed from the committed files, a miss named by file and key
(``results/main/metrics.json: systems.plain_cosine.test.ece expected 0.1234, committed 0.1334``), and every
published sweep's ``summary.json`` is recomputed from its own ``tidy.csv`` by a second implementation
(``smartvector_bench.tools.gate.sweeps``: ``results/seeds/summary.json: results.systems.smartvector.test.top1.mean
summary 0.269, tidy.csv gives 0.259``). This takes a few seconds and always covers the whole tree.

Then reruns through the real CLI (``smartvector-bench experiment=<name>``, the same command
``experiments/publish_results.py`` publishes with, recorded in each ``results/<name>/PROVENANCE.json``) main,
main_large, reembed_cost, feedback_loop and lvl_eval (with ``experiment.repeats=1``: its five latency
repetitions only feed timing figures, which are never compared; every other figure is exact at 6 decimals),
compares every metric listed in ``results/expected.json`` with the new outputs (an experiment published but not
yet in the expected file: against values derived from its committed files, with a note) and checks invariants
that must hold for any run. Then reruns a few jobs of each published sweep (``regress_sweeps.REDUCED``: the
preset's own multirun, as recorded, with its swept keys narrowed on the command line) and compares their tidy
rows with the committed ones. Prints ``metric | expected | got | tolerance | verdict`` for the misses
(``--verbose``: every row) and exits non-zero on any miss (committed or rerun), naming the metric.

    python -m smartvector_bench.tools.gate.regress                              # committed check, then every rerun
    python -m smartvector_bench.tools.gate.regress --only main                  # committed check, rerun and check main
    python -m smartvector_bench.tools.gate.regress --only seeds,tune            # committed check, two reduced sweep reruns
    python -m smartvector_bench.tools.gate.regress --results DIR                # DIR is the results root (DIR/expected.json)
    python -m smartvector_bench.tools.gate.regress --results-from DIR           # committed check, compare DIR, no rerun
    python -m smartvector_bench.tools.gate.regress --no-committed --results-from outputs/main/<time>/   # DIR only
    python -m smartvector_bench.tools.gate.regress --write-expected             # derive results/expected.json from results/

``--results-from DIR`` takes a results root (``DIR/<experiment>/<files>``, e.g. ``results/``) or one
experiment's run folder (``DIR/metrics.json``, e.g. ``outputs/main/<time>/``); the committed results themselves
(``--results-from results``) are compared once, by the committed check. ``--write-expected`` records the values
(every published experiment: lvl_eval's timing figures and shortcut_audit's reruns excepted, see ``EXTRA_SKIP``)
and the manifest of every file under the results root, and prints every change against the file it replaces
(``changed <path>: old -> new``, ``added``, ``removed``; ``expected.json unchanged`` when nothing changed); rerun
it after every republication (``make results``, ``make bench``) or edit of a file under ``results/``.

Metric paths are ``<experiment>.<keys into the experiment's JSON>`` (``main.systems.smartvector.test.top1``,
list items by position: ``...top1_ci.0``) and, for a CSV, ``<experiment>.csv[col=value,...].<column>``
(one row selected by its key columns) and ``<experiment>.csv.columns`` (the header must keep every column).
Each expected entry has a ``kind``:

- ``exact4``: numbers (or lists of numbers) equal after rounding to 4 decimals (``tolerance`` 0.0); a p-value
  (last key ``p_value`` or ``*_p``: ``mcnemar_p``, ``permutation_p``, ...) must moreover agree on a log scale,
  ``|log10 got - log10 value| <= 0.01`` (zero only equals zero), so 1e-6 vs 3e-6 differ where both read 0.0000;
- ``exact6``: the same at 6 decimals (the stored precision), lists may hold None (an empty bin): the ECE bins'
  ``accuracy`` and ``mean_confidence``;
- ``exact``: equal as is (strings, booleans, lists of strings);
- ``abs``: ``|got - value| <= tolerance`` (with a ``why``), for the few values that are float noise;
- ``columns``: the CSV header holds every expected column.

A metric that is expected but missing from the new output (its key or column disappeared) is a miss; so is
``None`` or NaN where a number is expected. Invariants (every split of every system in ``main`` and
``main_large``): each rate, ECE, leakage, MRR and recall and their intervals in [0, 1], McNemar p in [0, 1],
``mrr_at_1 == top1`` (MRR@1 recomputed from the run file's ranked lists against the dataset's gold chunk),
``n_queries`` = the split's judged queries in ``run_<system>.jsonl``, dev + test = all the dataset's queries,
``sum(ece_bins.counts) == n_queries``, categories summing to the split; and an independent recomputation
(``recompute_rows``, the gate's own code, not the evaluator's) from each run file's ranked ids and confidences
and the dataset's judgments (regenerated from its seed, checked against its sha256): stale and rumour rates,
ECE and every bin's count / accuracy / mean confidence, MRR@10, recall@5, nDCG@10 (``ir_measures``,
``pytrec_eval`` provider), per split and per category, equal to the stored values at their 6 decimals (ECE
and mean confidences within 1e-6: the run file rounds confidences), and the run file's correct / stale /
rumor flags equal to the recomputed ones. When metrics.json has them (issue 14), ``brier`` (mean squared error
of the raw top-1 confidence, None/NaN as 0.0) and ``auroc`` (Mann-Whitney U from ``scipy.stats.rankdata``,
ties half; None for a split of one class) are recomputed too, within 1e-6, their intervals in [0, 1], and the
``calibration`` block's raw test ece / brier / auroc, n_dev / n_test and bin counts must equal the splits'.
Exit codes: 0 all pass, 1 a miss, 2 bad input.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartvector_bench.tools.gate import files as regress_files, sweeps as regress_sweeps
from smartvector_bench.core.atomic import atomic_write_json

PROG = "smartvector-regress"
REPO = Path(__file__).resolve().parents[3]
RESULTS_DIR = REPO / "results"
EXPECTED = RESULTS_DIR / "expected.json"
EXPECTED_SCHEMA = "1.0"
EXIT_MISS, EXIT_BAD_INPUT = 1, 2
DECIMALS = 4


class BadInput(Exception):
    """Bad command line or input files: one line on stderr, exit code 2."""


# -- the experiments: how they are rerun and what they publish ------------------------------------------------

@dataclass(frozen=True)
class Experiment:
    name: str
    result_file: str                 # the JSON the experiment writes last (its presence marks a complete run)
    files: tuple[str, ...]           # what is published into results/<name>/ (glob patterns)
    csv_file: str | None = None      # a per-row CSV checked by column
    csv_key: tuple[str, ...] = ()    # the columns that identify one CSV row
    regress: bool = True             # part of `make regress` (False: published only, too slow to rerun in CI)


EXPERIMENTS: dict[str, Experiment] = {
    "main": Experiment("main", "metrics.json", ("metrics.json", "table.md", "run_*.jsonl", "run_*.trec",
                                              "qrels_*.trec")),
    "reembed_cost": Experiment("reembed_cost", "reembed_cost.json", ("reembed_cost.json", "table.md")),
    "feedback_loop": Experiment("feedback_loop", "feedback_loop.json",
                                ("feedback_loop.json", "feedback_loop.csv", "table.md"),
                                csv_file="feedback_loop.csv", csv_key=("round", "system", "split")),
    # 7 minutes on 2 cores with its 5 latency repetitions (published so); `make regress` reruns it with one
    # (GATE_RERUN_EXTRA, about 2 minutes): every non-timing figure is the same, timings are never compared.
    "lvl_eval": Experiment("lvl_eval", "lvl_eval.json", ("lvl_eval.json", "table.md", "lvl_eval_*.csv")),
    # The main table on the large profile (1,150 queries, every system but smartvector_ref): about 3 minutes.
    "main_large": Experiment("main_large", "metrics.json", ("metrics.json", "table.md", "run_*.jsonl", "run_*.trec",
                                                          "qrels_*.trec")),
    # The 18F Handbook's git history (conf/experiment/handbook.yaml): needs the bundle in ../shared/corpora, so it
    # is published by `make results` and checked from results/, not rerun.
    "handbook": Experiment("handbook", "metrics.json", ("metrics.json", "table.md", "run_*.jsonl", "run_*.trec",
                                                      "qrels_*.trec", "dataset/manifest.json"), regress=False),
    # Ten generated datasets (5 seeds x 2 profiles): published by `make results`, checked from results/.
    "shortcut_audit": Experiment("shortcut_audit", "shortcut_audit.json",
                                 ("shortcut_audit.json", "shortcut_audit.csv", "table.md"),
                                 csv_file="shortcut_audit.csv", csv_key=("profile", "seed", "rule"), regress=False),
}
# The default config of each experiment with the real model; the embedding cache is off so that every rerun
# embeds with the installed model and packages (a warm cache would hide a model or torch change), and the
# table is not printed (it is in table.md).
RERUN_OVERRIDES = ("embedder.cache_path=null", "print_table=false")
# One math thread per run: the vectors do not depend on it (the embedder runs each forward pass on one math
# thread and one text, smartvector_bench/core/embedding.py), and on a shared 2-core machine a multi-threaded torch
# spins against other processes (reembed_cost's one-text forward passes took 463 s instead of 44 s under load). It also lets two
# experiments run side by side (--jobs 2) without oversubscribing the cores.
RERUN_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
             "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
DEFAULT_JOBS = max(1, min(2, os.cpu_count() or 1))
# Overrides of the gate's reruns only (the publisher runs the defaults): lvl_eval's latency repetitions are timing
# alone (keys *_ms, latency, wall: never compared), so one repetition keeps the same code path and figures.
GATE_RERUN_EXTRA = {"lvl_eval": ("experiment.repeats=1",)}


def bench_executable() -> list[str]:
    """The ``smartvector-bench`` console script of the running interpreter's environment."""
    exe = Path(sys.executable).parent / "smartvector-bench"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("smartvector-bench")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from smartvector_bench.tools.cli import main; sys.argv[0] = "
            "'smartvector-bench'; main()"]


def rerun_command(name: str, run_dir: Path, extra: tuple[str, ...] | list[str] = ()) -> list[str]:
    return [*bench_executable(), f"experiment={name}", f"hydra.run.dir={run_dir}", *RERUN_OVERRIDES, *extra]


@dataclass
class Rerun:
    name: str
    command: list[str]
    run_dir: Path
    log: Path
    returncode: int | None = None
    wall_time_s: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def log_tail(self, n: int = 15) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace").replace("\r", "\n")
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return "\n".join(lines[-n:])


def rerun(name: str, workdir: Path, extra: tuple[str, ...] | list[str] = (), timeout: float | None = None) -> Rerun:
    """Run one experiment through the CLI into ``workdir/<name>`` (a fixed ``hydra.run.dir``); its output,
    progress bars included, goes to ``workdir/<name>.log``. Never raises for a failed run: see ``.error``."""
    exp = EXPERIMENTS[name]
    run_dir = Path(workdir) / name
    if run_dir.exists():
        shutil.rmtree(run_dir)
    r = Rerun(name, rerun_command(name, run_dir, extra), run_dir, Path(workdir) / f"{name}.log")
    env = {**os.environ, **RERUN_ENV}
    t0 = time.perf_counter()
    with open(r.log, "w", encoding="utf-8") as log:
        try:
            proc = subprocess.run(r.command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=timeout, check=False)
            r.returncode = proc.returncode
        except subprocess.TimeoutExpired:
            r.error = f"timed out after {timeout:g} s"
        except OSError as exc:
            r.error = f"could not start {r.command[0]}: {exc}"
    r.wall_time_s = time.perf_counter() - t0
    if r.error is None and r.returncode != 0:
        r.error = f"exit code {r.returncode}"
    if r.error is None:
        result = run_dir / exp.result_file
        try:
            json.loads(result.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            r.error = f"{result} missing or unreadable after a zero exit ({exc})"
    return r


def rerun_many(names: list[str], workdir: Path, jobs: int = 1, extra: tuple[str, ...] | list[str] = (),
               per_name: dict[str, tuple[str, ...]] | None = None) -> dict[str, Rerun]:
    """Rerun several experiments, ``jobs`` at a time (each in its own process); ``per_name``: more overrides
    of one experiment."""
    Path(workdir).mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {n: pool.submit(rerun, n, workdir, (*(per_name or {}).get(n, ()), *extra)) for n in names}
    return {n: f.result() for n, f in futures.items()}


# -- loading outputs ---------------------------------------------------------------------------------------------

def experiment_dir(root: Path, name: str) -> Path | None:
    """Where ``name``'s outputs are under ``root``: ``root/<name>/`` (a results root) or ``root`` itself (one
    run folder holding the experiment's result file). None if neither."""
    exp = EXPERIMENTS[name]
    for cand in (root / name, root):
        if (cand / exp.result_file).is_file():
            return cand
    return None


@dataclass
class Outputs:
    name: str
    folder: Path
    doc: Any = None               # the parsed result JSON
    csv_header: list[str] | None = None
    csv_rows: list[dict] | None = None
    error: str | None = None      # could not read the result file / CSV


def load_outputs(name: str, folder: Path) -> Outputs:
    exp = EXPERIMENTS[name]
    out = Outputs(name, folder)
    try:
        out.doc = json.loads((folder / exp.result_file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        out.error = f"{folder / exp.result_file}: {exc}"
        return out
    if exp.csv_file:
        try:
            text = (folder / exp.csv_file).read_text(encoding="utf-8")
        except OSError as exc:
            out.error = f"{folder / exp.csv_file}: {exc}"
            return out
        reader = csv.DictReader(io.StringIO(text))
        out.csv_header = list(reader.fieldnames or [])
        out.csv_rows = list(reader)
    return out


# -- metric paths ------------------------------------------------------------------------------------------------

class Missing(Exception):
    """A metric path that does not resolve; the message names the missing key or column."""


_CSV_ROW = re.compile(r"^csv\[(?P<sel>[^\]]*)\]\.(?P<col>.+)$")


def _csv_number(text: str) -> Any:
    if text == "":
        return None
    try:
        v = float(text)
    except ValueError:
        return text
    return int(v) if re.fullmatch(r"-?\d+", text) else v


def resolve(out: Outputs, path: str) -> Any:
    """The value at ``path`` (with or without the ``<experiment>.`` prefix) in ``out``; raises Missing."""
    rest = path.removeprefix(out.name + ".")
    exp = EXPERIMENTS[out.name]
    if rest == "csv.columns":
        if out.csv_header is None:
            raise Missing(f"{exp.csv_file} not found")
        return list(out.csv_header)
    m = _CSV_ROW.match(rest)
    if m:
        if out.csv_rows is None:
            raise Missing(f"{exp.csv_file} not found")
        sel = dict(kv.split("=", 1) for kv in m["sel"].split(",") if kv)
        col = m["col"]
        for key in [*sel, col]:
            if key not in (out.csv_header or []):
                raise Missing(f"column {key!r} missing from {exp.csv_file}")
        rows = [r for r in out.csv_rows if all(r.get(k) == v for k, v in sel.items())]
        if not rows:
            raise Missing(f"no row {m['sel']} in {exp.csv_file}")
        if len(rows) > 1:
            raise Missing(f"{len(rows)} rows match {m['sel']} in {exp.csv_file} (expected one)")
        return _csv_number(rows[0][col])
    cur = out.doc
    done: list[str] = [out.name]
    for seg in rest.split("."):
        if isinstance(cur, dict):
            if seg not in cur:
                raise Missing(f"key {'.'.join(done)}.{seg} missing")
            cur = cur[seg]
        elif isinstance(cur, list):
            if not seg.isdigit() or int(seg) >= len(cur):
                raise Missing(f"item {'.'.join(done)}.{seg} missing (list of {len(cur)})")
            cur = cur[int(seg)]
        else:
            raise Missing(f"{'.'.join(done)} is a {type(cur).__name__}, not an object (no key {seg!r})")
        done.append(seg)
    return cur


# -- comparing ---------------------------------------------------------------------------------------------------

def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _bad_number(x: Any) -> str | None:
    if x is None:
        return "None where a number is expected"
    if not _is_number(x):
        return f"{type(x).__name__} where a number is expected"
    if not math.isfinite(x):
        return "NaN/inf where a number is expected"
    return None


def _round(x: float) -> float:
    return round(float(x), DECIMALS)


# p-values (a last key ``p_value`` or ending in ``_p``: mcnemar_p, permutation_p, mcnemar.p_value, ...) span
# orders of magnitude (2e-82 ... 1): at 4 decimals every p below 5e-5 reads 0.0000, so an exact4 p-value must
# also agree on a log scale, |log10 got - log10 expected| <= P_LOG10_TOL (0.01: about 2.3% relative; 1e-6 vs
# 3e-6 differ, 1e-6 vs 1.0001e-6 agree). Zero only matches zero. The 4-decimal rule still applies, so no
# p-value is compared more loosely than before.
P_LOG10_TOL = 0.01


def is_p_value(path: str) -> bool:
    last = path.rsplit(".", 1)[-1]
    return last == "p_value" or last.endswith("_p")


def _log10_close(got: float, value: float) -> tuple[bool, str]:
    got, value = float(got), float(value)
    if got == value:
        return True, ""
    if got <= 0.0 or value <= 0.0:
        return False, "p-value: zero or negative against a different value"
    d = abs(math.log10(got) - math.log10(value))
    return (d <= P_LOG10_TOL, "" if d <= P_LOG10_TOL else f"p-value: |diff of log10| {d:.3g} > {P_LOG10_TOL:g}")


def compare(spec: dict, got: Any, path: str = "") -> tuple[bool, str]:
    """Whether ``got`` matches the expected entry ``spec`` (at metric ``path``: a p-value is also compared on a
    log scale, see ``P_LOG10_TOL``); the second item explains a miss."""
    kind, value, tol = spec.get("kind"), spec.get("value"), float(spec.get("tolerance") or 0.0)
    if kind == "columns":
        if not isinstance(got, list):
            return False, "no header"
        missing = [c for c in value if c not in got]
        return (not missing, f"column(s) missing: {', '.join(missing)}" if missing else "")
    if kind == "exact":
        return (got == value, "" if got == value else "differs")
    if kind in ("exact4", "exact6", "abs"):
        if isinstance(value, list):
            if not isinstance(got, list):
                return False, f"{type(got).__name__} where a list is expected"
            if len(got) != len(value):
                return False, f"{len(got)} items, expected {len(value)}"
            for i, (v, g) in enumerate(zip(value, got)):
                ok, why = compare({**spec, "value": v}, g, path)
                if not ok:
                    return False, f"item {i}: {why}"
            return True, ""
        if value is None:  # recorded as None (e.g. no baseline): must still be None
            return (got is None, "" if got is None else "expected None")
        if isinstance(value, bool) or not _is_number(value):
            return (got == value, "" if got == value else "differs")
        bad = _bad_number(got)
        if bad:
            return False, bad
        if kind in ("exact4", "exact6"):
            places = 6 if kind == "exact6" else DECIMALS
            diff = abs(round(float(got), places) - round(float(value), places))
            if diff > tol + 1e-12:
                return False, f"differs at {places} decimals"
            if is_p_value(path):
                return _log10_close(got, value)
            return True, ""
        diff = abs(float(got) - float(value))
        return (diff <= tol, "" if diff <= tol else f"|diff| {diff:.3g} > {tol:g}")
    return False, f"unknown kind {kind!r}"


@dataclass
class Row:
    metric: str
    expected: Any
    got: Any
    tolerance: str
    ok: bool
    note: str = ""
    file: str = ""     # set on the committed-results rows: the file the row is about
    line: str = ""     # the committed line's text after the file, when not "<metric> expected X, committed Y"


def check_expected(out: Outputs, metrics: dict[str, dict]) -> list[Row]:
    rows = []
    for path, spec in metrics.items():
        tol = _tol_text(spec)
        try:
            got = resolve(out, path)
        except Missing as exc:
            rows.append(Row(path, spec.get("value"), "MISSING", tol, False, str(exc)))
            continue
        ok, why = compare(spec, got, path)
        if is_p_value(path) and spec.get("kind") in ("exact4", "exact6"):
            tol += f", log10 +/- {P_LOG10_TOL:g}"
        rows.append(Row(path, spec.get("value"), got, tol, ok, why))
    return rows


def _tol_text(spec: dict) -> str:
    kind = spec.get("kind")
    if kind in ("exact4", "exact6"):
        t = float(spec.get("tolerance") or 0.0)
        return f"{6 if kind == 'exact6' else DECIMALS} dp" + (f" +/- {t:g}" if t else "")
    if kind == "abs":
        return f"+/- {float(spec.get('tolerance') or 0.0):g}"
    return kind or "?"


# -- invariants ---------------------------------------------------------------------------------------------------

UNIT_METRICS = ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5")  # required, in [0, 1]
OPTIONAL_UNIT_METRICS = ("leakage_at_10", "mrr_at_1", "ndcg_at_10", "permutation_p")
CATEGORY_METRICS = ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5", "ndcg_at_10", "leakage_at_10")
SPLITS = ("dev", "test")


def _inv(metric: str, expected: str, got: Any, ok: bool, note: str = "") -> Row:
    return Row(metric, expected, got, "invariant", bool(ok), note)


def _unit(metric: str, x: Any) -> Row:
    bad = _bad_number(x)
    if bad:
        return _inv(metric, "in [0, 1]", x, False, bad)
    return _inv(metric, "in [0, 1]", x, 0.0 <= x <= 1.0, "" if 0.0 <= x <= 1.0 else "out of range")


def _read_run_file(path: Path) -> tuple[dict | None, list[dict] | None, str | None]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        return None, None, f"{path.name} not found ({exc.strerror})"
    try:
        first = json.loads(lines[0]) if lines else {}
        rows = [json.loads(ln) for ln in lines[1:] if ln.strip()]
    except ValueError as exc:
        return None, None, f"{path.name}: not valid JSON lines ({exc})"
    if "_meta" not in first:
        return None, None, f"{path.name}:1: no _meta header line"
    return first["_meta"], rows, None


@dataclass
class Judgments:
    """The dataset's judgments by id, for the gate's own recomputation: ``qrels[qid]`` = {chunk id: grade >= 1}
    (``Queries.relevant`` / ``grades``), ``stale[qid]`` / ``rumor[qid]`` = chunk ids (the labels)."""
    qrels: dict[str, dict[str, int]]
    stale: dict[str, set[str]]
    rumor: dict[str, set[str]]

    @property
    def relevant(self) -> dict[str, set[str]]:
        return {qid: set(j) for qid, j in self.qrels.items()}


def _judgments_of(ds) -> Judgments:
    q, ids = ds.queries, ds.corpus.ids

    def sets(rag) -> dict[str, set[str]]:
        return {qid: {ids[int(r)] for r in rag.row(i)} for i, qid in enumerate(q.ids)}

    qrels = {qid: {ids[int(r)]: int(g) for r, g in zip(q.relevant.row(i), q.grades.row(i))}
             for i, qid in enumerate(q.ids)}
    return Judgments(qrels, sets(q.stale), sets(q.rumor))


def _relevant_ids(ds) -> dict[str, set[str]]:
    return _judgments_of(ds).relevant


def _judgments(folder: Path, metrics: dict) -> tuple[Judgments | None, str]:
    """The dataset's judgments (graded qrels, stale and rumour sets), from the run's dataset folder or, failing
    that, the dataset regenerated from the recorded config (checked against the recorded sha256). (None, why)
    if neither is possible."""
    from smartvector_bench.core.dataset import load_dataset

    want = (metrics.get("dataset") or {}).get("sha256")
    candidates = [folder / "dataset"]
    recorded = (metrics.get("dataset") or {}).get("path")
    if recorded:
        candidates.append(Path(recorded))
    for cand in candidates:
        if (cand / "manifest.json").is_file():
            try:
                ds = load_dataset(cand)
            except Exception:  # noqa: BLE001 - an unreadable folder: try the next source
                continue
            if ds.sha256 == want:
                return _judgments_of(ds), f"qrels from {cand}"
    ds_cfg = (((metrics.get("provenance") or {}).get("config") or {}).get("dataset")) or {}
    if not ds_cfg or ds_cfg.get("path"):
        return None, "no dataset folder; gold from the run files' correct flags"
    try:
        from data_gen.params import params_from_config
        from data_gen.writer import write_dataset

        with tempfile.TemporaryDirectory(prefix="svb-regress-ds-") as tmp:
            write_dataset(params_from_config(dict(ds_cfg)), Path(tmp) / "ds")
            ds = load_dataset(Path(tmp) / "ds")
    except Exception as exc:  # noqa: BLE001 - reported, the check falls back to the correct flags
        return None, f"could not regenerate the dataset ({exc}); gold from the run files' correct flags"
    if ds.sha256 != want:
        return None, (f"regenerated dataset sha256 {ds.sha256[:12]} != recorded {str(want)[:12]}; gold from "
                      "the run files' correct flags")
    return _judgments_of(ds), "qrels from the dataset regenerated from the config"


def _gold_ids(folder: Path, metrics: dict) -> tuple[dict[str, set[str]] | None, str]:
    """query id -> relevant chunk ids (qrels grade >= 1); see ``_judgments``."""
    j, note = _judgments(folder, metrics)
    return (j.relevant if j is not None else None), note


# -- independent recomputation of main's metrics from the run files -----------------------------------------------
#
# A second, small implementation of the evaluator's definitions (smartvector_bench/core/evaluator.py and
# metrics/calibration.py), deliberately not calling them, applied to what the run files record (ranked ids,
# confidence) and the dataset's judgments (regenerated from its seed, checked against its sha256):
#
# * correct / stale / rumour: the ranked top-1 id is in the query's graded qrels (grade >= 1) / stale set /
#   rumour set; a query with no result is none of them. The run file's own flags must equal these too.
# * ECE: ``n_bins`` equal-width bins ``[i/n, (i+1)/n)``, the last one closed (1.0 lands in bin n-1); a missing
#   confidence (null) is 0.0; ``sum_b |n_b * acc_b - n_b * conf_b| / N``; accuracy / mean confidence are None in
#   an empty bin. Per bin: count, accuracy and mean confidence.
# * MRR@10, recall@5, nDCG@10: ``ir_measures`` with the ``pytrec_eval`` provider pinned, over the graded qrels
#   and the run file's first 10 ids, each given the score ``10 - rank`` (distinct and decreasing, so trec_eval's
#   re-sort by score keeps the stored order); RR is trec_eval's ``recip_rank`` on that truncated run. A query
#   with no result or no relevant chunk scores 0.
#
# Every value is compared with the stored one EXACTLY at the stored precision (6 decimals: the evaluator rounds
# with round(x, 6)), ``by_category`` too, with one exception: the evaluator computed ECE and the bins' mean
# confidence from full-precision confidences, while the run file keeps them rounded to 6 decimals (run.py), so
# those two are recomputed only to within CONFIDENCE_TOL = 1e-6 (5e-7 from the run file's rounding of every
# confidence, which averages to at most 5e-7, plus 5e-7 from the stored value's own rounding; 34 of the
# committed values differ by exactly one unit in the 6th decimal). Bin counts and accuracies are exact. A
# confidence written exactly on an interior bin edge is binned as written (BM25's confidences sit on 0.1, 0.2,
# ... exactly); a continuous one within 5e-7 of an edge could have been binned on the other side: a count miss
# then says how many confidences of the split sit on an edge.

RECOMPUTED_DECIMALS = 6
RECOMPUTED_METRICS = ("stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5", "ndcg_at_10")
RECOMPUTED_CATEGORY_METRICS = ("top1", *RECOMPUTED_METRICS)
IR_CUTOFF = 10
CONFIDENCE_TOL = 1e-6
CONFIDENCE_KEYS = ("ece", "mean_confidence", "brier", "auroc")  # compared within CONFIDENCE_TOL
SCORE_METRICS = ("brier", "auroc")  # recomputed when metrics.json has them (issue 14's calibration metrics)


def recompute_ece(confidence: list[float], correct: list[bool], n_bins: int = 10) -> tuple[float, dict]:
    """ECE and its bins (counts, accuracy, mean_confidence; None for an empty bin), the calibration module's
    convention reimplemented; raises ValueError on a confidence outside [0, 1] or no queries."""
    import bisect

    if not confidence:
        raise ValueError("no queries")
    edges = [i / n_bins for i in range(n_bins + 1)]
    counts, sum_conf, sum_acc = [0] * n_bins, [0.0] * n_bins, [0.0] * n_bins
    for c, ok in zip(confidence, correct):
        c = float(c)
        if not 0.0 <= c <= 1.0:  # also NaN
            raise ValueError(f"confidence {c!r} outside [0, 1]")
        b = min(bisect.bisect_right(edges, c) - 1, n_bins - 1)
        counts[b] += 1
        sum_conf[b] += c
        sum_acc[b] += 1.0 if ok else 0.0
    value = sum(abs(a - s) for a, s in zip(sum_acc, sum_conf)) / len(confidence)
    return value, {"n_bins": n_bins, "edges": edges, "counts": counts,
                   "accuracy": [a / n if n else None for a, n in zip(sum_acc, counts)],
                   "mean_confidence": [s / n if n else None for s, n in zip(sum_conf, counts)]}


def _score_confidences(confidence: list) -> list[float]:
    """The raw top-1 confidences as the calibration metrics take them: None or NaN counts as 0.0."""
    out = []
    for c in confidence:
        c = 0.0 if c is None else float(c)
        out.append(0.0 if math.isnan(c) else c)
    return out


def recompute_brier(confidence: list, correct: list[bool]) -> float:
    """Brier score: the mean squared error of the confidences against correctness (1/0)."""
    conf = _score_confidences(confidence)
    if not conf:
        raise ValueError("no queries")
    return math.fsum((c - (1.0 if ok else 0.0)) ** 2 for c, ok in zip(conf, correct)) / len(conf)


def recompute_auroc(confidence: list, correct: list[bool]) -> float | None:
    """AUROC of confidence against correctness as the Mann-Whitney U of the correct queries' average ranks
    (ties count half); None when the queries hold one class."""
    from scipy.stats import rankdata

    conf = _score_confidences(confidence)
    pos = [bool(ok) for ok in correct]
    n_pos, n_neg = sum(pos), len(pos) - sum(pos)
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(conf, method="average")
    u = math.fsum(r for r, ok in zip(ranks, pos) if ok) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def auroc_bounds(confidence: list, correct: list[bool]) -> tuple[float, float] | None:
    """The range of AUROCs the full-precision confidences can have, given their 6-decimal rounding in the run
    file: rounding is monotone, so a strict order survives it and only rounded ties hide an order. Every
    tied (correct, wrong) pair counted against (low) or for (high) the correct query; None with one class."""
    import numpy as np

    conf = np.asarray(_score_confidences(confidence), dtype=np.float64)
    pos = np.asarray([bool(ok) for ok in correct], dtype=bool)
    neg_sorted = np.sort(conf[~pos])
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    below = np.searchsorted(neg_sorted, conf[pos], side="left").sum()
    at_or_below = np.searchsorted(neg_sorted, conf[pos], side="right").sum()
    return float(below) / (n_pos * n_neg), float(at_or_below) / (n_pos * n_neg)


def recompute_ir(run_rows: list[dict], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """``{query_id: {"mrr_at_10", "recall_at_5", "ndcg_at_10"}}`` for every run row, via ir_measures'
    pytrec_eval provider (see above)."""
    import ir_measures

    measures = {ir_measures.RR: "mrr_at_10", ir_measures.R @ 5: "recall_at_5",
                ir_measures.nDCG @ IR_CUTOFF: "ndcg_at_10"}
    run: dict[str, dict[str, float]] = {}
    for r in run_rows:
        qid, docs = str(r.get("query_id")), list(r.get("ranked") or [])[:IR_CUTOFF]
        scored: dict[str, float] = {}
        for rank, did in enumerate(docs):
            did = str(did)
            if did in scored:  # a repeated id keeps its rank as a never-relevant placeholder
                did = f"__duplicate_rank_{rank}__"
            scored[did] = float(IR_CUTOFF - rank)
        if scored and qrels.get(qid):
            run[qid] = scored
    judged = {qid: dict(j) for qid, j in qrels.items() if j and qid in run}
    out = {str(r.get("query_id")): {m: 0.0 for m in measures.values()} for r in run_rows}
    if run:
        for metric in ir_measures.pytrec_eval.iter_calc(list(measures), judged, run):
            if metric.query_id in out:
                out[metric.query_id][measures[metric.measure]] = float(metric.value)
    return out


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


def _recompute_point(rows: list[dict], outcome: dict[str, dict], n_bins: int) -> dict:
    """The point metrics of some run rows from their recomputed per-query outcomes."""
    o = [outcome[str(r.get("query_id"))] for r in rows]
    conf = [0.0 if r.get("confidence") is None else r["confidence"] for r in rows]
    out = {"top1": _mean([x["correct"] for x in o]), "stale_rate": _mean([x["stale"] for x in o]),
           "rumor_rate": _mean([x["rumor"] for x in o])}
    for key in ("mrr_at_10", "recall_at_5", "ndcg_at_10"):
        if all(key in x for x in o):
            out[key] = _mean([x[key] for x in o])
    try:
        out["ece"], out["ece_bins"] = recompute_ece(conf, [x["correct"] for x in o], n_bins)
    except ValueError as exc:
        out["ece_error"] = str(exc)
    raw = [r.get("confidence") for r in rows]
    if raw:
        out["brier"] = recompute_brier(raw, [x["correct"] for x in o])
        out["auroc"] = recompute_auroc(raw, [x["correct"] for x in o])
        out["auroc_bounds"] = auroc_bounds(raw, [x["correct"] for x in o])
    return out


def _same6(stored: Any, value: Any, tol: float = 0.0) -> bool:
    if value is None or stored is None:
        return stored is None and value is None
    if _bad_number(stored) is not None:
        return False
    if tol:
        return abs(float(stored) - float(value)) <= tol + 1e-12
    return stored == round(float(value), RECOMPUTED_DECIMALS)


def _recomputed_row(metric: str, stored: Any, value: Any, how: str) -> Row:
    shown = "None" if value is None else _fmt(round(float(value), RECOMPUTED_DECIMALS))
    tol = CONFIDENCE_TOL if metric.rsplit(".", 2)[-1] in CONFIDENCE_KEYS or \
        metric.rsplit(".", 2)[-2] in CONFIDENCE_KEYS else 0.0
    ok = _same6(stored, value, tol)
    why = f"|diff| > {tol:g} (confidences are 6-decimal in the run file)" if tol else \
        f"differs at {RECOMPUTED_DECIMALS} decimals"
    return _inv(metric, f"recomputed {shown}", stored, ok, how if ok else f"{how}; {why}")


def recompute_rows(out_name: str, system: str, per_split: dict, run_rows: list[dict],
                   judgments: Judgments | None) -> list[Row]:
    """Rows comparing ``systems.<system>`` of a main metrics.json with the gate's own recomputation from
    ``run_<system>.jsonl`` (and the dataset's judgments; without them, from the run file's flags)."""
    base, run_file = f"{out_name}.systems.{system}", f"run_{system}.jsonl"
    rows: list[Row] = []
    outcome: dict[str, dict] = {}
    if judgments is not None:
        ir = recompute_ir(run_rows, judgments.qrels)
        unknown = []
        for r in run_rows:
            qid = str(r.get("query_id"))
            if qid not in judgments.qrels:
                unknown.append(qid)
            top = (r.get("ranked") or [None])[0]
            outcome[qid] = {"correct": top is not None and top in judgments.qrels.get(qid, {}),
                            "stale": top is not None and top in judgments.stale.get(qid, set()),
                            "rumor": top is not None and top in judgments.rumor.get(qid, set()), **ir[qid]}
        how = f"recomputed from {run_file} and the dataset's judgments"
        if unknown:
            r = _inv(f"{out_name} {run_file}: query ids", "all in the dataset", f"{len(unknown)} unknown", False,
                     ", ".join(unknown[:5]))
            r.file = run_file
            rows.append(r)
    else:
        for r in run_rows:
            outcome[str(r.get("query_id"))] = {k: bool(r.get(k)) for k in ("correct", "stale", "rumor")}
        how = f"recomputed from {run_file}'s correct/stale/rumor flags (no dataset)"
    for split in SPLITS:
        s = per_split.get(split) if isinstance(per_split, dict) else None
        judged = [r for r in run_rows if r.get("split") == split]
        if not isinstance(s, dict) or not judged:
            continue  # reported by the invariants above (missing split, n_queries against the run file)
        p = f"{base}.{split}"
        if judgments is not None:
            for flag in ("correct", "stale", "rumor"):
                differ = [str(r.get("query_id")) for r in judged
                          if bool(r.get(flag)) != outcome[str(r.get("query_id"))][flag]]
                row = _inv(f"{out_name} {run_file}: {split} {flag} flags", "0 differing from the recomputed",
                           f"{len(differ)} differ", not differ,
                           ("e.g. " + ", ".join(differ[:5]) if differ else "top-1 id against the dataset's "
                            + {"correct": "graded qrels", "stale": "stale sets", "rumor": "rumour sets"}[flag]))
                row.file = run_file
                rows.append(row)
        bins = s.get("ece_bins") if isinstance(s.get("ece_bins"), dict) else {}
        n_bins = bins.get("n_bins") if isinstance(bins.get("n_bins"), int) and bins.get("n_bins") > 0 else 10
        point = _recompute_point(judged, outcome, n_bins)
        for key in RECOMPUTED_METRICS + SCORE_METRICS:
            if key == "auroc" and key in s and point.get("auroc_bounds") is not None and s[key] is not None:
                # rank-based: the run file's 6-decimal rounding can tie two confidences the evaluator told apart
                lo, hi = point["auroc_bounds"]
                ok = _bad_number(s[key]) is None and lo - CONFIDENCE_TOL <= float(s[key]) <= hi + CONFIDENCE_TOL
                rows.append(_inv(f"{p}.auroc", f"recomputed in [{lo:.6f}, {hi:.6f}]", s[key], ok,
                                 f"{how}; the interval spans the orders the run file's rounded ties allow"))
            elif key in s and key in point:
                rows.append(_recomputed_row(f"{p}.{key}", s[key], point[key], how))
        if "ece_error" in point:
            rows.append(_inv(f"{p}.ece", "recomputable", "ERROR", False, f"{run_file}: {point['ece_error']}"))
        else:
            rb = point["ece_bins"]
            for key in ("edges", "counts", "accuracy", "mean_confidence"):
                stored = bins.get(key)
                if not isinstance(stored, list) or len(stored) != len(rb[key]):
                    rows.append(_inv(f"{p}.ece_bins.{key}", f"{len(rb[key])} values", stored, False,
                                     "missing or of another length"))
                    continue
                for i, (st, v) in enumerate(zip(stored, rb[key])):
                    if key == "counts":
                        ok = st == v and isinstance(st, int) and not isinstance(st, bool)
                        on_edge = sum(1 for r in judged if r.get("confidence") in rb["edges"][1:-1])
                        rows.append(_inv(f"{p}.ece_bins.counts.{i}", f"recomputed {v}", st, ok, how if ok else
                                         f"{how}; {on_edge} confidence(s) of the split on an interior bin edge"))
                    else:
                        rows.append(_recomputed_row(f"{p}.ece_bins.{key}.{i}", st, v, how))
        cats = s.get("by_category")
        if isinstance(cats, dict):
            for cat, cm in cats.items():
                sel = [r for r in judged if r.get("category") == cat]
                if not sel or not isinstance(cm, dict):
                    rows.append(_inv(f"{p}.by_category.{cat}", f"{split} queries of category {cat} in {run_file}",
                                     0, False, "no such queries in the run file"))
                    continue
                cpoint = _recompute_point(sel, outcome, n_bins)
                for key in RECOMPUTED_CATEGORY_METRICS:
                    if key in cm and key in cpoint:
                        rows.append(_recomputed_row(f"{p}.by_category.{cat}.{key}", cm[key], cpoint[key], how))
    return rows


def main_invariants(out: Outputs) -> list[Row]:
    """Invariants of every split of every system in a main metrics.json and its run files."""
    m = out.doc
    rows: list[Row] = []
    systems = m.get("systems")
    if not isinstance(systems, dict) or not systems:
        return [_inv(f"{out.name}.systems", "per-system metrics", "MISSING", False, "metrics.json has no systems")]
    n_total = (m.get("dataset") or {}).get("n_queries")
    baseline = (m.get("experiment") or {}).get("baseline")
    judgments, gold_note = _judgments(out.folder, m)
    gold = judgments.relevant if judgments is not None else None
    for name, per_split in systems.items():
        base = f"{out.name}.systems.{name}"
        meta, run_rows, err = _read_run_file(out.folder / f"run_{name}.jsonl")
        if err:
            rows.append(_inv(f"{base} run file", f"run_{name}.jsonl", "MISSING", False, err))
        split_sum = 0
        for split in SPLITS:
            p = f"{base}.{split}"
            s = per_split.get(split) if isinstance(per_split, dict) else None
            if not isinstance(s, dict):
                rows.append(_inv(p, "split metrics", "MISSING", False, f"key {p} missing"))
                continue
            for key in UNIT_METRICS + OPTIONAL_UNIT_METRICS:
                if key not in s:
                    if key in UNIT_METRICS:
                        rows.append(_inv(f"{p}.{key}", "in [0, 1]", "MISSING", False, f"key {p}.{key} missing"))
                    continue
                rows.append(_unit(f"{p}.{key}", s[key]))
                ci = s.get(f"{key}_ci")
                if ci is not None:
                    if not (isinstance(ci, list) and len(ci) == 2):
                        rows.append(_inv(f"{p}.{key}_ci", "[lo, hi]", ci, False, "not a pair"))
                    else:
                        rows += [_unit(f"{p}.{key}_ci.{i}", v) for i, v in enumerate(ci)]
                        if all(_bad_number(v) is None for v in ci):
                            rows.append(_inv(f"{p}.{key}_ci", "lo <= hi", ci, ci[0] <= ci[1]))
            for key in SCORE_METRICS:
                if key in s:
                    rows += _score_unit_rows(p, key, s)
            if "mcnemar_p" not in s:
                rows.append(_inv(f"{p}.mcnemar_p", "key present", "MISSING", False, f"key {p}.mcnemar_p missing"))
            elif s["mcnemar_p"] is None and baseline not in systems:
                rows.append(_inv(f"{p}.mcnemar_p", "None (no baseline run)", None, True))
            else:
                rows.append(_unit(f"{p}.mcnemar_p", s["mcnemar_p"]))
            n = s.get("n_queries")
            if not (isinstance(n, int) and not isinstance(n, bool) and n > 0):
                rows.append(_inv(f"{p}.n_queries", "a positive integer", n if n is not None else "MISSING", False,
                                 "missing or not a positive integer"))
                continue
            split_sum += n
            top1, mrr10 = s.get("top1"), s.get("mrr_at_10")
            if _bad_number(top1) is None and _bad_number(mrr10) is None:
                rows.append(_inv(f"{p}.mrr_at_10", ">= top1", mrr10, mrr10 >= top1 - 1e-9))
            if "mrr_at_1" in s and _bad_number(s["mrr_at_1"]) is None and _bad_number(top1) is None:
                rows.append(_inv(f"{p}.mrr_at_1", f"== top1 ({top1})", s["mrr_at_1"],
                                 abs(s["mrr_at_1"] - top1) <= 5e-7))
            bins = (s.get("ece_bins") or {}).get("counts")
            if not isinstance(bins, list) or any(not isinstance(c, int) for c in bins):
                rows.append(_inv(f"{p}.ece_bins.counts", f"sums to n_queries ({n})", "MISSING", False,
                                 "ece_bins.counts missing or not integers"))
            else:
                rows.append(_inv(f"{p}.ece_bins.counts", f"sum == n_queries ({n})", sum(bins), sum(bins) == n))
            cats = s.get("by_category")
            if isinstance(cats, dict) and cats:
                total = sum(c.get("n_queries") or 0 for c in cats.values())
                rows.append(_inv(f"{p}.by_category", f"n_queries sum == {n}", total, total == n))
                for cat, cm in cats.items():
                    for key in CATEGORY_METRICS:
                        if key in cm:
                            rows.append(_unit(f"{p}.by_category.{cat}.{key}", cm[key]))
            if run_rows is not None:
                judged = [r for r in run_rows if r.get("split") == split]
                rows.append(_inv(f"{p}.n_queries", f"== judged {split} queries in run_{name}.jsonl ({len(judged)})",
                                 n, n == len(judged)))
                if judged and _bad_number(top1) is None:
                    if gold is not None:
                        hits = [bool(r.get("ranked")) and r["ranked"][0] in gold.get(r.get("query_id"), set())
                                for r in judged]
                        how = "a relevant chunk (qrels) at rank 1 in the run file"
                    else:
                        hits = [bool(r.get("correct")) for r in judged]
                        how = "correct flags in the run file"
                    mrr1 = sum(hits) / len(judged)
                    rows.append(_inv(f"{p}.mrr_at_1", f"== top1 ({top1})", round(mrr1, 6),
                                     abs(mrr1 - top1) <= 5e-7, how))
        if run_rows is not None and isinstance(per_split, dict):
            rows += recompute_rows(out.name, name, per_split, run_rows, judgments)
        if n_total is not None:
            rows.append(_inv(f"{base}.dev+test n_queries", f"== dataset.n_queries ({n_total})", split_sum,
                             split_sum == n_total))
        if run_rows is not None and n_total is not None:
            rows.append(_inv(f"{base} run file rows", f"== dataset.n_queries ({n_total})", len(run_rows),
                             len(run_rows) == n_total))
        if meta is not None:
            want = (m.get("dataset") or {}).get("sha256")
            rows.append(_inv(f"{base} run file _meta.dataset_sha256", "== metrics.json dataset.sha256",
                             meta.get("dataset_sha256"), meta.get("dataset_sha256") == want))
    if "calibration" in m:
        rows += calibration_rows(out.name, m.get("calibration"), systems)
    if gold is None:
        rows.append(_inv(f"{out.name} gold source", "dataset gold", "-", True, gold_note))
    return rows


def _score_unit_rows(p: str, key: str, s: dict) -> list[Row]:
    """brier / auroc and their intervals in [0, 1]; AUROC (and its bounds) may be None: a split of one class,
    which the recomputation checks."""
    rows = []
    if not (key == "auroc" and s[key] is None):
        rows.append(_unit(f"{p}.{key}", s[key]))
    ci = s.get(f"{key}_ci")
    if ci is None:
        return rows
    if not (isinstance(ci, list) and len(ci) == 2):
        return rows + [_inv(f"{p}.{key}_ci", "[lo, hi]", ci, False, "not a pair")]
    if key == "auroc" and None in ci:
        return rows
    rows += [_unit(f"{p}.{key}_ci.{i}", v) for i, v in enumerate(ci)]
    if all(_bad_number(v) is None for v in ci):
        rows.append(_inv(f"{p}.{key}_ci", "lo <= hi", ci, ci[0] <= ci[1]))
    return rows


CALIBRATION_RAW = ("ece", "brier", "auroc")  # the report's raw test figures: the split's own


def calibration_rows(name: str, cal: Any, systems: dict) -> list[Row]:
    """The ``calibration`` block ({system: {method: calibration_report}}, fitted on dev, applied to test): its raw
    (uncalibrated) test ece / brier / auroc equal ``systems.<system>.test``'s, n_dev / n_test the splits'
    n_queries, its raw test bins' counts the split's ECE bin counts."""
    if not isinstance(cal, dict):
        return [_inv(f"{name}.calibration", "{system: {method: report}}", type(cal).__name__, False,
                     "not an object")]
    rows = []
    for system, methods in cal.items():
        base = f"{name}.calibration.{system}"
        per_split = systems.get(system) if isinstance(systems, dict) else None
        if not isinstance(per_split, dict) or not isinstance(methods, dict):
            rows.append(_inv(base, "a system of metrics.json", "MISSING", False, f"no systems.{system}"))
            continue
        test, dev = per_split.get("test") or {}, per_split.get("dev") or {}
        for method, rep in methods.items():
            p = f"{base}.{method}"
            if not isinstance(rep, dict):
                rows.append(_inv(p, "a report", type(rep).__name__, False, "not an object"))
                continue
            for key in CALIBRATION_RAW:
                if key in test or key in rep:
                    want, got = test.get(key, "MISSING"), rep.get(key, "MISSING")
                    rows.append(_inv(f"{p}.{key}", f"== systems.{system}.test.{key} ({_fmt(want)})", got,
                                     got == want and got != "MISSING", "the raw test figure"))
            for key, split in (("n_test", test), ("n_dev", dev)):
                if key in rep:
                    rows.append(_inv(f"{p}.{key}", f"== n_queries ({split.get('n_queries')})", rep[key],
                                     rep[key] == split.get("n_queries")))
            counts = (rep.get("bins") or {}).get("counts") if isinstance(rep.get("bins"), dict) else None
            if counts is not None:
                want = (test.get("ece_bins") or {}).get("counts")
                rows.append(_inv(f"{p}.bins.counts", f"== systems.{system}.test.ece_bins.counts", counts,
                                 counts == want))
    return rows


def reembed_invariants(out: Outputs) -> list[Row]:
    r, rows = out.doc, []
    n_edits = (r.get("config") or {}).get("n_edits")
    for name, st in (r.get("strategies") or {}).items():
        p = f"reembed_cost.strategies.{name}.by_edit_type"
        by = st.get("by_edit_type") or {}
        if "all" not in by:
            rows.append(_inv(f"{p}.all", "present", "MISSING", False, f"key {p}.all missing"))
            continue
        rows.append(_inv(f"{p}.all.n_edits", f"== config.n_edits ({n_edits})", by["all"].get("n_edits"),
                         by["all"].get("n_edits") == n_edits))
        parts = sum((v.get("n_edits") or 0) for k, v in by.items() if k != "all")
        rows.append(_inv(f"{p}.*.n_edits", f"sum == {n_edits}", parts, parts == n_edits))
        for group, g in by.items():
            per, mean = g.get("chunks_reembedded_per_edit"), g.get("chunks_reembedded_mean")
            if isinstance(per, list) and per and _bad_number(mean) is None:
                rows.append(_inv(f"{p}.{group}.chunks_reembedded_mean", "== mean of per-edit counts", mean,
                                 abs(sum(per) / len(per) - mean) <= 5e-7))
    return rows


def feedback_invariants(out: Outputs) -> list[Row]:
    rows: list[Row] = []
    series = (out.doc or {}).get("series")
    if out.csv_rows is None:
        return rows
    if isinstance(series, list):
        rows.append(_inv("feedback_loop.csv rows", f"== len(feedback_loop.json series) ({len(series)})",
                         len(out.csv_rows), len(out.csv_rows) == len(series)))
    bad = []
    for i, r in enumerate(out.csv_rows):
        for col in ("top1", "top1_lo", "top1_hi", "stale_rate", "rumor_rate", "ece"):
            if col in r:
                v = _csv_number(r[col])
                if _bad_number(v) or not 0.0 <= v <= 1.0:
                    bad.append(f"row {i + 2} {col}={r[col]!r}")
    rows.append(_inv("feedback_loop.csv rates", "every rate in [0, 1]", f"{len(bad)} bad", not bad,
                     "; ".join(bad[:5])))
    return rows


INVARIANTS = {"main": main_invariants, "main_large": main_invariants, "handbook": main_invariants,
              "reembed_cost": reembed_invariants, "feedback_loop": feedback_invariants,
              "shortcut_audit": lambda out: [], "lvl_eval": lambda out: []}


# -- deriving expected.json from stored results ---------------------------------------------------------------

# Keys never regression-checked: wall times and latencies (they vary between runs and machines), paths of
# temporary folders, config echoes, per-item lists, provenance (checked by publish_results, not here).
SKIP_KEY = re.compile(r"(^|_)s$|_ms$|latency|wall_time|timings|path$|^cold_table$|^db_|^kept$|^lake_path_setting$"
                      r"|^provenance$|^config$|^params$|^settings$|^weights$|^records$|_per_edit$|^series$"
                      r"|^replay$|^paper_claim$|^status_policy$|^patched$|^package$")
SKIP_ECE_BIN_KEYS = ("edges",)  # fixed by n_bins (recomputed by the main invariants)
# Per-bin ECE accuracy and mean confidence (None in an empty bin): kind exact6, the stored precision.
ECE_BIN_LISTS = re.compile(r"\.ece_bins\.(accuracy|mean_confidence)$")
# Roots per experiment (top-level keys of the result JSON) whose leaves are checked.
ROOTS = {
    "main": ("schema_version", "dataset", "embedder", "experiment", "systems", "system_info", "power",
             "calibration"),
    "main_large": ("schema_version", "dataset", "embedder", "experiment", "systems", "system_info", "power",
                   "calibration"),
    "handbook": ("schema_version", "dataset", "embedder", "experiment", "systems", "system_info", "power",
                 "calibration"),
    "shortcut_audit": ("schema_version", "experiment", "embedder", "summary"),
    "reembed_cost": ("schema_version", "dataset", "embedder", "edits", "strategies"),
    "feedback_loop": ("schema_version", "dataset", "experiment", "feedback", "summary", "detection_quality"),
    "lvl_eval": ("schema_version", "experiment", "embedder", "query_embedder", "dataset", "ingest", "reembedding",
                 "change_detection", "lake", "temporal", "claims", "verdicts", "rules", "csv_files"),
}
# lvl_eval's timing figures (keys with wall, latency, _ms, warm-up and table-load times, the host's load, the
# latency samples; and the hot / cold latency verdicts, whose rule is about wall time) depend on the machine:
# never compared. Everything else (counts, shares, top-1, precision / recall, the other verdicts) is exact6.
EXTRA_SKIP = {"lvl_eval": re.compile(r"wall|latency|_ms|warmup|load_s$|loadavg|^host$|^samples$|^plots$")}
EXACT6_EXPERIMENTS = ("lvl_eval",)
# main's system_info: numbers and flags only (its strings are descriptions).
NUMERIC_ONLY_UNDER = {"main": ("system_info",), "main_large": ("system_info",), "handbook": ("system_info",)}
# Not accuracy metrics: float noise of the vector comparison. The flags derived from them are checked exactly.
ABS_TOLERANCES = [
    (re.compile(r"\.equivalent_to_rebuild\.max_abs_vector_diff$"), 1e-6,
     "largest |incremental - rebuilt| vector component: float noise of the model's forward pass; anything "
     "within experiment.vector_atol (1e-6) is the same vector, and the `vectors` flag is checked exactly"),
    (re.compile(r"\.equivalent_to_rebuild\.max_score_gap_at_differing_ranks$"), 1e-6,
     "score gap between near-tied chunks at differing ranks: float noise; `top_10` is checked exactly"),
]
CSV_ALL_ROWS_COLUMNS = ("top1",)  # checked on every row of the per-round CSV (the plotted curve)


def _leaves(x: Any, path: str, numeric_only: bool = False, skip: re.Pattern | None = None):
    if isinstance(x, dict):
        for k, v in x.items():
            if SKIP_KEY.search(str(k)) or "." in str(k) or (skip is not None and skip.search(str(k))):
                continue
            if k in SKIP_ECE_BIN_KEYS and path.endswith(".ece_bins"):
                continue
            if ECE_BIN_LISTS.search(f"{path}.{k}") and isinstance(v, list) \
                    and all(i is None or _is_number(i) for i in v):
                yield f"{path}.{k}", v
                continue
            yield from _leaves(v, f"{path}.{k}", numeric_only, skip)
    elif isinstance(x, list):
        if all(_is_number(i) for i in x) and x:
            yield path, x
        elif all(isinstance(i, str) for i in x) and not numeric_only:
            yield path, x
        elif all(isinstance(i, (dict, list)) for i in x):
            for i, v in enumerate(x):
                yield from _leaves(v, f"{path}.{i}", numeric_only, skip)
    elif x is None or isinstance(x, (bool, int, float, str)):
        if numeric_only and not (_is_number(x) or isinstance(x, bool)):
            return
        yield path, x


def _entry(path: str, value: Any) -> dict:
    if ECE_BIN_LISTS.search(path) and isinstance(value, list):
        return {"value": value, "tolerance": 0.0, "kind": "exact6"}
    for pattern, tol, why in ABS_TOLERANCES:
        if pattern.search(path) and (value is None or _is_number(value)):
            return {"value": value, "tolerance": tol, "kind": "abs", "why": why}
    numeric = _is_number(value) or (isinstance(value, list) and value and all(_is_number(i) for i in value))
    if value is None or numeric:
        if isinstance(value, float) and not math.isfinite(value):
            raise BadInput(f"{path}: stored value is {value}; refusing to derive an expected value from it")
        kind = "exact6" if path.split(".", 1)[0] in EXACT6_EXPERIMENTS else "exact4"
        return {"value": value, "tolerance": 0.0, "kind": kind}
    return {"value": value, "tolerance": 0.0, "kind": "exact"}


def derive_metrics(out: Outputs) -> dict[str, dict]:
    """Every expected entry of one experiment, from its stored outputs (the rules above, nothing typed)."""
    metrics: dict[str, dict] = {}
    for root in ROOTS[out.name]:
        if root not in out.doc:
            continue
        numeric_only = root in NUMERIC_ONLY_UNDER.get(out.name, ())
        for path, value in _leaves(out.doc[root], f"{out.name}.{root}", numeric_only, EXTRA_SKIP.get(out.name)):
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
                metrics[f"{out.name}.csv[{sel}].{col}"] = _entry(col, _csv_number(r[col]))
    return metrics


NOTES = [
    "Generated by `python -m smartvector_bench.tools.gate.regress --write-expected` from the published results/<experiment>/ "
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
    "Invariants checked on every run besides these values: see smartvector_bench/tools/gate/regress.py (ranges, "
    "mrr_at_1 == top1 from the run files, n_queries against the run files and the dataset, ece bin counts, and "
    "stale/rumour rates, ECE and its bins, MRR@10, recall@5, nDCG@10 recomputed from the run files and the "
    "dataset's judgments by the gate's own code).",
    "p-values (mcnemar_p, permutation_p, *.p_value) are kind exact4 and are also compared on a log10 scale "
    "(|log10 got - log10 expected| <= 0.01), so a p below 5e-5 no longer compares as 0.0000. kind exact6: the "
    "ECE bins' accuracy and mean_confidence, at their stored 6 decimals (None for an empty bin).",
    "lvl_eval: every figure but its timings is kind exact6 (counts, shares, top-1, precision / recall, the "
    "verdicts whose rule is not about wall time); keys with wall, latency, _ms, warm-up and table-load times, the "
    "host's load and the latency samples are not recorded. `make regress` reruns it with experiment.repeats=1 "
    "(the repetitions only feed the latency percentiles). Sweeps (results/<preset>/) have no entries here: the "
    "gate recomputes their summary.json from their tidy.csv and reruns a few jobs of each (regress_sweeps.py).",
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
                       "folders; run `python -m experiments.publish_results` first)")
    before = _old_expected(path)
    old = {}
    if path.exists() and only:
        old = read_expected(path)
    doc = {"schema_version": EXPECTED_SCHEMA, "notes": NOTES,
           "generated_by": f"python -m smartvector_bench.tools.gate.regress --write-expected --results-from {_rel(results_root)}",
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
    doc["manifest"] = regress_files.build_manifest(results_root, path)
    changes = expected_changes(before, doc)
    for line in changes:
        print(line)
    if not changes:
        print(f"{_rel(path)} unchanged" if before is not None else f"{_rel(path)}: new file")
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
        return f"{_fmt(x['value'], 80)} ({x['kind']}{extra})"
    if isinstance(x, dict) and "sha256" in x:
        return f"sha256 {str(x['sha256'])[:12]}, {x.get('bytes')} bytes"
    return _fmt(x, 80)


def _source(folder: Path, name: str) -> dict:
    result = folder / EXPERIMENTS[name].result_file
    src = {"folder": _rel(folder), "file": result.name,
           "sha256": hashlib.sha256(result.read_bytes()).hexdigest()}
    prov_file = folder / "PROVENANCE.json"
    if prov_file.is_file():
        prov = json.loads(prov_file.read_text(encoding="utf-8"))
        src.update({k: prov.get(k) for k in ("command_line", "git", "config_sha256", "dataset_sha256",
                                             "published_at")})
    return src


def _rel(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(REPO))
    except ValueError:
        return str(p)


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


# -- the committed results ----------------------------------------------------------------------------------------

def compare_folder(name: str, folder: Path | None, metrics: dict[str, dict], where: str) -> list[Row]:
    """Every expected value and invariant of experiment ``name`` against its outputs in ``folder``."""
    if folder is None:
        return [Row(f"{name} (outputs)", EXPERIMENTS[name].result_file, "MISSING", "-", False, f"not found in {where}"),
                *[Row(p, s.get("value"), "MISSING", _tol_text(s), False, "no outputs") for p, s in metrics.items()]]
    out = load_outputs(name, folder)
    rows = []
    if out.error:
        rows.append(Row(f"{name} (outputs)", "readable", "ERROR", "-", False, out.error))
        if out.doc is None:
            return rows + [Row(p, s.get("value"), "MISSING", _tol_text(s), False, "no outputs")
                           for p, s in metrics.items()]
    return rows + check_expected(out, metrics) + INVARIANTS[name](out)


def _in_file(row: Row, name: str, folder: Path) -> Row:
    """``row`` of experiment ``name`` renamed after the committed file it is about: ``metrics.json`` +
    ``systems.x.test.ece``, ``feedback_loop.csv`` + ``[round=3,...].top1``."""
    exp, rest = EXPERIMENTS[name], row.metric
    for prefix in (f"{name}.", f"{name} "):
        rest = rest.removeprefix(prefix)
    fname = exp.result_file
    if row.file:  # a row about another file of the folder (a run file): named by the experiment's invariants
        fname, rest = row.file, rest.removeprefix(f"{row.file}: ")
    elif exp.csv_file and rest.startswith("csv"):
        fname, rest = exp.csv_file, rest[3:].lstrip(". ") or "rows"
    row.metric, row.file = rest, _rel(folder / fname)
    return row


def check_committed(expected_path: Path, expected: dict) -> tuple[list[Row], Path | None]:
    """The committed results root of ``expected`` (its ``manifest``): file integrity (``regress_files``), then
    every expected value and invariant recomputed from the committed files. Each row names its file."""
    manifest = expected.get("manifest")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return [Row("manifest", "sha256 of every result file", "MISSING", "file", False,
                    "no file manifest: regenerate the expected file with --write-expected", _rel(expected_path))], None
    root = regress_files.manifest_root(expected_path, manifest)
    if not root.is_dir():
        return [Row("manifest root", "a folder", "MISSING", "file", False, f"{root} not found", _rel(root))], None
    folders = {n: experiment_dir(root, n) for n in expected["experiments"]}
    result_files = {n: (f / EXPERIMENTS[n].result_file).relative_to(root).as_posix()
                    for n, f in folders.items() if f is not None}
    checks = (regress_files.check_manifest(root, manifest, expected_path) + regress_files.check_provenance(root)
              + regress_files.check_sources(expected.get("sources") or {}, result_files, manifest))
    rows = [Row(c.check, c.expected, c.got, "file", c.ok, c.note, _rel(root / c.file)) for c in checks]
    for n, metrics in expected["experiments"].items():
        folder = folders[n]
        rows += [_in_file(r, n, folder if folder is not None else root / n)
                 for r in compare_folder(n, folder, metrics, _rel(root))]
    rows += [Row(c.path, c.recomputed, c.stored, "summary", c.ok, c.note, _rel(root / c.file), line=c.line())
             for c in regress_sweeps.check_summaries(root)]
    return rows, root


def _committed_line(r: Row) -> str:
    if r.line:
        return f"{'PASS' if r.ok else 'FAIL'} {r.file}: {r.line}"
    how = ": ".join(t for t in (r.tolerance if r.tolerance != "file" else "", r.note) if t)
    return (f"{'PASS' if r.ok else 'FAIL'} {r.file}: {r.metric} expected {_fmt(r.expected)}, committed "
            f"{_fmt(r.got)}" + (f" ({how})" if how else ""))


def _committed_counts(rows: list[Row]) -> str:
    fails = sum(not r.ok for r in rows)
    kinds = [r.tolerance for r in rows]
    n_file, n_inv, n_sum = kinds.count("file"), kinds.count("invariant"), kinds.count("summary")
    return (f"{len(rows) - fails} passed, {fails} failed ({n_file} file checks, "
            f"{len(kinds) - n_file - n_inv - n_sum} expected values, {n_inv} invariant checks, "
            f"{n_sum} sweep values recomputed from tidy.csv)")


# -- report -------------------------------------------------------------------------------------------------------

def _fmt(x: Any, width: int = 48) -> str:
    if isinstance(x, float):
        s = f"{x:.6g}"
    elif isinstance(x, list):
        s = "[" + ", ".join(_fmt(i, 12) for i in x) + "]"
    else:
        s = str(x)
    return s if len(s) <= width else s[: width - 3] + "..."


def render_table(rows: list[Row], verbose: bool) -> str:
    shown = rows if verbose else [r for r in rows if not r.ok]
    head = ("metric", "expected", "got", "tolerance", "verdict")
    cells = [(r.metric, _fmt(r.expected), _fmt(r.got), r.tolerance,
              ("PASS" if r.ok else "FAIL") + (f": {r.note}" if r.note and (not r.ok or verbose) else ""))
             for r in shown]
    if not cells:
        return ""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in cells]
    return "\n".join(lines)


# -- command line -------------------------------------------------------------------------------------------------

def _names(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    for n in names:
        if n not in EXPERIMENTS and n not in regress_sweeps.SWEEPS:
            raise BadInput(f"--only: unknown experiment {n!r}; allowed: {', '.join(EXPERIMENTS)}, "
                           f"{', '.join(regress_sweeps.SWEEPS)}")
    return list(dict.fromkeys(names))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m smartvector_bench.tools.gate.regress",
                                 description="Check the committed results against results/expected.json (file "
                                             "hashes, then every expected value and invariant recomputed from "
                                             "them), then rerun the affordable experiments and compare them too; "
                                             "exit 1 on any miss.")
    ap.add_argument("--only", action="append", metavar="NAMES",
                    help=f"comma-separated experiments ({', '.join(EXPERIMENTS)}) or sweep presets "
                         f"({', '.join(regress_sweeps.SWEEPS)}) to rerun or compare; default: every experiment "
                         "rerun by the gate and every published sweep (the committed check always covers "
                         "everything)")
    ap.add_argument("--results", type=Path, metavar="DIR",
                    help="the results root the reruns are compared with (default: the manifest root of the "
                         "expected file, results/); its expected.json is the default --expected")
    ap.add_argument("--expected", type=Path, default=None,
                    help="expected values (default: <--results>/expected.json, else results/expected.json)")
    ap.add_argument("--results-from", type=Path, metavar="DIR",
                    help="compare this results root or run folder instead of rerunning")
    ap.add_argument("--no-committed", action="store_true",
                    help="skip the committed-results check (manifest hashes and values recomputed from the "
                         "committed files): to compare a rerun or a run folder while results/ is being "
                         "republished and expected.json not yet regenerated")
    ap.add_argument("--write-expected", action="store_true",
                    help="derive the expected file (values and file manifest) from --results-from (default "
                         "results/) and exit")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every row, not only the misses")
    ap.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                    help=f"experiments rerun at the same time (default {DEFAULT_JOBS}: min(2, cores))")
    ap.add_argument("--keep", type=Path, metavar="DIR", help="rerun into DIR and keep it (default: a temp dir)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                    help="extra Hydra override for the reruns (testing only; the expected values assume none)")
    return ap.parse_args(argv)


def _same_dir(a: Path | None, b: Path | None) -> bool:
    return a is not None and b is not None and Path(a).resolve() == Path(b).resolve()


def _root_of(expected_path: Path, expected: dict) -> Path:
    manifest = expected.get("manifest")
    if isinstance(manifest, dict):
        return regress_files.manifest_root(expected_path, manifest)
    return Path(expected_path).resolve().parent


def run_gate(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if args.results is not None and not args.results.is_dir():
        raise BadInput(f"--results {args.results}: not a folder")
    if args.expected is None:
        args.expected = args.results / "expected.json" if args.results is not None else EXPECTED
    if args.write_expected:
        root = args.results_from or args.results or RESULTS_DIR
        doc = write_expected(root, args.expected, _names(args.only))
        print(f"wrote {args.expected}: " + ", ".join(f"{n} {c} metrics" for n, c in doc["counts"].items())
              + f"; manifest of {doc['manifest']['n_files']} files")
        return 0
    expected = read_expected(args.expected)
    results_root = (args.results or _root_of(args.expected, expected)).resolve()
    only = _names(args.only)
    sweeps = [n for n in only if n in regress_sweeps.SWEEPS] if only else list(regress_sweeps.SWEEPS)
    exp_metrics = dict(expected["experiments"])
    # Default: every experiment the gate reruns that the expected file lists or the results root publishes.
    names = [n for n in only if n in EXPERIMENTS] if only else \
        [n for n in EXPERIMENTS if n in exp_metrics or (EXPERIMENTS[n].regress and not args.results_from
                                                       and experiment_dir(results_root, n) is not None)]
    if not only and not args.results_from:  # rerun: only what the gate reruns (shortcut_audit: committed check)
        names = [n for n in names if EXPERIMENTS[n].regress]
    for n in names:
        if n not in exp_metrics:
            folder = experiment_dir(results_root, n)
            if folder is None or args.results_from:
                raise BadInput(f"{args.expected}: no expected values for {n!r} (regenerate with --write-expected)")
            out = load_outputs(n, folder)
            if out.error:
                raise BadInput(out.error)
            exp_metrics[n] = derive_metrics(out)
            print(f"{n}: not in {_rel(args.expected)}; compared with the {len(exp_metrics[n])} values derived "
                  f"from the committed {_rel(folder / EXPERIMENTS[n].result_file)} (regenerate the expected file "
                  "with --write-expected)")
    if not names and not sweeps:
        raise BadInput(f"{args.expected}: lists no experiment")

    committed: list[Row] = []
    committed_root = None
    if not args.no_committed:
        tc = time.perf_counter()
        committed, committed_root = check_committed(args.expected, expected)
        where = _rel(committed_root) if committed_root else "?"
        n_files = len((expected.get("manifest") or {}).get("files") or {})
        print(f"checking the committed results in {where}/ against the {n_files}-file manifest and the values "
              f"of {_rel(args.expected)}:")
        for r in committed:
            if args.verbose or not r.ok:
                print("  " + _committed_line(r))
        print(f"committed: {_committed_counts(committed)}; {time.perf_counter() - tc:.1f} s", flush=True)

    rows: list[Row] = []
    sources: dict[str, Path | None] = {}
    timings: dict[str, float] = {}
    tmp = None
    if args.results_from:
        if not args.results_from.is_dir():
            raise BadInput(f"--results-from {args.results_from}: not a folder")
        for n in names:
            sources[n] = experiment_dir(args.results_from, n)
        if not only:  # without --only, check what the folder holds (a single run folder holds one experiment)
            found = [n for n in names if sources[n] is not None]
            if not found:
                raise BadInput(f"--results-from {args.results_from}: no results of "
                               f"{', '.join(names)} found")
            for n in names:
                if sources[n] is None:
                    print(f"{n}: not in {args.results_from}; skipped (name it with --only to require it)")
            names = found
        if committed_root is not None:  # the committed files themselves: already compared above
            same = [n for n in names if _same_dir(sources[n], experiment_dir(committed_root, n))]
            if same:
                print(f"{', '.join(same)}: the committed results, compared above")
            names = [n for n in names if n not in same]
    else:
        if args.keep:
            workdir = args.keep
            workdir.mkdir(parents=True, exist_ok=True)
        else:
            tmp = tempfile.mkdtemp(prefix="svb-regress-")
            workdir = Path(tmp)
        if names:
            print(f"rerunning {', '.join(names)} in {workdir} ({args.jobs} at a time) ...", flush=True)
        reruns = rerun_many(names, workdir, jobs=args.jobs, extra=tuple(args.overrides),
                            per_name=GATE_RERUN_EXTRA) if names else {}
        for n, r in reruns.items():
            timings[n] = r.wall_time_s
            print(f"  {n}: {'ok' if r.ok else 'FAILED (' + r.error + ')'} in {r.wall_time_s:.1f} s: "
                  f"{shlex.join(r.command)}", flush=True)
            if r.ok:
                sources[n] = r.run_dir
            else:
                sources[n] = None
                rows.append(Row(f"{n} (rerun)", "exit 0", r.error, "-", False,
                                r.log_tail(8).replace("\n", " / ")))

    for n in names:
        folder = sources.get(n)
        if folder is None and not args.results_from:  # a failed rerun: its row is above
            rows += [Row(p, s.get("value"), "MISSING", _tol_text(s), False, "no outputs")
                     for p, s in exp_metrics[n].items()]
            continue
        rows += compare_folder(n, folder, exp_metrics[n], str(args.results_from))

    if not args.results_from and sweeps:
        rows += _reduced_sweeps(sweeps, results_root, workdir / "sweeps", args, timings)

    if tmp and not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)

    table = render_table(rows, args.verbose)
    if table:
        print(table)
    fails = [r for r in rows if not r.ok]
    per = {}
    for r in rows:
        exp = r.metric.split(".", 1)[0].split(" ", 1)[0]
        per.setdefault(exp, [0, 0])[0 if r.ok else 1] += 1
    summary = ", ".join(f"{e}: {p} passed, {f} failed" for e, (p, f) in per.items())
    wall = time.perf_counter() - t0
    parts = []
    if rows:
        parts.append(f"{len(rows) - len(fails)} passed, {len(fails)} failed ({summary}); "
                     f"{sum(r.tolerance != 'invariant' for r in rows)} expected values, "
                     f"{sum(r.tolerance == 'invariant' for r in rows)} invariant checks")
    parts.append("committed: " + (_committed_counts(committed) if not args.no_committed else "not checked "
                                  "(--no-committed)"))
    print("; ".join(parts) + f"; {wall:.1f} s"
          + (" (reruns: " + ", ".join(f"{n} {t:.1f} s" for n, t in timings.items()) + ")" if timings else ""))
    failed = [f"{r.file}: {r.metric}" for r in committed if not r.ok] + [r.metric for r in fails]
    if failed:
        print("REGRESSION: " + ", ".join(failed[:20]) + (" ..." if len(failed) > 20 else ""), file=sys.stderr)
        return EXIT_MISS
    return 0


def _reduced_sweeps(presets: list[str], root: Path, workdir: Path, args: argparse.Namespace,
                    timings: dict[str, float]) -> list[Row]:
    """The reduced reruns of the published sweeps (``regress_sweeps.REDUCED``) against ``root/<preset>/``."""
    published = [p for p in presets if (root / p / regress_sweeps.TIDY).is_file()]
    for p in presets:
        if p not in published:
            print(f"{p}: not published in {_rel(root)}/ (no {p}/{regress_sweeps.TIDY}); reduced rerun skipped")
    if not published:
        return []
    print(f"rerunning the sweeps {', '.join(published)} reduced, in {workdir} ({args.jobs} at a time) ...",
          flush=True)
    t0 = time.perf_counter()
    done = regress_sweeps.rerun_sweeps(published, root, workdir, bench_executable(), RERUN_ENV, REPO,
                                       jobs=args.jobs, extra=tuple(args.overrides))
    rows = []
    for p, r in done.items():
        timings[p] = r.wall_time_s
        n_jobs = len({c.path.split(",system=")[0].split("]")[0] for c in r.checks})
        print(f"  {p}: {'ok' if r.error is None else 'FAILED (' + r.error + ')'} in {r.wall_time_s:.1f} s, "
              f"{n_jobs} job(s) compared: {shlex.join(r.command)}", flush=True)
        for c in r.checks:
            tol = "exact" if c.path.rsplit(".", 1)[-1] in regress_sweeps.EXACT_COLUMNS else (
                f"6 dp, log10 +/- {P_LOG10_TOL:g}" if c.path.rsplit(".", 1)[-1] in regress_sweeps.P_COLUMNS
                else "6 dp")
            rows.append(Row(c.path, c.recomputed, c.stored, tol, c.ok, c.note))
    print(f"reduced sweep reruns: {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        return run_gate(args)
    except BadInput as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
