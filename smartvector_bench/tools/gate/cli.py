"""The gate's command line (``make regress``): ``run_gate`` checks the committed results, reruns the experiments
and the reduced sweeps, compares them with the committed ones, prints the misses and returns the exit code."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from smartvector_bench.core.results.provenance import result_config
from smartvector_bench.core.results import MainMetrics, ResultError
from smartvector_bench.tools.gate import children, models, rankings
from smartvector_bench.tools.gate.committed import check_committed, host_note, this_host
from smartvector_bench.tools.gate.common import (EXIT_BAD_INPUT, EXIT_MISS, EXPECTED, EXPERIMENTS, PROG,
                                                 RESULTS_DIR, BadInput, Row, committed_counts, committed_line,
                                                 read_result, rel, render_table)
from smartvector_bench.tools.gate.files import manifest_root, read_expected, write_expected
from smartvector_bench.tools.gate.outputs import compare_outcomes, compare_results, experiment_dir
from smartvector_bench.tools.gate.replay import leaves
from smartvector_bench.tools.gate.rerun import (GATE_RERUN_EXTRA, RERUN_ENV, add_rerun_options, bench_executable,
                                                rerun_many)
from smartvector_bench.tools.gate.sweep_reruns import RERUN_BY_DEFAULT, RUNS, SWEEPS, rerun_sweeps
from smartvector_bench.tools.gate.tolerances import exact_host


def _names(values: list[str] | None) -> list[str] | None:
    names = [n.strip() for v in values or [] for n in v.split(",") if n.strip()]
    for n in names:
        if n not in EXPERIMENTS and n not in SWEEPS:
            raise BadInput(f"--only: unknown experiment {n!r}; allowed: {', '.join(EXPERIMENTS)}, {', '.join(SWEEPS)}")
    return list(dict.fromkeys(names)) or None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m smartvector_bench.tools.gate", description=(
        "Check the committed results (file hashes, and every figure recomputed from the committed run files), then "
        "rerun the experiments and compare their ranked lists with the committed ones; exit 1 on any miss."))
    ap.add_argument("--only", action="append", metavar="NAMES", help=(
        f"comma-separated experiments ({', '.join(n for n, e in EXPERIMENTS.items() if e.regress)}) or sweep presets "
        f"({', '.join(SWEEPS)}) to rerun or compare; default: all but those checked from results/ only "
        f"(handbook, facts, regimes_facts: they need the git bundles; the committed check covers everything)"))
    ap.add_argument("--results", type=Path, metavar="DIR",
                    help="the results root to compare with (default: the manifest's root, results/)")
    ap.add_argument("--expected", type=Path, help="the manifest (default: <--results>/expected.json, "
                                                  "else results/expected.json)")
    ap.add_argument("--results-from", type=Path, metavar="DIR",
                    help="compare this results root or run folder instead of rerunning")
    ap.add_argument("--no-committed", action="store_true", help="skip the committed check")
    ap.add_argument("--write-expected", action="store_true",
                    help="write the manifest of --results-from (default results/) and exit")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every row, not only the misses")
    add_rerun_options(ap, keep_help="rerun into DIR and keep it (default: a temp dir)",
                      set_help="extra Hydra override for the reruns (testing only)")
    return ap.parse_args(argv)


def ran_config(metrics: dict) -> dict:
    """The result keys of a run's config (``result_config``) without the sections of the retrievers it did not
    run: a system configured (every conf/retriever/*.yaml is) but not chosen changes nothing the run publishes,
    so adding one does not make every stored sweep job a regression. A system that ran is compared whole."""
    cfg = result_config(metrics["provenance"]["config"])
    ran = set(metrics.get("systems") or {})
    if isinstance(cfg.get("retrievers"), dict):  # where a saved model came from is not what it is (models.py)
        cfg["retrievers"] = {name: {k: x for k, x in v.items() if k != models.KEY} if isinstance(v, dict) else v
                             for name, v in cfg["retrievers"].items() if name in ran}
    return cfg


def model_overrides(folders: list[Path]) -> list[str]:
    """``models.model_overrides`` for reruns of the run folders ``folders``, exact when this host is the one that
    published the first of them."""
    try:
        prov = MainMetrics.load(folders[0] / MainMetrics.FILE).provenance if folders else None
    except ResultError:
        return []
    return models.model_overrides(folders, exact_host(prov, this_host())[0])


def compare_main(label: str, committed: Path, fresh: Path) -> list[Row]:
    """A main-kind run folder against the committed one: the dataset, the config (its result keys) and every
    run file's ranked lists."""
    try:
        a, b = (MainMetrics.load(f / MainMetrics.FILE, rel(f / MainMetrics.FILE)).to_dict() for f in (committed, fresh))
    except ResultError as exc:
        return [Row(f"{label}: metrics.json", "readable", "ERROR", "-", False, str(exc))]
    exact, why = exact_host(a["provenance"], b["provenance"])
    sha_a, sha_b = a["dataset"]["sha256"], b["dataset"]["sha256"]
    ca, cb = (leaves(ran_config(d)) for d in (a, b))
    misses = [f"{k}: {cb.get(k, 'MISSING')!r}, committed {ca.get(k, 'MISSING')!r}" for k in sorted(set(ca) | set(cb))
              if ca.get(k, "MISSING") != cb.get(k, "MISSING")]
    return [Row(f"{label}: dataset sha256", sha_a[:12], sha_b[:12], "exact", sha_a == sha_b,
                "" if sha_a == sha_b else "the generator or its config changed"),
            Row(f"{label}: config", "the committed result keys", "equal" if not misses else f"{len(misses)} differ",
                "exact", not misses, "; ".join(misses[:3])),
            *rankings.compare_folders(label, committed, fresh, exact, host_note(exact, why)),
            *models.compare_models(label, committed, fresh, exact, host_note(exact, why))]


def compare_experiment(name: str, committed: Path, fresh: Path) -> list[Row]:
    if EXPERIMENTS[name].kind == "main":
        return compare_main(name, committed, fresh)
    try:
        prov = [read_result(name, f / EXPERIMENTS[name].result_file)["provenance"] for f in (committed, fresh)]
    except (ResultError, KeyError) as exc:
        return [Row(f"{name}: {EXPERIMENTS[name].result_file}", "readable", "ERROR", "-", False, str(exc))]
    exact, why = exact_host(*prov)
    how = host_note(exact, why)
    return compare_results(name, committed, fresh, exact, how) + compare_outcomes(name, committed, fresh, exact, how)


def run_gate(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if args.results is not None and not args.results.is_dir():
        raise BadInput(f"--results {args.results}: not a folder")
    args.expected = args.expected or (args.results / "expected.json" if args.results else EXPECTED)
    if args.write_expected:
        doc = write_expected(args.results_from or args.results or RESULTS_DIR, args.expected)
        print(f"wrote {rel(args.expected)}: manifest of {doc['manifest']['n_files']} files")
        return 0
    expected = read_expected(args.expected)
    root = (args.results or manifest_root(args.expected, expected["manifest"])).resolve()
    only = _names(args.only)
    names = [n for n in (only or EXPERIMENTS) if n in EXPERIMENTS and (only or EXPERIMENTS[n].regress)
             and experiment_dir(root, n) is not None and (root / n).is_dir()]
    sweeps = [p for p in (only or RERUN_BY_DEFAULT) if p in SWEEPS and (root / p / "tidy.csv").is_file()]
    committed: list[Row] = []
    if not args.no_committed:
        tc = time.perf_counter()
        committed, croot = check_committed(args.expected, expected)
        print(f"checking the committed results in {rel(croot)}/ against the manifest and today's code:")
        for r in committed:
            if args.verbose or not r.ok:
                print("  " + committed_line(r))
        print(f"committed: {committed_counts(committed)}; {time.perf_counter() - tc:.1f} s", flush=True)

    rows: list[Row] = []
    timings: dict[str, float] = {}
    if args.results_from:
        if not args.results_from.is_dir():
            raise BadInput(f"--results-from {args.results_from}: not a folder")
        found = {n: f for n in (only or EXPERIMENTS) if n in EXPERIMENTS and (f := experiment_dir(args.results_from, n))
                 and (root / n).is_dir() and f.resolve() != (root / n).resolve()}
        if not found and args.results_from.resolve() != root:
            raise BadInput(f"--results-from {args.results_from}: no results of {', '.join(names)} found")
        for n, folder in found.items():
            rows += compare_experiment(n, root / n, folder)
        sweeps = []
    else:
        workdir = children.workdir(args.keep, "svb-regress-")  # a temp one is removed on any exit of main
        if names:
            print(f"rerunning {', '.join(names)} in {workdir} ({args.jobs} at a time) ...", flush=True)
        per_name = {n: (*GATE_RERUN_EXTRA.get(n, ()), *model_overrides([root / n])) for n in names}
        for n, r in rerun_many(names, workdir, jobs=args.jobs, extra=tuple(args.overrides),
                               per_name=per_name).items():
            timings[n] = r.wall_time_s
            print(f"  {n}: {'ok' if r.ok else 'FAILED (' + r.error + ')'} in {r.wall_time_s:.1f} s: "
                  f"{shlex.join(r.command)}", flush=True)
            rows += compare_experiment(n, root / n, r.run_dir) if r.ok else \
                [Row(f"{n} (rerun)", "exit 0", r.error, "-", False, r.log_tail(8).replace("\n", " / "))]
        if sweeps:
            print(f"rerunning the sweeps {', '.join(sweeps)} reduced ...", flush=True)
        per_preset = {p: model_overrides(sorted(f for f in (root / p / RUNS).glob("*") if f.is_dir())) for p in sweeps}
        for p, r in rerun_sweeps(sweeps, root, workdir / "sweeps", bench_executable(), RERUN_ENV,
                                 jobs=args.jobs, extra=tuple(args.overrides), per_preset=per_preset).items():
            timings[p] = r.wall_time_s
            print(f"  {p}: {'ok' if r.error is None else 'FAILED'} in {r.wall_time_s:.1f} s, {len(r.jobs)} job(s): "
                  f"{shlex.join(r.command)}", flush=True)
            if r.error is not None or not r.jobs:
                rows.append(Row(f"{p} (reduced rerun)", "exit 0 and jobs", "FAILED", "-", False,
                                r.error or "the rerun's tidy.csv lists no job"))
            for fresh, stored in r.jobs:
                label = f"{p}/{fresh.name}"
                rows += compare_main(label, stored, fresh) if stored is not None else \
                    [Row(label, f"a stored job under {rel(root / p / 'runs')}/", "MISSING", "-", False,
                         "republish the sweep (make results): the publisher stores the jobs the gate reruns")]

    if table := render_table(rows, args.verbose):
        print(table)
    fails = [r for r in rows if not r.ok]
    print(f"reruns: {len(rows) - len(fails)} passed, {len(fails)} failed; committed: "
          + (committed_counts(committed) if not args.no_committed else "not checked (--no-committed)")
          + f"; {time.perf_counter() - t0:.1f} s"
          + (" (" + ", ".join(f"{n} {t:.1f} s" for n, t in timings.items()) + ")" if timings else ""))
    failed = [(f"{r.file}: " if r.file else "") + r.metric for r in committed + fails if not r.ok]
    if failed:
        print("REGRESSION: " + ", ".join(failed[:20]) + (" ..." if len(failed) > 20 else ""), file=sys.stderr)
        return EXIT_MISS
    return 0


@children.stops_children(PROG)  # SIGTERM / SIGINT: the reruns stopped, the temp folder removed, exit 143 / 130
def main(argv: list[str] | None = None) -> int:
    try:
        return run_gate(parse_args(argv))
    except BadInput as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
