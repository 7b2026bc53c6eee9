"""experiment=shortcut_audit: could a label-aware reviewer beat ``valid_cosine`` with a surface cue?

For each profile (``conf/dataset/<profile>.yaml``) and seed: generate the dataset, embed it with the configured
embedder, and run every cue rule of :mod:`smartvector_bench.core.shortcuts` (learned on dev, applied on test).
Writes ``shortcut_audit.csv`` (one row per profile x seed x rule), ``table.md`` and, last,
``shortcut_audit.json`` (per-seed results, the mean / min / max test gain of each rule over valid_cosine,
and whether every surface cue stays within ``max_surface_gain``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from tqdm.auto import tqdm

from data_gen.params import params_from_config
from data_gen.writer import write_dataset
from smartvector_bench.core import CONF_DIR, SCHEMA_VERSION
from smartvector_bench.core.atomic import atomic_write_json, atomic_write_text
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.provenance import provenance
from smartvector_bench.core.shortcuts import SURFACE_CUES, TRUST_CUES, audit
from experiments.config import check_embedder

CSV_FIELDS = ("profile", "seed", "dataset_sha256", "rule", "kind", "keep", "dev_top1", "test_top1", "test_gain",
              "n_test", "n_test_families")


SETTINGS = ("name", "profiles", "seeds", "max_surface_gain", "progress")


def _settings(exp: dict) -> tuple[list[str], list[int], float]:
    unknown = sorted(set(exp) - set(SETTINGS))
    if unknown:
        raise BenchError(f"experiment.{unknown[0]}: unknown key; allowed: {', '.join(SETTINGS)}")
    if exp.get("name", "shortcut_audit") != "shortcut_audit":
        raise BenchError(f"experiment.name={exp['name']}: this module runs shortcut_audit only")
    if not isinstance(exp.get("progress", True), bool):
        raise BenchError(f"experiment.progress={exp['progress']!r}: must be true or false")
    profiles = exp.get("profiles", ["versioned_policies"])
    seeds = exp.get("seeds", [1, 2, 3, 4, 5])
    if isinstance(profiles, str):
        profiles = [profiles]
    if not profiles:
        raise BenchError("experiment.profiles=[]: choose at least one profile (a conf/dataset/<name>.yaml)")
    if not isinstance(profiles, (list, tuple)) or not all(isinstance(p, str) for p in profiles):
        raise BenchError(f"experiment.profiles={profiles!r}: must be a list of profile names")
    for name in profiles:
        if not (Path(CONF_DIR) / "dataset" / f"{name}.yaml").is_file():
            raise BenchError(f"experiment.profiles: unknown profile {name!r}; allowed: versioned_policies, "
                             f"versioned_policies_large")
    if not isinstance(seeds, (list, tuple)) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise BenchError(f"experiment.seeds={seeds}: must be a non-empty list of integers >= 0")
    bar = exp.get("max_surface_gain", 0.05)
    if not isinstance(bar, (int, float)) or isinstance(bar, bool) or not 0 <= bar <= 1:
        raise BenchError(f"experiment.max_surface_gain={bar}: must be a number in [0, 1]")
    return list(profiles), list(seeds), float(bar)


def profile_config(name: str, seed: int) -> dict:
    cfg = yaml.safe_load((Path(CONF_DIR) / "dataset" / f"{name}.yaml").read_text(encoding="utf-8"))
    cfg["seed"] = seed
    return cfg


def summarise(rows: pd.DataFrame, bar: float) -> dict:
    """Per profile and rule: mean, min and max over seeds of the test top-1 and of its gain over valid_cosine."""
    out: dict = {}
    for (profile, rule), g in rows.groupby(["profile", "rule"], sort=False):
        out.setdefault(profile, {})[rule] = {
            "kind": g["kind"].iloc[0], "seeds": int(len(g)),
            "test_top1_mean": round(float(g["test_top1"].mean()), 6),
            "test_gain_mean": round(float(g["test_gain"].mean()), 6),
            "test_gain_min": round(float(g["test_gain"].min()), 6),
            "test_gain_max": round(float(g["test_gain"].max()), 6),
        }
    surface = rows[rows["kind"] == "surface"]
    worst = surface.groupby(["profile", "rule"])["test_gain"].mean() if len(surface) else pd.Series(dtype=float)
    return {"by_profile": out, "max_surface_gain_bar": bar,
            "worst_surface_mean_gain": round(float(worst.max()), 6) if len(worst) else None,
            "worst_surface_rule": None if not len(worst) else "/".join(worst.idxmax()),
            "surface_within_bar": bool(len(worst) == 0 or worst.max() <= bar)}


def render(result: dict) -> str:
    s = result["summary"]["by_profile"]
    profiles = list(s)
    present = {r for p in profiles for r in s[p]}
    # valid_cosine, then the surface cues, then the trust signals (the stored JSON has its keys sorted)
    rules = [r for r in ("valid_cosine",) + SURFACE_CUES + TRUST_CUES if r in present]
    rules += sorted(present - set(rules))
    head = "| rule | cue kind | " + " | ".join(f"{p}: test top-1 (gain over valid_cosine; min, max)" for p in profiles)
    lines = ["# Shortcut audit: cue rules learned on dev, applied on test", "",
             f"Mean over seeds {result['experiment']['seeds']}; a rule keeps the in-force chunks whose cue value is "
             "in the set it learned on dev (all of them if none has it) and takes the highest cosine.", "",
             head + " |", "|---|---|" + "---|" * len(profiles)]
    for rule in rules:
        cells = []
        for p in profiles:
            r = s[p].get(rule)
            if r is None:
                cells.append("-")
            elif rule == "valid_cosine":
                cells.append(f"{100 * r['test_top1_mean']:.1f}%")
            else:
                cells.append(f"{100 * r['test_top1_mean']:.1f}% ({100 * r['test_gain_mean']:+.1f}; "
                             f"{100 * r['test_gain_min']:+.1f}, {100 * r['test_gain_max']:+.1f})")
        kind = next(s[p][rule]["kind"] for p in profiles if rule in s[p])
        lines.append(f"| {rule} | {kind} | " + " | ".join(cells) + " |")
    sm = result["summary"]
    verdict = "within" if sm["surface_within_bar"] else "**above**"
    lines += ["", f"Largest mean gain of a surface cue: {100 * sm['worst_surface_mean_gain']:+.1f} points "
              f"({sm['worst_surface_rule']}), {verdict} the bar of {100 * sm['max_surface_gain_bar']:.0f} points. "
              "Trust signals (source, authority) are legitimate evidence and are reported, not barred.", ""]
    return "\n".join(lines)


# The generator profiles whose labels/ name the families and kinds the rules need.
LABELLED_GENERATORS = ("versioned_policies", "versioned_policies_large")


def validate(cfg: dict) -> tuple[list[str], list[int], float]:
    """``experiment.*``, every profile x seed dataset and the embedder keys, before any work or write. The audit
    generates its own datasets and reads their labels/: ``dataset.path`` (an external folder) is refused, and so is
    a profile of another generator (git_history, lvl_corpus), each in one line."""
    profiles, seeds, bar = _settings(dict(cfg.get("experiment") or {}))
    path = (cfg.get("dataset") or {}).get("path")
    if path:
        raise BenchError(f"dataset.path={path}: experiment=shortcut_audit does not read a dataset folder; it generates "
                         f"every experiment.profiles x experiment.seeds dataset itself and needs the generator's "
                         f"labels/ (chunk families and kinds), which an external dataset lacks; drop dataset.path")
    for p in profiles:
        generator = profile_config(p, 0).get("name", LABELLED_GENERATORS[0])
        if generator not in LABELLED_GENERATORS:
            raise BenchError(f"experiment.profiles: {p!r} is a {generator} dataset, without the labels/ (chunk "
                             f"families and kinds) the cue rules need; use {' or '.join(LABELLED_GENERATORS)}")
        for seed in seeds:
            params_from_config(profile_config(p, seed))
    check_embedder(cfg)
    return profiles, seeds, bar


def run(cfg: dict, out_dir: str | Path) -> dict:
    out_dir = Path(out_dir)
    exp = cfg["experiment"]
    profiles, seeds, bar = validate(cfg)
    jobs = [(p, s, profile_config(p, s)) for p in profiles for s in seeds]
    embedder = build_embedder(dict(cfg["embedder"]))
    rows, details = [], []
    for profile, seed, ds_cfg in tqdm(jobs, desc="shortcut_audit", disable=not exp.get("progress", True), leave=False):
        folder = out_dir / "datasets" / f"{profile}_seed{seed}"
        write_dataset(params_from_config(ds_cfg), folder, overwrite=True)
        ds = load_dataset(folder)
        cos = embedder.encode(ds.queries.texts) @ embedder.encode(ds.corpus.texts).T
        a = audit(cos, ds.corpus, ds.queries, ds.labels, cues=SURFACE_CUES + TRUST_CUES)
        test = np.asarray(ds.queries.split) == "test"
        n_fam = len(set(ds.queries.family[test].tolist()))
        base = a["rules"]["valid_cosine"]["test_top1"]
        for rule, r in a["rules"].items():
            rows.append({"profile": profile, "seed": seed, "dataset_sha256": ds.sha256, "rule": rule,
                         "kind": r.get("kind", "baseline"), "keep": "" if r["keep"] is None else "|".join(r["keep"]),
                         "dev_top1": round(r["dev_top1"], 6), "test_top1": round(r["test_top1"], 6),
                         "test_gain": round(r["test_top1"] - base, 6), "n_test": int(test.sum()),
                         "n_test_families": n_fam})
        details.append({"profile": profile, "seed": seed, "dataset_sha256": ds.sha256,
                        "reachable": a["reachable"], "rules": a["rules"]})
    frame = pd.DataFrame(rows, columns=list(CSV_FIELDS))
    result = {
        "schema_version": SCHEMA_VERSION,
        "experiment": {"name": "shortcut_audit", "profiles": profiles, "seeds": seeds,
                       "surface_cues": list(SURFACE_CUES), "trust_cues": list(TRUST_CUES)},
        "embedder": embedder.model_id,
        "summary": summarise(frame, bar),
        "runs": details,
        "provenance": provenance(cfg),
    }
    atomic_write_text(out_dir / "shortcut_audit.csv", frame.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(out_dir / "table.md", render(result))
    atomic_write_json(out_dir / "shortcut_audit.json", result)
    return result
