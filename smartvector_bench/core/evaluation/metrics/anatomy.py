"""Error anatomy: why a wrong top-1 is wrong, from the ground-truth labels and the evaluator's (true) corpus times.

Every query's top-1 is ``correct`` (as judged by the evaluator) or a miss of exactly one class. The classes are
mutually exclusive and decided in this precedence order (the first that holds wins; :data:`CLASSES`):

1. ``no_result``: the system returned nothing for the query;
2. ``other_family``: the top-1 chunk's family differs from the query's (a chunk of no family, ``""``, included):
   a semantic miss;
3. ``rumor``: the top-1 is in the query's rumor set (``queries.rumor``);
4. ``non_answer``: same family, but the chunk states no value (``labels.chunk_value`` NaN: a scope, procedure,
   contacts, ... section);
5. ``lagging_source``: in the query's stale set (``queries.stale``) and in force at ``as_of``
   (``created_at <= as_of`` and ``valid_from <= as_of < valid_to``): a source whose current version still
   states an old value;
6. ``superseded_version``: in the stale set, not in force at ``as_of``;
7. ``not_in_force``: not in force at ``as_of``, not stale (an announced future value, an old version stating a
   value that is right again, ...);
8. ``other``: any remaining miss (e.g. a same-family message stating a value that is neither rumor nor
   relevant), so the classes partition the misses.

"Same family" and "not stale" in 4-8 follow from the precedence (2 and 5-6 came first).

What a dataset cannot tell (:func:`gaps`): the chunk and query families, the rumor sets, the stale sets and the
chunk values each come from ``labels/``. A class that needs an unknown input is never assigned: it is None in
the summary with the reason under ``not_measured`` (:mod:`smartvector_bench.core.evaluation.measured`'s convention), and
the precedence skips it. ``no_result`` and ``not_in_force`` need only the corpus times, so they are always
measured; without the families (or the stale sets) ``not_in_force`` then counts every wrong top-1 not in force
that no earlier measured class took. ``other`` needs every input (it is the remainder of all the classes), so a
miss that no measured class takes is ``unclassified`` (counted in ``n_unclassified``; 0 with full labels).

Version accuracy given the right family (``version_accuracy_given_family``) is P(top-1 correct | the top-1
chunk is of the query's family) = correct / (correct + same-family misses), a ratio estimator whose interval is
a cluster bootstrap of the ratio (``cluster_bootstrap_ratio_ci``); None without the families, or when no top-1 is of
its query's family. Shares are of all the split's queries, with percentile cluster-bootstrap intervals over the
query families, the same ``n_boot`` / ``seed`` for every class and system (paired). Floats are rounded to 6
decimals, NaN becomes None, as in the evaluator.
"""

from __future__ import annotations

import math

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.evaluation.metrics.clustered import cluster_bootstrap_mean_ci, cluster_bootstrap_ratio_ci

CLASSES = ("no_result", "other_family", "rumor", "non_answer", "lagging_source", "superseded_version",
           "not_in_force", "other")
CORRECT = "correct"
UNCLASSIFIED = "unclassified"
VERSION_ACCURACY = "version_accuracy_given_family"
NOT_MEASURED = "not_measured"  # measured.KEY (not imported: measured imports the dataset package)
INPUTS = ("family", "rumor", "value", "stale")
# What each class needs from the labels besides the corpus times (the module docstring).
NEEDS = {"no_result": (), "other_family": ("family",), "rumor": ("rumor",), "non_answer": ("family", "value"),
         "lagging_source": ("stale",), "superseded_version": ("stale",), "not_in_force": (), "other": INPUTS}
DECIMALS = 6


def _r(x) -> float | None:
    if x is None or math.isnan(float(x)):
        return None
    return round(float(x), DECIMALS)


