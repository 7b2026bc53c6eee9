"""Small synthetic per-query outcomes for the tests of the claims table's verdict rules
(smartvector_bench/core/evaluation/verdicts.py), tests/test_verdicts_*.py; also used by tests/test_claims_sections.py.

Outcomes are built so that the paired tests are clear-cut: "system X answers the first k of the 8 queries of
each family", so a difference has the same sign in every (seed, family) cluster (p = 2 / (N + 1) with N random
sign patterns) or in a single cluster (p ~ 1)."""

from __future__ import annotations

import pandas as pd

N = 200          # sign patterns: the smallest p is 2 / 201 ~ 0.00995
B = 200          # bootstrap resamples
FAST = {"n_resamples": N}
SEEDS = (1, 2, 3, 4, 5)
FAMILIES, PER_FAMILY = 6, 8


def complete(jobs: int = 5) -> dict:
    return {"all_complete": True, "failed": [], "missing": [],
            "jobs": {"planned": jobs, "complete": jobs, "failed": 0, "missing": 0, "skipped": 0}}


def frame(outcome, systems, seeds=SEEDS, groups=({},), job0: int = 0) -> pd.DataFrame:
    """One row per job x system x query; ``outcome(system, seed, fam, q, split, **group)`` gives the row's
    ``correct`` / ``stale`` / ``confidence`` (a missing confidence is written as "", as in queries.csv)."""
    rows, job = [], job0
    for group in groups:
        for seed in seeds:
            for system in systems:
                for split in ("dev", "test"):
                    for fam in range(FAMILIES):
                        for q in range(PER_FAMILY):
                            o = outcome(system=system, seed=seed, fam=fam, q=q, split=split, **group)
                            rows.append({"job": job, "job_dir": ",".join([f"dataset.seed={seed}"] +
                                                                          [f"{k}={v}" for k, v in group.items()]),
                                         **group, "dataset.seed": seed, "dataset_seed": seed, "system": system,
                                         "query_id": f"{split}-{fam}-{q}", "split": split, "family": f"fam{fam}",
                                         "category": "current", "correct": int(o.get("correct", 0)),
                                         "stale": int(o.get("stale", 0)), "rumor": 0,
                                         "confidence": o.get("confidence", "")})
            job += 1
    return pd.DataFrame(rows)


def first(k: dict):
    """``system`` answers the first ``k[system]`` queries of every family."""
    return lambda system, q, **_: {"correct": q < k[system]}
