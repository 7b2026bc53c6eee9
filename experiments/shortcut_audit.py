"""experiment=shortcut_audit: could a label-aware reviewer beat ``valid_cosine`` with a surface cue?

For each profile (``conf/dataset/<profile>.yaml``) and seed: generate the dataset, embed it with the configured
embedder, and run every rule of :mod:`experiments.shortcut_audit_rules` (cue rules, the learned ``surface_gbm``
and the metadata rules; each learned on dev, applied on test). Writes ``shortcut_audit.csv`` (one row per
profile x seed x rule), ``table.md`` and, last, ``shortcut_audit.json`` (per-seed results, the mean / min / max
test gain of each rule over valid_cosine, whether every surface rule, ``surface_gbm`` included, stays within
``max_surface_gain``, the same for the metadata rules (reported, not barred), and two diagnostics read from
labels/ by this experiment only: how often the hedge lexicon matches rumors and correct messages, and which
section kind is the longest of a document version, against chance).
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
from smartvector_bench.core.results.provenance import provenance
from smartvector_bench.core.evaluation.judgments import KINDS
from experiments.shortcut_audit_gbm import (FEATURES, GBM_FOLDS, GBM_LEAF_GRID, GBM_PARAMS, GBM_POOL,
                                                     PERMUTATION_QUERIES, PERMUTATION_REPEATS)
from experiments.shortcut_audit_rules import (ALL_RULES, CERTAINTY_LEXICON, CERTAINTY_RE, HEDGE_LEXICON, HEDGE_RE,
                                              KIND_ORDER, LEARNED_RULES, METADATA_CUES, NEWEST_TOP_M, SURFACE_CUES,
                                              TRUST_CUES, audit, length_rank, lexicon_count, version_groups)
from experiments.config import check_embedder, check_regime

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
    doc = {"by_profile": out, "max_surface_gain_bar": bar}
    for kind in ("surface", "metadata"):  # the bar fails on surface rules only; metadata is reported beside it
        sub = rows[rows["kind"] == kind]
        worst = sub.groupby(["profile", "rule"])["test_gain"].mean() if len(sub) else pd.Series(dtype=float)
        doc.update({f"worst_{kind}_mean_gain": round(float(worst.max()), 6) if len(worst) else None,
                    f"worst_{kind}_rule": None if not len(worst) else "/".join(worst.idxmax()),
                    f"{kind}_within_bar": bool(len(worst) == 0 or worst.max() <= bar)})
    return doc


def rule_order(kinds: dict[str, str]) -> list[str]:
    """valid_cosine, then the rules grouped by kind (surface, metadata, trust, then any other kind, sorted), each
    group in the audit's own order (unknown rules sorted)."""
    preferred = ("valid_cosine",) + SURFACE_CUES + LEARNED_RULES + METADATA_CUES + TRUST_CUES
    group = {k: i for i, k in enumerate(KIND_ORDER)}
    known = {r: i for i, r in enumerate(preferred)}
    return sorted(kinds, key=lambda r: (group.get(kinds[r], len(group)), kinds[r], known.get(r, len(known)), r))


def _verdict(sm: dict, kind: str, what: str, note: str) -> str:
    if sm.get(f"worst_{kind}_mean_gain") is None:
        return f"No {what} was run."
    verdict = "within" if sm[f"{kind}_within_bar"] else "**above**"
    return (f"Largest mean gain of a {what}: {100 * sm[f'worst_{kind}_mean_gain']:+.1f} points "
            f"({sm[f'worst_{kind}_rule']}), {verdict} the bar of {100 * sm['max_surface_gain_bar']:.0f} points "
            f"({note}).")


