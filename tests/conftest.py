"""Shared fixtures: config composition (as the CLI does), tiny generated datasets, a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import smartvector_bench.tools.cli  # noqa: F401  (registers the ${pid:} resolver used by the run dir)
from data_gen.params import params_from_config
from data_gen.writer import write_dataset
from smartvector_bench.core import CONF_DIR
from smartvector_bench.systems import discovery

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

# Small enough for sub-second unit tests, large enough to have every category.
TINY = ["dataset.n_families=4", "dataset.versions=[2,3]", "dataset.chatter_per_family=2",
        "dataset.queries.current_per_family=2", "dataset.queries.historical_per_family=1",
        "dataset.queries.dependent_per_family=1", "dataset.recent_fraction=0.25"]


def compose_config(overrides: list[str] | None = None, name: str = "config") -> dict:
    discovery.register(discovery.in_tree())  # retriever/all: every conf/retriever/*.yaml, as the CLI composes
    with initialize_config_dir(version_base="1.3", config_dir=CONF_DIR):
        cfg = compose(name, overrides=list(overrides or []))
    return OmegaConf.to_container(cfg, resolve=True)


@pytest.fixture
def compose_cfg():
    return compose_config


def write_tiny(path: Path, overrides: list[str] | None = None) -> Path:
    cfg = compose_config(TINY + list(overrides or []))
    write_dataset(params_from_config(cfg["dataset"]), path)
    return path


@pytest.fixture
def tiny_dataset(tmp_path) -> Path:
    return write_tiny(tmp_path / "tiny")


@pytest.fixture(scope="session")
def default_dataset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("default") / "ds"
    write_dataset(params_from_config(compose_config()["dataset"]), path)
    return path


def run_cli(prog: str, *args: str, cwd: Path | None = None, timeout: int = 600,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.run([str(BIN / prog), *args], capture_output=True, text=True, cwd=cwd or REPO, env=env,
                          timeout=timeout)


@pytest.fixture
def cli():
    return run_cli


def run_as_nobody(fn) -> str:
    """``fn()`` (returning text) in a forked child that dropped root for ``nobody``, for permission tests that
    root would pass trivially; returns what ``fn`` returned, or ``<ExceptionType>: <message>``."""
    import pwd

    try:
        user = pwd.getpwnam("nobody")
        uid, gid = user.pw_uid, user.pw_gid
    except KeyError:
        uid = gid = 65534
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            try:
                out = fn()
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                out = f"{type(exc).__name__}: {exc}"
            os.write(w, str(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
