"""SmartVector's package. Its compiled kernels (``@njit(cache=True)`` in ``f32_kernel``, ``fused_kernel``,
``compact``) cache to a per-user folder, not the installed package's ``__pycache__``: ``NUMBA_CACHE_DIR``
unless the user set it, ``$XDG_CACHE_HOME/smartvector-bench/numba`` (default ``~/.cache/...``). Set here,
before any of those modules imports numba (numba reads it when its config loads)."""

import os
import sys

if not os.environ.get("NUMBA_CACHE_DIR"):
    _xdg = os.environ.get("XDG_CACHE_HOME", "")
    _base = _xdg if os.path.isabs(_xdg) else os.path.join(os.path.expanduser("~"), ".cache")  # XDG: relative is ignored
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(_base, "smartvector-bench", "numba")
    if "numba.core.config" in sys.modules:  # numba imported earlier by another package: re-read the environment
        sys.modules["numba.core.config"].reload_config()
