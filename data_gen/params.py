"""Generator parameters: the ``dataset`` config group as a validated, typed object.

Every check names the config key and the allowed values, so a bad override fails before anything is written.
"""

from __future__ import annotations

import math

from dataclasses import asdict, dataclass, field
from typing import Any

from smartvector_bench.core.errors import BenchError

from .catalog.base import SECTION_MAX as SECTION_CORE_MAX
from .common import DATE_SPAN_DAYS, check_span
from .facts.params import facts_params_from_config
from .git_history.params import git_params_from_config
from .lvl_corpus import lvl_params_from_config

SOURCES = ("official_db", "policy_doc", "technical_doc", "wiki", "email", "meeting_notes", "slack", "unknown")


@dataclass(frozen=True)
class QueryCounts:
    current_per_family: int = 6
    historical_per_family: int = 4
    dependent_per_family: int = 2


@dataclass(frozen=True)
class GeneratorParams:
    seed: int = 42
    n_families: int = 12
    versions: tuple[int, ...] = (2, 3, 3, 4)
    runbook_fraction: float = 0.75
    contradiction_rate: float = 0.5
    rumors_per_family: int = 2
    rumor_repeats_old_value: float = 0.5
    rumor_newer_prob: float = 0.8
    confirmation_rate: float = 0.5
    confirmations_per_family: int = 2
    note_rate: float = 0.75
    notes_per_family: int = 1
    lagging_source_rate: float = 0.3
    early_announcement_rate: float = 0.25
    announcement_lead_days: tuple[int, int] = (0, 10)
    cross_reference_rate: float = 0.5
    reply_rate: float = 0.5
    fact_reword_prob: float = 0.3
    section_edit_rate: float = 0.5
    section_chars: tuple[int, int] = (176, 193)
    section_digits: tuple[int, int] = (7, 12)
    chunk_chars: int = 200
    start: str = "2024-01-01T00:00:00Z"
    horizon_days: int = 365
    min_version_gap_days: int = 30
    publish_lead_days: tuple[int, int] = (0, 14)
    runbook_lag_days: tuple[int, int] = (1, 14)
    query_window_days: int = 7
    recent_days: int = 30
    recent_fraction: float = 0.25
    queries: QueryCounts = field(default_factory=QueryCounts)
    test_fraction: float = 0.5
    policy_sources: dict[str, float] = field(default_factory=lambda: {"policy_doc": 1.0})
    runbook_sources: dict[str, float] = field(default_factory=lambda: {"technical_doc": 1.0})
    chatter_sources: dict[str, float] = field(default_factory=lambda: {"slack": 1.0})
    authority: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["versions"] = list(self.versions)
        d["publish_lead_days"] = list(self.publish_lead_days)
        d["runbook_lag_days"] = list(self.runbook_lag_days)
        d["announcement_lead_days"] = list(self.announcement_lead_days)
        d["section_chars"] = list(self.section_chars)
        d["section_digits"] = list(self.section_digits)
        return d


_NOT_GENERATOR_KEYS = {"name", "path"}


def _as_list(value: Any, key: str) -> list:
    if not isinstance(value, (list, tuple)):
        raise BenchError(f"dataset.{key}={value!r}: must be a list")
    return list(value)


def _as_dict(value: Any, key: str) -> dict:
    if not isinstance(value, dict):
        raise BenchError(f"dataset.{key}={value!r}: must be a mapping of name: value")
    return dict(value)


# dataset.* keys of the metadata regime: applied when the dataset is loaded (smartvector_bench/core/dataset/
# regimes.py), never read by a generator, so the generated files and their sha256 do not depend on them.
REGIME_KEYS = ("metadata", "metadata_noise")


def params_from_config(cfg: dict[str, Any]):
    """Build and validate from the ``dataset`` config (a plain dict); ``name`` picks the generator (the
    metadata-regime keys, :data:`REGIME_KEYS`, are left out first)."""
    cfg = {k: v for k, v in cfg.items() if k not in REGIME_KEYS}
    name = cfg.get("name", "versioned_policies")
    if not isinstance(name, str) or name not in VALIDATORS:
        raise BenchError(f"dataset.name={name}: unknown generator; allowed: {', '.join(GENERATORS)} "
                         "(or dataset.path=DIR for an existing folder)")
    return VALIDATORS[name](cfg)


