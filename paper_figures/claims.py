"""The claims table: each claim of the SmartVector paper (and of LiveVectorLake), our figure from the stored
results under ``results/`` (no experiment is re-run), the statistical test and threshold it is judged by, the
p-value, and a verdict decided by the rule written beside it (the rules:
``smartvector_bench/core/evaluation/verdicts/``; the pooled tests run on the sweeps' stored per-query outcomes,
``results/<preset>/queries.csv``).

    python paper_figures/claims.py                 # print the table
    python paper_figures/claims.py --write-readme  # rewrite every generated section of DOCUMENTS (make claims)
    python paper_figures/claims.py --check         # exit 1 if a generated section of DOCUMENTS is out of date

A claim whose results file is missing is listed as "not measured (missing <file>)", and so is one that would
rest on too few seeds or on an incomplete sweep. ``--write-readme`` also rewrites the other tables that come
straight from ``results/`` (the main tables of both profiles, the shortcut audit, the seeds summary, ...), each
between its own ``<!-- name:start -->`` / ``<!-- name:end -->`` markers in whichever of ``DOCUMENTS`` holds
them (each section in exactly one), with the same rendering code as the experiments' own ``table.md``. To move
a section to another page, move its markers and make sure the page is in ``DOCUMENTS``.

Each result file is read through its result class (``smartvector_bench.core.results``: MainMetrics,
SweepSummary, ReembedCost, FeedbackLoop, LvlEval), so a present but malformed one stops the run with a one-line
error naming the file and the key (exit 2) before any document is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402

from experiments import feedback_loop, reembed_cost, shortcut_audit  # noqa: E402
from smartvector_bench.core.evaluation import claims as C
from smartvector_bench.core.evaluation import verdicts as V
from smartvector_bench.core.atomic import atomic_write_text  # noqa: E402
from smartvector_bench.core.evaluation.metrics import names as M  # noqa: E402
from smartvector_bench.core.schema import field_table  # noqa: E402
from smartvector_bench.core.evaluation import measured
from smartvector_bench.core.report import (  # noqa: E402
    calibration_table, category_table, interval_text, main_table, not_measured_line, ordered, power_line,
    scenario_table,
)
from smartvector_bench.core.results import (  # noqa: E402
    TIDY, FeedbackLoop, MainMetrics, ReembedCost, ResultError, ResultFile, SweepSummary, load_sweep,
)
from smartvector_bench.core.results.base import check, check_type, read_json  # noqa: E402
from paper_figures.facts_sections import sections as facts_sections  # noqa: E402
from paper_figures.best_sections import sections as best_sections  # noqa: E402

START, END = "<!-- claims:start -->", "<!-- claims:end -->"
# The files whose marked sections --write-readme rewrites (each section lives in exactly one of them).
DOCUMENTS = (REPO / "README.md", REPO / "docs" / "findings.md", REPO / "docs" / "results.md",
             REPO / "docs" / "datasets.md")


_result, _doc = C.result, C.doc  # the claims' own readers (smartvector_bench/core/evaluation/claims.py), shared here


def _json(results: Path, rel: str) -> dict | None:
    """A JSON file no result class describes (the shortcut audit's, the handbook's manifest), None when missing."""
    path = results / rel
    data = read_json(path) if path.is_file() else None
    check_type(data, dict, str(path), "(top level)", allow_none=True)
    return data


def _pct(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{nd}f}%"


# The claim rows live in smartvector_bench/core/evaluation/claims.py (the HTML report reads them too); named here as
# before.
Row, LVL_CLAIMS = C.Row, C.LVL_CLAIMS
main_claims, sweep_claims, update_claims, lvl_claims = C.main_claims, C.sweep_claims, C.update_claims, C.lvl_claims


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _real(v: V.Verdict | None) -> str:
    """The real-data column: the same rule on results/facts/ (claims 1-3 only)."""
    if v is None:
        return "-"
    return f"**{v.verdict}** (p {V.format_p(v.p_value)}): {v.figure}" if v.p_value is not None else \
        f"**{v.verdict}**: {v.figure}"


def table(results: Path) -> str:
    out = ["| claim | ours (from results/) | test | p | verdict | on real facts (results/facts/) | rule |",
           "|---|---|---|---|---|---|---|"]
    real = C.real_claims(results)
    for i, (claim, v) in enumerate(C.claim_rows(results)):
        out.append(f"| {_cell(claim)} | {_cell(v.figure)} | {_cell(C.test_text(v))} | {V.format_p(v.p_value)} | "
                   f"**{v.verdict}** | {_cell(_real(real[i] if i < len(real) else None))} | {_cell(v.detail)} |")
    return "\n".join(out) + "\n"


def _main_section(results: Path, folder: str, calibration: bool = True) -> str:
    """A profile's main table and power line, and its calibration table unless ``calibration`` is False (the
    README shows the default profile's calibration on its own, :func:`_calibration_section`)."""
    rel = f"{folder}/{MainMetrics.FILE}"
    mm = _result(results, folder, MainMetrics)
    if mm is None:
        return f"not measured (missing {rel})\n"
    m, d = mm.to_dict(), mm.dataset
    head = (f"`{d['name']}`, seed {d['seed']}: {d['n_vectors']} vectors, {d['n_queries']} queries in "
            f"{d.get('n_families', '-')} families; test split = the held-out families "
            f"(`results/{rel}`, dataset sha256 {d['sha256'][:12]}).")
    if measured.clusters_note(m):  # no families: say what the brackets resample instead
        head += f" {interval_text(m)}"
    cal = f"\n\n{_calibration_text(m)}" if calibration and mm.calibration else ""
    missing = f"{line}\n\n" if (line := not_measured_line(m, "test")) else ""
    return f"{head}\n\n{main_table(m, 'test')}\n\n{missing}{power_line(m)}{cal}\n"


