"""LiveVectorLake (arXiv 2601.05270) as a benchmark system, on a real Delta Lake table (``smartvector_bench.systems.livevectorlake``).

**Index.** Each document's versions are derived from its chunks' validity windows (:func:`corpus_versions`):
a chunk is in force from ``max(created_at, valid_from)`` to ``valid_to``, and at every time a chunk of the
document starts or ends, the document is the chunks in force then, in document order (``offset_start``, ties
in corpus order; the corpus rows themselves are shuffled), joined by a blank line, so each of our sections is
one paragraph. This reads both layouts: the generated datasets re-emit every chunk of a (doc_id, version) with
the version's window (each snapshot is then exactly that version), and a corpus built from a history
(``dataset=git_history``) keeps an unchanged paragraph as one chunk whose window spans several versions. The
snapshots are ingested in time order (``created_at``, then effective time, doc_id, version) through the lake's
per-document CDC, ``ingest_batch`` consecutive snapshots per lake commit (the rows and results of ingesting them
one by one; ``commits`` counts batches, ``ingest_latency_ms`` shares a batch's write time among its versions). A
snapshot takes effect at ``max(created_at, valid_from)``: ``valid_from`` because the corpus windows and the
queries' ``as_of`` are valid time ("what held at T"); ingesting at ``created_at`` would close a policy's
previous version days before the new one is in force (policies here are written up to a week before they take
effect) and return the not-yet-valid version in between. The ``max`` only matters for a
chunk recorded as effective before it was written (never in our data): it keeps a chunk from being returned
at a time before it existed. When every chunk of a document has ended (its last version closed, or a gap
before the next), an empty text at that time deletes its paragraphs. ``check_dataset`` refuses, before
anything is embedded, a dataset without ``doc_id`` or validity times (``valid_from`` / ``created_at``).

Paragraph vectors are NOT computed here: the lake asks for the new and modified paragraphs only, and gets
the corpus vector of the chunk of that document version the paragraph comes from (``vectors`` given to
``index``); ``describe()`` counts how many paragraphs needed embedding. If a corpus chunk held a blank line
(several paragraphs; never in our data) each of its paragraphs would get the chunk's vector; they are counted.

**Search.** A query is *current* when ``as_of >= serve_time - current_tolerance_days``; current queries go to
the hot tier when it is exact at ``as_of`` (``as_of`` not before the lake's horizon, the last time a row
opened or closed), otherwise to the cold tier, whose rows are filtered by ``valid_from <= as_of < valid_to``
before ranking by cosine. Each returned row is mapped back to a corpus index: the chunk of the same document,
at the row's paragraph position, of the version in force at ``as_of`` (an unchanged paragraph's single cold row
stands for one corpus chunk per version it lived through). Reported confidence: top-1 cosine clipped to [0, 1].

**Where the lake lives.** ``lake_path: null`` makes a new folder ``livevectorlake-*`` in the temp dir
(``tempfile.gettempdir()``: ``$TMPDIR``, else ``/tmp``; under ``smartvector-bench`` the job's
``<run>/.scratch/``, :mod:`smartvector_bench.core.scratch`, so a killed run leaves nothing in ``/tmp``) per ``index()``
call. It is removed by ``close()``, by the next ``index()``, when the retriever is garbage-collected and at
interpreter exit (``weakref.finalize``), unless ``keep_lake: true``: a kept lake goes to the system temp dir,
outside the job's scratch. A given ``lake_path`` must be empty or missing (``index`` builds a new lake) and is
kept. The hot tier (``hot_index: milvus``, the default) is Milvus Lite in the lake's ``hot/milvus.db`` unless
``milvus_uri`` names a server; removing a temporary lake first stops its Milvus Lite server (or drops its
collections on that server).
"""

from __future__ import annotations

import bisect
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from smartvector_bench.core.dataset.chunking import chunk_paragraphs
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.core.scratch import system_tempdir
from smartvector_bench.core.settings import choice, section
from smartvector_bench.core.timeutil import format_iso, from_days
from smartvector_bench.systems.updates import chunk_hash
from smartvector_bench.systems.base import require_fields
from smartvector_bench.systems.livevectorlake.hot_milvus import check_settings as check_milvus
from smartvector_bench.systems.livevectorlake.milvus_conn import remove_lake

