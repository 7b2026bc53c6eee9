"""numba's cache goes to a per-user folder, never into the installed package (set once, in
``smartvector_bench/systems/smartvector/__init__.py``, before numba loads). Each case runs in a fresh interpreter
with its own HOME and XDG_CACHE_HOME, since numba reads its configuration once per process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

PACKAGE_CACHE = REPO / "smartvector_bench" / "systems" / "smartvector" / "__pycache__"

# the default search path on a tiny store: compiles the float32 kernel's serial pass and column build
RUN_KERNEL = """
from tests.test_f32_search import Scorer, tied_case
import smartvector_bench.systems.smartvector.f32_kernel as fk
stored, qv, as_of, c = tied_case(0, 200, 3, 200)
ranked, _, _, _ = fk.exhaustive_top_k_f32(Scorer(), c, stored, qv, as_of, 5)
assert (ranked[2:, 0] >= 0).all(), ranked
"""
CACHE_DIR = "import smartvector_bench.systems.smartvector.f32_kernel, numba; print(numba.config.CACHE_DIR)"


def python(code: str, tmp_path: Path, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    base.update(HOME=str(tmp_path / "home"), PYTHONPATH=os.pathsep.join([str(REPO), base.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300,
                       env={**base, **env})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def compiled(folder: Path) -> dict[str, int]:
    """numba's index and code files under ``folder``, with their modification times."""
    return {str(p): p.stat().st_mtime_ns for ext in ("nbi", "nbc") for p in folder.rglob(f"*.{ext}")}


def test_a_kernel_run_caches_under_the_user_cache_not_the_package(tmp_path):
    before = compiled(PACKAGE_CACHE)
    python(RUN_KERNEL, tmp_path, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert compiled(PACKAGE_CACHE) == before  # nothing written or rewritten in the package
    ours = compiled(tmp_path / "xdg" / "smartvector-bench" / "numba")
    assert any(p.endswith(".nbi") for p in ours) and any(p.endswith(".nbc") for p in ours), ours


@pytest.mark.parametrize("case", ["user's NUMBA_CACHE_DIR", "no XDG_CACHE_HOME", "relative XDG_CACHE_HOME",
                                  "numba imported first"])
def test_the_cache_folder(tmp_path, case):
    env, code = {}, CACHE_DIR
    want = tmp_path / "home" / ".cache" / "smartvector-bench" / "numba"
    if case == "user's NUMBA_CACHE_DIR":
        env["NUMBA_CACHE_DIR"] = str(want := tmp_path / "own")
    elif case == "relative XDG_CACHE_HOME":
        env["XDG_CACHE_HOME"] = "rel"  # the XDG spec: a relative path is ignored
    elif case == "numba imported first":
        env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
        want, code = tmp_path / "xdg" / "smartvector-bench" / "numba", "import numba; " + code
    assert python(code, tmp_path, **env) == str(want)
