"""Evaluation: the judgments (``judgments``), the metric formulas (``metrics``), the evaluator that scores a run
with them (``evaluator``), what a dataset lets it measure (``measured``), the paper's claims (``paper_claims``)
and the verdicts and claims table our results give (``verdicts``, ``claims``)."""
