"""Real facts that changed (``experiment=facts``: hand-written questions over the 18F Handbook's and GitHub's site
policies' histories, docs/facts.md), test split: the chart of ``fig_main.py`` (top-1, stale rate, rumor rate,
ECE with 95% cluster bootstrap intervals over facts, the paper's claims as markers) from the facts run.

Input: ``results/facts/metrics.json``. Output: ``fig_facts.png`` / ``fig_facts.pdf``.
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

NAME = "fig_facts"
INPUT = Path("facts") / MainMetrics.FILE


@c.styled
def make(results_dir: Path, out_dir: Path) -> c.Outcome:
    """Every system on the real facts (test split), with the paper's claims as markers."""
    return fig_main.draw(Path(results_dir) / INPUT, out_dir, NAME, "Real facts that changed")


if __name__ == "__main__":
    sys.exit(c.cli(make))
