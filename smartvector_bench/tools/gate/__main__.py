"""``python -m smartvector_bench.tools.gate``: the regression gate (``make regress``); see the package docstring."""

import sys

from smartvector_bench.tools.gate.cli import main

sys.exit(main())
