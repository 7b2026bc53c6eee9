"""A factorial scenario design: which families get which scenario feature, each feature drawn on its own.

A reviewer of benchmark v2 found its scenarios confounded: the "recent" families were exactly the
"announced" ones, announced families never had rumors and rumor families had nothing but rumors, so a
per-category figure measured the generator's coupling, not a system. Here every feature has its own rate:

- ``recent``: the latest change took effect within ``recent_days`` of now (``recent_fraction``);
- ``announced``: the latest change is announced by a message before the policy is revised
  (``early_announcement_rate``);
- ``rumors``: ``rumors_per_family`` injected rumors (``contradiction_rate``);
- ``confirmations``: ``confirmations_per_family`` messages confirming the value then in force
  (``confirmation_rate``);
- ``notes``: ``notes_per_family`` messages on the topic that state no value (``note_rate``);
- ``lagging``: the runbook's last revision kept the old value (``lagging_source_rate`` of the runbook families
  with two or more versions);

beside ``versions`` and ``runbook``, which are dealt by the family's place in the seeded order. Each feature
goes to exactly ``round(rate x eligible)`` families, so the number of vectors and queries depends on the
config only. Which ones is a *balanced* random draw: of :data:`CANDIDATES` seeded random assignments, the one
whose largest absolute correlation with the features already drawn is smallest (restricted randomisation, as
in a designed experiment), so that no feature predicts another over the families.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import FamilySpec, seeded_rng

CANDIDATES = 256
FEATURES = ("versions", "runbook", "recent", "announced", "rumors", "confirmations", "notes", "lagging")
# lagging is drawn among runbook families only: its link to `runbook` is by definition, not a confound
STRUCTURAL = {frozenset(("lagging", "runbook"))}


@dataclass
class FamilyPlan:
    spec: FamilySpec
    n_versions: int  # published policy versions
    has_runbook: bool
    n_rumors: int
    recent: bool  # the latest change took effect within recent_days of now
    announced: bool  # the latest change is announced by a message and not yet in the policy document
    lagging: bool  # the runbook's last revision kept the old value
    n_confirmations: int = 0
    n_notes: int = 0

    def features(self) -> dict[str, float]:
        """The scenario features as numbers (labels/families.jsonl and the correlation check)."""
        return {"versions": float(self.n_versions), "runbook": float(self.has_runbook), "recent": float(self.recent),
                "announced": float(self.announced), "rumors": float(self.n_rumors > 0),
                "confirmations": float(self.n_confirmations > 0), "notes": float(self.n_notes > 0),
                "lagging": float(self.lagging)}


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation; 0 when either feature is constant (a constant predicts nothing)."""
    if a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def balanced_draw(rng: np.random.Generator, eligible: np.ndarray, n_pick: int, drawn: dict[str, np.ndarray],
                  name: str) -> np.ndarray:
    """``n_pick`` of the ``eligible`` families, the least correlated with ``drawn`` of CANDIDATES draws."""
    idx = np.nonzero(eligible)[0]
    n_pick = min(n_pick, len(idx))
    others = [v for k, v in drawn.items() if frozenset((k, name)) not in STRUCTURAL]
    best, best_score = None, np.inf
    for _ in range(CANDIDATES):
        pick = np.zeros(len(eligible), dtype=bool)
        pick[rng.permutation(idx)[:n_pick]] = True
        score = max((abs(correlation(pick.astype(float), o)) for o in others), default=0.0)
        if score < best_score - 1e-12:
            best, best_score = pick, score
    return best


def plan_families(p, specs: list[FamilySpec]) -> list[FamilyPlan]:
    """One plan per family (module docstring); ``p`` is the generator's parameters."""
    n = len(specs)
    versions = np.array([p.versions[i % len(p.versions)] for i in range(n)])
    runbook = np.arange(n) < int(round(p.runbook_fraction * n))
    drawn: dict[str, np.ndarray] = {"versions": versions.astype(float), "runbook": runbook.astype(float)}
    everyone = np.ones(n, dtype=bool)
    rates = (("recent", everyone, p.recent_fraction), ("announced", everyone, p.early_announcement_rate),
             ("rumors", everyone, p.contradiction_rate), ("confirmations", everyone, p.confirmation_rate),
             ("notes", everyone, p.note_rate), ("lagging", runbook & (versions >= 2), p.lagging_source_rate))
    out: dict[str, np.ndarray] = {}
    for name, eligible, rate in rates:
        rng = seeded_rng(p.seed, "scenario", name)
        out[name] = balanced_draw(rng, eligible, int(round(rate * eligible.sum())), drawn, name)
        drawn[name] = out[name].astype(float)
    return [FamilyPlan(spec, int(versions[i]), bool(runbook[i]), p.rumors_per_family * int(out["rumors"][i]),
                       bool(out["recent"][i]), bool(out["announced"][i]), bool(out["lagging"][i]),
                       p.confirmations_per_family * int(out["confirmations"][i]), p.notes_per_family * int(out["notes"][i]))
            for i, spec in enumerate(specs)]


def feature_correlations(plans: list[FamilyPlan]) -> dict[str, float]:
    """Pairwise correlation of the scenario features over the families ("a|b" -> r), structural pairs aside."""
    cols = {k: np.array([pl.features()[k] for pl in plans]) for k in FEATURES}
    return {f"{a}|{b}": round(correlation(cols[a], cols[b]), 6) for i, a in enumerate(FEATURES)
            for b in FEATURES[i + 1:] if frozenset((a, b)) not in STRUCTURAL}