def policy_params_from_config(cfg: dict[str, Any]) -> GeneratorParams:
    """The versioned-policy generator's parameters (``versioned_policies`` and its presets)."""
    known = set(GeneratorParams.__dataclass_fields__) | _NOT_GENERATOR_KEYS
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise BenchError(f"dataset.{unknown[0]}: unknown key; allowed: {', '.join(sorted(known))}")
    d = {k: v for k, v in cfg.items() if k not in _NOT_GENERATOR_KEYS}

    def prob(key: str) -> None:
        v = d.get(key)
        if key in d and not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0):
            raise BenchError(f"dataset.{key}={v}: must be a number in [0, 1]")

    for key in ("contradiction_rate", "runbook_fraction", "rumor_repeats_old_value", "rumor_newer_prob",
                "fact_reword_prob", "test_fraction", "recent_fraction", "confirmation_rate", "lagging_source_rate",
                "early_announcement_rate", "cross_reference_rate", "reply_rate", "note_rate", "section_edit_rate"):
        prob(key)

    def positive_int(key: str, minimum: int = 1) -> None:
        v = d.get(key)
        top = DATE_SPAN_DAYS if key in ("horizon_days", "query_window_days") else None  # then check_span, with start
        if key in d and (not isinstance(v, int) or isinstance(v, bool) or v < minimum or (top and v > top)):
            raise BenchError(f"dataset.{key}={v}: must be an integer " + (f"in [{minimum}, {top}]" if top else
                                                                          f">= {minimum}"))

    for key in ("n_families", "chunk_chars", "horizon_days"):
        positive_int(key)
    for key in ("rumors_per_family", "confirmations_per_family", "notes_per_family", "min_version_gap_days", "query_window_days", "recent_days", "seed"):
        positive_int(key, 0)
    if "versions" in d:
        vs = _as_list(d["versions"], "versions")
        if not vs or any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in vs):
            raise BenchError(f"dataset.versions={vs}: must be a non-empty list of integers >= 1")
        d["versions"] = tuple(vs)
    for key, unit in (("publish_lead_days", "days"), ("runbook_lag_days", "days"), ("announcement_lead_days", "days"),
                      ("section_chars", "characters"), ("section_digits", "digits")):
        if key in d:
            pair = _as_list(d[key], key)
            if (len(pair) != 2 or any(not isinstance(x, int) or isinstance(x, bool) or x < 0 for x in pair)
                    or pair[0] > pair[1]):
                raise BenchError(f"dataset.{key}={pair}: must be [low, high] with 0 <= low <= high ({unit})")
            d[key] = tuple(pair)
    if "queries" in d:
        q = _as_dict(d["queries"], "queries")
        allowed = set(QueryCounts.__dataclass_fields__)
        for k, v in q.items():
            if k not in allowed:
                raise BenchError(f"dataset.queries.{k}: unknown key; allowed: {', '.join(sorted(allowed))}")
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise BenchError(f"dataset.queries.{k}={v}: must be an integer >= 0")
        d["queries"] = QueryCounts(**q)
        if not any(asdict(d["queries"]).values()):  # else the loader later finds an empty queries.jsonl
            raise BenchError(f"dataset.queries: every count is 0; at least one of "
                             f"{', '.join(QueryCounts.__dataclass_fields__)} must be > 0")
    authority = _as_dict(d.get("authority") or {}, "authority")
    for src, value in authority.items():
        if src not in SOURCES:
            raise BenchError(f"dataset.authority.{src}: unknown source; allowed: {', '.join(SOURCES)}")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
            raise BenchError(f"dataset.authority.{src}={value}: must be in [0, 1]")
    d["authority"] = authority
    for key in ("policy_sources", "runbook_sources", "chatter_sources"):
        if key in d:
            weights = _as_dict(d[key], key)
            for src, w in weights.items():
                if src not in authority:
                    raise BenchError(f"dataset.{key}.{src}: no authority for this source; "
                                     f"known: {', '.join(sorted(authority))}")
                if not isinstance(w, (int, float)) or isinstance(w, bool) or not math.isfinite(w) or w < 0:
                    raise BenchError(f"dataset.{key}.{src}={w}: weights must be finite numbers >= 0")
            if sum(weights.values()) <= 0:
                raise BenchError(f"dataset.{key}: weights must not all be zero")
            d[key] = weights
    params = GeneratorParams(**d)
    if params.section_chars[1] >= params.chunk_chars or params.chunk_chars < SECTION_CORE_MAX + 1:
        raise BenchError(f"dataset.section_chars={list(params.section_chars)}: the longest section must stay one "
                         f"chunk: use a high end below dataset.chunk_chars={params.chunk_chars}, and chunk_chars of "
                         f"at least {SECTION_CORE_MAX + 1} (the catalog's sentences reach {SECTION_CORE_MAX} characters)")
    # Every timestamp the generator writes lies in [start, start + horizon_days + query_window_days).
    check_span(params.start, "query_window_days", params.query_window_days, low=0)
    check_span(params.start, "horizon_days", params.horizon_days, extra=params.query_window_days,
               given=f"dataset.query_window_days={params.query_window_days}")
    n_test = int(round(params.n_families * params.test_fraction))
    if not 1 <= n_test <= params.n_families - 1:
        raise BenchError(f"dataset.test_fraction={params.test_fraction}: with dataset.n_families={params.n_families} "
                         f"it puts {n_test} families in test; each split needs at least one family")
    return params


# Generator kind -> its config validator (each generator's parameters live beside its code).
VALIDATORS = {"versioned_policies": policy_params_from_config, "versioned_policies_large": policy_params_from_config,
              "lvl_corpus": lvl_params_from_config, "git_history": git_params_from_config,
              "facts": facts_params_from_config}
GENERATORS = tuple(VALIDATORS)
