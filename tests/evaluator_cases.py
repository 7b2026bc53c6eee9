"""A hand-made, corpus-free example whose every number is worked out by hand (benchmark v2: graded judgments with
several relevant chunks per query, families as clusters), shared by tests/test_evaluator_split.py and
tests/test_evaluator_sets_power.py."""

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Queries
from smartvector_bench.core.run import Run

_ = -1  # padding


# q  split category          family relevant (grade)  stale    rumor  ranked (k = 8)             conf  outcome
# 0  dev   current           A      0 (2), 5 (1)      []       []     5 0 6                      0.90  correct (grade 1 top)
# 1  dev   recently_updated  A      1 (2)             [2]      []     2 7 1                      0.80  stale,   rr 1/3
# 2  dev   contested         B      3 (2)             []       [4]    4 8 9 10 11 12 3           0.35  rumor,  rr 1/7
# 3  dev   current           B      13 (2)            []       []     (nothing)                  NaN   wrong,   rr 0
# 4  dev   recently_updated  C      14 (2), 17 (1)    [15, 16] []     14 15                      0.30  correct, r5 1/2
# 5  test  current           D      0 (2)             []       []     0                          1.00  correct
# 6  test  contested         D      3 (2), 18 (1)     []       [4]    4 18 3                     0.60  rumor,  rr 1/2
# 7  test  current           E      1 (2)             [2]      []     9 8                        0.10  wrong,   rr 0
RANKED = np.array([
    [5, 0, 6, _, _, _, _, _],
    [2, 7, 1, _, _, _, _, _],
    [4, 8, 9, 10, 11, 12, 3, _],
    [_, _, _, _, _, _, _, _],
    [14, 15, _, _, _, _, _, _],
    [0, _, _, _, _, _, _, _],
    [4, 18, 3, _, _, _, _, _],
    [9, 8, _, _, _, _, _, _],
], dtype=np.int64)
CONF = np.array([0.9, 0.8, 0.35, np.nan, 0.3, 1.0, 0.6, 0.1])
FAMILY = np.array(["A", "A", "B", "B", "C", "D", "D", "E"], dtype=object)
RELEVANT = [[0, 5], [1], [3], [13], [14, 17], [0], [3, 18], [1]]
GRADES = [[2, 1], [2], [2], [2], [2, 1], [2], [2, 1], [2]]


def make_queries() -> Queries:
    n = 8
    return Queries(
        ids=[f"q{i}" for i in range(n)], texts=[f"query {i}" for i in range(n)],
        query_time=np.zeros(n), as_of=np.zeros(n),
        category=np.array(["current", "recently_updated", "contested", "current", "recently_updated",
                           "current", "contested", "current"], dtype=object),
        split=np.array(["dev"] * 5 + ["test"] * 3, dtype=object),
        relevant=Ragged.from_lists(RELEVANT), grades=Ragged.from_lists(GRADES),
        stale=Ragged.from_lists([[], [2], [], [], [15, 16], [], [], [2]]),
        rumor=Ragged.from_lists([[], [], [4], [], [], [], [4], []]),
        family=FAMILY.copy(),
    )


def make_run() -> Run:
    scores = np.where(RANKED >= 0, 1.0, np.nan)
    return Run(system="toy", ranked=RANKED, scores=scores, confidence=CONF)
