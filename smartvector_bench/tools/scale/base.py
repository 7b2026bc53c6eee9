"""The scale profile's base block: the default dataset generated in memory, its corpus rows reordered so that
every reference points backwards, and the real embeddings of its texts (each memoised per config)."""

from __future__ import annotations

import heapq
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from data_gen.params import params_from_config
from data_gen.writer import render_files
from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.dataset import Corpus, Labels, Queries, load_dataset
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.csr import Ragged
from smartvector_bench.tools.scale.columns import remap_ragged

DIM = 384
REPO = Path(CONF_DIR).parent


@dataclass
class Base:
    """The default dataset as one block: columnar corpus, queries and labels, the corpus rows in an order
    where every reference points backwards (``order``: the generated dataset's row of each base row)."""

    corpus: Corpus
    queries: Queries
    labels: Labels
    order: np.ndarray  # (258,) int64: row of the generated corpus.jsonl that base row i is
    horizon_days: int
    config: dict



def default_dataset_config() -> dict:
    return OmegaConf.to_container(OmegaConf.load(Path(CONF_DIR) / "dataset" / "versioned_policies.yaml"),
                                  resolve=True)


_BASES: dict[str, Base] = {}
_BASE_VECTORS: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
_EMBEDDERS: dict[str, object] = {}


def load_base(dataset_cfg: dict | None = None) -> Base:
    """Generate the default dataset (or ``dataset_cfg`` overrides of it) in memory; memoised per config."""
    cfg = {**default_dataset_config(), **(dataset_cfg or {})}
    key = json.dumps(cfg, sort_keys=True)
    if key in _BASES:
        return _BASES[key]
    params = params_from_config(cfg)
    if cfg.get("name") == "lvl_corpus":
        raise BenchError("dataset.name=lvl_corpus: the scale profile multiplies the versioned_policies dataset")
    files = render_files(params)
    with tempfile.TemporaryDirectory(prefix="svb-scale-") as tmp:
        for name, text in files.items():
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / name).write_text(text, encoding="utf-8")
        ds = load_dataset(tmp)
    if ds.labels is None:  # pragma: no cover - the generator always writes labels/
        raise BenchError("scale: the base dataset has no labels/ (the scale profile needs the generator's labels)")
    order = backward_order(ds.corpus)
    c, q, labels = reorder(ds.corpus, ds.queries, ds.labels, order)
    rows = np.arange(len(c))
    # The truncation argument needs every reference to point backwards (what backward_order makes).
    if (c.supersedes >= rows).any() or (c.depends_on.indices >= c.depends_on.row_ids()).any():
        raise AssertionError("scale: backward_order left a forward reference")  # pragma: no cover
    base = Base(corpus=c, queries=q, labels=labels, order=order, horizon_days=int(params.horizon_days), config=cfg)
    _BASES[key] = base
    return base


def backward_order(corpus: Corpus) -> np.ndarray:
    """The corpus rows in their own (shuffled) order, except that a row waits until every row it references
    (``supersedes``, ``depends_on``) has been placed: the topological order that always takes the lowest
    waiting row next. A row with no reference keeps its place relative to the others; the result is the
    identity when every reference already points backwards. A reference cycle (never made by the
    generator) cannot be ordered and is refused."""
    n = len(corpus)
    refs = [set(corpus.depends_on.row(i).tolist()) for i in range(n)]
    for i in np.nonzero(corpus.supersedes >= 0)[0].tolist():
        refs[i].add(int(corpus.supersedes[i]))
    users: list[list[int]] = [[] for _ in range(n)]
    for i, r in enumerate(refs):
        for j in r:
            users[j].append(i)
    waiting = [len(r) for r in refs]
    ready = [i for i in range(n) if not waiting[i]]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, u)
    if len(out) < n:
        stuck = corpus.ids[next(i for i in range(n) if waiting[i])]
        raise BenchError(f"scale: the base dataset has a reference cycle through chunk {stuck!r} "
                         "(supersedes / depends_on); its rows cannot be ordered so that references point backwards")
    return np.asarray(out, dtype=np.int64)


