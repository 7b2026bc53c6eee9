"""The gate's command line (``python -m smartvector_bench.tools.gate``, ``make regress``): ``run_gate`` checks the
committed results, then reruns or compares the experiments and the reduced sweeps, prints the table and
returns the exit code (0 all pass, 1 a miss, 2 bad input)."""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

from smartvector_bench.tools.gate import files, host_noise
from smartvector_bench.tools.gate.committed import check_committed, compare_folder
from smartvector_bench.tools.gate.common import (EXIT_BAD_INPUT, EXIT_MISS, EXPECTED, EXPERIMENTS, PROG, REPO,
                                                 RESULTS_DIR, BadInput, rel)
from smartvector_bench.tools.gate.expected import derive_metrics, read_expected, write_expected
from smartvector_bench.tools.gate.paths import P_LOG10_TOL, experiment_dir, load_outputs, tol_text
from smartvector_bench.tools.gate.report import Row, committed_counts, committed_line, render_table
from smartvector_bench.tools.gate.rerun import (GATE_RERUN_EXTRA, RERUN_ENV, add_rerun_options, bench_executable,
                                                rerun_many)
from smartvector_bench.tools.gate.sweep_reruns import EXACT_COLUMNS, P_COLUMNS, SWEEPS, TIDY, rerun_sweeps


