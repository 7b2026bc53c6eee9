"""Metadata regimes (``dataset.metadata``): what the document store tells the retrievers about each chunk.

Every dataset hands each chunk an exact validity window. Real stores often hold only creation or modification
times, so a regime rewrites the corpus the *retrievers* see (the served corpus); the evaluator keeps judging with
the true dataset (qrels, labels and the true windows for leakage). :func:`apply_regime` is pure: it returns a new
:class:`Corpus` and never changes its input. Ids, titles, texts, offsets, ``source`` and ``authority`` are kept in
every regime.

==============  ==========================================================================================
regime          what the served corpus holds
==============  ==========================================================================================
full            the corpus unchanged (the default; a copy with equal arrays)
no_valid_to     ``valid_to`` = +inf on every chunk (windows never close) and ``supersedes`` = -1 (no version
                chains); ``present`` loses ``supersedes`` and keeps ``valid_to``, as the loader lists an open
                window for a file that gives its start but no end. Everything else unchanged.
created_only    only ``created_at``, ``source`` and ``authority`` remain (with ids, texts and offsets). The
                others take the loader's defaults for a missing field (``CORPUS_DEFAULTS``): ``valid_from`` =
                ``created_at``, ``valid_to`` = +inf, ``supersedes`` = -1, ``depends_on`` = no edges,
                ``version`` = 1, ``doc_id`` = the chunk's own id. ``present`` loses ``valid_from``,
                ``valid_to``, ``supersedes``, ``depends_on``, ``version`` and ``doc_id`` (unlike the loader,
                which lists a window whenever ``created_at`` is given: here a system that needs a declared
                window is told there is none).
noisy           ``present`` unchanged. A share ``open_share`` of the closed windows (finite ``valid_to``),
                drawn without replacement, is left open (+inf); a share ``shift_share`` of the chunks with a
                finite ``created_at``, drawn without replacement, has ``created_at`` moved by a uniform amount
                in [-shift_days, +shift_days]. ``valid_from`` moves with it only where it equalled
                ``created_at`` (one store timestamp) and the moved value stays before ``valid_to``; elsewhere
                ``valid_from`` keeps its value (a declared effective date is not the noisy upload time).
                Seeded by ``seed``: the same settings give the same corpus. ``supersedes``, ``depends_on``,
                ``doc_id`` and ``version`` unchanged.
==============  ==========================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.errors import BenchError

from .columns import Corpus

REGIMES = ("full", "no_valid_to", "created_only", "noisy")
DEFAULT_REGIME = "full"
# The fields each regime drops from ``Corpus.present`` (they then hold the loader's defaults).
CREATED_ONLY_DROPS = ("valid_from", "valid_to", "supersedes", "depends_on", "version", "doc_id")
NO_VALID_TO_DROPS = ("supersedes",)
CONFIG_KEYS = ("metadata", "metadata_noise")  # dataset.* keys of the regime; no generator reads them


@dataclass(frozen=True)
class NoiseSettings:
    """``dataset.metadata_noise`` (read by ``dataset.metadata=noisy`` only)."""

    open_share: float = 0.3   # share of the closed windows left open
    shift_share: float = 0.3  # share of the chunks whose created_at is moved
    shift_days: int = 30      # the move is uniform in [-shift_days, +shift_days] days (a whole number of days)
    seed: int = 0

    def to_dict(self) -> dict:
        return {"open_share": self.open_share, "shift_share": self.shift_share, "shift_days": self.shift_days,
                "seed": self.seed}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and bool(np.isfinite(v))


def noise_settings(noise: Any) -> NoiseSettings:
    """``dataset.metadata_noise`` checked key by key (None: the defaults); errors name the key."""
    if noise is None:
        return NoiseSettings()
    if isinstance(noise, NoiseSettings):
        noise = noise.to_dict()
    if not isinstance(noise, dict):
        raise BenchError(f"dataset.metadata_noise={noise!r}: must be a mapping with keys "
                         f"{', '.join(NoiseSettings.__dataclass_fields__)}")
    allowed = list(NoiseSettings.__dataclass_fields__)
    for key in noise:
        if key not in allowed:
            raise BenchError(f"dataset.metadata_noise.{key}: unknown key; allowed: {', '.join(allowed)}")
    for key in ("open_share", "shift_share"):
        v = noise.get(key, getattr(NoiseSettings, key))
        if not _number(v) or not 0 <= v <= 1:
            raise BenchError(f"dataset.metadata_noise.{key}={v}: must be in [0, 1]")
    v = noise.get("shift_days", NoiseSettings.shift_days)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise BenchError(f"dataset.metadata_noise.shift_days={v}: must be an integer >= 0 (days)")
    v = noise.get("seed", NoiseSettings.seed)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise BenchError(f"dataset.metadata_noise.seed={v}: must be an integer >= 0")
    return NoiseSettings(**{k: (int(noise[k]) if k in ("seed", "shift_days") else float(noise[k])) for k in noise})


def regime_settings(ds_cfg: dict | None) -> tuple[str, NoiseSettings]:
    """``dataset.metadata`` and ``dataset.metadata_noise`` of a dataset config, checked (absent: full, defaults)."""
    ds_cfg = ds_cfg or {}
    regime = ds_cfg.get("metadata", DEFAULT_REGIME)
    if not isinstance(regime, str) or regime not in REGIMES:
        raise BenchError(f"dataset.metadata={regime}: unknown regime; allowed: {', '.join(REGIMES)}")
    if "metadata_noise" in ds_cfg and not isinstance(ds_cfg["metadata_noise"], dict):
        raise BenchError(f"dataset.metadata_noise={ds_cfg['metadata_noise']}: must be a mapping of "
                         f"{', '.join(NoiseSettings.__dataclass_fields__)}")
    return regime, noise_settings(ds_cfg.get("metadata_noise"))


def regime_record(regime: str, noise: NoiseSettings) -> dict | None:
    """metrics.json's ``dataset.metadata``: None under ``full`` (the file stays as it was), else the regime and,
    for ``noisy``, its settings."""
    if regime == DEFAULT_REGIME:
        return None
    return {"regime": regime, **(noise.to_dict() if regime == "noisy" else {})}


def _copy(corpus: Corpus, **changes) -> Corpus:
    """A new Corpus whose arrays are copies (nothing shared with ``corpus`` can be written through)."""
    base = dict(ids=list(corpus.ids), titles=list(corpus.titles), texts=list(corpus.texts),
                doc_id=corpus.doc_id.copy(), version=corpus.version.copy(), source=corpus.source.copy(),
                authority=corpus.authority.copy(), created_at=corpus.created_at.copy(),
                valid_from=corpus.valid_from.copy(), valid_to=corpus.valid_to.copy(),
                depends_on=Ragged(corpus.depends_on.indptr.copy(), corpus.depends_on.indices.copy()),
                supersedes=corpus.supersedes.copy(), offset_start=corpus.offset_start.copy(),
                offset_end=corpus.offset_end.copy(), index_of=dict(corpus.index_of))
    base.update(changes)
    return replace(corpus, **base)


def apply_regime(corpus: Corpus, regime: str, noise: NoiseSettings | dict | None = None) -> Corpus:
    """The corpus a document store under ``regime`` serves (module docstring): always a new Corpus, whose
    arrays are copies (``full``: equal to the input's)."""
    if regime not in REGIMES:
        raise BenchError(f"dataset.metadata={regime}: unknown regime; allowed: {', '.join(REGIMES)}")
    n = len(corpus)
    if regime == "full":
        return _copy(corpus)
    if regime == "no_valid_to":
        return _copy(corpus, valid_to=np.full(n, np.inf), supersedes=np.full(n, -1, dtype=np.int64),
                     present=corpus.present - set(NO_VALID_TO_DROPS))
    if regime == "created_only":
        return _copy(corpus, valid_from=corpus.created_at.copy(), valid_to=np.full(n, np.inf),
                     supersedes=np.full(n, -1, dtype=np.int64), depends_on=Ragged.from_lists([[] for _ in range(n)]),
                     version=np.ones(n, dtype=np.int64), doc_id=np.array(list(corpus.ids), dtype=object),
                     present=corpus.present - set(CREATED_ONLY_DROPS))
    s = noise_settings(noise)
    rng = np.random.default_rng(s.seed)
    valid_to = corpus.valid_to.copy()
    closed = np.nonzero(np.isfinite(valid_to))[0]
    opened = rng.permutation(closed)[:int(round(s.open_share * len(closed)))]
    valid_to[opened] = np.inf
    created, valid_from = corpus.created_at.copy(), corpus.valid_from.copy()
    timed = np.nonzero(np.isfinite(created))[0]
    moved = np.sort(rng.permutation(timed)[:int(round(s.shift_share * len(timed)))])
    delta = rng.uniform(-s.shift_days, s.shift_days, size=len(moved))
    same = valid_from[moved] == created[moved]
    created[moved] = created[moved] + delta
    follow = same & (created[moved] < valid_to[moved])  # a window must stay non-empty
    valid_from[moved[follow]] = created[moved[follow]]
    return _copy(corpus, created_at=created, valid_from=valid_from, valid_to=valid_to)