def gaps(labels, unmeasured: dict[str, str] | None = None) -> dict[str, str]:
    """``{input: reason}`` for the inputs of :data:`INPUTS` the dataset lacks ({} for a generated dataset).

    ``labels``: the dataset's ``Labels`` or None; ``unmeasured``: its ``measured.unmeasured`` (the stale and
    rumor reasons are taken from it, so every file prints the same words)."""
    unmeasured = unmeasured or {}
    out: dict[str, str] = {}
    stale, rumor = unmeasured.get(M.STALE_RATE), unmeasured.get(M.RUMOR_RATE)
    if labels is None:
        return {"family": "no labels/ folder: the chunk and query families are unknown",
                "rumor": rumor or "no labels/ folder: the rumor sets are unknown",
                "value": "no labels/ folder: the values the chunks state are unknown",
                "stale": stale or "no labels/ folder: the stale sets are unknown"}
    if not (np.asarray(labels.chunk_family, dtype=object) != "").any():
        out["family"] = "labels/ gives no chunk a family: the chunk families are unknown"
    elif stale:  # measured's reason "<gap>: the stale sets are unknown": no labels/queries.jsonl, no query family
        out["family"] = f"{stale.partition(': ')[0]}: the query families are unknown"
    if rumor:
        out["rumor"] = rumor
    if np.isnan(np.asarray(labels.chunk_value, dtype=np.float64)).all():
        out["value"] = "labels/ gives no chunk a value: the values the chunks state are unknown"
    if stale:
        out["stale"] = stale
    return out


def not_measured(missing: dict[str, str]) -> dict[str, str]:
    """``{class or version_accuracy_given_family: reason}`` of what :func:`gaps`' ``missing`` inputs leave
    unmeasured (the reason of the first missing input a class needs)."""
    out = {c: missing[next(x for x in NEEDS[c] if x in missing)] for c in CLASSES
           if any(x in missing for x in NEEDS[c])}
    if "family" in missing:
        out[VERSION_ACCURACY] = missing["family"]
    return out


def miss_classes(top1, correct, query_family, as_of, stale: Ragged | None, rumor: Ragged | None, chunk_family,
                 chunk_value, created_at, valid_from, valid_to) -> np.ndarray:
    """Per query, ``"correct"`` or its miss class (module docstring), as an object array.

    ``top1``: the top-1 corpus row per query (-1: no result); ``correct``: the evaluator's judgment; ``query_family``
    and ``as_of`` per query; ``stale`` / ``rumor`` the per-query sets; ``chunk_family``, ``chunk_value`` and the
    corpus times per corpus row. An input the dataset lacks is None (``query_family`` / ``chunk_family`` together):
    the classes that need it are skipped (``unclassified`` where no measured class holds)."""
    top1 = np.asarray(top1, dtype=np.int64)
    correct = np.asarray(correct, dtype=bool)
    as_of = np.asarray(as_of, dtype=np.float64)
    n = len(top1)
    has = top1 >= 0
    t = np.where(has, top1, 0)  # a safe index; rows without a result are decided by no_result first
    created, start, end = (np.asarray(a, dtype=np.float64)[t] for a in (created_at, valid_from, valid_to))
    in_force = has & (created <= as_of) & (start <= as_of) & (as_of < end)
    known = {"family": query_family is not None and chunk_family is not None, "rumor": rumor is not None,
             "value": chunk_value is not None, "stale": stale is not None}
    never = np.zeros(n, dtype=bool)

    def member(sets: Ragged | None) -> np.ndarray:
        return never if sets is None or not n else has & sets.contains(t)

    same = (np.asarray(chunk_family, dtype=object)[t] == np.asarray(query_family, dtype=object)
            if known["family"] else ~never)
    states_none = np.isnan(np.asarray(chunk_value, dtype=np.float64)[t]) if known["value"] else never
    in_stale = member(stale)
    holds = {"no_result": ~has, "other_family": ~same, "rumor": member(rumor), "non_answer": states_none,
             "lagging_source": in_stale & in_force, "superseded_version": in_stale & ~in_force,
             "not_in_force": ~in_force, "other": ~never}
    out = np.full(n, UNCLASSIFIED, dtype=object)
    out[correct] = CORRECT
    left = ~correct
    for name in CLASSES:
        if all(known[x] for x in NEEDS[name]):
            hit = left & holds[name]
            out[hit] = name
            left &= ~hit
    return out


