"""metrics.json of experiment=main (and of every job of a sweep built on it): :class:`MainMetrics`, and its
rows of system x split (:func:`system_rows`), which the sweep collector's tidy.csv and the pandas loader share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smartvector_bench.core import SCHEMA_VERSION

from smartvector_bench.core.evaluation import measured
from smartvector_bench.core.evaluation.metrics import anatomy as A
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results.base import ResultFile, check, check_type, get_path, optional

SPLITS = ("dev", "test")
# tidy.csv's result columns, in order (a metric's interval as <metric>_lo / _hi)
RESULT_COLUMNS = ((("system", "split", M.N_QUERIES))
                  + tuple(c for m in M.CI_METRICS for c in (m, M.lo(m), M.hi(m)))
                  + (*M.P_VALUES, "dataset_sha256", "dataset_seed", "git_sha", "config_sha256"))


@dataclass
class MainMetrics(ResultFile):
    """One run of experiment=main: per system and split the evaluator's metrics with their intervals, power,
    calibration, what each system reported about itself, and provenance."""

    KIND = "main"
    FILE = "metrics.json"
    SCHEMA_VERSIONS = (SCHEMA_VERSION,)

    schema_version: str
    dataset: dict
    embedder: str
    experiment: dict
    systems: dict                   # system -> split -> metrics (evaluator.evaluate_split)
    power: dict
    calibration: dict               # system -> method -> calibration_report
    system_info: dict               # system -> its describe()
    provenance: dict
    timings_s: dict                 # wall time, informational
    skipped_systems: dict | None = optional()   # systems: all, and the dataset could not serve these
    resources: dict | None = optional()         # peak memory, informational (files before it have none)
    scenarios: dict | None = optional()         # test top-1 by scenario feature (core/evaluation/metrics/scenarios.py)

    def _check(self, where: str) -> None:
        for key in ("sha256", "n_queries", "n_vectors"):
            get_path(self.dataset, (key,), where, str if key == "sha256" else int, field="dataset")
        if measured.CLUSTERS in self.dataset:  # why the intervals are per query
            get_path(self.dataset, (measured.CLUSTERS,), where, str, field="dataset")
        check(self.experiment.get("name") == "main", where, "experiment.name",
              f"{self.experiment.get('name')!r}, expected 'main'")
        check(bool(self.systems), where, "systems", "no system")
        for system, per_split in self.systems.items():
            check_type(per_split, dict, where, f"systems.{system}")
            for split, m in per_split.items():
                at = f"systems.{system}.{split}"
                check_type(m, dict, where, at)
                check_type(m.get(M.N_QUERIES), int, where, f"{at}.{M.N_QUERIES}")
                skip = _not_measured(m, where, at)
                for name in M.CI_METRICS:
                    if name not in m and name not in M.ALWAYS and name not in skip:
                        continue
                    check(name in m, where, f"{at}.{name}", "missing")
                    check_type(m[name], float, where, f"{at}.{name}", allow_none=True)
                    ci = m.get(M.ci(name))
                    check(isinstance(ci, list) and len(ci) == 2, where, f"{at}.{M.ci(name)}",
                          f"expected [lo, hi], got {ci!r}")
                    if name in skip:  # never measured: no number may stand in for it
                        check(m[name] is None and ci == [None, None], where, f"{at}.{name}",
                              f"{m[name]!r} {ci!r}, but {at}.{measured.KEY} says it was not measured "
                              f"({skip[name]}); expected null and [null, null]")
                    else:
                        check(m[name] is not None, where, f"{at}.{name}",
                              f"null without a reason in {at}.{measured.KEY}")
                _version_accuracy(m, where, at)
                _in_unit(m, where, at)
                for cat, cm in (m.get("by_category") or {}).items():
                    check_type(cm, dict, where, f"{at}.by_category.{cat}")
                    _in_unit(cm, where, f"{at}.by_category.{cat}")
        for system, methods in self.calibration.items():
            check_type(methods, dict, where, f"calibration.{system}")
            for method, report in methods.items():
                check_type(report, dict, where, f"calibration.{system}.{method}")
                _in_unit(report, where, f"calibration.{system}.{method}")

    # -- typed reads ------------------------------------------------------------------------------------------
    def split(self, system: str, split: str = "test") -> dict:
        return self.systems[system][split]

    def metric(self, system: str, split: str, name: str) -> float | None:
        return self.systems[system][split][name]

    def interval(self, system: str, split: str, name: str) -> tuple[Any, Any]:
        lo, hi = self.systems[system][split][M.ci(name)]
        return lo, hi

    def rows(self) -> list[dict]:
        return system_rows(self.to_dict())


# Every metric stored here is a share, a mean of [0, 1] scores or a calibration error of confidences in [0, 1]; so
# is a p-value. Outside [0, 1] (a negative ECE, a stale rate of 3.2) is a corrupt or hand-edited file, no result.
UNIT_METRICS = (*M.CI_METRICS, M.BRIER, M.AUROC, *M.P_VALUES, M.VERSION_ACCURACY)


def _in_unit(m: dict, where: str, at: str) -> None:
    """The metrics of ``m`` (a split, a category, a calibration report), their calibrated figures and every
    interval bound: a number in [0, 1], or null (not measured)."""
    for name in UNIT_METRICS:
        for key in (name, M.calibrated(name)):
            ci = m.get(M.ci(key))
            pairs = [(key, m.get(key))] + [(f"{M.ci(key)}[{i}]", v) for i, v in
                                           enumerate(ci if isinstance(ci, list) else [])]
            for k, v in pairs:
                check_type(v, float, where, f"{at}.{k}", allow_none=True)
                check(v is None or 0.0 <= v <= 1.0, where, f"{at}.{k}", f"{v} is outside [0, 1]")


def _not_measured(m: dict, where: str, at: str) -> dict[str, str]:
    """A split's ``not_measured`` (``{metric: reason}``, :mod:`smartvector_bench.core.evaluation.measured`), checked; {}
    when absent (everything measured)."""
    skip = m.get(measured.KEY)
    if skip is None:
        return {}
    key = f"{at}.{measured.KEY}"
    check(isinstance(skip, dict) and bool(skip), where, key, f"expected {{metric: reason}}, got {skip!r}")
    for name, why in skip.items():
        check(name in M.CI_METRICS, where, f"{key}.{name}", f"unknown metric (known: {', '.join(M.CI_METRICS)})")
        check(isinstance(why, str) and bool(why.strip()), where, f"{key}.{name}", "expected a reason (a string)")
    return skip


def _version_accuracy(m: dict, where: str, at: str) -> None:
    """A split's ``version_accuracy`` (with its interval) and ``anatomy`` (core/evaluation/metrics/anatomy.py): both or
    neither (files written before them have neither); a null only with its reason (``anatomy.not_measured``); the
    classes partition the misses."""
    has_va, has_an = M.VERSION_ACCURACY in m, M.ANATOMY in m
    check(has_va == has_an, where, f"{at}.{M.ANATOMY if has_va else M.VERSION_ACCURACY}",
          f"missing beside {at}.{M.VERSION_ACCURACY if has_va else M.ANATOMY}")
    if not has_va:
        return
    ci = m.get(M.ci(M.VERSION_ACCURACY))
    check(isinstance(ci, list) and len(ci) == 2, where, f"{at}.{M.ci(M.VERSION_ACCURACY)}",
          f"expected [lo, hi], got {ci!r}")
    an, key = m[M.ANATOMY], f"{at}.{M.ANATOMY}"
    check_type(an, dict, where, key)
    gone = an.get(A.NOT_MEASURED) or {}
    check_type(gone, dict, where, f"{key}.{A.NOT_MEASURED}")
    check(m[M.VERSION_ACCURACY] is not None or isinstance(gone.get(A.VERSION_ACCURACY), str), where,
          f"{at}.{M.VERSION_ACCURACY}", f"null without a reason in {key}.{A.NOT_MEASURED}")
    for name in ("n_misses", "n_unclassified"):
        check(isinstance(an.get(name), int) and an[name] >= 0, where, f"{key}.{name}",
              f"expected a count, got {an.get(name)!r}")
    total = 0
    for name in A.CLASSES:
        c = an.get(name, "MISSING")
        if c is None:
            check(isinstance(gone.get(name), str), where, f"{key}.{name}", f"null without a reason in {key}.not_measured")
            continue
        check_type(c, dict, where, f"{key}.{name}")
        check(isinstance(c.get("count"), int) and c["count"] >= 0, where, f"{key}.{name}.count",
              f"expected a count, got {c.get('count')!r}")
        total += c["count"]
        check(isinstance(c.get("share_ci"), list) and len(c["share_ci"]) == 2, where, f"{key}.{name}.share_ci",
              f"expected [lo, hi], got {c.get('share_ci')!r}")
        lo, hi = c["share_ci"]
        for k, v in (("share", c.get("share")), ("share_ci[0]", lo), ("share_ci[1]", hi)):
            check_type(v, float, where, f"{key}.{name}.{k}", allow_none=True)
            check(v is None or 0.0 <= v <= 1.0, where, f"{key}.{name}.{k}", f"{v} is outside [0, 1]")
    check(total + an["n_unclassified"] == an["n_misses"], where, key,
          f"the class counts and n_unclassified sum to {total + an['n_unclassified']}, n_misses is {an['n_misses']}")
    va = an.get(A.VERSION_ACCURACY)
    check_type(va, float, where, f"{key}.{A.VERSION_ACCURACY}", allow_none=True)
    check(va == m[M.VERSION_ACCURACY], where, f"{key}.{A.VERSION_ACCURACY}",
          f"{va!r}, but {at}.{M.VERSION_ACCURACY} is {m[M.VERSION_ACCURACY]!r}")


def _ci(m: dict, key: str) -> tuple[Any, Any]:
    ci = m.get(M.ci(key))
    return (ci[0], ci[1]) if isinstance(ci, (list, tuple)) and len(ci) == 2 else (None, None)


def system_rows(m: dict) -> list[dict]:
    """The rows of one metrics.json (experiment=main): one per system x split (systems sorted; dev, test, then any
    other split sorted), keyed by ``RESULT_COLUMNS`` (a metric's interval as ``<metric>_lo`` / ``_hi``). Takes the
    parsed file as it is (a sweep's job folder may hold a partial one; the collector decides what is usable)."""
    prov, ds = m.get("provenance") or {}, m.get("dataset") or {}
    common = {"dataset_sha256": ds.get("sha256"), "dataset_seed": ds.get("seed"),
              "git_sha": (prov.get("git") or {}).get("sha"), "config_sha256": prov.get("config_sha256")}
    rows = []
    for system, per_split in sorted(m["systems"].items()):
        per_split = per_split or {}
        for split in [s for s in SPLITS if s in per_split] + sorted(set(per_split) - set(SPLITS)):
            sm = per_split[split] or {}
            rows.append({"system": system, "split": split, **common}
                        | {k: sm.get(k) for k in (M.N_QUERIES, *M.P_VALUES, *M.CI_METRICS)}
                        | {f"{k}_{end}": v for k in M.CI_METRICS for end, v in zip(("lo", "hi"), _ci(sm, k))})
    return rows
