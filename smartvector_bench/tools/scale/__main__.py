"""``python -m smartvector_bench.tools.scale``: see :mod:`.cli`."""

from smartvector_bench.tools.scale.cli import main

raise SystemExit(main())
