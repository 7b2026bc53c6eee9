"""What the SmartVector paper (arXiv 2604.20598) claims: its main table and its re-embedding figure. Shown beside
our numbers, never used to compute, tune or round anything."""

from smartvector_bench.core.evaluation.metrics import names as M

PAPER_MAIN_TABLE = {
    "plain_cosine": {M.TOP1: 0.310, M.STALE_RATE: 0.350, M.ECE: 0.470},
    "smartvector": {M.TOP1: 0.620, M.STALE_RATE: 0.133, M.ECE: 0.244},
}
PAPER_SETUP = "258 vectors, 138 queries, held-out split (paper, abstract)"

# Re-embedding cost (experiment=reembed_cost): chunks re-embedded per single-word edit, whole document vs surgical.
PAPER_REEMBED_COST = {"edit": "single_word", "full": 4.35, "surgical": 1.0, "reduction": 0.77}
