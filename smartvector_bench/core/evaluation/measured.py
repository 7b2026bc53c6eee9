"""What a dataset lets the evaluator measure, and why not: decided once from the loaded dataset, stored in
metrics.json beside the figures, and read back by every consumer (tables, report, claims, figures), so all of
them print the same words.

* ``systems.<system>.<split>.not_measured``: ``{metric: reason}`` for each metric whose inputs the dataset
  lacks. That metric is null, its interval ``[null, null]`` and its by-category figures null: a number that
  was never measured is never 0. The stale and rumor rates need the stale / rumor sets of
  ``labels/queries.jsonl``; leakage@10 needs every chunk's validity window (``metadata.valid_from`` or
  ``created_at``: without one a chunk is in force for all time and can never leak).
* ``dataset.clusters``: present when no two queries share a family (no ``labels/``, no families in it, or
  every family of one query). Intervals and permutation p-values are then per query (each query its own
  cluster), and the power analysis's intra-family correlation is null (``power.not_measured``). They are kept,
  not nulled: a per-query bootstrap is a real measurement under the stated assumption that queries are
  independent (the one McNemar makes anyway), and it is named as such wherever an interval is shown.

Both keys are left out when everything was measured (every generated dataset), so results written before them
are unchanged.
"""

from __future__ import annotations

from smartvector_bench.core.dataset import Dataset
from smartvector_bench.core.dataset.read import path_kind
from smartvector_bench.core.evaluation.metrics import names as M

KEY = "not_measured"  # the split's (and power's) {metric: reason}
CLUSTERS = "clusters"  # dataset.clusters: why the intervals are per query
TEXT = "not measured"  # what a table cell, a figure's label or a verdict says instead of a number
LABEL_METRICS = (M.STALE_RATE, M.RUMOR_RATE)
ICC = "icc"


def label_gap(dataset: Dataset) -> str | None:
    """Why the dataset has no per-query stale / rumor sets (None when ``labels/queries.jsonl`` gives them)."""
    if dataset.labels is None:
        return "no labels/ folder"
    if path_kind(dataset.path / "labels" / "queries.jsonl") == "missing":  # the loader's test for an absent file
        return "labels/ has no queries.jsonl"
    return None


def unmeasured(dataset: Dataset) -> dict[str, str]:
    """``{metric: reason}`` of the split metrics this dataset cannot measure (empty for a generated dataset)."""
    out = {}
    gap = label_gap(dataset)
    if gap:
        out[M.STALE_RATE] = f"{gap}: the stale sets are unknown"
        out[M.RUMOR_RATE] = f"{gap}: the rumor sets are unknown"
    if "valid_from" not in dataset.corpus.present:  # the loader adds it when every chunk has a window start
        out[M.LEAKAGE_AT_10] = ("corpus.jsonl does not give every chunk metadata.valid_from or created_at: the "
                                "validity windows are unknown")
    return out


def per_query_clusters(dataset: Dataset) -> str | None:
    """Why every query is its own cluster (None when some family holds two or more queries)."""
    q = dataset.queries
    if len(set(q.family.tolist())) < len(q):
        return None
    gap = label_gap(dataset)
    if gap is None:
        gap = ("labels/queries.jsonl gives no family" if all(str(f) == i for f, i in zip(q.family, q.ids))
               else "every family holds one query")
    return (f"per query: {gap}, so each query is its own cluster; intervals and permutation p-values treat the "
            "queries as independent")


def reason(m: dict | None, key: str) -> str | None:
    """The stored reason ``key`` of a split (or power) dict was not measured, or None."""
    return ((m or {}).get(KEY) or {}).get(key)


def reasons(m: dict | None) -> dict[str, str]:
    return dict((m or {}).get(KEY) or {})


def clusters_note(metrics: dict) -> str | None:
    """``dataset.clusters`` of a metrics dict: why its intervals are per query, or None (over families)."""
    return (metrics.get("dataset") or {}).get(CLUSTERS)