def render(result: dict) -> str:
    s = result["summary"]["by_profile"]
    profiles = list(s)
    kinds = {r: s[p][r]["kind"] for p in profiles for r in s[p]}
    rules = rule_order(kinds)
    head = "| rule | cue kind | " + " | ".join(f"{p}: test top-1 (gain over valid_cosine; min, max)" for p in profiles)
    lines = ["# Shortcut audit: cue rules learned on dev, applied on test", "",
             f"Mean over seeds {result['experiment']['seeds']}; a rule keeps the in-force chunks whose cue value is "
             "in the set it learned on dev (all of them if none has it) and takes the highest cosine; "
             "newest_created takes the newest of the top-m by cosine (m learned on dev) and surface_gbm the best "
             "score of a gradient-boosted model of the text surface and the cosine, fitted on dev. Rules are "
             "grouped by kind: surface (must not mark the answer), metadata and trust (legitimate evidence, "
             "reported).", "",
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
        lines.append(f"| {rule} | {kinds[rule]} | " + " | ".join(cells) + " |")
    sm = result["summary"]
    lines += ["", " ".join([
        _verdict(sm, "surface", "surface cue", "every surface rule, surface_gbm included"),
        _verdict(sm, "metadata", "metadata rule", "reported, not barred: times and sources are legitimate evidence "
                 "but must not be a shortcut either"),
        "Trust signals (source, authority) are legitimate evidence and are reported, not barred."]), ""]
    lines += render_diagnostics(result.get("diagnostics") or {})
    return "\n".join(lines)


MESSAGE_CLASSES = ("rumor", "announcement", "right_when_written", "no_value")


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def render_diagnostics(diag: dict) -> list[str]:
    """The diagnostics' section of table.md: means over seeds (empty without diagnostics)."""
    if not diag:
        return []
    lines = ["**Diagnostics** (read from labels/ by the experiment only, never by a rule; mean over seeds).", "",
             "Messages matched by the hedge lexicon: share with at least one hedge phrase (with a certainty "
             "phrase in brackets; n: messages over all seeds), by what the message states when written (its "
             "family's value then in force, the next value before it takes effect, another value, no value):", "",
             "| profile | " + " | ".join(c.replace("_", " ") for c in MESSAGE_CLASSES) + " |",
             "|---|" + "---|" * len(MESSAGE_CLASSES)]
    for profile, seeds in diag.items():
        cells = []
        for c in MESSAGE_CLASSES:
            groups = [d["hedge"]["by_class"].get(c) or {} for d in seeds.values()]
            n = sum(g.get("n", 0) for g in groups)
            hedged, certain = _mean(g.get("hedged") for g in groups), _mean(g.get("certain") for g in groups)
            cells.append("-" if not n else f"{_pct(hedged)} ({_pct(certain)}; n={n})")
        lines.append(f"| {profile} | " + " | ".join(cells) + " |")
    lines += ["", "Longest section of a document version: share of versions in which each section kind is the "
              "longest, against chance (1 / sections of the version, mean over versions):", "",
              "| profile | doc type | versions | longest section (share of versions) | chance |",
              "|---|---|---|---|---|"]
    for profile, seeds in diag.items():
        types = sorted({t for d in seeds.values() for t in d["longest_section"]})
        for t in types:
            per = [d["longest_section"].get(t) for d in seeds.values() if d["longest_section"].get(t)]
            kinds = sorted({k for x in per for k in x["longest_share"]})
            share = {k: _mean(x["longest_share"].get(k, 0.0) for x in per) for k in kinds}
            cell = ", ".join(f"{k} {_pct(v)}" for k, v in sorted(share.items(), key=lambda kv: (-kv[1], kv[0])))
            lines.append(f"| {profile} | {t} | {sum(x['versions'] for x in per)} | {cell} | "
                         f"{_pct(_mean(x['chance'] for x in per))} |")
    return lines + [""]


def diagnostics(corpus, queries, labels) -> dict:
    """Per dataset, from labels/ (never seen by a rule): (a) the hedge and certainty lexicons on messages, by what
    a message states when written (its family's timeline at its created_at: the value then in force, the next
    value before it takes effect (an announcement), another value (a rumor), no value) and by the query
    judgments (in some query's rumor set, relevant to some query); (b) per document type, the share of versions
    in which each section kind is the longest, against chance."""
    if labels is None:
        return {"hedge": {"by_class": {}, "by_judgment": {}}, "longest_section": {}}
    hedge, certain = lexicon_count(corpus.texts, HEDGE_RE), lexicon_count(corpus.texts, CERTAINTY_RE)
    doc_type = np.asarray(labels.chunk_doc_type, dtype=object)
    msg = doc_type == "message"
    cls = np.full(len(corpus), "", dtype=object)
    for i in np.nonzero(msg)[0]:
        v, tl = labels.chunk_value[i], labels.timelines.get(labels.chunk_family[i])
        if np.isnan(v):
            cls[i] = "no_value"
        elif tl is None:
            cls[i] = "unknown"
        else:
            t = corpus.created_at[i]
            later = tl.values[tl.effective_from > t]
            cls[i] = ("right_when_written" if v == tl.value_at(t) else
                      "announcement" if len(later) and v == later[0] else "rumor")

    def stats(mask: np.ndarray) -> dict:
        n = int(mask.sum())
        return {"n": n, "hedged": float((hedge[mask] > 0).mean()) if n else None,
                "mean_hedges": float(hedge[mask].mean()) if n else None,
                "certain": float((certain[mask] > 0).mean()) if n else None}

    in_rumor = np.zeros(len(corpus), dtype=bool)
    in_rumor[queries.rumor.indices] = True
    relevant = np.zeros(len(corpus), dtype=bool)
    relevant[queries.relevant.indices] = True
    by_class = {c: stats(msg & (cls == c)) for c in MESSAGE_CLASSES + ("unknown",) if (msg & (cls == c)).any()}
    by_judgment = {"in_a_rumor_set": stats(msg & in_rumor), "relevant_to_a_query": stats(msg & relevant),
                   "rumor_never_relevant": stats(msg & in_rumor & ~relevant),
                   "relevant_never_rumor": stats(msg & relevant & ~in_rumor)}
    rank, group = length_rank(corpus), version_groups(corpus)
    sections = np.bincount(group, minlength=group.max() + 1 if len(group) else 0)
    kinds = np.asarray(labels.chunk_kind, dtype=object)
    longest = {}
    for t in sorted({str(x) for x in doc_type} - {"", "message"}):
        top = np.nonzero((doc_type == t) & (rank == 0))[0]
        if not len(top):
            continue
        present = set(kinds[doc_type == t])
        found = [k for k in KINDS if k in present] + sorted(present - set(KINDS))
        longest[t] = {"versions": int(len(top)), "chance": float(np.mean(1.0 / sections[group[top]])),
                      "longest_share": {k: float((kinds[top] == k).mean()) for k in found}}
    return {"hedge": {"by_class": by_class, "by_judgment": by_judgment}, "longest_section": longest}


# The generator profiles whose labels/ name the families and kinds the rules need.
LABELLED_GENERATORS = ("versioned_policies", "versioned_policies_large")


def validate(cfg: dict) -> tuple[list[str], list[int], float]:
    """``experiment.*``, every profile x seed dataset and the embedder keys, before any work or write. The audit
    generates its own datasets and reads their labels/: ``dataset.path`` (an external folder) is refused, and so is
    a profile of another generator (git_history, lvl_corpus), each in one line."""
    profiles, seeds, bar = _settings(dict(cfg.get("experiment") or {}))
    check_regime(cfg)  # dataset.metadata: full only
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
    rows, details, diags = [], [], {}
    for profile, seed, ds_cfg in tqdm(jobs, desc="shortcut_audit", disable=not exp.get("progress", True), leave=False):
        folder = out_dir / "datasets" / f"{profile}_seed{seed}"
        write_dataset(params_from_config(ds_cfg), folder, overwrite=True)
        ds = load_dataset(folder)
        cos = embedder.encode(ds.queries.texts) @ embedder.encode(ds.corpus.texts).T
        a = audit(cos, ds.corpus, ds.queries, ds.labels, cues=ALL_RULES)
        test = np.asarray(ds.queries.split) == "test"
        n_fam = len(set(ds.queries.family[test].tolist()))
        base = a["rules"]["valid_cosine"]["test_top1"]
        for rule, r in a["rules"].items():
            rows.append({"profile": profile, "seed": seed, "dataset_sha256": ds.sha256, "rule": rule,
                         "kind": r.get("kind", "baseline"), "keep": "" if r["keep"] is None else "|".join(r["keep"]),
                         "dev_top1": round(r["dev_top1"], 6), "test_top1": round(r["test_top1"], 6),
                         "test_gain": round(r["test_top1"] - base, 6), "n_test": int(test.sum()),
                         "n_test_families": n_fam})
        kept = {rule: {k: v for k, v in r.items() if k not in ("features", "params")} for rule, r in a["rules"].items()}
        details.append({"profile": profile, "seed": seed, "dataset_sha256": ds.sha256,
                        "reachable": a["reachable"], "rules": kept})
        diags.setdefault(profile, {})[str(seed)] = diagnostics(ds.corpus, ds.queries, ds.labels)
    frame = pd.DataFrame(rows, columns=list(CSV_FIELDS))
    result = {
        "schema_version": SCHEMA_VERSION,
        "experiment": {"name": "shortcut_audit", "profiles": profiles, "seeds": seeds,
                       "surface_cues": list(SURFACE_CUES), "trust_cues": list(TRUST_CUES),
                       "learned_rules": list(LEARNED_RULES), "metadata_cues": list(METADATA_CUES),
                       "hedge_lexicon": list(HEDGE_LEXICON), "certainty_lexicon": list(CERTAINTY_LEXICON),
                       "newest_created_top_m": ["all" if m is None else m for m in NEWEST_TOP_M],
                       "surface_gbm": {"model": "sklearn HistGradientBoostingClassifier", "features": list(FEATURES),
                                       "params": GBM_PARAMS, "pool": GBM_POOL, "leaf_grid": list(GBM_LEAF_GRID),
                                       "folds": GBM_FOLDS,
                                       "permutation_repeats": PERMUTATION_REPEATS,
                                       "permutation_queries": PERMUTATION_QUERIES}},
        "embedder": embedder.model_id,
        "summary": summarise(frame, bar),
        "runs": details,
        "diagnostics": diags,
        "provenance": provenance(cfg),
    }
    atomic_write_text(out_dir / "shortcut_audit.csv", frame.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(out_dir / "table.md", render(result))
    atomic_write_json(out_dir / "shortcut_audit.json", result)
    return result
