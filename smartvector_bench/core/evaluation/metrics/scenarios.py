"""What each scenario feature costs each system: top-1 with and without the feature, over test families.

The generator draws its scenario features (recent change, early announcement, rumors, confirmations,
notes, lagging runbook, versions) independently per family (``data_gen.scenarios``), so a feature's effect
on a system can be read off a comparison of families with and without it:

- ``effect`` = top-1 over the queries of families with the feature minus top-1 over those without;
- ``effect_vs_baseline`` = the same difference of the *paired* per-query gap ``correct_S - correct_baseline``
  (both systems on the same queries): whether the feature costs the system more than it costs the baseline.

Each has a two-sided permutation p-value (``scipy.stats.permutation_test``, ``permutation_type="independent"``)
that reassigns the feature among the eligible families, so families, not queries, are the unit. A feature
with fewer than :data:`MIN_FAMILIES` families on either side gets no test (``p = None``).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import permutation_test

from .clustered import _SEED_KW

MIN_FAMILIES = 2
# feature -> (label, test on the family's scenario dict, eligible families)
FEATURES = {
    "recent": ("latest change within recent_days", lambda s: bool(s.get("recent")), lambda s: True),
    "announced": ("change announced before the policy is revised", lambda s: bool(s.get("announced")),
                  lambda s: True),
    "rumors": ("injected rumors", lambda s: int(s.get("rumors", 0)) > 0, lambda s: True),
    "confirmations": ("confirming messages", lambda s: int(s.get("confirmations", 0)) > 0, lambda s: True),
    "notes": ("notes without a value", lambda s: int(s.get("notes", 0)) > 0, lambda s: True),
    "lagging": ("runbook lags the policy", lambda s: bool(s.get("lagging")),
                lambda s: bool(s.get("runbook")) and int(s.get("versions", 0)) >= 2),
    "many_versions": ("3+ policy versions", lambda s: int(s.get("versions", 0)) >= 3, lambda s: True),
}


def _family_totals(values: np.ndarray, families: np.ndarray, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    index = {f: i for i, f in enumerate(names)}
    codes = np.array([index[f] for f in families], dtype=np.int64)
    sums = np.bincount(codes, weights=values.astype(np.float64), minlength=len(names))
    counts = np.bincount(codes, minlength=len(names)).astype(np.float64)
    return sums, counts


def difference_by_family(values: np.ndarray, families: np.ndarray, with_feature: dict[str, bool],
                         n_resamples: int = 2000, seed: int = 0) -> dict:
    """Mean of ``values`` over the queries of families with the feature minus over those without, and its
    permutation p-value (families reassigned). Families absent from ``with_feature`` are left out."""
    keep = np.array([f in with_feature for f in families], dtype=bool)
    values, families = values[keep], families[keep]
    names = sorted(set(families.tolist()))
    sums, counts = _family_totals(values, families, names)
    on = np.array([with_feature[f] for f in names], dtype=bool)
    out = {"with": None, "without": None, "effect": None, "p": None, "families_with": int(on.sum()),
           "families_without": int((~on).sum()), "queries_with": int(counts[on].sum()),
           "queries_without": int(counts[~on].sum())}
    if on.any():
        out["with"] = float(sums[on].sum() / counts[on].sum())
    if (~on).any():
        out["without"] = float(sums[~on].sum() / counts[~on].sum())
    if out["with"] is None or out["without"] is None:
        return out
    out["effect"] = out["with"] - out["without"]
    if on.sum() < MIN_FAMILIES or (~on).sum() < MIN_FAMILIES:
        return out
    idx = np.arange(len(names))

    def statistic(x, y, axis=-1):
        x, y = x.astype(np.int64), y.astype(np.int64)
        return sums[x].sum(axis=axis) / counts[x].sum(axis=axis) - sums[y].sum(axis=axis) / counts[y].sum(axis=axis)

    res = permutation_test((idx[on].astype(float), idx[~on].astype(float)), statistic, vectorized=True,
                           permutation_type="independent", n_resamples=n_resamples, alternative="two-sided",
                           **{_SEED_KW: seed})
    out["p"] = float(res.pvalue)
    return out


def scenario_effects(correct: dict[str, np.ndarray], families: np.ndarray, scenarios: dict[str, dict],
                     baseline: str | None, n_resamples: int = 2000, seed: int = 0) -> dict:
    """Per feature and system: top-1 with / without, the effect and its p-value, and the effect on the paired
    gap to ``baseline`` (when it ran). ``correct`` holds per-query top-1 correctness of the queries whose
    families are ``families``; ``scenarios`` maps each family to its ``labels/families.jsonl`` scenario."""
    out: dict = {}
    for feature, (label, has, eligible) in FEATURES.items():
        flags = {f: has(s) for f, s in scenarios.items() if eligible(s)}
        if not flags:
            continue
        rows = {}
        for name, c in correct.items():
            c = np.asarray(c, dtype=np.float64)
            row = difference_by_family(c, families, flags, n_resamples, seed)
            if baseline in correct and name != baseline:
                gap = difference_by_family(c - np.asarray(correct[baseline], dtype=np.float64), families, flags,
                                           n_resamples, seed)
                row["effect_vs_baseline"], row["p_vs_baseline"] = gap["effect"], gap["p"]
            rows[name] = row
        out[feature] = {"label": label, "systems": rows}
    return out