def _ratio(correct: np.ndarray, same: np.ndarray) -> float:
    total = same.sum()
    return float(correct.sum() / total) if total else float("nan")


def anatomy_summary(classes, clusters, n_boot: int = 1000, seed: int = 0,
                    unmeasured: dict[str, str] | None = None) -> dict:
    """The anatomy of one split from :func:`miss_classes`' ``classes`` (its rows) and their ``clusters`` (the
    query families): per class ``{count, share, share_ci}`` (share of all the split's queries; None for a class in
    ``unmeasured``, :func:`not_measured`), ``n_misses``, ``n_unclassified``, ``version_accuracy_given_family`` and
    its ``_ci``, and ``not_measured`` when something was not measured."""
    classes = np.asarray(classes, dtype=object)
    skip = dict(unmeasured or {})
    boot = {"n_boot": n_boot, "seed": seed}
    out: dict = {}
    for name in CLASSES:
        if name in skip:
            out[name] = None
            continue
        hit = classes == name
        lo, hi = cluster_bootstrap_mean_ci(hit, clusters, **boot) if len(hit) else (math.nan, math.nan)
        out[name] = {"count": int(hit.sum()), "share": _r(hit.mean()) if len(hit) else None,
                     "share_ci": [_r(lo), _r(hi)]}
    correct = classes == CORRECT
    out["n_misses"] = int((~correct).sum())
    out["n_unclassified"] = int((classes == UNCLASSIFIED).sum())
    value, ci = None, [None, None]
    if VERSION_ACCURACY not in skip:
        # with the families known, every miss that is neither no_result nor other_family is of the query's family
        same = correct | ~np.isin(classes, ["no_result", "other_family"])
        if same.any():
            value = _r(_ratio(correct, same))
            ci = [_r(b) for b in cluster_bootstrap_ratio_ci(correct, same, clusters, **boot)]
        else:
            skip[VERSION_ACCURACY] = "no top-1 is of its query's family"
    out[VERSION_ACCURACY], out[M.ci(VERSION_ACCURACY)] = value, ci
    if skip:
        out[NOT_MEASURED] = skip
    return out


def split_anatomy(classes, clusters, n_boot: int, seed: int, missing: dict[str, str]) -> dict:
    """The entries :func:`anatomy_summary` adds to an evaluator split dict: ``anatomy``, and its version accuracy
    as ``version_accuracy`` with ``version_accuracy_ci`` (when None, the reason is ``anatomy.not_measured``'s)."""
    a = anatomy_summary(classes, clusters, n_boot=n_boot, seed=seed, unmeasured=not_measured(missing))
    return {M.ANATOMY: a, M.VERSION_ACCURACY: a[VERSION_ACCURACY], M.ci(M.VERSION_ACCURACY): a[M.ci(VERSION_ACCURACY)]}


def run_classes(top1, correct, queries, corpus, labels, missing: dict[str, str]) -> np.ndarray:
    """:func:`miss_classes` of one run over all ``queries``, with the evaluator's ``corpus`` times (never a
    retriever's) and the inputs ``missing`` (:func:`gaps`) names passed as unknown."""
    fam = "family" not in missing and labels is not None
    return miss_classes(top1, correct, labels.query_family if fam else None, queries.as_of,
                        None if "stale" in missing else queries.stale, None if "rumor" in missing else queries.rumor,
                        labels.chunk_family if fam else None,
                        labels.chunk_value if "value" not in missing and labels is not None else None,
                        corpus.created_at, corpus.valid_from, corpus.valid_to)
