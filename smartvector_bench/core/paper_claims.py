"""What the SmartVector paper (arXiv 2604.20598) claims for its main table. Shown beside our numbers, never
used to compute, tune or round anything."""

PAPER_MAIN_TABLE = {
    "plain_cosine": {"top1": 0.310, "stale_rate": 0.350, "ece": 0.470},
    "smartvector": {"top1": 0.620, "stale_rate": 0.133, "ece": 0.244},
}
PAPER_SETUP = "258 vectors, 138 queries, held-out split (paper, abstract)"