def _names(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    for n in names:
        if n not in EXPERIMENTS and n not in SWEEPS:
            raise BadInput(f"--only: unknown experiment {n!r}; allowed: {', '.join(EXPERIMENTS)}, "
                           f"{', '.join(SWEEPS)}")
    return list(dict.fromkeys(names))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m smartvector_bench.tools.gate",
                                 description="Check the committed results against results/expected.json (file "
                                             "hashes, then every expected value and invariant recomputed from "
                                             "them), then rerun the affordable experiments and compare them too; "
                                             "exit 1 on any miss.")
    ap.add_argument("--only", action="append", metavar="NAMES",
                    help=f"comma-separated experiments ({', '.join(EXPERIMENTS)}) or sweep presets "
                         f"({', '.join(SWEEPS)}) to rerun or compare; default: every experiment "
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
    add_rerun_options(ap, keep_help="rerun into DIR and keep it (default: a temp dir)",
                      set_help="extra Hydra override for the reruns (testing only; the expected values assume none)")
    return ap.parse_args(argv)


def _same_dir(a: Path | None, b: Path | None) -> bool:
    return a is not None and b is not None and Path(a).resolve() == Path(b).resolve()


def _root_of(expected_path: Path, expected: dict) -> Path:
    manifest = expected.get("manifest")
    if isinstance(manifest, dict):
        return files.manifest_root(expected_path, manifest)
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
    sweeps = [n for n in only if n in SWEEPS] if only else list(SWEEPS)
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
            print(f"{n}: not in {rel(args.expected)}; compared with the {len(exp_metrics[n])} values derived "
                  f"from the committed {rel(folder / EXPERIMENTS[n].result_file)} (regenerate the expected file "
                  "with --write-expected)")
    if not names and not sweeps:
        raise BadInput(f"{args.expected}: lists no experiment")

    committed: list[Row] = []
    committed_root = None
    if not args.no_committed:
        tc = time.perf_counter()
        committed, committed_root = check_committed(args.expected, expected)
        where = rel(committed_root) if committed_root else "?"
        n_files = len((expected.get("manifest") or {}).get("files") or {})
        print(f"checking the committed results in {where}/ against the {n_files}-file manifest and the values "
              f"of {rel(args.expected)}:")
        for r in committed:
            if args.verbose or not r.ok:
                print("  " + committed_line(r))
        print(f"committed: {committed_counts(committed)}; {time.perf_counter() - tc:.1f} s", flush=True)

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
            rows += [Row(p, s.get("value"), "MISSING", tol_text(s), False, "no outputs")
                     for p, s in exp_metrics[n].items()]
            continue
        found = compare_folder(n, folder, exp_metrics[n], str(args.results_from))
        rows += found + _against_committed_runs(n, folder, results_root, found, exp_metrics[n])

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
    parts.append("committed: " + (committed_counts(committed) if not args.no_committed else "not checked "
                                  "(--no-committed)"))
    print("; ".join(parts) + f"; {wall:.1f} s"
          + (" (reruns: " + ", ".join(f"{n} {t:.1f} s" for n, t in timings.items()) + ")" if timings else ""))
    failed = [f"{r.file}: {r.metric}" for r in committed if not r.ok] + [r.metric for r in fails]
    if failed:
        print("REGRESSION: " + ", ".join(failed[:20]) + (" ..." if len(failed) > 20 else ""), file=sys.stderr)
        return EXIT_MISS
    return 0


def _against_committed_runs(name: str, folder: Path, results_root: Path, rows: list[Row],
                            specs: dict[str, dict]) -> list[Row]:
    """A main-kind rerun's run files against the committed ones (``host_noise``): one row per system, and the
    misses in ``rows`` that host float noise explains marked as passing."""
    committed = experiment_dir(results_root, name)
    if EXPERIMENTS[name].kind != "main" or committed is None or _same_dir(committed, folder):
        return []
    # a system without a fresh run file is already a miss (the main invariants name it)
    systems = sorted(p.name[len("run_"):-len(".jsonl")] for p in committed.glob("run_*.jsonl")
                     if (folder / p.name).is_file())
    if not systems:
        return []
    diffs = host_noise.diff_folders(systems, committed, folder)
    if any(not r.ok for r in rows) and all(d.explained for d in diffs.values()) \
            and any(d.differs for d in diffs.values()):
        replayed = host_noise.replay(name, committed, folder / "dataset", {r.metric: s for r in rows
                                                                        if not r.ok and (s := specs.get(r.metric))})
        n = host_noise.reconcile(rows, diffs, replayed)
        print(f"{name}: the committed run files through today's evaluator: {len(replayed.matched)} of "
              f"{replayed.n_values} missed values reproduced" + (f" ({replayed.error})" if replayed.error else ""))
    else:
        n = 0
    if n:
        moved = ", ".join(s for s, d in diffs.items() if d.differs)
        print(f"{name}: {n} missed value(s) explained by float noise of this CPU: the ranked lists of {moved} "
              f"equal the committed ones up to near-tied hits (scores within {host_noise.HOST_SCORE_TOL:g})")
    return host_noise.run_file_rows(name, diffs)


def _reduced_sweeps(presets: list[str], root: Path, workdir: Path, args: argparse.Namespace,
                    timings: dict[str, float]) -> list[Row]:
    """The reduced reruns of the published sweeps (``sweep_reruns.REDUCED``) against ``root/<preset>/``."""
    published = [p for p in presets if (root / p / TIDY).is_file()]
    for p in presets:
        if p not in published:
            print(f"{p}: not published in {rel(root)}/ (no {p}/{TIDY}); reduced rerun skipped")
    if not published:
        return []
    print(f"rerunning the sweeps {', '.join(published)} reduced, in {workdir} ({args.jobs} at a time) ...",
          flush=True)
    t0 = time.perf_counter()
    done = rerun_sweeps(published, root, workdir, bench_executable(), RERUN_ENV, REPO,
                                       jobs=args.jobs, extra=tuple(args.overrides))
    rows = []
    for p, r in done.items():
        timings[p] = r.wall_time_s
        n_jobs = len({c.path.split(",system=")[0].split("]")[0] for c in r.checks})
        print(f"  {p}: {'ok' if r.error is None else 'FAILED (' + r.error + ')'} in {r.wall_time_s:.1f} s, "
              f"{n_jobs} job(s) compared: {shlex.join(r.command)}", flush=True)
        for c in r.checks:
            tol = "exact" if c.path.rsplit(".", 1)[-1] in EXACT_COLUMNS else (
                f"6 dp +/- 1 unit, log10 +/- {P_LOG10_TOL:g}" if c.path.rsplit(".", 1)[-1] in P_COLUMNS
                else "6 dp +/- 1 unit")
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