def _calibration_text(m: dict) -> str:
    return (f"Calibration on the test split: ECE, Brier and AUROC of the raw top-1 confidence (AUROC: how well it "
            f"separates right from wrong answers, whatever its scale), and ECE / Brier after each map fitted on "
            f"dev:\n\n{calibration_table(m)}")


def _calibration_section(results: Path, folder: str) -> str:
    rel = f"{folder}/{MainMetrics.FILE}"
    mm = _result(results, folder, MainMetrics)
    if mm is None or not mm.calibration:
        return f"not measured (missing {rel}{'' if mm is None else ': calibration'})\n"
    d = mm.dataset
    return f"`{d['name']}`, seed {d['seed']} (`results/{rel}`). {_calibration_text(mm.to_dict())}\n"


def _handbook_section(results: Path) -> str:
    """experiment=main on the 18F Handbook's git history (dataset=handbook, results/handbook/)."""
    mm = _result(results, "handbook", MainMetrics)
    man = _json(results, "handbook/manifest.json")
    if mm is None or man is None:
        return "not measured (missing handbook/metrics.json or handbook/manifest.json)\n"
    m, d, repo, c = mm.to_dict(), mm.dataset, man.get("repo", {}), man.get("counts", {})
    cats = ", ".join(f"{k} {v}" for k, v in sorted((c.get("queries_by_category") or {}).items()))
    head = (f"The 18F Handbook's Markdown history at commit `{str(repo.get('head', '?'))[:12]}` "
            f"({c.get('commits', '?')} commits): {d['n_vectors']} paragraph chunks, {d['n_queries']} queries "
            f"({cats}); dev/test split by document (`results/handbook/`, dataset sha256 {d['sha256'][:12]}). "
            f"Stale = a top-1 that is another version of the relevant paragraph's lineage, not in force at as_of.")
    skipped = mm.skipped_systems or {}
    note = "".join(f" Not run: {why}." for why in skipped.values())
    rss = (mm.resources or {}).get("peak_rss_mb")
    note += f" The whole run's peak memory: {rss / 1024:.1f} GB." if rss else ""
    return f"{head}{note}\n\n{main_table(m, 'test')}\n"


