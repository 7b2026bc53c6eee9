"""What the benchmark ran on: CPU, thread settings and the BLAS libraries loaded (for PROVENANCE.json and perf.md).

Why the BLAS lines: faiss-cpu bundles its own OpenBLAS (older than numpy's), and OpenBLAS picks its kernels by
CPU detection. An OpenBLAS too old to know a CPU falls back to its generic Prescott kernels, which makes
FAISS flat (the baseline of every search ratio) up to about 1.6x slower than on the CPU's own kernels; a ratio
against that baseline flatters the other systems. ``OPENBLAS_CORETYPE`` (e.g. ``Haswell`` or ``SkylakeX``) set
before the process starts picks the kernels by hand; perf.md says when the fallback is in use.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

GENERIC_KERNELS = {"prescott", "katmai", "core2"}  # OpenBLAS's fallbacks on an x86-64 CPU it does not know


def cpu_model(cpuinfo: str | None = None) -> str | None:
    """The first ``model name`` of /proc/cpuinfo (None where there is none)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    for line in cpuinfo.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def blas_libraries() -> list[dict]:
    """Each loaded BLAS: file name, version, kernel architecture and threads (threadpoolctl; [] without it)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{"library": Path(i.get("filepath", "")).name, "version": i.get("version"),
             "architecture": i.get("architecture"), "threads": i.get("num_threads")}
            for i in threadpool_info() if i.get("user_api") == "blas"]


def machine_info() -> dict:
    """CPU count and model, platform, thread variables and BLAS libraries of this process (call it after the
    benchmark has imported faiss and numpy, so both BLAS libraries are loaded)."""
    return {"cpus": os.cpu_count(), "cpu_model": cpu_model(), "platform": platform.platform(),
            "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE")},
            "blas": blas_libraries()}


def machine_lines(machine: dict | None) -> list[str]:
    """perf.md's lines on the machine, with a warning when a BLAS runs OpenBLAS's generic kernels."""
    if not machine:
        return []
    blas = "; ".join(f"{b['library']} {b['version']} ({b['architecture']})" for b in machine.get("blas", []))
    lines = [f"Machine: {machine.get('cpu_model') or '?'}, {machine.get('cpus')} CPUs; BLAS: {blas or 'not recorded'}."]
    slow = [b["library"] for b in machine.get("blas", []) if str(b.get("architecture")).lower() in GENERIC_KERNELS]
    if slow:
        lines.append(f"**Warning:** {', '.join(slow)} runs OpenBLAS's generic kernels (CPU not recognised), so "
                     "FAISS flat, the baseline of the search ratios, is slower than it should be; rerun with "
                     "OPENBLAS_CORETYPE set to the CPU's family (e.g. Haswell, SkylakeX, Zen).")
    return lines
