"""The ``dataset`` config of ``name: git_history`` as a validated, typed object (every message names
``dataset.<key>``), and the constants the stages share."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from smartvector_bench.core.errors import BenchError

SCHEMA_VERSION = "2.1"  # the reduced labels (family / stale / rumor only, no families.jsonl)
GENERATOR = "git_history"
SOURCE = "git"
CATEGORIES = ("current", "historical", "recently_updated")
_SECONDS_PER_DAY = 86400



@dataclass(frozen=True)
class QueryCounts:
    current: int = 150
    historical: int = 150
    recently_updated: int = 100


@dataclass(frozen=True)
class GitHistoryParams:
    repo: str | None = None
    glob: tuple[str, ...] = ("**/*.md",)
    rev: str = "HEAD"
    seed: int = 42
    rename_similarity: int = 50
    min_chars: int = 40
    max_chars: int = 1500
    keep_code_blocks: bool = True
    skip_headings: bool = True
    normalize_whitespace: bool = True
    normalize_markup: bool = True
    pair_similarity: float = 0.5
    authority: float = 1.0
    queries: QueryCounts = field(default_factory=QueryCounts)
    recent_days: int = 90
    query_words: int = 12
    min_query_words: int = 4
    max_queries_per_document: int = 4
    test_fraction: float = 0.5

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["glob"] = list(self.glob)
        return {"name": GENERATOR, **d}


_NOT_KEYS = {"name", "path"}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def git_params_from_config(cfg: dict[str, Any]) -> GitHistoryParams:
    """Validate the ``dataset`` config of ``name: git_history``; every message names ``dataset.<key>``. The
    repository itself is checked when the dataset is built (a preset may leave ``repo`` null)."""
    allowed = set(GitHistoryParams.__dataclass_fields__) | _NOT_KEYS
    unknown = sorted(set(cfg) - allowed)
    if unknown:
        raise BenchError(f"dataset.{unknown[0]}: unknown key for git_history; allowed: {', '.join(sorted(allowed))}")
    d = {k: v for k, v in cfg.items() if k not in _NOT_KEYS}
    if isinstance(d.get("repo"), os.PathLike):
        d["repo"] = os.fspath(d["repo"])
    if d.get("repo") is not None and (not isinstance(d["repo"], str) or not d["repo"].strip()):
        raise BenchError(f"dataset.repo={d['repo']!r}: must be the path of a git repository")
    if "glob" in d:
        g = d["glob"]
        globs = [g] if isinstance(g, str) else g
        if (not isinstance(globs, (list, tuple)) or not globs
                or any(not isinstance(x, str) or not x.strip() for x in globs)):
            raise BenchError(f"dataset.glob={g!r}: must be a pattern or a non-empty list of patterns "
                             "(e.g. 'docs/**/*.md')")
        for x in globs:
            if x.startswith("/") or ".." in x.split("/") or x.startswith(":"):
                raise BenchError(f"dataset.glob={x!r}: patterns are relative to the repository root "
                                 "(no leading '/', no '..', no pathspec magic)")
        d["glob"] = tuple(globs)
    if "rev" in d and (not isinstance(d["rev"], str) or not d["rev"].strip() or d["rev"].startswith("-")):
        raise BenchError(f"dataset.rev={d['rev']!r}: must be a commit, branch or tag name")
    for key, low in (("seed", 0), ("min_chars", 1), ("max_chars", 0), ("recent_days", 0), ("query_words", 1),
                     ("min_query_words", 1), ("max_queries_per_document", 1)):
        if key in d and (not _is_int(d[key]) or d[key] < low):
            raise BenchError(f"dataset.{key}={d[key]}: must be an integer >= {low}")
    if "rename_similarity" in d and (not _is_int(d["rename_similarity"]) or not 1 <= d["rename_similarity"] <= 100):
        raise BenchError(f"dataset.rename_similarity={d['rename_similarity']}: must be an integer percentage "
                         "in [1, 100]")
    for key in ("pair_similarity", "authority", "test_fraction"):
        v = d.get(key)
        if key in d and not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0):
            raise BenchError(f"dataset.{key}={v}: must be a number in [0, 1]")
    if "test_fraction" in d and not 0.0 < d["test_fraction"] < 1.0:
        raise BenchError(f"dataset.test_fraction={d['test_fraction']}: must be strictly between 0 and 1 "
                         "(each split needs documents)")
    for key in ("keep_code_blocks", "skip_headings", "normalize_whitespace", "normalize_markup"):
        if key in d and not isinstance(d[key], bool):
            raise BenchError(f"dataset.{key}={d[key]!r}: must be true or false")
    max_chars = d.get("max_chars", GitHistoryParams.max_chars)
    min_chars = d.get("min_chars", GitHistoryParams.min_chars)
    if max_chars and max_chars < min_chars:
        raise BenchError(f"dataset.max_chars={max_chars}: must be 0 (no cut) or >= dataset.min_chars={min_chars}")
    min_words = d.get("min_query_words", GitHistoryParams.min_query_words)
    if min_words > d.get("query_words", GitHistoryParams.query_words):
        raise BenchError(f"dataset.min_query_words={min_words}: must be <= dataset.query_words")
    if "queries" in d:
        q = d["queries"]
        if not isinstance(q, dict):
            raise BenchError(f"dataset.queries={q!r}: must be a mapping of category: count")
        allowed_q = set(QueryCounts.__dataclass_fields__)
        for k, v in q.items():
            if k not in allowed_q:
                raise BenchError(f"dataset.queries.{k}: unknown key; allowed: {', '.join(sorted(allowed_q))}")
            if not _is_int(v) or v < 0:
                raise BenchError(f"dataset.queries.{k}={v}: must be an integer >= 0")
        d["queries"] = QueryCounts(**q)
    return GitHistoryParams(**d)
