"""smartvector_bench.core.embedding: a text's vector depends on the text alone (not on its batch-mates, the order,
the thread count or what the cache held), the default equal-length passes give the per-text vectors bit for bit,
the embedder config is checked before any model loads, and a bad cache file gives a one-line error naming the
file and the fix."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest

from smartvector_bench.core.embedding import (
    CACHE_FIX,
    MAX_BATCH_TOKENS,
    CachedEmbedder,
    EmbeddingCache,
    HashingEmbedder,
    build_embedder,
    validate_embedder,
)
from smartvector_bench.core.errors import BenchError

from .conftest import IS_ROOT, compose_config, run_as_nobody

# ~40 texts of varied lengths (1 word to past MiniLM's 256-token limit), one repeated.
_WORDS = ("annual leave policy limit days team database backup hours region approval manager expense report "
          "travel budget security review deadline quarter contract vendor").split()
TEXTS = (["OK", "leave", "How many days of annual leave do we get?", "Annual leave is 25 days per year.",
          "The database is backed up every 6 hours.", "Expense reports over $500 need a manager's approval.",
          "Per the 2024-03 update, the travel budget limit is 1200 EUR per trip for team 7."]
         + [" ".join(_WORDS[(i * 7 + j) % len(_WORDS)] for j in range(n))
            for i, n in enumerate([1, 2, 3, 5, 8, 12, 17, 23, 30, 38, 47, 57, 68, 80, 95, 110, 130, 150, 4, 7,
                                   11, 16, 260, 3, 6, 9, 14, 20, 27, 35, 44])]
         + ["How many days of annual leave do we get?"])
# Four texts of each token length (each word is one token, plus [CLS] and [SEP]), below and above the 16-row
# switch of MKL's matrix-product kernel (core/embedding.py docstring), so that passes hold several texts.
SAME_LENGTH = [" ".join(_WORDS[(i * 5 + j * 3) % len(_WORDS)] for j in range(n))
               for n in (6, 9, 12, 13, 14, 20, 33, 60) for i in range(4)]


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg.strip() == msg
    return msg


# --- batch independence with the real model -----------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from smartvector_bench.core.embedding import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def reference(minilm):
    return minilm.encode(TEXTS)


@pytest.mark.model
def test_minilm_model_id_names_the_per_text_mode(minilm):
    assert minilm.model_id.endswith("/per-text") and minilm.dim == 384
    # the cache key changes with the mode: vectors of the old batched encoder are never reused
    old = minilm.model_id.removesuffix("/per-text")
    assert EmbeddingCache.key(old, "x") != EmbeddingCache.key(minilm.model_id, "x")


@pytest.mark.model
def test_batched_sentence_transformers_call_depends_on_batch_mates(minilm, reference):
    """The failure this module prevents: the plain padded batch call moves some vectors."""
    batched = minilm._model.encode(TEXTS, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    assert not np.array_equal(np.asarray(batched, np.float32), reference)
    assert np.abs(batched - reference).max() < 1e-5  # noise, not a different model


@pytest.mark.model
def test_per_text_vectors_are_independent_of_order_and_batch(minilm, reference):
    assert reference.shape == (len(TEXTS), 384) and reference.dtype == np.float32
    assert np.array_equal(reference[2], reference[-1])  # the repeated text
    order = list(range(len(TEXTS)))
    random.Random(0).shuffle(order)
    shuffled = minilm.encode([TEXTS[i] for i in order])
    assert np.array_equal(shuffled[np.argsort(order)], reference)
    singly = np.stack([minilm.encode([t])[0] for t in TEXTS])
    assert np.array_equal(singly, reference)
    assert np.array_equal(CachedEmbedder(minilm, None).encode(TEXTS), reference)  # no cache


@pytest.mark.model
def test_per_text_vectors_are_independent_of_the_thread_count(minilm, reference):
    import torch

    before = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            assert np.array_equal(minilm.encode(TEXTS), reference), n
            assert torch.get_num_threads() == n  # the caller's setting is restored
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def spec(minilm):
    """The specification: one text per forward pass."""
    return minilm.encode(TEXTS + SAME_LENGTH, per_text=True)


@pytest.mark.model
def test_equal_length_passes_equal_the_per_text_specification(minilm, spec, monkeypatch):
    import torch

    texts = TEXTS + SAME_LENGTH
    min_len = minilm.min_batched_length()
    assert min_len is not None and 2 <= min_len <= 32  # this machine batches (else encode is per text)
    passes = minilm.passes([minilm._tokenize([t]) for t in texts])
    assert sorted(i for p in passes for i in p) == list(range(len(texts)))
    assert sum(len(p) > 1 for p in passes) >= 4  # the comparison below covers shared passes
    rng, before = random.Random(1), torch.get_num_threads()
    try:  # 1 or 2 workers; shuffled, all texts or half of them (other batch-mates); passes up to 40 tokens too
        for threads, max_tokens, share in ((1, MAX_BATCH_TOKENS, 1), (2, MAX_BATCH_TOKENS, 2), (2, 40, 1)):
            torch.set_num_threads(threads)
            monkeypatch.setattr(minilm, "max_batch_tokens", max_tokens)
            part = rng.sample(range(len(texts)), len(texts) // share)
            assert np.array_equal(minilm.encode([texts[i] for i in part]), spec[part]), (threads, max_tokens, share)
    finally:
        torch.set_num_threads(before)


@pytest.mark.model
def test_texts_below_the_probed_length_would_move_if_batched(minilm, monkeypatch):
    """The comparison above can fail: texts shorter than the probed length, made to share passes, change bits.
    Eight texts of each token length from 3 (one word) to the probed length less one (on an AVX-512 host that
    probes 4: one-word texts; where MKL switches kernels at 16 rows: up to 15 tokens)."""
    min_len = minilm.min_batched_length()
    if min_len is None or min_len <= 3:
        pytest.skip(f"min_batched_length={min_len}: no text of 3 tokens or more below it")
    short = [" ".join(_WORDS[(i * 5 + j * 3) % len(_WORDS)] for j in range(n))
             for n in range(1, min_len - 2) for i in range(8)]
    assert {len(minilm._tokenize([t])["input_ids"][0]) for t in short} == set(range(3, min_len))
    spec = minilm.encode(short, per_text=True)
    assert np.array_equal(minilm.encode(short), spec)  # kept alone, as the default does: the specification's bits
    monkeypatch.setattr(minilm, "_min_len", 2)  # now they share passes
    got = minilm.encode(short)
    if np.array_equal(got, spec):  # the probe is per linear layer; the whole model may not show it
        pytest.skip(f"min_batched_length={min_len}, yet texts below it batched together keep their bits here")
    assert not np.array_equal(got, spec)


@pytest.mark.model
def test_per_text_vectors_are_independent_of_the_cache_state(minilm, reference, tmp_path):
    distinct = len(set(TEXTS))
    path = tmp_path / "c.sqlite"
    cold = CachedEmbedder(minilm, EmbeddingCache(path))
    assert np.array_equal(cold.encode(TEXTS), reference)
    assert cold.calls == distinct  # each distinct text embedded once
    cold.cache.close()
    warm = CachedEmbedder(minilm, EmbeddingCache(path))  # reopened: vectors come from the file
    assert np.array_equal(warm.encode(TEXTS), reference)
    assert warm.calls == 0
    warm.cache.close()

    # partially warm: half the texts first, in another order, then all of them
    half = TEXTS[::2][::-1]
    partial = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "p.sqlite"))
    partial.encode(half)
    assert np.array_equal(partial.encode(TEXTS), reference)
    assert partial.calls == distinct
    partial.cache.close()


# --- config validation (no model) ---------------------------------------------------------------------------

@pytest.mark.parametrize("option", ["minilm", "hashing"])
def test_shipped_embedder_configs_validate(option):
    validate_embedder(compose_config([f"embedder={option}"])["embedder"])


@pytest.mark.parametrize("cfg, start, allowed", [
    ({"kind": "hashing", "dim": 0}, "embedder.dim=0: must be an integer > 0", None),
    ({"kind": "hashing", "dim": -3}, "embedder.dim=-3:", "integer > 0"),
    ({"kind": "hashing", "dim": True}, "embedder.dim=true:", "integer > 0"),
    ({"kind": "hashing", "dim": 1.5}, "embedder.dim=1.5:", "integer > 0"),
    ({"kind": "hashing", "dim": "64"}, "embedder.dim='64':", "integer > 0"),
    ({"kind": "sbert"}, "embedder.kind=sbert: unknown", "minilm, hashing"),
    ({"dim": 8}, "embedder.kind=null: unknown", "minilm, hashing"),
    ({"kind": "hashing", "foo": 1}, "embedder.foo: unknown key", "kind, dim, cache_path"),
    ({"kind": "minilm", "batch_size": 64}, "embedder.batch_size: unknown key", "show_progress"),
    ({"kind": "minilm", "dim": 384}, "embedder.dim: unknown key", "hub_name"),
    ({"kind": "minilm", "model": ""}, "embedder.model='':", "non-empty string"),
    ({"kind": "minilm", "hub_name": 3}, "embedder.hub_name=3:", "non-empty string"),
    ({"kind": "minilm", "show_progress": "yes"}, "embedder.show_progress='yes':", "true or false"),
    ({"kind": "hashing", "cache_path": ""}, "embedder.cache_path='':", "null"),
    ({"kind": "hashing", "cache_path": 5}, "embedder.cache_path=5:", "null"),
    (None, "embedder=null:", "mapping"),
])
def test_validate_embedder_names_the_key_and_what_is_allowed(cfg, start, allowed):
    with pytest.raises(BenchError) as exc:
        validate_embedder(cfg)
    msg = _one_line(exc)
    assert msg.startswith(start), msg
    assert allowed is None or allowed in msg, msg


def test_build_embedder_validates_before_loading_anything():
    with pytest.raises(BenchError, match=r"^embedder\.dim=0: must be an integer > 0$"):  # was ZeroDivisionError
        build_embedder({"kind": "hashing", "dim": 0})
    with pytest.raises(BenchError, match="embedder.batch_size: unknown key"):  # no model load: fails at once
        build_embedder({"kind": "minilm", "batch_size": 64})
    assert build_embedder({"kind": "hashing", "dim": 8}).encode(["a b"]).shape == (1, 8)


# --- the cache: each distinct text once, and clear errors for a bad file -------------------------------------

class _Counting:
    model_id, dim = "counting", 16

    def __init__(self):
        self.seen: list[str] = []
        self._inner = HashingEmbedder(16)

    def encode(self, texts):
        self.seen += list(texts)
        return self._inner.encode(texts)


def test_cached_embedder_embeds_each_distinct_missing_text_once(tmp_path):
    inner = _Counting()
    emb = CachedEmbedder(inner, EmbeddingCache(tmp_path / "c.sqlite"))
    emb.encode(["b", "a", "b", "c"])
    emb.encode(["c", "d", "a", "d"])
    assert sorted(inner.seen) == ["a", "b", "c", "d"] and emb.calls == 4


def test_cache_in_a_missing_folder_is_created(tmp_path):
    path = tmp_path / "new" / "deeper" / "c.sqlite"
    emb = CachedEmbedder(HashingEmbedder(8), EmbeddingCache(path))
    v = emb.encode(["x y"])
    assert path.is_file() and np.array_equal(v, HashingEmbedder(8).encode(["x y"]))


def _cache_error(path, dim: int = 8, text: str = "x") -> str:
    with pytest.raises(BenchError) as exc:
        CachedEmbedder(HashingEmbedder(dim), EmbeddingCache(path)).encode([text])
    msg = _one_line(exc)
    assert str(path) in msg, msg
    return msg


def test_cache_path_that_is_a_folder(tmp_path):
    msg = _cache_error(tmp_path)
    assert "folder" in msg and "embedder.cache_path=null" in msg


@pytest.mark.parametrize("content", [os.urandom(4096), b"just some notes\n" * 20])
def test_cache_file_that_is_not_sqlite(tmp_path, content):
    path = tmp_path / "c.sqlite"
    path.write_bytes(content)
    msg = _cache_error(path)
    assert CACHE_FIX in msg, msg
    assert path.read_bytes() == content  # left alone


def _sqlite(path, *statements):
    db = sqlite3.connect(path)
    for s in statements:
        db.execute(*s) if isinstance(s, tuple) else db.execute(s)
    db.commit()
    db.close()


def test_cache_file_that_is_another_sqlite_database(tmp_path):
    path = tmp_path / "kg.sqlite"
    _sqlite(path, "CREATE TABLE entities (id TEXT)")
    msg = _cache_error(path)
    assert "vectors" in msg and CACHE_FIX in msg
    _sqlite(path, "CREATE TABLE vectors (id TEXT, embedding BLOB)")
    msg = _cache_error(path)
    assert "columns (id, embedding)" in msg and "key, dim, vec" in msg and CACHE_FIX in msg


def _bad_row(path, dim: int, blob: bytes, text: str = "x") -> str:
    key = EmbeddingCache.key(HashingEmbedder(8).model_id, text)
    EmbeddingCache(path).close()  # a valid cache file
    _sqlite(path, ("INSERT INTO vectors (key, dim, vec) VALUES (?, ?, ?)", (key, dim, blob)))
    return key


@pytest.mark.parametrize("dim, n_values, why", [
    (8, 7, "vec has 28 bytes, dim=8 needs 32"),     # truncated vector
    (8, 9, "vec has 36 bytes, dim=8 needs 32"),
    (4, 4, "dim=4, the embedder's is 8"),           # a consistent row of another dimension
])
def test_cache_row_that_is_corrupt(tmp_path, dim, n_values, why):
    path = tmp_path / "c.sqlite"
    key = _bad_row(path, dim, np.ones(n_values, np.float32).tobytes())
    msg = _cache_error(path)
    assert f"row key={key} is corrupt ({why})" in msg and CACHE_FIX in msg, msg


def test_cache_in_an_unwritable_location(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    msg = _cache_error(blocker / "c.sqlite")
    assert "cannot create its folder" in msg and "embedder.cache_path=null" in msg


def test_cache_in_a_read_only_folder():
    """chmod does not stop root, so as root the check runs in a forked child that switched to ``nobody``."""
    base = Path(tempfile.mkdtemp(prefix="svb-ro-cache-"))
    try:
        base.chmod(0o755)
        folder = base / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        check = lambda: _cache_error(folder / "c.sqlite")  # noqa: E731
        msg = run_as_nobody(check) if IS_ROOT else check()
        assert "cannot write" in msg and "embedder.cache_path=null" in msg, msg
        assert not (folder / "c.sqlite").exists()
    finally:
        folder.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


# --- the cost benchmark (smartvector_bench.tools.perf.embedding) ---------------------------------------------------

@pytest.mark.model
def test_embedding_cost_bench_writes_its_result(minilm, tmp_path):
    import json

    from smartvector_bench.tools.perf import embedding as bench

    out = tmp_path / "perf" / "embedding.json"
    bench.run(out, repeats=2, n_texts=16, embedder=minilm, handbook=0)  # 8 of the first 16 texts share passes
    r = json.loads(out.read_text())
    assert r["n_texts"] == 16 and r["repeats"] == 2 and r["dataset"]["name"] == "versioned_policies"
    for method in ("batched", "per_text", "equal_length"):
        m = r[method]
        assert len(m["seconds"]) == 2 and m["min_s"] <= m["median_s"] <= m["max_s"] and m["texts_per_s"] > 0
        assert {"q25_s", "q75_s", "method"} <= set(m) and len(m["cpu_seconds"]) == 2
    assert r["ratio_per_text_to_batched"] > 0 and r["max_abs_diff_batched_vs_per_text"] < 1e-5
    assert r["ratio_equal_length_to_batched"] > 0 and r["speedup_equal_length_over_per_text"] > 0
    assert r["cpu_speedup_equal_length_over_per_text"] > 0
    assert r["equal_length_bit_identical_to_per_text"] is True and r["texts_differing_equal_length_vs_per_text"] == 0
    assert r["per_text_bit_identical_across_orders"] is True and r["equal_length_bit_identical_across_orders"]
    assert isinstance(r["batched_bit_identical_across_orders"], bool)
    assert r["passes"]["passes"] < 16 and r["passes"]["min_batched_length"] == minilm.min_batched_length()
    assert r["handbook"] == {"skipped": "--handbook-texts 0"}
    assert r["model_id"] == minilm.model_id and r["threads"]["torch_num_threads"] >= 1
    assert r["provenance"]["config"]["n_texts"] == 16 and "sha" in r["provenance"]["git"]


def test_embedding_cost_bench_rejects_bad_arguments(capsys):
    from smartvector_bench.tools.perf import embedding as bench

    for argv in (["--out", "x.json", "--n-texts", "0"], ["--out", "x.json", "--repeats", "two"], [],
                 ["--out", "x.json", "--handbook-texts", "-1"], ["--out", "x.json", "--handbook-repeats", "0"]):
        with pytest.raises(SystemExit) as exc:
            bench.main(argv)
        assert exc.value.code == 2
    assert bench.main(["--out", "x.json", "--n-texts", "100000"]) == 2
    assert "--n-texts=100000: the dataset has" in capsys.readouterr().err