def _handbook_categories(results: Path) -> str:
    m = _doc(_result(results, "handbook", MainMetrics))
    return f"{category_table(m, 'test')}\n" if m else "not measured (missing handbook/metrics.json)\n"


def _audit_section(results: Path) -> str:
    doc = _json(results, "shortcut_audit/shortcut_audit.json")
    if doc is None:
        return "not measured (missing shortcut_audit/shortcut_audit.json)\n"
    lines = shortcut_audit.render(doc).splitlines()
    return "\n".join(lines[2:]).strip() + "\n"  # without the file's own title


def _seeds_section(results: Path) -> str:
    summary = _result(results, "seeds", SweepSummary)
    if summary is None:
        return "not measured (missing seeds/summary.json)\n"
    sysm = summary.results["systems"]
    seeds = summary.results["seeds"]
    out = [f"Dataset seeds {', '.join(map(str, seeds))} (`results/seeds/`), test split, mean (sample sd):", "",
           "| system | top-1 | stale rate | rumor rate | ECE |", "|---|---|---|---|---|"]
    for name in ordered(sysm):
        t = sysm[name]["test"]
        cells = []
        for key in M.SUMMARY_METRICS:  # top-1, stale rate, rumor rate, ECE: the table's columns
            v = t.get(key) or {}
            mean, sd = v.get("mean"), v.get("sd")
            if mean is None:  # no seed measured it (null in every job's metrics.json)
                cells.append(measured.TEXT if v.get("n") == 0 else "-")
            elif key == M.ECE:
                cells.append(f"{mean:.3f} ({(sd or 0):.3f})")
            else:
                cells.append(f"{100 * mean:.1f}% ({100 * (sd or 0):.1f})")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _rendered(results: Path, folder: str, kind: type[ResultFile], render, skip: int) -> str:
    """An experiment's own table.md rendering (``render(doc)``) of its stored result, without its first
    ``skip`` lines."""
    doc = _doc(_result(results, folder, kind))
    if doc is None:
        return f"not measured (missing {folder}/{kind.FILE})\n"
    return "\n".join(render(doc).splitlines()[skip:]).strip() + "\n"


def _run_rows(folder: Path, system: str) -> pd.DataFrame | None:
    """A run file's per-query rows, indexed by query id (its first line is the run's own header)."""
    path = folder / f"run_{system}.jsonl"
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return pd.DataFrame(map(json.loads, lines)).set_index("query_id") if lines else pd.DataFrame()


def oracle_gaps(results: Path, rel: str = "main") -> list[dict]:
    """Per system: test queries it answers right and the oracle wrong, by what the oracle returned instead."""
    folder = results / rel
    oracle = _run_rows(folder, "oracle")
    m = _result(results, rel, MainMetrics)
    if oracle is None or m is None:
        return []
    out = []
    for name in ordered(m.systems):
        rows = _run_rows(folder, name) if name != "oracle" else None
        if rows is None or rows.empty:
            continue
        test = rows[rows["split"] == "test"].join(oracle.add_prefix("oracle_"), how="left")
        won = test[test["correct"].astype(bool) & ~test["oracle_correct"].astype(bool)]
        lost = test[~test["correct"].astype(bool) & test["oracle_correct"].astype(bool)]
        out.append({"system": name, "above": len(won), "below": len(lost),
                    "oracle_stale": int(won["oracle_stale"].sum()), "oracle_rumor": int(won["oracle_rumor"].sum()),
                    "categories": sorted(set(won["oracle_category"]))})
    return out


def _oracle_section(results: Path) -> str:
    out = ["| profile | system | test queries right where the oracle is wrong | of which the oracle's answer was "
           "stale / a rumor | wrong where the oracle is right |", "|---|---|---|---|---|"]
    any_rows = False
    for rel in ("main", "main_large"):
        for g in oracle_gaps(results, rel):
            any_rows = True
            out.append(f"| {rel} | {g['system']} | {g['above']} | {g['oracle_stale']} / {g['oracle_rumor']} | "
                       f"{g['below']} |")
    return ("\n".join(out) if any_rows else "not measured (missing run files)") + "\n"


