"""``python -m smartvector_bench.tools.gate``: the regression gate (``make regress``); see the package docstring."""

import sys

try:
    from smartvector_bench.tools.gate.cli import main
except KeyboardInterrupt:  # Ctrl-C during the imports, before main handles signals: nothing started yet
    print("smartvector-regress: interrupted by SIGINT", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
