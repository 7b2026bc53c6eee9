"""Two runs with the same config give byte-identical run files whatever the embedding cache holds: cold, warm, or
partly filled (so the misses are embedded in other batches than the cold run's). Without a cache, and in any order
or batch, the vectors themselves are bit-identical (tests/test_embedding.py)."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from .conftest import TINY, write_tiny

SYSTEMS = "systems=[plain_cosine,valid_cosine,smartvector]"


def _run_files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("run_*.jsonl"))} | \
        {"metrics.systems": _systems(folder)}


def _systems(folder) -> bytes:
    import json

    return json.dumps(json.loads((folder / "metrics.json").read_text())["systems"], sort_keys=True).encode()


@pytest.mark.model
@pytest.mark.slow
def test_run_files_do_not_depend_on_the_cache_state(cli, tmp_path):
    ds = write_tiny(tmp_path / "ds")
    cache = tmp_path / "cache.sqlite"
    run = tmp_path / "run"

    def bench(cache_path):
        shutil.rmtree(run, ignore_errors=True)
        r = cli("smartvector-bench", *TINY, f"dataset.path={ds}", SYSTEMS, "experiment.n_boot=50",
                "print_table=false", f"embedder.cache_path={cache_path}", f"hydra.run.dir={run}")
        assert r.returncode == 0, r.stderr[-2000:]
        return _run_files(run)

    cold = bench(cache)
    warm = bench(cache)
    # A partly filled cache: the same file (its path is part of the run files' config sha256) with every other
    # vector, in key order, deleted, so this run embeds its misses in other batches than the cold run did. (Before,
    # a run on another dataset prefilled it: one more process loading the model, for the same state.)
    db = sqlite3.connect(cache)
    keys = [k for (k,) in db.execute("SELECT key FROM vectors ORDER BY key")]
    with db:
        db.executemany("DELETE FROM vectors WHERE key = ?", [(k,) for k in keys[::2]])
    assert db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == len(keys) // 2 > 20
    db.close()
    mixed = bench(cache)
    db = sqlite3.connect(cache)  # the misses were embedded and written back
    assert db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == len(keys)
    db.close()
    assert len(cold) == 4 and cold["run_plain_cosine.jsonl"].count(b"\n") > 10
    assert warm == cold and mixed == cold
