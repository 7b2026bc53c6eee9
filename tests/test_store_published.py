"""The published store rows (results/<dataset>/run_<store>_valid.jsonl) rank as valid_cosine does: docs/systems.md
and the README say the window as a store filter changes nothing. A list may differ only where the swapped hits'
scores are within float32 rounding of each other (the stores score in their own arithmetic)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[1] / "results"
DATASETS = ("main", "main_large", "handbook", "facts")
STORES = ("lancedb_valid", "chroma_valid", "milvus_valid", "livevectorlake")
NEAR = 1e-5  # the stores' cosines agree with FAISS's to ~1e-7 (tests/test_store_systems.py)


def _run(dataset: str, system: str) -> dict[str, tuple[list[str], list[float]]]:
    lines = (RESULTS / dataset / f"run_{system}.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    return {r["query_id"]: (r["ranked"], r["scores"]) for r in map(json.loads, lines)}


def _near_tie_swap(a: tuple[list[str], list[float]], b: tuple[list[str], list[float]]) -> bool:
    """``b`` is ``a`` with hits reordered only among scores within NEAR of each other: rank by rank the scores
    agree, a hit in both keeps its score, and a hit ``a`` lacks ties ``a``'s last score (a tie across the cut-off,
    whose members each system orders by its own rule)."""
    (ra, sa), (rb, sb) = a, b
    if len(ra) != len(rb) or any(abs(x - y) > NEAR for x, y in zip(sa, sb)):
        return False
    score = dict(zip(ra, sa))
    return all(abs(score.get(x, sa[-1]) - s) <= NEAR for x, s in zip(rb, sb))


@pytest.mark.parametrize("dataset", DATASETS)
def test_published_store_rankings_equal_valid_cosine_up_to_near_ties(dataset):
    base = _run(dataset, "valid_cosine")
    for system in STORES:
        mine = _run(dataset, system)
        assert mine.keys() == base.keys(), (dataset, system)
        differ = [q for q in base if mine[q][0] != base[q][0]]
        assert all(_near_tie_swap(base[q], mine[q]) for q in differ), (dataset, system, differ[:3])
        assert len(differ) <= 0.01 * len(base), (dataset, system, len(differ))
        assert all(mine[q][0][:1] == base[q][0][:1] or _near_tie_swap(base[q], mine[q]) for q in base)


def test_the_near_tie_check_can_fail():
    a = (["x", "y", "z"], [0.9, 0.8, 0.7])
    assert _near_tie_swap(a, (["x", "y", "z"], [0.9, 0.8, 0.7]))
    assert _near_tie_swap((["x", "y"], [0.9, 0.9 - 1e-7]), (["y", "x"], [0.9, 0.9 - 1e-7]))
    assert not _near_tie_swap(a, (["y", "x", "z"], [0.8, 0.9, 0.7]))  # a real swap
    assert not _near_tie_swap(a, (["x", "y", "w"], [0.9, 0.8, 0.75]))  # another chunk at a real score gap
    assert not _near_tie_swap(a, (["x", "w", "z"], [0.9, 0.8, 0.7]))  # a new chunk above the cut's score
    tie = (["x", "y", "z"], [0.9, 0.5, 0.5])  # y, z and w tie at the cut: either two of them may be shown
    assert _near_tie_swap(tie, (["x", "w", "y"], [0.9, 0.5, 0.5 + 1e-7]))
