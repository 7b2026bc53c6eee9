"""smartvector-bench: a reproducible benchmark harness for version-aware retrieval.

- :mod:`.core`: data in, run out, scored (dataset, embedding, index, run, evaluator, metrics, report);
- :mod:`.systems`: the retrievers, one module or folder per system, each engine inside its own system;
- :mod:`.tools`: the command line, the regression gate, sweeps, the performance benchmark and scale data.
"""

from smartvector_bench.core import CONF_DIR, SCHEMA_VERSION, __version__

# ``retriever/all`` (conf/config.yaml's default): every conf/retriever/*.yaml, so any compose() finds every
# in-tree system; the CLI re-registers it for its own search path (smartvector_bench/systems/discovery.py).
from smartvector_bench.systems.discovery import in_tree as _in_tree, register as _register  # noqa: E402

_register(_in_tree())
