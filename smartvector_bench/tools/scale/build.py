"""The scaled dataset: the base block tiled into teams (ids, texts, references, times, labels, queries) and its
vectors, real or synthetic (see the package docstring for the construction)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numpy.dtypes import StringDType

from smartvector_bench.core.dataset import Corpus, Labels, Queries
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.judgments import Timeline
from smartvector_bench.core.timeutil import from_days
from smartvector_bench.tools.scale.base import DIM, base_vectors, cached_embedder, load_base
from smartvector_bench.tools.scale.columns import (
    CHUNK_ROWS,
    gather_ragged,
    interned,
    seeded_rng,
    suffixed,
    tile_ragged,
)

REAL_LIMIT = 20_000
ALPHA = 0.04
BETA = 0.10
SIGMA = 0.04
VECTOR_MODES = ("synthetic", "real")
TEAM_MARKER = " ~{b}"  # appended to every corpus and query text of block b


@dataclass
class ScaleData:
    corpus: Corpus
    queries: Queries
    corpus_vectors: np.ndarray  # (N, 384) float32, L2-normalised
    query_vectors: np.ndarray  # (n_queries, 384) float32, L2-normalised
    block: np.ndarray  # (N,) int64: block (team) of each corpus row
    base_row: np.ndarray  # (N,) int64: row of the base dataset it copies
    labels: Labels  # the base labels tiled (families and timelines per team): for the evaluator only
    query_block: np.ndarray  # (n_queries,) int64
    query_base: np.ndarray  # (n_queries,) int64: index of the base query it copies
    offsets: np.ndarray  # (B,) float64 days added to every time of block b
    info: dict = field(default_factory=dict)  # seed, mode, alpha, sigma, model, timings

    @property
    def n_blocks(self) -> int:
        return len(self.offsets)

    @property
    def vectors(self) -> str:
        """The vector kind (synthetic | real): the ``vectors`` column of every perf row measured on this data."""
        return str(self.info.get("vectors", "synthetic"))



def _tile_labels(bl: Labels, suffixes: np.ndarray, block: np.ndarray, base_row: np.ndarray, q_block: np.ndarray,
                 q_base: np.ndarray, offsets: np.ndarray) -> Labels:
    """The base labels for the tiled corpus and query sample: families get the block suffix (each team has
    its own), and each team's timelines are shifted by the block's time offset like its chunks."""
    timelines = {}
    for b in range(len(offsets)):  # one entry per (team, family): blocks x 12, never per row
        sfx = f"~{b}"
        for key, t in bl.timelines.items():
            timelines[key + sfx] = Timeline(t.effective_from + offsets[b], t.values)
    return Labels(chunk_family=suffixed(bl.chunk_family, suffixes, block, base_row),
                  chunk_doc_type=bl.chunk_doc_type[base_row], chunk_kind=bl.chunk_kind[base_row],
                  chunk_value=bl.chunk_value[base_row],
                  query_family=suffixed(bl.query_family, suffixes, q_block, q_base),
                  query_asks=bl.query_asks[q_base], timelines=timelines)


def _synthesize(base_vecs: np.ndarray, text_code: np.ndarray, rows: np.ndarray, block: np.ndarray,
                team: np.ndarray, sigma: float, seed: int, purpose: str) -> np.ndarray:
    """normalise(base_vecs[rows] + team[block] + sigma g / sqrt(d)) for rows sorted by block.

    The noise ``g`` is keyed by (block, text): block b draws one standard normal vector per distinct base
    text from its own stream, so a text repeated inside a block (an unchanged section of a new version)
    gets one vector, as a real embedding would, and a row's vector does not depend on N. Made in groups
    of whole blocks of about CHUNK_ROWS rows, so temporaries stay small.
    """
    n, d = len(rows), base_vecs.shape[1]
    n_codes = int(text_code.max()) + 1 if len(text_code) else 0
    out = np.empty((n, d), dtype=np.float32)
    scale = np.float32(sigma / math.sqrt(d))
    per_group = max(1, CHUNK_ROWS // max(1, len(base_vecs)))
    starts = np.searchsorted(block, np.arange(0, int(block[-1]) + 1 if n else 0, per_group))
    for s, e in zip(starts.tolist(), starts[1:].tolist() + [n]):
        if s == e:
            continue
        x = out[s:e]
        np.take(base_vecs, rows[s:e], axis=0, out=x)
        x += team[block[s:e]]
        if sigma:
            present, where = np.unique(block[s:e], return_inverse=True)
            noise = np.stack([seeded_rng(seed, purpose, b).standard_normal((n_codes, d), dtype=np.float32)
                              for b in present.tolist()])  # one draw per block, not per row
            x += scale * noise[where, text_code[rows[s:e]]]
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    return out


def team_vectors(n_blocks: int, seed: int, alpha: float, beta: float, avoid: np.ndarray | None = None) -> np.ndarray:
    """(B, 384) float32: ``beta * c + alpha * u_b``, ``c`` one seeded unit vector shared by every block
    (the part of the team marker all teams share), ``u_b`` a seeded unit vector per block. Both are made
    orthogonal to ``avoid`` (the mean base embedding): a random direction's chance alignment with the
    embeddings' common mean would otherwise move every cosine by a seed-dependent amount."""
    u = seeded_rng(seed, "directions").standard_normal((n_blocks, DIM))
    c = seeded_rng(seed, "common").standard_normal((1, DIM))
    if avoid is not None:
        m = avoid / np.linalg.norm(avoid)
        u -= np.outer(u @ m, m)
        c -= np.outer(c @ m, m)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    c /= np.linalg.norm(c)
    return (alpha * u + beta * c).astype(np.float32)


