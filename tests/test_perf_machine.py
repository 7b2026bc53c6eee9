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
