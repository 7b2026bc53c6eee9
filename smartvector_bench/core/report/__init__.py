"""Markdown tables from a metrics dict (the main table, the paper's claims beside ours, categories, the error
anatomy, the scenario costs).

Why this module is long: it is the one renderer of every table.md section, and the README, docs/ and the HTML
report reuse its cells (so no two pages can disagree); splitting it would make a module circle (each part needs
the table order and the cell formats here)."""

from __future__ import annotations

from smartvector_bench.core.evaluation import measured
from smartvector_bench.core.evaluation.metrics import anatomy as A
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.evaluation.metrics.scenarios import FEATURES
from smartvector_bench.core.evaluation.paper_claims import PAPER_MAIN_TABLE, PAPER_SETUP
from smartvector_bench.core.report.table_order import ordered


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _pct_parts(m: dict, key: str) -> tuple[str, str]:
    lo, hi = m.get(M.ci(key)) or [None, None]
    return _pct(m[key]), "" if lo is None else f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def _num_parts(m: dict, key: str) -> tuple[str, str]:
    lo, hi = m.get(M.ci(key)) or [None, None]
    if m[key] is None:
        return "-", ""
    return f"{m[key]:.3f}", "" if lo is None else f"[{lo:.3f}, {hi:.3f}]"


PERCENT_METRICS = (M.TOP1, M.STALE_RATE, M.RUMOR_RATE, M.RECALL_AT_5, M.LEAKAGE_AT_10)  # shown as percentages


def metric_parts(m: dict, key: str) -> tuple[str, str]:
    """(value, interval) text of ``m[key]`` with its ``<key>_ci``, as the tables show them."""
    return _pct_parts(m, key) if key in PERCENT_METRICS else _num_parts(m, key)


def _pct_ci(m: dict, key: str) -> str:
    return " ".join(p for p in _pct_parts(m, key) if p)


def _num_ci(m: dict, key: str) -> str:
    return " ".join(p for p in _num_parts(m, key) if p)


