"""The main table's rows, in order, and each row's role, read from ``conf/table_order.yaml``: the one list of them
(the report, retriever discovery and the figures read it here)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.errors import BenchError

ROLES = ("baselines", "smartvector", "peers", "ceilings", "feedback_loop")


def read_table(path: Path) -> dict[str, tuple[str, ...]]:
    """Each role of :data:`ROLES` -> its systems, in table order; BenchError naming the file if malformed."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or sorted(data) != sorted(ROLES) or any(
            not isinstance(data[r], list) or not all(isinstance(n, str) for n in data[r]) for r in ROLES):
        raise BenchError(f"{path}: expected the lists {', '.join(ROLES)} of system names")
    return {r: tuple(data[r]) for r in ROLES}


TABLE = read_table(Path(CONF_DIR) / "table_order.yaml")
# The main table's rows; systems not listed (plug-ins) follow, sorted. metrics.json is written with sorted keys, so
# the order is never taken from it.
SYSTEM_ORDER = (*TABLE["baselines"], *TABLE["smartvector"], *TABLE["peers"], *TABLE["ceilings"])
BASELINES = TABLE["baselines"]  # no SmartVector signal
CEILINGS = TABLE["ceilings"]  # read labels/: not deployable


def ordered(names: Iterable[str], order: tuple[str, ...] = SYSTEM_ORDER) -> list[str]:
    """``names`` once each, those of ``order`` in its order, then any other one sorted by name."""
    names = set(names)
    return [n for n in order if n in names] + sorted(names - set(order))
