"""The harness core: data in, run out, scored. A dataset folder is loaded (:mod:`.dataset`, checked against
:mod:`.schema`), embedded (:mod:`.embedding`), indexed (:mod:`.index`); a system's answers are a :mod:`.run`,
scored by :mod:`.evaluator` with the formulas of :mod:`.metrics`, and written with :mod:`.provenance`.
Nothing here imports a system, an experiment or a tool."""

from pathlib import Path as _Path

__version__ = "0.1.0"
SCHEMA_VERSION = "2.0"

# The repository's Hydra config folder (the package is installed in editable mode from the repo).
CONF_DIR = str(_Path(__file__).resolve().parents[2] / "conf")
