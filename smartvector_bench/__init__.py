"""smartvector-bench: a reproducible benchmark harness for version-aware retrieval."""

__version__ = "0.1.0"
SCHEMA_VERSION = "2.0"

from pathlib import Path as _Path

# The repository's Hydra config folder (the package is installed in editable mode from the repo).
CONF_DIR = str(_Path(__file__).resolve().parent.parent / "conf")

# ``retriever/all`` (conf/config.yaml's default): every conf/retriever/*.yaml, so any compose() finds every
# in-tree system; the CLI re-registers it for its own search path (smartvector_bench/discovery.py).
from .discovery import in_tree as _in_tree, register as _register  # noqa: E402

_register(_in_tree())