def p_text(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


SOFT_SUFFIX = "_soft"  # <system>_soft: the same system with its status filter off (conf/retriever/*_soft.yaml)
CONSTRUCTION_METRICS = (M.STALE_RATE, M.RUMOR_RATE)


def by_construction(metrics: dict, name: str, key: str, split: str) -> bool:
    """A figure the hard status filter makes 0: ``name``'s ``key`` is 0 where its soft variant's is not.
    (Without a soft variant in the same run nothing is marked: the cause cannot be told apart.)"""
    soft = metrics["systems"].get(name + SOFT_SUFFIX, {}).get(split)
    mine = metrics["systems"][name][split].get(key)
    return soft is not None and mine == 0 and (soft.get(key) or 0) > 0


def _rate(metrics: dict, name: str, key: str, split: str) -> tuple[str, str, str]:
    point, ci = _pct_parts(metrics["systems"][name][split], key)
    return point, ci, "(by construction)" if by_construction(metrics, name, key, split) else ""


# The main table's metric columns: (metrics.json key, header)
MAIN_COLUMNS = ((M.TOP1, "top-1"), (M.STALE_RATE, "stale rate"), (M.RUMOR_RATE, "rumor rate"), (M.ECE, "ECE"),
                (M.MRR_AT_10, "MRR@10"), (M.RECALL_AT_5, "recall@5"), (M.NDCG_AT_10, "nDCG@10"),
                (M.LEAKAGE_AT_10, "leakage@10 (historical)"))


def main_cell(metrics: dict, name: str, key: str, split: str) -> tuple[str, str, str]:
    """(value, interval, note) of one main-table cell, each "" where the table shows none (the HTML report
    shows the parts apart; :func:`main_table` joins them)."""
    m = metrics["systems"][name][split]
    if measured.reason(m, key):  # the reason is printed once, under the table (not_measured_line)
        return measured.TEXT, "", ""
    if key in CONSTRUCTION_METRICS:
        return _rate(metrics, name, key, split)
    if key == M.LEAKAGE_AT_10:
        hist = m["by_category"].get("historical", {}).get(M.LEAKAGE_AT_10)
        return ("-", "", "") if m.get(key) is None else (_pct(m[key]), "", f"({_pct(hist)})")
    if key in (M.TOP1, M.RECALL_AT_5):
        return (*_pct_parts(m, key), "")
    return ("-", "", "") if m.get(key) is None else (*_num_parts(m, key), "")


VERSION_HEADER = "ver\\|fam"  # version accuracy given the right family (VERSION_LEGEND); a literal "|" in a cell


def has_version_accuracy(metrics: dict) -> bool:
    """Whether the main table shows the ver|fam column: some split of some system measured it (files written
    before the error anatomy have none; a dataset without families measures none, and says why in the anatomy)."""
    return any(isinstance(m, dict) and m.get(M.VERSION_ACCURACY) is not None
               for per in metrics["systems"].values() for m in (per or {}).values())


def version_cell(m: dict) -> str:
    """ver|fam of one split: the share with its interval, or why it is missing."""
    if m.get(M.VERSION_ACCURACY) is None:
        return measured.TEXT if ((m.get(M.ANATOMY) or {}).get(A.NOT_MEASURED) or {}).get(A.VERSION_ACCURACY) else "-"
    return _pct_ci(m, M.VERSION_ACCURACY)


def main_table(metrics: dict, split: str) -> str:
    baseline = metrics["experiment"]["baseline"]
    version = has_version_accuracy(metrics)
    extra = f" {VERSION_HEADER} |" if version else ""
    rows = [f"| system | {' | '.join(label for _, label in MAIN_COLUMNS)} |{extra} n (families) | p vs {baseline}: "
            "McNemar / cluster permutation |", "|---|---|---|---|---|---|---|---|---|---|---|" + "---|" * version]
    for name in ordered(metrics["systems"]):
        m = metrics["systems"][name][split]
        cells = [" ".join(p for p in main_cell(metrics, name, key, split) if p) for key, _ in MAIN_COLUMNS]
        cells += [version_cell(m)] if version else []
        tests = "-" if name == baseline else f"{p_text(m[M.MCNEMAR_P])} / {p_text(m.get(M.PERMUTATION_P))}"
        rows.append(f"| {name} | {' | '.join(cells)} | {m[M.N_QUERIES]} ({m.get(M.N_FAMILIES, '-')}) | {tests} |")
    return "\n".join(rows)


LABELS = dict(MAIN_COLUMNS) | {M.LEAKAGE_AT_10: "leakage@10"}


def not_measured_line(metrics: dict, split: str) -> str:
    """One sentence naming each metric of ``split`` that was not measured and the stored reason ("" when every
    metric was); the reasons are the dataset's, the same for every system."""
    why: dict[str, str] = {}
    for name in ordered(metrics["systems"]):
        why |= measured.reasons(metrics["systems"][name].get(split))
    if not why:
        return ""
    order = sorted(why, key=lambda k: (list(LABELS).index(k) if k in LABELS else len(LABELS), k))  # column order
    return "Not measured: " + "; ".join(f"{LABELS.get(k, k)} ({why[k]})" for k in order) + "."


VERSION_LEGEND = (f"{VERSION_HEADER}: version accuracy given the right family, P(top-1 correct | the top-1 chunk is "
                  "of the query's family) = correct / (correct + wrong top-1s of the query's family), with its "
                  "cluster-bootstrap interval: how well a system picks the version once it has found the fact.")
ANATOMY_LABELS = {"no_result": "no result", "other_family": "other family", "rumor": "rumor",
                  "non_answer": "non-answer", "lagging_source": "lagging source",
                  "superseded_version": "superseded version", "not_in_force": "not in force", "other": "other"}


def has_anatomy(metrics: dict, split: str = "test") -> bool:
    return any(isinstance((per or {}).get(split), dict) and M.ANATOMY in per[split]
               for per in metrics["systems"].values())


def anatomy_cell(a: dict, name: str) -> str:
    c = a.get(name)
    if c is None:
        return measured.TEXT
    return f"{_pct(c['share'])} ({c['count']})"


def anatomy_table(metrics: dict, split: str = "test") -> str:
    """Per system (rows) the share of the split's queries whose top-1 is wrong for each reason (columns, in the
    classes' precedence order; count in parentheses), then the number of misses (and in parentheses those no
    measured class takes, when a dataset leaves some classes unmeasured)."""
    unclassified = any(((per or {}).get(split) or {}).get(M.ANATOMY, {}).get("n_unclassified")
                       for per in metrics["systems"].values())
    head = [ANATOMY_LABELS[c] for c in A.CLASSES] + ["misses (unclassified)" if unclassified else "misses"]
    rows = ["| system | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for name in ordered(metrics["systems"]):
        a = (metrics["systems"][name].get(split) or {}).get(M.ANATOMY)
        if a is None:
            rows.append(f"| {name} | " + " | ".join("-" for _ in head) + " |")
            continue
        cells = [anatomy_cell(a, c) for c in A.CLASSES]
        cells += [f"{a['n_misses']} ({a['n_unclassified']})" if unclassified else str(a["n_misses"])]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def anatomy_not_measured(metrics: dict, split: str = "test") -> str:
    """The anatomy's reasons, one sentence ("" when all was measured): the dataset's are the same for every system;
    one that holds for some systems only (no top-1 of the query's family: no version accuracy) names them."""
    names = [n for n in ordered(metrics["systems"]) if M.ANATOMY in (metrics["systems"][n].get(split) or {})]
    who: dict[tuple[str, str], list[str]] = {}
    for name in names:
        for key, why in (metrics["systems"][name][split][M.ANATOMY].get(A.NOT_MEASURED) or {}).items():
            who.setdefault((key, why), []).append(name)
    labels = ANATOMY_LABELS | {A.VERSION_ACCURACY: VERSION_HEADER}
    rank = {k: i for i, k in enumerate(labels)}
    parts = [f"{labels.get(k, k)}{'' if len(systems) == len(names) else ' of ' + ', '.join(systems)} ({why})"
             for (k, why), systems in sorted(who.items(), key=lambda kv: (rank.get(kv[0][0], len(rank)), kv[0]))]
    return "Not measured: " + "; ".join(parts) + "." if parts else ""


def _anatomy_section(metrics: dict) -> list[str]:
    if not has_anatomy(metrics):  # files written before the error anatomy keep their table.md
        return []
    return ["## Why the top-1 is wrong (test split)", "",
            "Share of all test queries whose top-1 is wrong for each reason (count in parentheses), from the ground-"
            "truth labels and the corpus's own times; the classes are exclusive, the first that holds in this order: "
            "no result; other family (a chunk of another fact: a semantic miss); rumor (in the query's rumor set); "
            "non-answer (the right fact, but a section that states no value); lagging source (a stale value in a "
            "source still in force at the as-of time); superseded version (a stale value no longer in force); not "
            "in force (e.g. an announced value not yet in force); other (any other wrong top-1). "
            "Each share's 95% cluster-bootstrap interval is in metrics.json (systems.<system>.test.anatomy).", "",
            anatomy_table(metrics, "test"), "", *_line(anatomy_not_measured(metrics, "test"))]


def interval_text(metrics: dict) -> str:
    """What the intervals and the permutation test resample: families, or queries when there are none."""
    per_query = measured.clusters_note(metrics)
    if per_query:
        why = per_query.removeprefix("per query: ")
        return (f"Intervals: 95% bootstrap over queries ({why}). Paired tests on the same queries: exact McNemar and a "
                "sign-flip permutation test, both with queries as the unit.")
    return ("Intervals: 95% cluster bootstrap over policy families. Paired tests on the same queries: exact McNemar "
            "(queries independent) and a cluster sign-flip permutation test (families as the unit).")


def calibration_table(metrics: dict) -> str:
    """Test-split calibration: ECE, Brier and AUROC of the raw top-1 confidence, and ECE / Brier after each
    map fitted on dev (``metrics["calibration"]``; "-" for results written before it existed)."""
    cal = metrics.get("calibration") or {}
    methods = sorted({m for per in cal.values() for m in per}, key=lambda m: (m != "platt", m))
    head = "| system | ECE | Brier | AUROC (confidence vs correct) | " + " | ".join(
        f"ECE after {m} | Brier after {m}" for m in methods) + " |"
    rows = [head, "|---|---|---|---|" + "---|---|" * len(methods)]
    for name in ordered(metrics["systems"]):
        m = metrics["systems"][name]["test"]
        cells = [_num_ci(m, M.ECE)] + [_num_ci(m, key) if m.get(key) is not None else "-" for key in (M.BRIER, M.AUROC)]
        for meth in methods:
            r = (cal.get(name) or {}).get(meth)
            cells += ["-", "-"] if r is None else [
                _num_ci(r, key) if r.get(key) is not None else "-"
                for key in (M.calibrated(M.ECE), M.calibrated(M.BRIER))]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def power_line(metrics: dict) -> str:
    pw = metrics.get("power")
    why = measured.reason(pw, measured.ICC)
    if not pw or (pw.get("icc") is None and not why):
        return ""

    def pts(x: float | None) -> str:
        return "none (no increase is detectable)" if x is None else f"{100 * x:.1f} points"

    icc = (f"intra-family correlation {measured.TEXT} ({why})" if why else
           f"intra-family correlation {pw['icc']:.2f} of {pw['reference_system']}'s top-1")
    return (f"Power ({pw['split']} split, {pw[M.N_QUERIES]} queries in {pw[M.N_FAMILIES]} families, {icc}, design "
            f"effect {pw['design_effect']:.2f}, {pw['n_effective']:.0f} effective queries): the minimum detectable top-1 "
            f"difference at {100 * pw['power']:.0f}% power and alpha {pw['alpha']} is "
            f"{pts(pw['mde_top1'])} over {pw['reference_system']} ({pts(pw['mde_top1_at_50'])} from a 50% baseline).")


def claims_table(metrics: dict, split: str = "test") -> str:
    rows = ["| system | metric | paper claims | ours (95% CI) |", "|---|---|---|---|"]
    for name, claims in PAPER_MAIN_TABLE.items():
        ours = metrics["systems"].get(name, {}).get(split)
        for key, label in ((M.TOP1, "top-1 accuracy"), (M.STALE_RATE, "stale rate"), (M.ECE, "ECE")):
            claim = f"{claims[key]:.3f}" if key == M.ECE else _pct(claims[key])
            if ours is None:
                got = "not run"
            elif measured.reason(ours, key):
                got = f"{measured.TEXT} ({measured.reason(ours, key)})"
            else:
                got = _num_ci(ours, key) if key == M.ECE else _pct_ci(ours, key)
            rows.append(f"| {name} | {label} | {claim} | {got} |")
    return "\n".join(rows)


def categories(metrics: dict, split: str) -> list[str]:
    return sorted({c for s in metrics["systems"].values() for c in s[split]["by_category"]})


def category_cell(metrics: dict, name: str, category: str, split: str) -> str:
    bc = metrics["systems"][name][split]["by_category"]
    return f"{_pct(bc[category][M.TOP1])} (n={bc[category][M.N_QUERIES]})" if category in bc else "-"


def category_table(metrics: dict, split: str) -> str:
    cats = categories(metrics, split)
    rows = ["| system | " + " | ".join(cats) + " |", "|---|" + "---|" * len(cats)]
    for name in ordered(metrics["systems"]):
        rows.append(f"| {name} | " + " | ".join(category_cell(metrics, name, c, split) for c in cats) + " |")
    return "\n".join(rows)


def _points(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}"


def scenario_table(metrics: dict) -> str:
    """Per scenario feature (columns) and system (rows): the test top-1 effect of the feature in points, its
    p-value, and in brackets the effect on the paired gap to the baseline (core/evaluation/metrics/scenarios.py)."""
    sc = (metrics.get("scenarios") or {}).get("features") or {}
    feats = [f for f in FEATURES if f in sc] + sorted(set(sc) - set(FEATURES))  # metrics.json sorts its keys
    if not feats:
        return ""
    base = metrics["scenarios"].get("reference")
    head = [f"{f} ({sc[f]['label']}; {next(iter(sc[f]['systems'].values()))['families_with']} vs "
            f"{next(iter(sc[f]['systems'].values()))['families_without']} families)" for f in feats]
    rows = ["| system | " + " | ".join(head) + " |", "|---|" + "---|" * len(feats)]
    for name in ordered({n for f in feats for n in sc[f]["systems"]}):
        cells = []
        for f in feats:
            r = sc[f]["systems"].get(name)
            if r is None or r.get("effect") is None:
                cells.append("-")
                continue
            cell = f"{_points(r['effect'])} (p {p_text(r['p'])})"
            if "effect_vs_baseline" in r:
                cell += f" [{_points(r['effect_vs_baseline'])} vs {base}, p {p_text(r['p_vs_baseline'])}]"
            cells.append(cell)
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _scenario_section(metrics: dict) -> list[str]:
    table = scenario_table(metrics)
    if not table:
        return []
    return ["## What each scenario feature costs (test split)", "",
            "Top-1 of the families with the feature minus those without, in points (permutation p over families); "
            "in brackets the same for the paired gap to the reference system: negative = the feature costs the system "
            "more than it costs the reference. Features are drawn independently per family (data_gen/scenarios.py).", "",
            table, ""]


def _notes(metrics: dict) -> list[str]:
    """Lines about an external dataset: fields left to defaults, an assigned split, systems left out."""
    d, out = metrics["dataset"], []
    if d.get("defaulted_fields"):
        out.append(f"Corpus fields not given (defaults used): {', '.join(d['defaulted_fields'])}.")
    if d.get("split_assignment"):
        a = d["split_assignment"]
        out.append(f"Split assigned to {a['n_queries']} queries without one ({a['method']}; seed {a['seed']}, "
                   f"{a['n_test']} in test).")
    for name, why in (metrics.get("skipped_systems") or {}).items():
        out.append(f"Not run: {why}.")
    return [" ".join(out), ""] if out else []


def render(metrics: dict) -> str:
    d = metrics["dataset"]
    parts = [
        "# SmartVector benchmark: main table",
        "",
        f"Dataset `{d['name']}` seed {d['seed']}: {d['n_vectors']} vectors, {d['n_queries']} queries "
        f"(sha256 {d['sha256'][:12]}); embedder `{metrics['embedder']}`. {interval_text(metrics)}",
        "",
        *_notes(metrics),
        "## Test split (held out)",
        "",
        main_table(metrics, "test"),
        "",
        *_line(not_measured_line(metrics, "test")),
        *_line(VERSION_LEGEND if has_version_accuracy(metrics) else ""),
        power_line(metrics),
        "",
        *_anatomy_section(metrics),
        "## Calibration (test split; each map fitted on dev)",
        "",
        calibration_table(metrics),
        "",
        f"## The paper's claims beside ours (test split; paper: {PAPER_SETUP})",
        "",
        claims_table(metrics, "test"),
        "",
        "## Top-1 accuracy by query category (test split)",
        "",
        category_table(metrics, "test"),
        "",
        *_scenario_section(metrics),
        "## Dev split",
        "",
        main_table(metrics, "dev"),
        "",
        *_line(not_measured_line(metrics, "dev")),
        _provenance_line(metrics),
        "",
    ]
    return "\n".join(parts)


def _line(text: str) -> list[str]:
    """A paragraph and its blank line, or nothing for "" (so a fully measured table.md keeps its bytes)."""
    return [text, ""] if text else []


def _provenance_line(metrics: dict) -> str:
    p = metrics["provenance"]
    git = p["git"]["sha"] or "unknown"
    dirty = " (uncommitted changes)" if p["git"]["dirty"] else ""
    pk = p["packages"]
    return (f"Provenance: schema {metrics['schema_version']}, dataset sha256 {metrics['dataset']['sha256']}, "
            f"seed {metrics['dataset']['seed']}, config sha256 {p['config_sha256'][:16]}, git {git[:12]}{dirty}, "
            f"smartvector-bench {pk['smartvector-bench']}, faiss-cpu {pk['faiss-cpu']}, torch {pk['torch']}, "
            f"sentence-transformers {pk['sentence-transformers']}, numpy {pk['numpy']}.")
