"""smartvector-bench: a reproducible benchmark harness for version-aware retrieval."""

__version__ = "0.1.0"
SCHEMA_VERSION = "2.0"

from pathlib import Path as _Path

# The repository's Hydra config folder (the package is installed in editable mode from the repo).
CONF_DIR = str(_Path(__file__).resolve().parent.parent / "conf")