def _learned_above_oracle(results: Path, system: str = "ltr") -> str:
    """One sentence per published run: the test queries ``system`` gets right and the oracle wrong (README)."""
    parts = []
    for rel in ("main", "main_large", "handbook", "facts"):
        g = next((x for x in oracle_gaps(results, rel) if x["system"] == system), None)
        if g is not None:
            cats = f" ({', '.join(g['categories'])})" if g["categories"] else ""
            stale = f", the oracle's answer stale on {g['oracle_stale']} of them" if g["above"] else ""
            parts.append(f"{rel} {g['above']}{cats}{stale}")
    if not parts:
        return f"not measured (missing run_{system}.jsonl / run_oracle.jsonl)\n"
    return (f"Test queries `{system}` answers right where the label-reading oracle does not (by query category): "
            + "; ".join(parts) + ".\n")


def _sweep_seed(results: Path, preset: str) -> str:
    """The dataset seed(s) of a stored sweep, from its tidy.csv (so a table never claims more seeds than ran)."""
    path = results / preset / TIDY
    tidy = load_sweep(path)
    check("dataset_seed" in tidy.columns, str(path), "dataset_seed", "missing column")
    seeds = tidy["dataset_seed"].dropna()
    return ", ".join(str(s) for s in sorted(set(seeds.astype(int)))) or "-"


def _half_life_section(results: Path) -> str:
    summary = _result(results, "half_life", SweepSummary)
    if summary is None or not summary.results["systems"]:
        return "not measured (missing half_life/summary.json)\n"
    g = summary.results
    out = [f"Test top-1 of smartvector on dataset seed {_sweep_seed(results, 'half_life')} (`results/half_life/`): "
           f"rows `{g['rows']['key']}`, columns `{g['columns']['key']}` (days; the paper's constants are 30 and "
           "30). One seed and the default profile's six test families: read it as the shape of the sensitivity, "
           "not as a tuned result (the held-out tuning is `results/tune/`).", "",
           "| temporal \\ confidence | " + " | ".join(g["columns"]["values"]) + " |",
           "|---|" + "---|" * len(g["columns"]["values"])]
    for name, per in g["systems"].items():
        for value, row in zip(g["rows"]["values"], per[M.TOP1]):
            out.append(f"| {value} | " + " | ".join(_pct(x) for x in row) + " |")
    return "\n".join(out) + "\n"


def _tune_section(results: Path) -> str:
    summary = _result(results, "tune", SweepSummary)
    w = summary.results["winner"] if summary is not None else None
    if not w:
        return "not measured (missing tune/summary.json)\n"
    r = summary.results
    t = w["test"]
    ci = t.get(M.ci(M.TOP1)) or [None, None]
    ci_text = f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci[0] is not None else ""
    note = "" if r["final"] else " (provisional: not every planned job completed)"
    return (f"Held-out tuning of {r['system']}'s weights (`results/tune/`, dataset seed {_sweep_seed(results, 'tune')}, "
            f"{r['n_candidates']} of {r['n_planned']} grid points): chosen by dev top-1 {_pct(w['dev'][M.TOP1])} "
            f"({r['selection']}): `{w['overrides']}`; its test top-1 is {_pct(t[M.TOP1])}{ci_text}, stale rate "
            f"{measured.TEXT if measured.reason(t, M.STALE_RATE) else _pct(t.get(M.STALE_RATE))}, ECE "
            f"{t.get(M.ECE):.3f}{note}.\n")


