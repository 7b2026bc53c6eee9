"""Dev / test splits by family: no family, hence no relevant chunk, is in both."""

from __future__ import annotations

import numpy as np

CATEGORY_ORDER = ("current", "recently_updated", "contested", "dependent", "historical")


def assign_family_splits(queries: list, test_fraction: float, rng: np.random.Generator) -> None:
    """Set ``q.split`` on every query (objects with ``family``, ``category``, ``split``): round(n_families *
    test_fraction) whole families in test, chosen so that each category's test share is as close as possible to
    test_fraction: a seeded start, then pairwise swaps while they reduce the squared imbalance."""
    fams = sorted({q.family for q in queries})
    fams = [fams[int(i)] for i in rng.permutation(len(fams))]
    counts = np.zeros((len(fams), len(CATEGORY_ORDER)))
    col = {c: i for i, c in enumerate(CATEGORY_ORDER)}
    row = {f: i for i, f in enumerate(fams)}
    for q in queries:
        counts[row[q.family], col[q.category]] += 1
    target = counts.sum(axis=0) * test_fraction
    n_test = int(round(len(fams) * test_fraction))
    test = np.zeros(len(fams), dtype=bool)
    test[:n_test] = True

    def cost(mask: np.ndarray) -> float:
        return float(((counts[mask].sum(axis=0) - target) ** 2).sum())

    best = cost(test)
    improved = True
    while improved:
        improved = False
        for a in np.nonzero(test)[0].tolist():
            for b in np.nonzero(~test)[0].tolist():
                trial = test.copy()
                trial[a], trial[b] = False, True
                c = cost(trial)
                if c < best - 1e-9:
                    test, best, improved = trial, c, True
                    break
            if improved:
                break
    split_of = {f: ("test" if test[row[f]] else "dev") for f in fams}
    for q in queries:
        q.split = split_of[q.family]


def shuffle_and_number(queries: list, seed: int) -> list:
    """``queries`` in a seeded order (``[seed, 4]``: no category or source shows in the ids), each given its id
    ``q0001``, ``q0002``, ... (at least four digits)."""
    order = np.random.default_rng([seed, 4]).permutation(len(queries)).tolist()
    queries = [queries[k] for k in order]
    width = max(4, len(str(len(queries))))
    for n, q in enumerate(queries, 1):
        q.id = f"q{n:0{width}d}"
    return queries
