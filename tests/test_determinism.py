"""Two runs with the same config give byte-identical run files whatever the embedding cache holds: cold, warm, or
pre-filled by another dataset (so the misses are embedded in other batches). Without a cache, and in any order or
batch, the vectors themselves are bit-identical (tests/test_embedding.py)."""

from __future__ import annotations

import shutil

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
    other = write_tiny(tmp_path / "other", ["dataset.seed=7", "dataset.n_families=6"])
    cache = tmp_path / "cache.sqlite"
    run = tmp_path / "run"

    def bench(cache_path, dataset=ds):
        shutil.rmtree(run, ignore_errors=True)
        r = cli("smartvector-bench", *TINY, f"dataset.path={dataset}", SYSTEMS, "experiment.n_boot=50",
                "print_table=false", f"embedder.cache_path={cache_path}", f"hydra.run.dir={run}")
        assert r.returncode == 0, r.stderr[-2000:]
        return _run_files(run) if dataset == ds else None

    cold = bench(cache)
    warm = bench(cache)
    cache.unlink()
    bench(cache, dataset=other)  # the same cache file now holds another dataset's texts (some shared) ...
    mixed = bench(cache)  # ... so this run embeds its misses in other batches than the cold run did
    assert len(cold) == 4 and cold["run_plain_cosine.jsonl"].count(b"\n") > 10
    assert warm == cold and mixed == cold