def _scenarios_section(results: Path, folder: str = "main_large") -> str:
    """What each scenario feature costs each system (core/evaluation/metrics/scenarios.py), from a profile's
    metrics.json."""
    mm = _result(results, folder, MainMetrics)
    if mm is None:
        return f"not measured (missing {folder}/{MainMetrics.FILE})\n"
    if not (mm.scenarios or {}).get("features"):
        return f"not measured (no scenarios in results/{folder}/{MainMetrics.FILE})\n"
    d = mm.dataset
    return (f"`{d['name']}`, seed {d['seed']}, test split (`results/{folder}/{MainMetrics.FILE}`): top-1 of the families "
            f"with the feature minus those without, in points (permutation p over families); in brackets the same for "
            f"the paired gap to {mm.scenarios['reference']}.\n\n{scenario_table(mm.to_dict())}\n")


def sections(results: Path) -> dict[str, str]:
    """Every generated README section, by marker name."""
    return {"claims": table(results), "main": _main_section(results, "main", calibration=False),
            "main_calibration": _calibration_section(results, "main"),
            "main_large": _main_section(results, "main_large"), "audit": _audit_section(results),
            "scenarios": _scenarios_section(results),
            "seeds": _seeds_section(results), "oracle": _oracle_section(results),
            "ltr_oracle": _learned_above_oracle(results),
            "reembed": _rendered(results, "reembed_cost", ReembedCost, reembed_cost.render, 2),
            "feedback": _rendered(results, "feedback_loop", FeedbackLoop,
                                  lambda doc: feedback_loop._table(doc, doc["summary"]), 2),
            "half_life": _half_life_section(results), "tune": _tune_section(results),
            "handbook": _handbook_section(results), "handbook_categories": _handbook_categories(results),
            **facts_sections(results), **best_sections(results), "schema": field_table() + "\n"}


def write_readme(readme: Path, texts: dict[str, str] | str) -> None:
    """Replace each named section (a plain string is the claims section)."""
    if isinstance(texts, str):
        texts = {"claims": texts}
    body = readme.read_text(encoding="utf-8")
    for name, text in texts.items():
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        if start not in body or end not in body:
            raise SystemExit(f"{readme}: no {start} ... {end} section to replace")
        head, rest = body.split(start, 1)
        _, tail = rest.split(end, 1)
        body = f"{head}{start}\n{text}{end}{tail}"
    atomic_write_text(readme, body)


def stale_sections(texts: dict[str, str], documents=DOCUMENTS) -> list[tuple[Path, str]]:
    """(document, section) of every generated section whose text in the document is not ``texts[section]``."""
    bodies = {doc: doc.read_text(encoding="utf-8") for doc in documents}
    marks = {n: (f"<!-- {n}:start -->\n", f"<!-- {n}:end -->") for n in texts}
    return [(doc, n) for doc, body in bodies.items() for n, (start, end) in marks.items()
            if start in body and body.split(start, 1)[1].split(end, 1)[0] != texts[n]]


def main(argv: list[str] | None = None) -> int:
    """Print the claims table (and write or check the sections): 0; 1 if --check finds one stale; 2 malformed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(REPO / "results"))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write-readme", action="store_true", help="rewrite every generated section of DOCUMENTS")
    mode.add_argument("--check", action="store_true", help="exit 1 if a generated section is out of date")
    args = ap.parse_args(argv)
    try:
        texts = sections(Path(args.results))
    except ResultError as e:  # before any document is written
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.check:
        stale = stale_sections(texts, DOCUMENTS)
        for doc, name in stale:
            print(f"out of date: {doc}: section {name} (run make claims)", file=sys.stderr)
        return 1 if stale else 0
    if args.write_readme:
        placed = set()
        for doc in DOCUMENTS:
            body = doc.read_text(encoding="utf-8")
            mine = {n: t for n, t in texts.items() if f"<!-- {n}:start -->" in body}
            write_readme(doc, mine)
            placed |= set(mine)
        missing = sorted(set(texts) - placed)
        if missing:
            raise SystemExit(f"no section markers for {missing} in {', '.join(str(d) for d in DOCUMENTS)}")
    print(texts["claims"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
