"""Shared by tests/test_claims_sections.py, tests/test_claims_readme.py and tests/test_claims_prose.py:
paper_figures/claims.py loaded as a module, and the committed result files, copied and mutated (claims.py loads
each through its result class, which validates it; a malformed one is a one-line error naming file and key)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("claims", REPO / "paper_figures" / "claims.py")
claims = importlib.util.module_from_spec(spec)
spec.loader.exec_module(claims)


# -- result files: the committed ones, copied and mutated --------------------------------------------------------
# claims.py loads each file through its result class, which validates it; so every fixture starts from the
# committed file (complete) and changes only what a test is about.

RESULTS = REPO / "results"
# test top-1 of the systems the claims quote, and the McNemar / cluster permutation p of smartvector
TOP1 = {"plain_cosine": 0.229, "valid_cosine": 0.571, "smartvector": 0.271}


def committed(rel: str) -> dict:
    return json.loads((RESULTS / rel).read_text(encoding="utf-8"))


def metrics(large: bool = False) -> dict:
    """A profile's committed metrics.json with the quoted systems' top-1 (and +-8 point intervals) set to TOP1."""
    m = committed("main_large/metrics.json" if large else "main/metrics.json")
    for name, top1 in TOP1.items():
        for sm in m["systems"][name].values():
            sm.update({"top1": top1, "top1_ci": [round(top1 - 0.08, 6), round(top1 + 0.08, 6)]})
            if name == "smartvector":
                sm.update(mcnemar_p=0.7, permutation_p=0.75)
    return m


def sweep_summary(preset: str, jobs: int | None = None, failed: int = 0, results: dict | None = None) -> dict:
    """The committed summary.json of a sweep preset; ``jobs`` planned (``failed`` of them failed, the rest
    complete) and ``results`` replaced if given."""
    doc = committed(f"{preset}/summary.json")
    if jobs is not None:
        doc.update(jobs={"planned": jobs, "complete": jobs - failed, "failed": failed, "missing": 0, "skipped": 0},
                   all_complete=failed == 0, missing=[], unplanned_folders=[],
                   failed=[{"job": i, "job_dir": f"multirun/{preset}/{i}", "overrides": "", "note": "failed"}
                           for i in range(failed)])
    if results is not None:
        doc["results"] = results
    return doc


def seeds_summary(systems=("plain_cosine", "valid_cosine", "smartvector", "oracle")) -> dict:
    def stat(m):
        return {"mean": m, "sd": 0.03, "n": 3, "per_seed": {"1": m, "2": m, "3": m}}

    return sweep_summary("seeds", 3, results={
        "seeds": [1, 2, 3], "metrics": ["top1", "stale_rate", "rumor_rate", "ece"],
        "systems": {s: {"test": {k: stat(0.1 + 0.1 * i) for k in ("top1", "stale_rate", "rumor_rate", "ece")}}
                    for i, s in enumerate(systems)}})


def audit_json() -> dict:
    import pandas as pd
    from experiments.shortcut_audit import CSV_FIELDS, summarise

    rows = []
    for profile in ("versioned_policies", "versioned_policies_large"):
        for seed in (1, 2):
            base = 0.25 + 0.01 * seed
            for rule, kind, gain in (("valid_cosine", "baseline", 0.0), ("has_digit", "surface", 0.0),
                                     ("kind", "surface", 0.2), ("source", "trust", -0.05)):
                rows.append({"profile": profile, "seed": seed, "dataset_sha256": "x", "rule": rule, "kind": kind,
                             "keep": "", "dev_top1": base, "test_top1": base + gain, "test_gain": gain, "n_test": 70,
                             "n_test_families": 6})
    frame = pd.DataFrame(rows, columns=list(CSV_FIELDS))
    return {"schema_version": "2.0", "experiment": {"name": "shortcut_audit", "seeds": [1, 2],
                                                    "profiles": ["versioned_policies", "versioned_policies_large"]},
            "summary": summarise(frame, 0.05), "runs": []}


def write(root: Path, rel: str, obj) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2), encoding="utf-8")
    return path
