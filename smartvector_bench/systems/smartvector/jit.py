"""numba and BLAS threading helpers for the compiled kernels.

``variant``: one compiled function under two sets of numba options, each with a cache entry of its own.

numba's on-disk cache names a function by its module, qualified name and first line, and keys its entries by
signature, CPU and bytecode, not by the options it was compiled with (numba issue #6845). ``njit(f.py_func,
parallel=False)`` beside ``njit(parallel=True)(f)`` therefore shares one cache entry: whichever variant a process
compiles first is what both load from then on (a 'parallel' scan that runs the serial machine code, one thread,
without the parfor pass's vectorised loops: ~4x slower per entry here). ``variant`` gives the copy its own name.
"""

from __future__ import annotations

import functools
import types

import numba
from numba import get_num_threads, njit, set_num_threads, threading_layer
from threadpoolctl import ThreadpoolController


def variant(dispatcher, name: str, **options):
    """``njit(**options)`` of the Python function behind ``dispatcher``, renamed ``name`` for numba's cache."""
    fn = dispatcher.py_func
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    copy = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    copy.__qualname__ = name
    copy.__doc__ = fn.__doc__
    return njit(**options)(copy)


def one_thread(work, *args) -> None:
    """``work(*args)`` with this thread's parallel regions on it alone (numba's thread count is thread-local): a
    parallel kernel's machine code, whose loops the parfor pass vectorises, run serially in a worker thread."""
    before = get_num_threads()
    set_num_threads(1)
    try:
        work(*args)
    finally:
        set_num_threads(before)


def thread_safe() -> bool:
    """Whether numba's threading layer takes parallel regions from several threads at once (omp, tbb; not
    workqueue, which aborts the process). Before any parallel region has run: the layer numba will load."""
    try:
        return threading_layer() != "workqueue"
    except ValueError:
        if numba.config.THREADING_LAYER == "workqueue":
            return False
        for pool in ("tbbpool", "omppool"):
            try:
                __import__(f"numba.np.ufunc.{pool}")
                return True
            except ImportError:
                pass
        return False


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()  # finds the loaded BLAS libraries once (a scan of the process's modules)


def blas_threads(n: int):
    """A context in which every loaded BLAS library runs on ``n`` threads."""
    return _blas().limit(limits=n, user_api="blas")