def reorder(c: Corpus, q: Queries, labels: Labels, order: np.ndarray) -> tuple[Corpus, Queries, Labels]:
    """The dataset with corpus row ``k`` being old row ``order[k]``; every chunk reference re-indexed, and each
    query's relevant chunks re-sorted (best grade first, then lowest row, as the loader sorts them)."""
    new_of_old = np.empty(len(order), dtype=np.int64)
    new_of_old[order] = np.arange(len(order))
    ids = [c.ids[i] for i in order.tolist()]
    sup = c.supersedes[order]
    corpus = Corpus(
        ids=ids, titles=[c.titles[i] for i in order.tolist()], texts=[c.texts[i] for i in order.tolist()],
        doc_id=c.doc_id[order], version=c.version[order], source=c.source[order], authority=c.authority[order],
        created_at=c.created_at[order], valid_from=c.valid_from[order], valid_to=c.valid_to[order],
        depends_on=remap_ragged(c.depends_on, order, new_of_old),
        supersedes=np.where(sup >= 0, new_of_old[np.maximum(sup, 0)], -1),
        offset_start=c.offset_start[order], offset_end=c.offset_end[order], index_of=dict(zip(ids, range(len(ids)))),
    )
    all_q = np.arange(len(q), dtype=np.int64)
    rel = remap_ragged(q.relevant, all_q, new_of_old)
    srt = np.lexsort((rel.indices, -q.grades.indices, rel.row_ids()))
    queries = Queries(
        ids=list(q.ids), texts=list(q.texts), query_time=q.query_time, as_of=q.as_of, category=q.category,
        split=q.split, relevant=Ragged(rel.indptr, rel.indices[srt]), grades=Ragged(q.grades.indptr, q.grades.indices[srt]),
        stale=remap_ragged(q.stale, all_q, new_of_old), rumor=remap_ragged(q.rumor, all_q, new_of_old),
        family=q.family,
    )
    lab = Labels(chunk_family=labels.chunk_family[order], chunk_doc_type=labels.chunk_doc_type[order],
                 chunk_kind=labels.chunk_kind[order], chunk_value=labels.chunk_value[order],
                 query_family=labels.query_family, query_asks=labels.query_asks, timelines=labels.timelines)
    return corpus, queries, lab


def default_embedder_config() -> dict:
    cfg = OmegaConf.to_container(OmegaConf.load(Path(CONF_DIR) / "embedder" / "minilm.yaml"), resolve=True)
    if cfg.get("cache_path") and not Path(cfg["cache_path"]).is_absolute():
        cfg["cache_path"] = str(REPO / cfg["cache_path"])  # the repository's cache, whatever the cwd
    return cfg


def cached_embedder(embedder_cfg: dict | None):
    """``build_embedder`` of ``embedder_cfg`` (default: :func:`default_embedder_config`), one per config."""
    cfg = embedder_cfg or default_embedder_config()
    key = json.dumps(cfg, sort_keys=True)
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = build_embedder(cfg)
    return _EMBEDDERS[key]


def base_vectors(base: Base, embedder) -> tuple[np.ndarray, np.ndarray]:
    """Real embeddings of the 258 base texts and the 138 base queries (memoised per model and dataset)."""
    key = (embedder.model_id, json.dumps(base.config, sort_keys=True))
    if key not in _BASE_VECTORS:
        e = np.asarray(embedder.encode(base.corpus.texts), dtype=np.float32)
        q = np.asarray(embedder.encode(base.queries.texts), dtype=np.float32)
        if e.shape[1] != DIM:
            raise BenchError(f"scale: embedder {embedder.model_id} has dimension {e.shape[1]}, expected {DIM}")
        _BASE_VECTORS[key] = (e, q)
    return _BASE_VECTORS[key]

