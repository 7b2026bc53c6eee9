"""Verdict rules of the claims table, as pure functions over stored results (nothing here reads a file).

Each rule takes what it judges (a sweep's per-query outcomes as a DataFrame of ``results/<preset>/queries.csv``
and its ``summary.json`` as a dict, or a results JSON as a dict; ``None`` when the file is missing) and returns
a :class:`Verdict`: the verdict, our figure, the statistical test and the threshold it used, the p-value
the verdict rests on (None for interval- or count-based rules) and the rule text.

Verdicts are "holds", "partly", "does not hold" or "not measured (<reason>)". A rule never says "holds" on
evidence it does not have: a missing file or system, fewer than ``min_seeds`` seeds with both sides, or a sweep
whose summary is not complete (``all_complete`` false, failed or missing jobs) gives "not measured".

Pooled paired comparisons (:func:`pooled_paired`) join two sides' per-query rows, cluster them by
``(dataset_seed, family)`` (queries of one policy family share their failure modes; different seeds are
different datasets) and run
:func:`~smartvector_bench.core.evaluation.metrics.clustered.paired_cluster_permutation_test`. Non-additive metrics (ECE,
Brier, AUROC, ECE after a Platt map fitted per seed on dev) are compared with a paired cluster bootstrap of the
difference (:func:`pooled_bootstrap`); the difference counts as evidence when its 95% interval excludes 0.
"""

# The rules, by the claims they judge; every public name is importable from here.
from smartvector_bench.core.evaluation.verdicts.base import (  # noqa: F401
    ALPHA, Boot, MIN_SEEDS, NotMeasured, OUTCOMES, Paired, QUERY_COLUMNS, SIGNALS, Verdict, format_p, holm,
    not_measured,
)
from smartvector_bench.core.evaluation.verdicts.pooled import (  # noqa: F401
    STATISTICS, normalise_queries, pooled_bootstrap, pooled_paired, sweep_problem,
)
from smartvector_bench.core.evaluation.verdicts.main_table import (  # noqa: F401
    ECE_RULE, STALE_RULE, TOP1_RULE, ece_falls, stale_rate_falls, top1_doubles,
)
from smartvector_bench.core.evaluation.verdicts.real_data import real_ece, real_stale, real_top1  # noqa: F401
from smartvector_bench.core.evaluation.verdicts.sweeps import (  # noqa: F401
    CONFIDENCE_RULE, ROBUST_RULE, TEMPORAL_RULE, confidence_removal_raises, robust_across_contradiction,
    temporal_largest,
)
from smartvector_bench.core.evaluation.verdicts.updates import (  # noqa: F401
    FEEDBACK_RULE, REEMBED_RULE, feedback_improves, reembed_single_word,
)
from smartvector_bench.core.evaluation.verdicts.lvl import (  # noqa: F401
    LVL_RULES, lvl_change_detection, lvl_cold_latency, lvl_hot_latency, lvl_reprocessing, lvl_temporal_accuracy,
    lvl_temporal_leakage,
)
