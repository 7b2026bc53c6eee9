"""The four SmartVector retrieval signals as pure, vectorised functions: the specification.

Each function cites its equation in the SmartVector paper (arXiv 2604.20598), section 2.C "Core Components",
with the constants of the reference implementation (``smartvector-rag`` 0.1.1) as defaults. The fast paths
(``scoring.fused``, ``bounds.confidence_bound``, ``fused_kernel``) implement these and are checked against them
in ``tests/test_formulas_served.py`` and ``tests/test_formulas_kernel.py``.
"""
