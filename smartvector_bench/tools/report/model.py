"""Stored results -> the page model: plain dicts (and the drill-down JSON) that ``page.py`` renders.

Every number is read through the typed result classes (MainMetrics, SweepSummary, the sweep loader) and every
cell text comes from the renderers of the README's tables (``core/report/__init__.py``: ``main_cell``,
``category_cell``, ``metric_parts``, ``power_line``; ``core/evaluation/claims.py`` for the claims), so the page and the
README cannot disagree. A cell's ``value`` is the stored value itself as JSON (full precision; ``null`` when absent).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from smartvector_bench.core.evaluation import claims as C
from smartvector_bench.core.evaluation import verdicts as V
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.evaluation import measured
from smartvector_bench.core.evaluation.metrics import anatomy as A
from smartvector_bench.core.report import (
    MAIN_COLUMNS, VERSION_HEADER, categories, category_cell, interval_text, main_cell, metric_parts,
    not_measured_line, ordered, p_text, power_line, version_cell,
)
from smartvector_bench.core.report import (
    ANATOMY_LABELS, VERSION_LEGEND, anatomy_cell, anatomy_not_measured, has_anatomy,
)
from smartvector_bench.core.results import TIDY, MainMetrics, SweepSummary, load_sweep
from smartvector_bench.core.results.base import read_json
from smartvector_bench.tools.report import drill, reliability

SPLIT = "test"  # the main and category tables show the held-out split, as the README does
PROVENANCE = "PROVENANCE.json"
RUN_FIRST = ("main", "main_large")  # results/'s run sections in this order, then the rest sorted
EXTRA_COLUMNS = ((M.N_QUERIES, "n (families)"), (M.MCNEMAR_P, "McNemar p"), (M.PERMUTATION_P, "permutation p"))
FIGURES = Path("paper_figures") / "figures"  # beside results/: the committed paper figures
WHAT = (f"a run folder ({MainMetrics.FILE}), a sweep folder ({SweepSummary.FILE} and {TIDY}) or a results folder "
        "holding them")


def kind_of(path: Path) -> str:
    """"run", "sweep" or "results"; BenchError (one line, naming the path) for anything else."""
    if not path.exists():
        raise BenchError(f"{path}: not found")
    if not path.is_dir():
        raise BenchError(f"{path}: not a folder; expected {WHAT}")
    if (path / MainMetrics.FILE).is_file():
        return "run"
    if (path / SweepSummary.FILE).is_file() and (path / TIDY).is_file():
        return "sweep"
    if any(_sub_kind(p) for p in path.iterdir() if p.is_dir()):
        return "results"
    raise BenchError(f"{path}: not {WHAT}")


def _sub_kind(path: Path) -> str | None:
    if (path / MainMetrics.FILE).is_file():
        return "run"
    if (path / SweepSummary.FILE).is_file() and (path / TIDY).is_file():
        return "sweep"
    return None


def _value(x) -> str:
    """A stored value as the JSON text of ``data-value`` (NaN, pandas' empty cell, as null)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "null"
    return json.dumps(x.item() if hasattr(x, "item") else x)


def _provenance_file(folder: Path) -> dict:
    path = folder / PROVENANCE
    data = read_json(path) if path.is_file() else {}
    return data if isinstance(data, dict) else {}


# ---------------------------------------------------------------------------------------------- run folders
def run_model(folder: Path, name: str) -> tuple[dict, dict]:
    """(the run's section, its drill-down data) from ``folder/metrics.json`` and its run files."""
    mm = MainMetrics.load(folder)
    m = mm.to_dict()
    systems = [s for s in ordered(m["systems"]) if SPLIT in m["systems"][s]]
    baseline = m["experiment"].get("baseline")
    columns = [{"key": k, "label": label} for k, label in MAIN_COLUMNS + EXTRA_COLUMNS]
    rows = []
    for s in systems:
        sm = m["systems"][s][SPLIT]
        cells = []
        for key, _ in MAIN_COLUMNS:
            point, ci, note = main_cell(m, s, key, SPLIT)
            cells.append({"key": key, "value": _value(sm.get(key)), "text": point, "ci": ci, "note": note,
                          "why": measured.reason(sm, key) or ""})
        cells.append({"key": M.N_QUERIES, "value": _value(sm.get(M.N_QUERIES)), "text": str(sm.get(M.N_QUERIES)),
                      "ci": "", "note": f"({sm.get(M.N_FAMILIES, '-')})", "why": ""})
        for key in M.P_VALUES:
            text = "-" if s == baseline else p_text(sm.get(key))
            cells.append({"key": key, "value": _value(sm.get(key)), "text": text, "ci": "", "note": "", "why": ""})
        rows.append({"system": s, "cells": cells})
    cats = categories(m, SPLIT)
    cat_rows = [{"system": s, "cells": [
        {"key": c, "text": category_cell(m, s, c, SPLIT),
         "value": _value(m["systems"][s][SPLIT]["by_category"].get(c, {}).get(M.TOP1))} for c in cats]}
        for s in systems]
    figure = (reliability.data_uri(reliability.reliability_png(m, systems))
              if reliability.has_bins(m, systems) else None)
    data = drill.drill_data(folder, systems, mm.dataset.get("sha256"))
    d = mm.dataset
    prov, pfile = mm.provenance, _provenance_file(folder)
    section = {
        "name": name, "source": str(folder), "baseline": baseline, "split": SPLIT,
        "dataset": (f"{d.get('name', '?')}, seed {d.get('seed', '-')}: {d['n_vectors']} vectors, {d['n_queries']} "
                    f"queries in {d.get('n_families', '-')} families; embedder {mm.embedder}"),
        "columns": columns, "systems": systems, "rows": rows, "power": power_line(m),
        # what no table may show as a number, and what the intervals resample when there are no families
        "not_measured": not_measured_line(m, SPLIT), "not_measured_by_metric": _reasons(m, systems),
        "intervals": interval_text(m) if measured.clusters_note(m) else "",
        "categories": cats, "category_rows": cat_rows, "reliability": figure, "learned": learned_model(m, systems),
        "anatomy": anatomy_model(m, systems),
        "skipped": [f"{s}: {why}" for s, why in (mm.skipped_systems or {}).items()],
        "queries": [{"id": q, "label": f"{q} · {data['queries'][q]['split']} · {data['queries'][q]['category']}"}
                    for q in data["order"]],
        "per_hit_labels": data["per_hit_labels"], "stored_queries": data["stored_queries"],
        "has_signals": data["has_signals"], "missing_runs": data["missing"],
        "stored_signals": data["stored_signals"], "signals_source": data["signals_source"],
        "provenance": {"dataset_sha256": d["sha256"], "git_sha": (prov.get("git") or {}).get("sha"),
                       "git_dirty": (prov.get("git") or {}).get("dirty"), "packages": prov.get("packages") or {},
                       "config_sha256": prov.get("config_sha256"), "command": pfile.get("command_line"),
                       "published_at": pfile.get("published_at")},
    }
    return section, data


def anatomy_model(m: dict, systems: list[str]) -> dict | None:
    """Why each system's top-1 is wrong (the error anatomy of the shown split), with version accuracy given the
    right family: the cells of table.md's own renderers. None for a file written before the anatomy."""
    if not has_anatomy(m, SPLIT):
        return None
    rows = []
    for s in systems:
        sm = m["systems"][s][SPLIT]
        a = sm.get(M.ANATOMY)
        cells = [{"key": c, "text": anatomy_cell(a, c) if a else "-",
                  "value": _value(((a or {}).get(c) or {}).get("share"))} for c in A.CLASSES]
        cells.append({"key": "misses", "text": str(a["n_misses"]) if a else "-",
                      "value": _value((a or {}).get("n_misses"))})
        cells.append({"key": M.VERSION_ACCURACY, "text": version_cell(sm), "value": _value(sm.get(M.VERSION_ACCURACY))})
        rows.append({"system": s, "cells": cells})
    head = [{"key": c, "label": ANATOMY_LABELS[c]} for c in A.CLASSES]
    head += [{"key": "misses", "label": "misses"}, {"key": M.VERSION_ACCURACY, "label": VERSION_HEADER.replace("\\", "")}]
    return {"columns": head, "rows": rows, "legend": VERSION_LEGEND.replace("\\", ""),
            "not_measured": anatomy_not_measured(m, SPLIT)}


IMPORTANCE = ("fit", "feature_importance_gain")  # where a learned system's describe() puts its importances


def learned_model(m: dict, systems: list[str]) -> dict | None:
    """Each learned system's feature importances (share of split gain), one column per system whose
    ``system_info`` holds them (``fit.feature_importance_gain``: any system, by what it reports, not by name); rows
    in the first such system's order. None when no system reports them."""
    found = {}
    for s in systems:
        info = (m.get("system_info") or {}).get(s) or {}
        gain = (info.get(IMPORTANCE[0]) or {}) if isinstance(info.get(IMPORTANCE[0]), dict) else {}
        if isinstance(gain.get(IMPORTANCE[1]), dict):
            found[s] = gain[IMPORTANCE[1]]
    if not found:
        return None
    features = list(dict.fromkeys(f for g in found.values() for f in g))
    rows = [{"feature": f, "cells": [{"value": _value(g.get(f)),
                                      "text": "-" if g.get(f) is None else f"{100 * g[f]:.1f}%"}
                                     for g in found.values()]} for f in features]
    return {"systems": list(found), "rows": rows}


def _reasons(m: dict, systems: list[str]) -> dict[str, str]:
    """{metric: reason} over the run's systems on the shown split (the dataset's reasons: one per metric)."""
    out: dict[str, str] = {}
    for s in systems:
        out |= measured.reasons(m["systems"][s][SPLIT])
    return out


# -------------------------------------------------------------------------------------------- sweep folders
def swept_keys(folder: Path, columns: list[str]) -> list[str]:
    """The sweep's swept keys: ``tidy.provenance.json``'s list, else tidy.csv's columns between ``overrides``
    and ``system`` (how the collector lays them out)."""
    prov = folder / "tidy.provenance.json"
    keys = (read_json(prov) or {}).get("swept_keys") if prov.is_file() else None
    if isinstance(keys, list) and keys:
        return [str(k) for k in keys]
    if "overrides" in columns and "system" in columns:
        return columns[columns.index("overrides") + 1: columns.index("system")]
    return []


def _plain(x) -> str:
    """A tidy.csv cell as text; the same text is the filter's option value, so the two always match."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def _order_key(text: str):
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def sweep_model(folder: Path, name: str) -> dict:
    """A sweep's section: its job counts, the tidy table (swept keys, system, split, metrics with intervals)
    and one filter per swept key."""
    summary = SweepSummary.load(folder)
    tidy = load_sweep(folder)
    cols = [str(c) for c in tidy.columns]
    keys = swept_keys(folder, cols)
    for key in (*keys, "system", "split", "status"):
        if key not in cols:
            raise BenchError(f"{folder / TIDY}: column {key!r} missing")
    metrics = [k for k in M.CI_METRICS if k in cols]
    plain = ["job", "status", *keys, "system", "split"]
    plain = [c for c in plain if c in cols] + ([M.N_QUERIES] if M.N_QUERIES in cols else [])
    rows = []
    for rec in tidy.to_dict("records"):
        cells = [{"key": c, "value": _plain(rec[c]), "text": _plain(rec[c]), "ci": ""} for c in plain]
        for k in metrics:
            num = lambda c: None if c not in rec or _value(rec[c]) == "null" else float(rec[c])  # noqa: E731
            point, ci = metric_parts({k: num(k), M.ci(k): [num(M.lo(k)), num(M.hi(k))]}, k)
            cells.append({"key": k, "value": _value(rec[k]), "text": point, "ci": ci})
        rows.append({"cells": cells})
    filters = [{"key": k, "options": sorted({_plain(v) for v in tidy[k]}, key=_order_key)} for k in keys]
    col_filters = [{"key": k, "options": sorted({_plain(v) for v in tidy[k]}, key=_order_key)}
                   for k in ("system", "split")]
    pfile = _provenance_file(folder)
    git = pfile.get("git") or {}
    shas = pfile.get("dataset_sha256") or sorted({_plain(v) for v in tidy.get("dataset_sha256", [])} - {""})
    return {
        "name": name, "source": str(folder), "preset": summary.preset, "jobs": summary.jobs,
        "all_complete": summary.all_complete,
        "problems": [f"{status} job #{it['job']} {it['overrides']}: {it['note']}"
                     for status in ("failed", "missing") for it in getattr(summary, status)],
        "columns": [{"key": c, "label": c} for c in plain + metrics], "metrics": metrics, "rows": rows,
        "filters": filters, "col_filters": col_filters,
        "provenance": {"dataset_sha256": shas if isinstance(shas, list) else [shas],
                       "git_sha": git.get("sha") or ", ".join(sorted({_plain(v) for v in tidy.get("git_sha", [])})),
                       "git_dirty": git.get("dirty"), "packages": pfile.get("packages") or {},
                       "config_sha256": None, "command": pfile.get("command_line"),
                       "published_at": pfile.get("published_at")},
    }


# ------------------------------------------------------------------------------------------------- results/
def claims_model(results: Path) -> list[dict]:
    return [{"claim": claim, "figure": v.figure, "test": C.test_text(v), "p": V.format_p(v.p_value),
             "verdict": v.verdict, "outcome": v.outcome, "rule": v.detail} for claim, v in C.claim_rows(results)]


def figures_model(results: Path) -> list[dict]:
    """The committed paper figures (``paper_figures/figures/*.png`` beside ``results/``) as data: URIs."""
    folder = results.resolve().parent / FIGURES
    return [{"name": p.stem, "src": reliability.data_uri(p.read_bytes())}
            for p in sorted(folder.glob("*.png"))] if folder.is_dir() else []


def page_model(path: Path) -> tuple[dict, dict]:
    """(the page model, the drill-down data embedded as JSON) of a run folder, a sweep folder or results/."""
    path = Path(path)
    kind = kind_of(path)
    runs, sweeps, data, claims, figures, other = [], [], {}, None, [], []
    if kind == "results":
        subs = sorted((p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")),
                      key=lambda p: (RUN_FIRST.index(p.name) if p.name in RUN_FIRST else len(RUN_FIRST), p.name))
        folders = [(sub, _sub_kind(sub)) for sub in subs]
        claims, figures = claims_model(path), figures_model(path)
    else:
        folders = [(path, kind)]
    for folder, what in folders:
        if what == "run":
            section, data[folder.name] = run_model(folder, folder.name)
            runs.append(section)
        elif what == "sweep":
            sweeps.append(sweep_model(folder, folder.name))
        else:
            other.append(folder.name)
    titles = {"run": f"run {path.name}", "sweep": f"sweep {path.name}", "results": f"{path.name}/"}
    model = {"kind": kind, "title": f"smartvector-bench report: {titles[kind]}", "source": str(path),
             "runs": runs, "sweeps": sweeps, "claims": claims, "figures": figures, "other": other}
    return model, {"runs": data}
