"""Launchers: joblib runs jobs in parallel, Ray runs a sweep on a local instance, submitit runs locally and its
SLURM preset composes; parallel jobs can share the SQLite embedding cache."""

from __future__ import annotations

import json
import multiprocessing as mp
import sqlite3
from pathlib import Path

import numpy as np

from smartvector_bench.core.embedding import CachedEmbedder, EmbeddingCache, HashingEmbedder

from .conftest import TINY

FAST = TINY + ["embedder=hashing", "experiment.n_boot=50", "print_table=false"]


def statuses(sweep: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(sweep.glob("*/job_status.json"))]


def test_joblib_runs_two_jobs_in_parallel(cli, tmp_path):
    sweep = tmp_path / "sweep"
    # five systems make a job last a few seconds, well beyond the workers' start-up skew
    r = cli("smartvector-bench", "-m", "hydra/launcher=joblib_local", *FAST,
            "systems=[plain_cosine,smartvector,livevectorlake,kg_smartvector,oracle]", "dataset.seed=1,2",
            f"hydra.sweep.dir={sweep}")
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = statuses(sweep)
    assert [j["status"] for j in jobs] == ["complete", "complete"]
    assert len({j["pid"] for j in jobs}) == 2  # two worker processes ...
    assert max(j["started_at"] for j in jobs) < min(j["finished_at"] for j in jobs)  # ... running at once
    assert (sweep / "tidy.csv").exists() and "2 planned jobs: 2 complete" in r.stdout


def test_ray_runs_a_sweep_on_a_local_instance(cli, tmp_path):
    sweep = tmp_path / "sweep"
    r = cli("smartvector-bench", "-m", "hydra/launcher=ray_local", *FAST, "systems=[plain_cosine,smartvector]",
            "dataset.seed=1,2", f"hydra.sweep.dir={sweep}")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Started a local Ray instance" in r.stdout + r.stderr
    jobs = statuses(sweep)
    assert [j["status"] for j in jobs] == ["complete", "complete"]
    assert all((p.parent / "metrics.json").exists() for p in sweep.glob("*/job_status.json"))
    assert "2 planned jobs: 2 complete" in r.stdout


def test_submitit_local_runs_a_sweep(cli, tmp_path):
    sweep = tmp_path / "sweep"
    r = cli("smartvector-bench", "-m", "hydra/launcher=submitit_local", *FAST, "systems=[plain_cosine]",
            "dataset.seed=1", f"hydra.sweep.dir={sweep}")
    assert r.returncode == 0, r.stderr[-3000:]
    assert [j["status"] for j in statuses(sweep)] == ["complete"]
    assert (sweep / ".submitit").is_dir() and (sweep / "tidy.csv").exists()


def test_cluster_presets_compose(cli):
    slurm = cli("smartvector-bench", "experiment=seeds", "hydra/launcher=slurm", "hydra.launcher.partition=cpu",
                "--cfg", "hydra")
    assert slurm.returncode == 0, slurm.stderr
    out = slurm.stdout
    assert "_target_: hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher" in out
    for line in ("partition: cpu", "timeout_min: 30", "cpus_per_task: 2", "mem_gb: 4", "array_parallelism: 64"):
        assert line in out, line
    assert "dir: multirun/${experiment.preset}" in out
    ray = cli("smartvector-bench", "experiment=seeds", "hydra/launcher=ray_cluster", "--cfg", "hydra")
    assert ray.returncode == 0, ray.stderr
    assert "_target_: hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher" in ray.stdout
    assert "address: ${oc.env:RAY_ADDRESS}" in ray.stdout
    local = cli("smartvector-bench", "experiment=seeds", "hydra/launcher=joblib_local", "--cfg", "hydra")
    assert local.returncode == 0 and "n_jobs: 2" in local.stdout and "JoblibLauncher" in local.stdout


# --- the shared embedding cache under concurrent writers ------------------------------------------------------

TEXTS = [f"policy {i} says the limit is {i * 7} days for team {i % 13}" for i in range(600)]
N_PROCS = 4


def _writer(path: str, worker: int, start, out) -> None:
    """Embeds an overlapping slice of TEXTS through the cache in many small batches (one transaction each),
    half of them forwards and half backwards, so writers race for the same keys."""
    cache = EmbeddingCache(path)
    emb = CachedEmbedder(HashingEmbedder(dim=64), cache)
    mine = TEXTS[worker * 100: worker * 100 + 300]
    if worker % 2:
        mine = mine[::-1]
    start.wait()
    vecs = []
    for i in range(0, len(mine), 10):
        batch = mine[i: i + 10]
        vecs.append(emb.encode(batch))
    cache.close()
    out.put((worker, mine, np.concatenate(vecs).tobytes()))


def test_embedding_cache_survives_concurrent_writers(tmp_path):
    path = str(tmp_path / "embeddings.sqlite")
    ctx = mp.get_context("spawn")  # separate interpreters, like joblib's loky workers
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, w, start, out)) for w in range(N_PROCS)]
    for p in procs:
        p.start()
    start.set()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    reference = HashingEmbedder(dim=64)
    written = TEXTS[: (N_PROCS - 1) * 100 + 300]
    expected = {EmbeddingCache.key(reference.model_id, t): reference.encode([t])[0] for t in written}

    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = dict(db.execute("SELECT key, vec FROM vectors").fetchall())
    db.close()
    assert set(rows) == set(expected)  # every key present, none extra
    for key, vec in expected.items():
        assert np.frombuffer(rows[key], dtype=np.float32).tobytes() == vec.astype(np.float32).tobytes()
    for worker, mine, blob in results:  # each writer got the right vector back for every text
        got = np.frombuffer(blob, dtype=np.float32).reshape(len(mine), 64)
        assert np.array_equal(got, reference.encode(mine)), worker


def test_slurm_preset_renders_a_valid_sbatch_script(tmp_path, monkeypatch):
    """No SLURM here: submitit's own SlurmExecutor turns the preset into its sbatch script (srun detection
    patched), as the launcher does, so a key submitit does not know or a bad value fails here."""
    import submitit
    from hydra import compose, initialize_config_dir
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    from omegaconf import OmegaConf
    from submitit.slurm import slurm

    from smartvector_bench.core import CONF_DIR

    with initialize_config_dir(version_base="1.3", config_dir=CONF_DIR):
        cfg = compose("config", overrides=["experiment=seeds", "hydra/launcher=slurm", "hydra.launcher.partition=cpu",
                                           "hydra.launcher.account=proj"], return_hydra_config=True)
    params = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
    params.pop("_target_")
    params.update(name="bench", setup=["source .venv/bin/activate"])  # the Hydra-interpolated ones
    monkeypatch.setattr(slurm.SlurmExecutor, "affinity", classmethod(lambda cls: 1))
    ex = submitit.AutoExecutor(cluster="slurm", folder=str(tmp_path),
                               slurm_max_num_timeout=params.pop("max_num_timeout"))
    base = set(OmegaConf.structured(BaseQueueConf).keys())  # the launcher's own mapping of keys
    ex.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items() if k != "submitit_folder"})
    script = ex._executor._make_submission_file_text("python -m job", "uid")
    for line in ("#SBATCH --partition=cpu", "#SBATCH --account=proj", "#SBATCH --time=30",
                 "#SBATCH --cpus-per-task=2", "#SBATCH --mem=4GB", "source .venv/bin/activate"):
        assert line in script, line