def _date_words(days: float) -> str:
    d = from_days(days)
    return f"{d.day} {d:%B %Y}"


def scale_dataset(n_vectors: int, seed: int = 0, vectors: str = "synthetic", *, n_queries: int = 1000,
                  alpha: float | None = None, beta: float | None = None, sigma: float | None = None,
                  force: bool = False,
                  embedder=None, embedder_cfg: dict | None = None, dataset_cfg: dict | None = None) -> ScaleData:
    """The default dataset multiplied to exactly ``n_vectors`` rows (see the package docstring).

    ``embedder``: an object with ``model_id`` and ``encode`` (default: ``build_embedder`` of
    ``conf/embedder/minilm.yaml`` with the repository's cache); ``dataset_cfg``: overrides of the base
    dataset config (default: the default dataset, seed 42). ``seed`` drives offsets, team directions,
    noise and the query sample, nothing else.
    """
    if not isinstance(n_vectors, (int, np.integer)) or isinstance(n_vectors, bool) or n_vectors < 1:
        raise BenchError(f"n_vectors={n_vectors}: must be an integer >= 1")
    if vectors not in VECTOR_MODES:
        raise BenchError(f"vectors={vectors!r}: unknown; allowed: {', '.join(VECTOR_MODES)}")
    if not isinstance(n_queries, (int, np.integer)) or n_queries < 0:
        raise BenchError(f"n_queries={n_queries}: must be an integer >= 0")
    alpha = ALPHA if alpha is None else float(alpha)
    beta = BETA if beta is None else float(beta)
    sigma = SIGMA if sigma is None else float(sigma)
    for name, value in (("alpha", alpha), ("beta", beta), ("sigma", sigma)):
        if not value >= 0:
            raise BenchError(f"{name}={value}: must be a number >= 0")
    if vectors == "real" and n_vectors > REAL_LIMIT and not force:
        raise BenchError(f"vectors=real: n_vectors={n_vectors} is above REAL_LIMIT={REAL_LIMIT}: embedding every "
                         f"text with MiniLM on CPU, one text per forward pass, takes hours at 1M and fills the "
                         f"cache; use vectors=synthetic, or pass force=True")
    n = int(n_vectors)
    t0 = time.perf_counter()
    base = load_base(dataset_cfg)
    if embedder is None:
        embedder = cached_embedder(embedder_cfg)
    base_e, base_q = base_vectors(base, embedder) if vectors == "synthetic" else (None, None)
    t_base = time.perf_counter() - t0

    t1 = time.perf_counter()
    bc, bq = base.corpus, base.queries
    m = len(bc)
    n_blocks = -(-n // m)
    block = np.repeat(np.arange(n_blocks, dtype=np.int64), m)[:n]
    base_row = np.tile(np.arange(m, dtype=np.int64), n_blocks)[:n]
    first = block * m  # first row of each row's block
    offsets = seeded_rng(seed, "offsets").integers(0, base.horizon_days, size=n_blocks).astype(np.float64)
    shift = offsets[block]

    suffix = np.asarray([f"~{b}" for b in range(n_blocks)], dtype=StringDType())  # per block, not per row
    marker = np.asarray([TEAM_MARKER.format(b=b) for b in range(n_blocks)], dtype=StringDType())
    ids = np.strings.add(np.asarray(bc.ids, dtype=StringDType())[base_row], suffix[block]).tolist()
    texts = np.strings.add(np.asarray(bc.texts, dtype=StringDType())[base_row], marker[block]).tolist()
    titles = (bc.titles * n_blocks)[:n]
    sup = bc.supersedes[base_row]
    corpus = Corpus(
        ids=ids, titles=titles, texts=texts,
        doc_id=interned(bc.doc_id, suffix, block, base_row),
        version=bc.version[base_row], source=bc.source[base_row], authority=bc.authority[base_row],
        created_at=bc.created_at[base_row] + shift, valid_from=bc.valid_from[base_row] + shift,
        valid_to=bc.valid_to[base_row] + shift,  # +inf stays +inf
        depends_on=tile_ragged(bc.depends_on, n_blocks, n, m),
        supersedes=np.where(sup >= 0, sup + first, -1),
        offset_start=bc.offset_start[base_row], offset_end=bc.offset_end[base_row],
        index_of=dict(zip(ids, range(n))),
    )

    # Queries: eligible (block, query) pairs, whole blocks in a seeded order, the last block a seeded subset.
    refs = np.full(len(bq), -1, dtype=np.int64)  # the last base row each query needs
    for r in (bq.relevant, bq.stale, bq.rumor):
        np.maximum.at(refs, r.row_ids(), r.indices)
    rows_in_block = np.minimum(m, n - np.arange(n_blocks) * m)
    rng_q = seeded_rng(seed, "queries")
    order = rng_q.permutation(n_blocks)
    eligible = refs[None, :] < rows_in_block[order][:, None]  # (B, 138) in the seeded block order
    counts = eligible.sum(1)
    want = min(int(n_queries), int(counts.sum()))
    k = int(np.searchsorted(np.cumsum(counts), want))  # blocks order[:k] whole, order[k] partly
    take = np.zeros_like(eligible)
    take[:k] = eligible[:k]
    rest = want - int(counts[:k].sum())
    if rest > 0:
        cand = np.nonzero(eligible[k])[0]
        take[k, rng_q.choice(cand, size=rest, replace=False)] = True
    qb_pos, q_base = np.nonzero(take)
    q_block = order[qb_pos]
    srt = np.lexsort((q_base, q_block))
    q_block, q_base = q_block[srt].astype(np.int64), q_base[srt].astype(np.int64)
    q_shift, q_first = offsets[q_block], q_block * m
    q_texts = np.strings.add(np.asarray(bq.texts, dtype=StringDType())[q_base], marker[q_block]).tolist()
    hist = np.nonzero(bq.category[q_base] == "historical")[0]
    for j in hist.tolist():  # historical questions name their date: move it with the block
        old, new = _date_words(bq.as_of[q_base[j]]), _date_words(bq.as_of[q_base[j]] + q_shift[j])
        q_texts[j] = q_texts[j].replace(old, new)
    queries = Queries(
        ids=np.strings.add(np.asarray(bq.ids, dtype=StringDType())[q_base], suffix[q_block]).tolist(),
        texts=q_texts, query_time=bq.query_time[q_base] + q_shift, as_of=bq.as_of[q_base] + q_shift,
        category=bq.category[q_base], split=bq.split[q_base],
        relevant=gather_ragged(bq.relevant, q_base, q_first),
        grades=gather_ragged(bq.grades, q_base, np.zeros(len(q_base), dtype=np.int64)),
        stale=gather_ragged(bq.stale, q_base, q_first), rumor=gather_ragged(bq.rumor, q_base, q_first),
        family=np.empty(0, dtype=object),  # set below: the labels' query families
    )
    labels = _tile_labels(base.labels, suffix, block, base_row, q_block, q_base, offsets)
    queries.family = labels.query_family  # as load_dataset does: the cluster of a query is its family
    t_struct = time.perf_counter() - t1

    t2 = time.perf_counter()
    if vectors == "synthetic":
        team = team_vectors(n_blocks, seed, alpha, beta, avoid=np.concatenate([base_e, base_q]).mean(0))
        c_code = np.unique(np.asarray(bc.texts, dtype=object), return_inverse=True)[1]
        q_code = np.unique(np.asarray(bq.texts, dtype=object), return_inverse=True)[1]
        cvec = _synthesize(base_e, c_code, base_row, block, team, sigma, seed, "corpus-noise")
        qvec = _synthesize(base_q, q_code, q_base, q_block, team, sigma, seed, "query-noise")
    else:
        cvec = np.asarray(embedder.encode(corpus.texts), dtype=np.float32)
        qvec = np.asarray(embedder.encode(queries.texts), dtype=np.float32) if len(queries) else \
            np.zeros((0, cvec.shape[1]), np.float32)
    t_vec = time.perf_counter() - t2
    info = {"n_vectors": n, "n_blocks": n_blocks, "n_queries": len(queries), "seed": int(seed),
            "vectors": vectors, "alpha": alpha if vectors == "synthetic" else None,
            "beta": beta if vectors == "synthetic" else None, "sigma": sigma if vectors == "synthetic" else None, "embedder": embedder.model_id,
            "base_dataset_seed": base.config.get("seed"),
            "timings_s": {"base_and_model": round(t_base, 3), "structure": round(t_struct, 3),
                          "vectors": round(t_vec, 3)}}
    return ScaleData(corpus=corpus, queries=queries, corpus_vectors=cvec, query_vectors=qvec, block=block,
                     base_row=base_row, labels=labels, query_block=q_block, query_base=q_base,
                     offsets=offsets, info=info)

