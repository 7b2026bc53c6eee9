"""kg_smartvector: graph importance of the SmartVector spec for sqlite-knowledge-graph (PageRank against
closed forms, its edge cases, supersedes never raising the superseded entity, the crate's in-degree)."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.kg_smartvector.pagerank import graph_importance, pagerank

from .kg_cases import kg  # noqa: F401 - a KnowledgeGraph on a fresh SQLite file (a fixture)


# ---- PageRank ------------------------------------------------------------------------------------------------

def test_pagerank_three_nodes_closed_form():
    """0 -> 2, 1 -> 2 (both rely on 2); 2 is dangling. With d = 0.85, n = 3 and a = p0 = p1:
    a = 0.05 + 0.85 p2 / 3 and p2 = 1 - 2a give p2 = 27/47, a = 10/47; normalised: [10/27, 10/27, 1]."""
    p = pagerank(3, np.array([0, 1]), np.array([2, 2]))
    np.testing.assert_allclose(p, [10 / 47, 10 / 47, 27 / 47], atol=1e-9)
    g = graph_importance(3, [0, 1], [2, 2], ["depends_on", "depends_on"])
    np.testing.assert_allclose(g, [10 / 27, 10 / 27, 1.0], atol=1e-9)


def test_pagerank_four_node_chain_closed_form():
    """0 -> 1 -> 2 and an isolated 3; 2 and 3 dangling. Every node gets b = 0.0375 + 0.2125 (p2 + p3);
    p0 = p3 = b, p1 = 1.85 b, p2 = b + 0.85 p1 = 2.5725 b, total 6.4225 b = 1.
    Normalised to the max: [1/2.5725, 1.85/2.5725, 1, 1/2.5725] = [0.388727, 0.719145, 1, 0.388727]."""
    b = 1 / 6.4225
    p = pagerank(4, np.array([0, 1]), np.array([1, 2]))
    np.testing.assert_allclose(p, [b, 1.85 * b, 2.5725 * b, b], atol=1e-9)
    assert p.sum() == pytest.approx(1.0)
    # depended_by is the same relation reversed: "1 depended_by 0" == "0 depends_on 1"
    g = graph_importance(4, [1, 1], [0, 2], ["depended_by", "depends_on"])
    np.testing.assert_allclose(g, [1 / 2.5725, 1.85 / 2.5725, 1.0, 1 / 2.5725], atol=1e-9)


def test_pagerank_edge_cases():
    np.testing.assert_allclose(pagerank(3, [], []), [1 / 3] * 3)  # no edges: all dangling, uniform
    assert pagerank(0, [], []).shape == (0,)
    np.testing.assert_allclose(graph_importance(2, [], [], [], mode="in_degree"), [0.0, 0.0])
    with pytest.raises(BenchError, match="damping=1.0: must be in"):
        pagerank(2, [0], [1], damping=1.0)
    with pytest.raises(BenchError, match="graph_importance=hits: unknown; allowed: pagerank, in_degree"):
        graph_importance(2, [0], [1], ["depends_on"], mode="hits")


def test_supersedes_never_raises_the_superseded_entity(kg):
    """F depends on B, C and E depend on D; then A supersedes B. PageRank: B's importance must not increase.
    in_degree (the crate v0.13, reproduced): B's rises from 1/2 to 2/2, as the crate's does."""
    A, B, C, D, E, F = (kg.insert_entity("chunk", n, at=0.0) for n in "ABCDEF")
    kg.add_dependency(F, B, "depends_on", at=1.0)
    kg.add_dependency(C, D, "depends_on", at=1.0)
    kg.add_dependency(E, D, "depends_on", at=1.0)
    ids, before = kg.graph_importance("pagerank")
    _, deg_before = kg.graph_importance("in_degree")
    kg.add_dependency(A, B, "supersedes", at=2.0)
    _, after = kg.graph_importance("pagerank")
    _, deg_after = kg.graph_importance("in_degree")
    b = ids.tolist().index(B)
    assert after[b] <= before[b]
    np.testing.assert_allclose(after, before)  # supersedes rows are excluded altogether
    np.testing.assert_allclose(deg_before, [0, 0.5, 0, 1, 0, 0])
    np.testing.assert_allclose(deg_after, [0, 1, 0, 1, 0, 0])  # the crate's fault: B raised
    # contradicts counts in the crate's in-degree, never in PageRank
    kg.add_dependency(C, A, "contradicts", at=3.0)
    np.testing.assert_allclose(kg.graph_importance("pagerank")[1], before)
    np.testing.assert_allclose(kg.graph_importance("in_degree")[1], [0.5, 1, 0, 1, 0, 0])
    # as of before the supersedes row, both are the old ones
    np.testing.assert_allclose(kg.graph_importance("in_degree", at=1.5)[1], deg_before)


def test_in_degree_counts_depended_by_for_its_target_like_the_crate():
    # "0 depended_by 1" means 1 requires 0; the crate still counts the row for target 1
    np.testing.assert_allclose(graph_importance(2, [0], [1], ["depended_by"], mode="in_degree"), [0.0, 1.0])
    pr = graph_importance(2, [0], [1], ["depended_by"], mode="pagerank")
    assert pr[0] == 1.0 and pr[1] < 1.0  # PageRank credits the one relied upon
