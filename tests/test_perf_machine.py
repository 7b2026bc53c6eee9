"""The perf benchmark's machine record: CPU model, BLAS libraries, and the warning on generic OpenBLAS kernels."""

from smartvector_bench.tools.perf.machine import cpu_model, machine_info, machine_lines
from smartvector_bench.tools.perf.targets import render_markdown


def test_cpu_model_reads_the_first_model_name():
    text = "processor\t: 0\nmodel name\t: AMD EPYC 9B14\n\nprocessor\t: 1\nmodel name\t: other\n"
    assert cpu_model(text) == "AMD EPYC 9B14"
    assert cpu_model("processor\t: 0\n") is None


def test_machine_info_lists_the_loaded_blas_libraries():
    import numpy  # noqa: F401  (loads numpy's OpenBLAS)
    info = machine_info()
    assert info["cpus"] >= 1 and "OPENBLAS_CORETYPE" in info["threads"]
    assert any(b["library"] for b in info["blas"]), info["blas"]


def test_generic_kernels_are_flagged_and_named():
    fine = {"cpus": 2, "cpu_model": "X", "blas": [{"library": "libopenblas.so", "version": "0.3.15",
                                                   "architecture": "Zen", "threads": 2}]}
    assert len(machine_lines(fine)) == 1 and "libopenblas.so 0.3.15 (Zen)" in machine_lines(fine)[0]
    slow = {**fine, "blas": [{**fine["blas"][0], "architecture": "Prescott"}]}
    lines = machine_lines(slow)
    assert len(lines) == 2 and "libopenblas.so" in lines[1] and "OPENBLAS_CORETYPE" in lines[1]
    assert machine_lines(None) == []


def test_perf_md_carries_the_machine_line():
    md = render_markdown([], [], {"profile": "quick"}, machine={"cpus": 2, "cpu_model": "CPU-Z", "blas": []})
    assert "Machine: CPU-Z, 2 CPUs; BLAS: not recorded." in md.splitlines()


def test_release_memory_hands_freed_heap_back_to_the_os():
    """Freed 1 KB blocks (glibc's heap, not Python's small-object arenas) pinned by every 16th survivor stay in the
    process's RSS until release_memory trims them; the survivors are untouched. In a child process, so that this
    test's RSS is not the pytest worker's."""
    import subprocess
    import sys

    code = """
import sys
from smartvector_bench.tools.perf.timing import release_memory
from smartvector_bench.tools.scale.cli import proc_status_mb
blocks = [bytes([i % 251]) * 1000 for i in range(200_000)]  # ~200 MB in 1 KB blocks
keep = blocks[::16]
del blocks
before = proc_status_mb("VmRSS")
assert release_memory() is True
after = proc_status_mb("VmRSS")
assert all(len(b) == 1000 and b[0] == (16 * i) % 251 for i, b in enumerate(keep))
print(before, after)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    before, after = map(float, out)
    assert before - after > 80, (before, after)  # most of the ~190 MB freed comes back
