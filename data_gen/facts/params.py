"""The ``dataset`` config of ``name: facts`` (conf/dataset/facts.yaml) as a validated, typed object; every
message names ``dataset.<key>``."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from smartvector_bench.core.errors import BenchError

from ..git_history.params import GitHistoryParams, git_params_from_config

GENERATOR = "facts"
SCHEMA_VERSION = "2.1"
DOCUMENTS = ("facts", "all")
# git_history keys a corpus may set (how its history becomes chunks); queries are the facts' own
CHUNKING = ("glob", "rev", "rename_similarity", "min_chars", "max_chars", "keep_code_blocks", "skip_headings",
            "normalize_whitespace", "normalize_markup", "pair_similarity")


@dataclass(frozen=True)
class CorpusParams:
    name: str
    repo: str
    facts: tuple[str, ...]        # fact files: a packaged one's name (data_gen/facts/<name>.yaml) or a path
    git: GitHistoryParams

    @property
    def fact_files(self) -> list[Path]:
        return [Path(f) if f.endswith((".yaml", ".yml")) or "/" in f else
                Path(str(resources.files("data_gen.facts") / f"{f}.yaml")) for f in self.facts]

    def to_dict(self) -> dict[str, Any]:
        g = self.git.to_dict()
        return {"repo": self.repo, "facts": list(self.facts), **{k: g[k] for k in CHUNKING}}


@dataclass(frozen=True)
class FactsParams:
    corpora: tuple[CorpusParams, ...] = field(default_factory=tuple)
    documents: str = "facts"
    seed: int = 42
    test_fraction: float = 0.5
    max_historical: int = 3

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "corpora"}
        return {"name": GENERATOR, "corpora": {c.name: c.to_dict() for c in self.corpora}, **d}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def facts_params_from_config(cfg: dict[str, Any]) -> FactsParams:
    allowed = {"name", "path", "corpora", "documents", "seed", "test_fraction", "max_historical"}
    unknown = sorted(set(cfg) - allowed)
    if unknown:
        raise BenchError(f"dataset.{unknown[0]}: unknown key for facts; allowed: {', '.join(sorted(allowed))}")
    corpora = cfg.get("corpora")
    if not isinstance(corpora, dict) or not corpora:
        raise BenchError("dataset.corpora: must map each corpus name to {repo, facts, glob, ...}")
    out = []
    for name, c in corpora.items():
        where = f"dataset.corpora.{name}"
        if not isinstance(c, dict):
            raise BenchError(f"{where}: must be a mapping with repo and facts")
        extra = sorted(set(c) - {"repo", "facts", *CHUNKING})
        if extra:
            raise BenchError(f"{where}.{extra[0]}: unknown key; allowed: repo, facts, {', '.join(CHUNKING)}")
        repo, facts = c.get("repo"), c.get("facts")
        if isinstance(repo, os.PathLike):
            repo = os.fspath(repo)
        if not isinstance(repo, str) or not repo.strip():
            raise BenchError(f"{where}.repo={repo!r}: must be the path of a git repository or bundle")
        facts = [facts] if isinstance(facts, str) else facts
        if not isinstance(facts, (list, tuple)) or not facts or \
                not all(isinstance(x, str) and x.strip() for x in facts):
            raise BenchError(f"{where}.facts={facts!r}: must name a fact file (data_gen/facts/<name>.yaml) or a path, "
                             "or list several")
        try:
            git = git_params_from_config({"repo": repo, **{k: c[k] for k in CHUNKING if k in c}})
        except BenchError as exc:
            raise BenchError(str(exc).replace("dataset.", f"{where}.", 1)) from None
        cp = CorpusParams(str(name), repo, tuple(facts), git)
        for given, path in zip(cp.facts, cp.fact_files):
            if not path.is_file():
                raise BenchError(f"{where}.facts: {given}: no such fact file ({path})")
        out.append(cp)
    documents = cfg.get("documents", "facts")
    if documents not in DOCUMENTS:
        raise BenchError(f"dataset.documents={documents!r}: allowed: {', '.join(DOCUMENTS)}")
    seed = cfg.get("seed", 42)
    if not _is_int(seed) or seed < 0:
        raise BenchError(f"dataset.seed={seed!r}: must be an integer >= 0")
    mh = cfg.get("max_historical", 3)
    if not _is_int(mh) or mh < 0:
        raise BenchError(f"dataset.max_historical={mh!r}: must be an integer >= 0")
    tf = cfg.get("test_fraction", 0.5)
    if not isinstance(tf, (int, float)) or isinstance(tf, bool) or not 0.0 < tf < 1.0:
        raise BenchError(f"dataset.test_fraction={tf!r}: must be strictly between 0 and 1")
    return FactsParams(tuple(out), documents, seed, float(tf), mh)
