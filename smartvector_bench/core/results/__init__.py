"""Result files as typed objects, one class per kind, each with ``schema_version``, ``validate()``, ``save(path)``
(atomic, the bytes the experiments have always written) and ``load(path)``:

- :class:`MainMetrics`: ``metrics.json`` of experiment=main (results/main, main_large, handbook, a sweep job);
- :class:`ReembedCost`, :class:`FeedbackLoop`, :class:`LvlEval`: the JSON of those experiments;
- :class:`SweepSummary`: a sweep's ``summary.json``.

:func:`load` (frame.py) reads a run folder, a sweep folder or all of results/ as one pandas DataFrame.
Metric names are declared in :mod:`smartvector_bench.core.evaluation.metrics.names`.
"""

from smartvector_bench.core.results.base import ResultError, ResultFile
from smartvector_bench.core.results.experiments import FEEDBACK_SERIES_FIELDS, FeedbackLoop, LvlEval, ReembedCost
from smartvector_bench.core.results.frame import RUN_COLUMNS, SOURCE, load, load_all, load_run, load_sweep
from smartvector_bench.core.results.main import RESULT_COLUMNS, MainMetrics, system_rows
from smartvector_bench.core.results.sweep import SWEEP_SCHEMA_VERSION, TIDY, SweepSummary

KINDS = {cls.KIND: cls for cls in (MainMetrics, ReembedCost, FeedbackLoop, LvlEval, SweepSummary)}

__all__ = ["FEEDBACK_SERIES_FIELDS", "KINDS", "RESULT_COLUMNS", "RUN_COLUMNS", "SOURCE", "SWEEP_SCHEMA_VERSION",
           "TIDY", "FeedbackLoop", "LvlEval", "MainMetrics", "ReembedCost", "ResultError", "ResultFile",
           "SweepSummary", "load", "load_all", "load_run", "load_sweep", "system_rows"]
