"""The project reads Hydra through its public API only (``tests/test_layout.py`` refuses ``hydra._internal``).
Where that meant rebuilding one of Hydra's private helpers, the rebuilt one must give Hydra's own results: each
is checked here against the private original, on every sweep preset in conf/ and on edge cases."""

from __future__ import annotations

import pytest
from hydra._internal.config_loader_impl import get_overrides_dirname
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.tools.sweeps.plan import _parser, expand, overrides_dirname

from .conftest import REPO


def _presets() -> list[list[str]]:
    out = []
    for path in sorted((REPO / "conf" / "experiment").glob("*.yaml")):
        params = OmegaConf.select(OmegaConf.load(path), "hydra.sweeper.params", default=None)
        if params is not None:
            out.append([f"{k}={v}" for k, v in OmegaConf.to_container(params).items()])
    assert len(out) >= 5  # the sweeps in conf/experiment
    return out


CASES = _presets() + [
    ["a=1,2", "b=x", "a=3,4,5"],  # a key's last override wins, in its first place
    ["dataset.seed=range(1,4)", "weights=paper", "+x.y=choice(p,q)"],
    ["retriever=[plain_cosine,bm25]", "s='a,b'", "n=1,2"],
    ["weights=glob(*)", "dataset.seed=1,2"],  # a glob over a config group: the config loader expands it
    [],
]


@pytest.mark.parametrize("lines", CASES, ids=lambda c: " ".join(c)[:60] or "none")
def test_expand_is_the_basic_sweepers(lines):
    parsed = _parser().parse_overrides(lines)
    want = BasicSweeper.split_arguments(parsed, None)[0]
    assert expand(parsed) == want
    assert len(want) >= 1


def test_expand_refuses_an_interval_sweep_as_the_basic_sweeper_does():
    parsed = OverridesParser.create().parse_overrides(["lr=interval(0,1)"])
    with pytest.raises(ValueError, match="interval"):
        expand(parsed)
    with pytest.raises(Exception, match="(?i)interval"):
        BasicSweeper.split_arguments(parsed, None)


@pytest.mark.parametrize("exclude, item_sep, kv_sep", [([], ",", "="), (["dataset.seed"], ",", "="),
                                                        (["hydra.run.dir"], "/", ":")])
def test_overrides_dirname_is_hydras(exclude, item_sep, kv_sep):
    parsed = OverridesParser.create().parse_overrides(
        ["weights=paper", "dataset.seed=3", "+extra.key='a=b'", "retriever=[x,y]", "hydra.run.dir=out"])
    assert overrides_dirname(parsed, exclude, item_sep, kv_sep) == get_overrides_dirname(parsed, exclude, item_sep,
                                                                                         kv_sep)


def test_the_glob_parser_reads_the_repository_conf():
    assert str(CONF_DIR).endswith("conf")
    parsed = _parser().parse_overrides(["weights=glob(*)"])
    assert len(expand(parsed)) == len(list((REPO / "conf" / "weights").glob("*.yaml")))
