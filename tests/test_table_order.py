"""The main table's rows and roles come from one place, conf/table_order.yaml (core/report/table_order.py), and agree
with the retriever configs and with the capabilities their classes declare."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.report.table_order import BASELINES, CEILINGS, ROLES, SYSTEM_ORDER, TABLE, read_table
from smartvector_bench.systems import discovery, locate
from smartvector_bench.systems.base import ReadsLabels, ScoresHits

CONFIGS = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8"))
           for p in sorted((Path(CONF_DIR) / "retriever").glob("*.yaml"))}


def _class(name: str) -> type:
    return locate(CONFIGS[name]["_target_"], f"retrievers.{name}")


def test_every_retriever_config_is_a_row_and_every_row_a_config():
    assert sorted(SYSTEM_ORDER) == sorted(CONFIGS)
    assert len(set(SYSTEM_ORDER)) == len(SYSTEM_ORDER)
    assert not set(TABLE["feedback_loop"]) & set(CONFIGS)


def test_discovery_composes_in_table_order():
    assert discovery.in_tree() == list(SYSTEM_ORDER)
    assert discovery.ordered(["zeta_plugin", "oracle", "alpha_plugin", "plain_cosine"]) == [
        "plain_cosine", "oracle", "alpha_plugin", "zeta_plugin"]


def test_the_ceilings_are_the_systems_that_read_labels():
    assert sorted(CEILINGS) == sorted(n for n in CONFIGS if issubclass(_class(n), ReadsLabels))


def test_no_baseline_has_a_smartvector_signal():
    assert BASELINES and not [n for n in BASELINES if issubclass(_class(n), ScoresHits)]
    assert [n for n in SYSTEM_ORDER if issubclass(_class(n), ScoresHits)]  # the check can see one


@pytest.mark.parametrize("text", ["[a, b]\n", "baselines: [a]\n", "\n".join(f"{r}: [a, 3]" for r in ROLES) + "\n",
                                  "\n".join(f"{r}: a" for r in ROLES) + "\n"])
def test_a_malformed_table_is_named(tmp_path, text):
    path = tmp_path / "table_order.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BenchError, match=r"table_order\.yaml: expected the lists baselines, smartvector"):
        read_table(path)
