"""The harness core: data in, run out, scored. One folder or module per stage of the pipeline:

* :mod:`.dataset`: the dataset format, its loader and checks (with :mod:`.schema`), chunking and the
  ``documents.jsonl`` / ``edits.jsonl`` of a versioned-document corpus;
* :mod:`.embedding`: embedders and their cache; :mod:`.index`: FAISS indexes;
* :mod:`.run`: a system's answers (run files), the output contract every retriever call is held to, and the
  float-rounding model of a score;
* :mod:`.evaluation`: judgments, metric formulas, the evaluator, verdicts and the paper's claims;
* :mod:`.results`: typed result files and the provenance each records; :mod:`.report`: tables and table order.

Plumbing every stage shares: errors (``errors``, ``cli_errors``), atomic writes, ragged arrays (``csr``), typed
config sections (``settings``), simulated time (``timeutil``) and scratch space and signals (``scratch``).
Nothing here imports a system, an experiment or a tool."""

from pathlib import Path as _Path

__version__ = "0.1.0"
SCHEMA_VERSION = "2.0"

# The repository's Hydra config folder (the package is installed in editable mode from the repo).
CONF_DIR = str(_Path(__file__).resolve().parents[2] / "conf")