_TIE_MARGIN = 16  # fetch a few extra hits so ties at rank k are broken by our rule, not by the index


@dataclass(frozen=True)
class LVLSettings:
    POSITIVE: ClassVar[tuple[str, ...]] = ("hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "ingest_batch")

    lake_path: str | None = None
    current_tolerance_days: float = 1.0
    hot_index: str = choice("milvus", "flat", "hnsw", "milvus_hnsw")
    cold_cache: bool = True
    keep_lake: bool = False
    hnsw_m: int = 16
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 64
    milvus_uri: str | None = None  # null: Milvus Lite in the lake's hot/milvus.db; else a Milvus server's URI
    milvus_token: str | None = None  # a Milvus server's token ("user:password" or an API key), if it needs one
    milvus_collection: str | None = None  # prefix of the lake's collection names (null: lvl_hot)
    # Compact the cold Delta table after every this many ingest commits (0: never). A maintenance setting
    # that changes no row and no result, only ingest time at thousands of commits (one commit per batch of
    # ingest_batch versions: 1 on the default dataset, 9 on the handbook, so it never triggers there).
    compact_every: int = 200
    ingest_batch: int = 500  # versions per lake commit in index() (LiveVectorLake.ingest_batch); 1: one per version


def settings(cfg: dict, where: str = "retrievers.livevectorlake") -> LVLSettings:
    s = section(LVLSettings, cfg, where)
    if s.lake_path is not None and (not isinstance(s.lake_path, str) or not s.lake_path.strip()):
        raise BenchError(f"{where}.lake_path={s.lake_path!r}: must be null or a folder path")
    check_milvus(s.milvus_uri, s.milvus_token, s.milvus_collection, f"{where}.")
    return s


@dataclass
class Version:
    """One document version as the lake ingests it (or, with ``text == ""``, the document's retirement)."""

    doc_id: str
    version: int
    created_at: float
    effective_at: float
    end: float  # when the next version (or the retirement) takes effect; inf while in force
    text: str
    paragraphs: list[str]  # in position order
    para_hash: list[str]
    para_chunk: list[int]  # corpus index of the chunk each paragraph comes from
    ingest_at: float = 0.0  # when the lake sees it: created_at (delayed behind an earlier version if need be)


def _in_force_from(corpus: Corpus) -> np.ndarray:
    """When each chunk takes effect: ``max(created_at, valid_from)`` (valid time, never before it was written)."""
    return np.maximum(corpus.created_at, corpus.valid_from)


def corpus_versions(corpus: Corpus) -> list[Version]:
    """Each document's version snapshots, derived from its chunks' windows, plus retirements, in ingest order.

    A chunk is in force over ``[max(created_at, valid_from), valid_to)``. Every time a chunk of document d
    starts or ends is a snapshot time; the snapshot is the chunks of d in force then, in document order
    (``offset_start``, ties in corpus order), joined by a blank line. So a corpus that re-emits every chunk of
    a version with the version's window (the generated datasets) and one whose unchanged chunk spans several
    versions with one window (``dataset=git_history``) both give the document's versions. A snapshot's
    version is the highest ``version`` of the chunks starting then (the previous snapshot's when chunks only
    end), its ``created_at`` their latest ``created_at`` (the snapshot time when chunks only end); an empty
    snapshot after a non-empty one retires the document (text ``""``); an unchanged snapshot is skipped."""
    start = _in_force_from(corpus)
    end = corpus.valid_to
    rows_of: dict[str, list[int]] = {}
    for i in np.argsort(corpus.offset_start, kind="stable").tolist():  # document order within each document
        rows_of.setdefault(str(corpus.doc_id[i]), []).append(i)
    out: list[Version] = []
    for doc_id, rows in rows_of.items():
        r = np.array(rows, dtype=np.int64)
        s_r, e_r = start[r], end[r]
        times = np.unique(np.concatenate([s_r, e_r[np.isfinite(e_r)]]))
        seq: list[Version] = []
        live_prev: list[int] = []
        version = 0
        for t in times.tolist():
            live = r[(s_r <= t) & (t < e_r)].tolist()  # in document order
            if live == live_prev:
                continue
            starting = r[s_r == t]
            if len(starting):
                version = int(corpus.version[starting].max())
            created = float(corpus.created_at[starting].max()) if len(starting) else t
            if seq:
                seq[-1].end = t
            if not live:  # the document is withdrawn
                seq.append(Version(doc_id, version, t, t, np.inf, "", [], [], []))
            else:
                paragraphs, hashes, owners = [], [], []
                for i in live:
                    for c in chunk_paragraphs(corpus.texts[i]):
                        paragraphs.append(c.text)
                        hashes.append(chunk_hash(c.text))
                        owners.append(i)
                text = "\n\n".join(corpus.texts[i] for i in live)
                if [c.text for c in chunk_paragraphs(text)] != paragraphs:  # pragma: no cover - guarded assumption
                    raise BenchError(f"corpus: {doc_id} version {version}: chunks do not join into paragraphs")
                seq.append(Version(doc_id, version, created, t, np.inf, text, paragraphs, hashes, owners))
            live_prev = live
        # A document's versions must reach the lake in effective order: one that was written before an earlier
        # one waits for it (never happens in our data, where created_at follows valid_from).
        latest = -np.inf
        for v in seq:
            latest = max(latest, v.created_at)
            v.ingest_at = latest
        out.extend(seq)
    out.sort(key=lambda v: (v.ingest_at, v.effective_at, v.doc_id, v.version, v.text == ""))
    return out


def _vectors_for(v: Version, vectors: np.ndarray):
    """The lake's ``vectors_for`` for one snapshot: each paragraph gets the corpus vector of its chunk."""
    lookup = {p: vectors[i] for p, i in zip(v.paragraphs, v.para_chunk)}
    return lambda texts: np.stack([lookup[t] for t in texts]) if texts else np.zeros((0, vectors.shape[1]))


NEEDS = ("doc_id", "valid_from")  # what corpus_versions reads that has no usable default (valid_from or created_at)


def check_corpus(corpus: Corpus, name: str = "livevectorlake") -> None:
    """One-line BenchError when the dataset lacks a field livevectorlake needs (before anything is embedded)."""
    require_fields(name, corpus, NEEDS, "it rebuilds each document's versions from its chunks' doc_id and validity "
                   "windows: valid_from or created_at, and valid_to")


class LiveVectorLakeRetriever:
    name = "livevectorlake"

    def __init__(self, name: str = "livevectorlake", **params):
        self.name = name
        self.s = settings(params, f"retrievers.{name}")
        self.lake = None
        self._info: dict = {}
        self._cleanup: weakref.finalize | None = None  # removes the temporary lake folder

    def check_dataset(self, corpus: Corpus) -> None:
        check_corpus(corpus, self.name)

    def close(self) -> None:
        """Drop the lake; a temporary lake folder (``lake_path: null``, not kept) is removed."""
        self.lake = None
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None

    # -- index -----------------------------------------------------------------------------------------------

    def _lake_folder(self) -> Path:
        if self.s.lake_path is None:
            where = system_tempdir() if self.s.keep_lake else tempfile.gettempdir()
            path = Path(tempfile.mkdtemp(prefix="livevectorlake-", dir=where))
            if not self.s.keep_lake:  # runs on close(), on garbage collection or at exit, whichever comes first
                self._cleanup = weakref.finalize(self, remove_lake, str(path), self.s.milvus_uri,
                                                 self.s.milvus_token)
            return path
        path = Path(self.s.lake_path)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise BenchError(f"retrievers.{self.name}.lake_path={path}: must be an empty or missing folder "
                             "(index() builds a new lake)")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        # Here, not at the top: the lake loads deltalake and pyarrow, and every configured system is built (not
        # indexed) to check a config, so a run without this system never pays for them.
        from smartvector_bench.systems.livevectorlake import LiveVectorLake

        t_start = time.perf_counter()
        vectors = np.asarray(vectors, dtype=np.float32)
        self.corpus, self.serve_time = corpus, float(serve_time)
        self.close()  # a previous index()'s temporary lake is no longer reachable
        self.lake = LiveVectorLake.open(self._lake_folder(), dim=int(vectors.shape[1]), hot_index=self.s.hot_index,
                                        cold_cache=self.s.cold_cache, hnsw_m=self.s.hnsw_m,
                                        hnsw_ef_construction=self.s.hnsw_ef_construction,
                                        hnsw_ef_search=self.s.hnsw_ef_search,
                                        compact_every=self.s.compact_every, milvus_uri=self.s.milvus_uri,
                                        milvus_token=self.s.milvus_token,
                                        milvus_collection=self.s.milvus_collection)
        versions = corpus_versions(corpus)
        results = []
        for b in range(0, len(versions), self.s.ingest_batch):  # consecutive slices of the ingest order
            batch = versions[b:b + self.s.ingest_batch]
            out = self.lake.ingest_batch([(v.doc_id, v.version, v.text, v.effective_at, _vectors_for(v, vectors))
                                          for v in batch])
            results.extend(zip(batch, out.results))
        ingest_s = time.perf_counter() - t_start
        snap = self.lake.cold.snapshot()  # warm the cold cache (the load time is reported)
        self._versions: dict[str, list[Version]] = {}
        for v in versions:
            self._versions.setdefault(v.doc_id, []).append(v)
        for vs in self._versions.values():
            vs.sort(key=lambda v: v.effective_at)
        self._starts = {d: [v.effective_at for v in vs] for d, vs in self._versions.items()}
        chunk_counts = np.bincount([i for v in versions for i in v.para_chunk], minlength=len(corpus))
        self._info = {"ingest": self._ingest_stats(results), "index_s": round(time.perf_counter() - t_start, 4),
                      "ingest_s": round(ingest_s, 4), "cold_load_s": round(snap.load_s, 4),
                      "paragraphs_from_multi_paragraph_chunks": int(np.sum(chunk_counts[chunk_counts > 1]))}
        self._routing = {"hot": 0, "cold_historical": 0, "cold_current_before_horizon": 0}
        self._latency: dict[str, list[float]] = {"hot": [], "cold": []}
        self._leak = {"returned": 0, "outside_window": 0, "created_after_as_of": 0, "unmapped_hits": 0}

    @staticmethod
    def _ingest_stats(results) -> dict:
        classes = {c: 0 for c in ("unchanged", "moved", "modified", "new", "deleted")}
        steps: dict[int, list[float]] = {}
        seen: dict[str, int] = {}
        seen_seq: set[int | None] = set()
        n_par = embedded = rows_added = rows_closed = rows_deleted = commits = retirements = 0
        t_ingest = []
        for v, r in results:
            for c, n in r.classes.items():
                classes[c] += n
            n_par += r.n_paragraphs
            embedded += r.embedded
            rows_added += r.rows_added
            rows_closed += r.rows_closed
            rows_deleted += r.rows_deleted
            commits += r.seq is not None and r.seq not in seen_seq  # one commit per batch that wrote rows
            seen_seq.add(r.seq)
            t_ingest.append(sum(r.timings_s.values()))
            if v.text == "":
                retirements += 1
                continue
            step = seen.get(v.doc_id, 0) + 1
            seen[v.doc_id] = step
            if step > 1 and r.n_paragraphs:
                steps.setdefault(step, []).append(r.embedded / r.n_paragraphs)
        later = [x for s in steps.values() for x in s]
        t = np.array(t_ingest) if t_ingest else np.zeros(1)
        return {
            "documents": len(seen), "versions": sum(seen.values()), "retirements": retirements,
            "commits": commits, "paragraphs": n_par, "classes": classes, "embeddings_needed": embedded,
            "embedding_share": round(embedded / n_par, 4) if n_par else None,
            "rows_added": rows_added, "rows_closed": rows_closed, "rows_deleted": rows_deleted,
            # per document and version step (v1->v2 is step 2): embedded / paragraphs of the new version,
            # never de-duplicated across documents
            "reembed_share_by_step": {f"v{s - 1}->v{s}": {"n": len(x), "mean": round(float(np.mean(x)), 4),
                                                          "shares": [round(y, 4) for y in x]}
                                      for s, x in sorted(steps.items())},
            "reembed_share_after_first_version": round(float(np.mean(later)), 4) if later else None,
            "ingest_latency_ms": {"median": round(1000 * float(np.median(t)), 3),
                                  "p95": round(1000 * float(np.quantile(t, 0.95)), 3)},
        }

    # -- search ----------------------------------------------------------------------------------------------

    def _corpus_index(self, doc_id: str, position: int, chunk_id: str, as_of: float) -> int:
        """The corpus chunk a row stands for at ``as_of``: same document and position (hash checked), in the
        version in force at ``as_of``; -1 when there is none."""
        starts = self._starts.get(doc_id)
        if not starts:
            return -1
        j = bisect.bisect_right(starts, as_of) - 1
        if j < 0:
            return -1
        v = self._versions[doc_id][j]
        if not as_of < v.end:
            return -1
        if position < len(v.para_hash) and v.para_hash[position] == chunk_id:
            return v.para_chunk[position]
        return v.para_chunk[v.para_hash.index(chunk_id)] if chunk_id in v.para_hash else -1

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **_ignored) -> Run:
        if self.lake is None:
            raise BenchError(f"{self.name}: search() before index()")
        fetch = k + _TIE_MARGIN
        n_q = len(query_vectors)
        scores = np.full((n_q, fetch), -np.inf)
        cand = np.zeros((n_q, fetch), dtype=np.int64)
        c = self.corpus
        for q in range(n_q):
            t = float(as_of[q])
            current = t >= self.serve_time - self.s.current_tolerance_days
            res = self.lake.query(query_vectors[q], t, fetch, tier="auto" if current else "cold")
            self._latency[res.tier].append(res.latency_s)
            if res.tier == "hot":
                self._routing["hot"] += 1
            else:
                self._routing["cold_current_before_horizon" if current else "cold_historical"] += 1
            seen: set[int] = set()
            col = 0
            for h in res.hits:
                idx = self._corpus_index(h.doc_id, h.position, h.chunk_id, t)
                if idx < 0:
                    self._leak["unmapped_hits"] += 1
                    continue
                if idx in seen:
                    continue
                seen.add(idx)
                scores[q, col], cand[q, col] = h.score, idx
                col += 1
                self._leak["returned"] += 1
                self._leak["outside_window"] += int(not (c.valid_from[idx] <= t < c.valid_to[idx]))
                self._leak["created_after_as_of"] += int(c.created_at[idx] > t)
        ranked, top = rank_by_score(scores, k, candidates=cand)
        confidence = np.where(ranked[:, 0] >= 0, np.clip(top[:, 0], 0.0, 1.0), np.nan)
        return Run(self.name, ranked, top, confidence)

    # -- report ----------------------------------------------------------------------------------------------

    def describe(self) -> dict:
        out: dict = {"confidence": "top-1 cosine clipped to [0, 1]",
                     "settings": {"current_tolerance_days": self.s.current_tolerance_days,
                                  "hot_index": self.s.hot_index, "cold_cache": self.s.cold_cache,
                                  "ingest_batch": self.s.ingest_batch}}
        if self.lake is None:
            return out
        lake = self.lake.describe()
        lat = {}
        for tier, xs in getattr(self, "_latency", {}).items():
            a = np.array(xs) * 1000
            lat[tier] = ({"n": len(xs), "median": round(float(np.median(a)), 4),
                          "p95": round(float(np.quantile(a, 0.95)), 4), "max": round(float(a.max()), 4)}
                         if len(xs) else {"n": 0})
        horizon = self.lake.horizon
        out.update({
            **self._info,
            "lake": {**lake, "lake_path_setting": self.s.lake_path, "kept": bool(self.s.lake_path or self.s.keep_lake),
                     "cold_loads": self.lake.cold.loads},
            "serve_time": format_iso(from_days(self.serve_time)),
            "horizon": None if horizon is None else format_iso(from_days(horizon)),
            "routing": dict(getattr(self, "_routing", {})),
            "query_latency_ms": lat,
            "leakage_check": dict(getattr(self, "_leak", {})),
        })
        return out
