"""A variant config follows its base: every key of the base's yaml is in the variant's, interpolated from the
base (so a sweep's or the command line's override of the base reaches the variant too), except the keys the
variant exists to change. A key added to the base and forgotten in the variant would otherwise silently take
the class default there."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from .conftest import REPO

RETRIEVER = REPO / "conf" / "retriever"
# variant -> (base, the keys it sets itself)
VARIANTS = {"smartvector_soft": ("smartvector", {"_target_", "exclude_statuses"}),
            "smartvector_ref_soft": ("smartvector_ref", {"_target_", "status_filter"})}


def _keys(name: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(RETRIEVER / f"{name}.yaml"), resolve=False)


def drift(mine: dict, theirs: dict, base: str, own: set) -> list[str]:
    """What keeps a variant (keys ``mine``) from following its base (``theirs``, named ``base``)."""
    follow = (set(theirs) | set(mine)) - own  # keys the base gets elsewhere (weights: conf/weights/) too
    return ([f"{k}: missing" for k in sorted(set(theirs) - set(mine) - own)]
            + [f"{k}: {mine[k]!r}, not interpolated" for k in sorted(follow & set(mine))
               if mine[k] != f"${{retrievers.{base}.{k}}}"])


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_variant_interpolates_every_key_of_its_base(variant):
    base, own = VARIANTS[variant]
    mine, theirs = _keys(variant), _keys(base)
    assert len(set(theirs) - own) > 3
    assert drift(mine, theirs, base, own) == [], f"{variant}.yaml: use ${{retrievers.{base}.<key>}}"


def test_drift_names_a_forgotten_key_and_a_copied_value():
    theirs = {"_target_": "x", "a": 1, "b": 2}
    assert drift({"_target_": "y", "a": "${retrievers.s.a}", "b": "${retrievers.s.b}"}, theirs, "s", {"_target_"}) == []
    assert drift({"_target_": "y", "a": "${retrievers.s.a}"}, theirs, "s", {"_target_"}) == ["b: missing"]
    assert drift({"_target_": "y", "a": 1, "b": "${retrievers.s.b}"}, theirs, "s", {"_target_"}) == \
        ["a: 1, not interpolated"]
