"""What SmartVector's search paths read from the retriever: its status policy, its search parameters, and
``SearchState``, the protocol ``scoring``, ``bounds``, ``rerank`` and ``f32_kernel`` are written against. With it
they name no class of ``retriever``, which imports them: no import circle, not even for annotations."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, ClassVar, Optional, Protocol

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.settings import choice, section

if TYPE_CHECKING:  # annotations only
    import numpy as np

    from smartvector_bench.core.dataset import Corpus
    from smartvector_bench.core.index import FlatIndex
    from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams
    from smartvector_bench.systems.smartvector.signals.fusion import Weights
    from smartvector_bench.systems.smartvector.signals.temporal import TemporalParams
    from smartvector_bench.systems.smartvector.store import VectorStore

EXCLUDABLE = ("DORMANT", "DEPRECATED", "ARCHIVED")


@dataclass(frozen=True)
class StatusPolicy:
    dormant: str = choice("deprioritize", "include", "exclude")
    reported_confidence: str = choice("score", "live_confidence")
    # Judge the store as of each query's as_of: a vector created after as_of did not exist then.
    exclude_created_after_as_of: bool = True
    query_batch: int = 256  # queries scored per block (bounds the (Q, N) signal arrays)
    POSITIVE: ClassVar[tuple[str, ...]] = ("query_batch",)


@dataclass(frozen=True)
class SearchParams:
    candidates: Optional[int] = None  # None: exhaustive; C: re-rank FAISS's top-C by cosine (+ prior candidates)
    prior_candidates: Optional[int] = None  # P vectors with the highest bound per as_of group; None: = candidates
    certify: bool = True  # re-rank: score a query exhaustively unless the bound proves its top-k exact
    group_days: float = 7.0  # re-rank: width of an as_of group (one bound per group)
    prior_share: float = 0.02  # re-rank: prior_candidates=null takes max(candidates, prior_share * N)
    max_prior_share: float = 0.05  # re-rank: an uncertified query's prior list widens x4 up to this share of N
    index: str = choice("flat", "hnsw")
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 128
    memory_budget_mb: float = 256.0  # exhaustive: (Q, N) working arrays per query block stay under this
    precision: str = choice("float64", "float32")  # exhaustive path's (Q, N) arrays (numpy kernel)
    # exhaustive path: float32 pass + exact float64 re-score (f32_kernel) | compiled float64 pass (fused_kernel)
    # | numpy arrays
    kernel: str = choice("float32", "numba", "numpy")
    POSITIVE: ClassVar[tuple[str, ...]] = ("hnsw_m", "hnsw_ef_construction", "hnsw_ef_search",
                                           "memory_budget_mb")
    OPTIONAL_INT: ClassVar[tuple[str, ...]] = ("candidates", "prior_candidates")


def search_params(cfg: dict, where: str) -> SearchParams:
    values = {k: cfg[k] for k in SearchParams.__dataclass_fields__ if k in cfg}
    for key, least in (("candidates", 1), ("prior_candidates", 0)):
        v = values.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < least):
            raise BenchError(f"{where}.{key}={v!r}: must be null or an integer >= {least}")
    optional = {k: values.pop(k) for k in SearchParams.OPTIONAL_INT if k in values}
    params = section(SearchParams, values, where)
    return replace(params, **optional)


class SearchState(Protocol):
    """The retriever as the fast paths see it (``SmartVector`` is one)."""

    weights: "Weights"
    temporal: "TemporalParams"
    conf_params: "ConfidenceParams"
    policy: StatusPolicy
    search_params: SearchParams
    exclude: list[str]
    corpus: "Corpus"
    store: "VectorStore"
    last_search: dict
    _index: "FlatIndex"
    _emit: Callable[..., None]  # writes ranked rows into the output arrays
    _exhaustive: Callable[..., None]  # the exhaustive search, the re-ranking path's fallback

    def relational(self) -> "np.ndarray": ...

    def _excludes_dormant(self) -> bool: ...
