"""Main comparison on the large profile (``dataset=versioned_policies_large``: all 100 families, 1,150 queries;
every system but smartvector_ref), test split: the chart of ``fig_main.py`` (top-1, stale rate, rumor rate,
ECE with 95% cluster bootstrap intervals over families, the paper's claims as markers) from the large run.

Input: ``results/main_large/metrics.json``. Output: ``fig_main_large.png`` / ``fig_main_large.pdf``.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from . import common as c
    from . import fig_main
except ImportError:  # run as a script: paper_figures/ is on sys.path
    import common as c
    import fig_main

from smartvector_bench.core.results import MainMetrics

NAME = "fig_main_large"
INPUT = Path("main_large") / MainMetrics.FILE


@c.styled
def make(results_dir: Path, out_dir: Path) -> c.Outcome:
    """Main comparison on the large profile (test split), with the paper's claims as markers."""
    return fig_main.draw(Path(results_dir) / INPUT, out_dir, NAME, "Main comparison, large profile")


if __name__ == "__main__":
    sys.exit(c.cli(make))
