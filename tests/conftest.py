"""Shared fixtures: config composition (as the CLI does), tiny generated datasets, a CLI runner; and the
``model`` and ``slow`` markers, applied here from what a test runs (see ``pytest_collection_modifyitems``)."""

from __future__ import annotations

import copy
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hypothesis import settings
from omegaconf import OmegaConf

import smartvector_bench.tools.cli  # noqa: F401  (registers the ${pid:} resolver used by the run dir)
from data_gen.params import params_from_config
from data_gen.writer import write_dataset
from smartvector_bench.core import CONF_DIR
from smartvector_bench.systems import discovery

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

# Hypothesis draws the same examples on every run and machine (derandomize: seeded from each test), so a CI run
# cannot fail on a draw no earlier run saw; HYPOTHESIS_PROFILE=explore draws new ones, to look for such cases.
# explore says derandomize=False outright: with CI set, Hypothesis's default (the parent) is its derandomized "ci".
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# Small enough for sub-second unit tests, large enough to have every category.
TINY = ["dataset.n_families=4", "dataset.versions=[2,3]", "dataset.rumors_per_family=1",
        "dataset.confirmations_per_family=1",
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
def _tiny_main_run(tmp_path_factory) -> tuple[Path, dict]:
    """Run once per session: under xdist the first worker to ask runs it in the session's folder (shared by its
    workers, unique to the session) while the others wait on the lock, then read it."""
    import fcntl

    from experiments.main import run

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    out, returned, done = root / "tiny_main_run", root / "tiny_main_run.returned.json", root / "tiny_main_run.done"
    with open(root / "tiny_main_run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)  # a worker that died half way
            metrics = run(compose_config(TINY + ["embedder=hashing"]), out)
            returned.write_text(json.dumps(metrics))  # what run() returned, beside the metrics.json it wrote
            done.touch()
    return out, json.loads(returned.read_text())


@pytest.fixture
def tiny_main_run(_tiny_main_run) -> tuple[Path, dict]:
    """The main experiment (every system) on the TINY dataset with the hashing embedder, run once per session
    (per xdist worker): (its run folder, the metrics it returned; a copy). Read the folder or copy it; never
    change it in place."""
    out, metrics = _tiny_main_run
    return out, copy.deepcopy(metrics)


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


# -- the model and slow markers -------------------------------------------------------------------------------
# `make test-fast` is `pytest -m "not model and not slow"`. Rather than a decorator on every such test, a test is
# marked here from the source of what it runs: its own function, the fixtures it uses (with their fixtures), and
# the functions of tests/ that these call, followed down. Tests may also carry the markers themselves.
#
# model: builds the real MiniLM model in process: ``MiniLMEmbedder(...)``, or ``scale_dataset(...)`` /
#   ``cached_embedder(...)`` without an ``embedder`` argument (their default is MiniLM with the repository's
#   cache). A CLI run on the real model cannot be seen from the source (the embedder may come from a list of
#   overrides): such a test carries ``@pytest.mark.model`` itself. Whenever no selected test is marked model
#   (`make test-fast`, or one module), importing sentence_transformers fails, in this process and in the
#   processes it starts (``NO_MODEL``), naming the test, so a test that loads the model unmarked cannot pass.
# slow: starts another interpreter (the ``cli`` fixture, ``run_cli``, ``subprocess``, ``Popen``, a multiprocessing
#   ``Process``), each paying Python's, torch's and Hydra's imports; or uses one of SLOW_FIXTURES. The fuzzers and
#   other multi-second tests carry ``@pytest.mark.slow`` themselves.
# Measure with `pytest --durations=30` (docs/operations.md, "Test time").
SLOW_FIXTURES = {  # fixture name: what makes it slow (seconds, paid again in each xdist worker)
    "small_results": "tests/test_regress.py: small runs of four experiments, then the gate's manifest of them",
}
REAL_MODEL = re.compile(r"\b(MiniLMEmbedder|scale_dataset|cached_embedder)\(")
NEW_PROCESS = re.compile(r"\b(cli|run_cli|Popen)\(|\bsubprocess\.(run|call|check_call|check_output)\(|\.Process\(")
CALL = re.compile(r"\b([A-Za-z_]\w*)\(")
NO_MODEL = Path(__file__).resolve().parent / "no_model"  # a sentence_transformers package that refuses to import
_FOUND: dict = {}


def _arguments(src: str, open_paren: int) -> str:
    depth = 0
    for i in range(open_paren, len(src)):
        depth += {"(": 1, ")": -1}.get(src[i], 0)
        if depth == 0:
            return src[open_paren + 1:i]
    return src[open_paren + 1:]


def _runs(fn, seen: set) -> set[str]:
    """{"model", "slow"} as far as the source of ``fn`` and of the tests/ functions it calls shows."""
    fn = inspect.unwrap(fn)
    if not isinstance(fn, types.FunctionType) or fn in seen or not fn.__module__.startswith("tests."):
        return set()
    seen.add(fn)
    if fn not in _FOUND:
        try:
            src = inspect.getsource(fn)
        except (OSError, TypeError):
            src = ""
        own = {"model" for m in REAL_MODEL.finditer(src)
               if m.group(1) == "MiniLMEmbedder" or "embedder" not in _arguments(src, m.end() - 1)}
        if NEW_PROCESS.search(src):
            own.add("slow")
        callees = [f for name in set(CALL.findall(src)) if isinstance(f := fn.__globals__.get(name), types.FunctionType)]
        _FOUND[fn] = (own, callees)
    own, callees = _FOUND[fn]
    found = set(own)
    for callee in callees:
        found |= _runs(callee, seen)
    return found


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        seen: set = set()
        found = _runs(item.function, seen)
        for name, defs in item._fixtureinfo.name2fixturedefs.items():
            if name in SLOW_FIXTURES:
                found.add("slow")
            for fixturedef in defs:
                found |= _runs(fixturedef.func, seen)
        for name in sorted(found - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
    # Files holding a slow test are handed out first (a stable sort keeps each file's order): under `--dist
    # loadfile` a minutes-long file handed out last runs alone on one worker while the others sit idle.
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


def pytest_collection_finish(session):
    if session.items and not any(item.get_closest_marker("model") for item in session.items):
        sys.path.insert(0, str(NO_MODEL))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(NO_MODEL), os.environ.get("PYTHONPATH")]))
