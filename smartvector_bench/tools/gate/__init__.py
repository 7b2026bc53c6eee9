"""``python -m smartvector_bench.tools.gate``: the CI regression gate (``make regress``).

Why: every number under ``results/`` must be one today's code gives, so a hand edit, a change of the evaluator,
the data, the tie rule or any ranking fails CI naming the file and the query or figure; and another machine's
float rounding must not.

1. **Committed check** (``committed.py``, host-independent, about a minute): the manifest of
   ``results/expected.json`` (every file's sha256; none missing, none unrecorded; each as its ``PROVENANCE.json``
   lists it), then today's code on the committed run files must give every published figure and derived file
   (``replay.py``: metrics.json, calibration maps and AUROC included, labels, TREC files, table.md; each sweep's
   summary from its tidy.csv, ``sweeps.py``; each stored sweep job's rows).
2. **Rerun check**: main, main_large, reembed_cost, feedback_loop and lvl_eval rerun through the real CLI
   (``rerun.py``), and each published sweep on a few of its own jobs (``sweep_reruns.py``). Their rankings are
   compared with the committed ones, one row per run file (``rankings.py``): exactly when the machine fingerprint
   and packages are the publishing ones, otherwise up to float32 rounding (``tolerances.py``, the one module of
   tolerances, each with the reason for its size). The metrics of a rerun are not compared value by value: its
   rankings are, and the committed check derives the metrics from the committed rankings. Experiments without
   run files are compared on their result JSON and per-query outcomes (``outputs.py``).

Prints ``metric | expected | got | tolerance | verdict`` for the misses (``--verbose``: every row) and exits 1 on
any miss, 2 on bad input (an ``expected.json`` not as ``--write-expected`` wrote it included), 143 / 130 on SIGTERM /
SIGINT, its reruns stopped and its temp folder removed (``children.py``).

    python -m smartvector_bench.tools.gate                          # committed check, then every rerun
    python -m smartvector_bench.tools.gate --only main,seeds        # committed check, two reruns
    python -m smartvector_bench.tools.gate --results-from DIR       # compare DIR (a results root or a run folder)
    python -m smartvector_bench.tools.gate --write-expected         # the manifest of results/ (after publishing)

The experiments it knows are declared once, in ``experiments/__init__.py``. Modules: ``common.py`` (paths, rows,
exit codes), ``tolerances.py``, ``files.py`` (manifest, provenance), ``rankings.py``, ``replay.py``, ``sweeps.py``,
``outputs.py``, ``rerun.py``, ``sweep_reruns.py``, ``children.py`` (the reruns' processes), ``committed.py``,
``cli.py``.
"""
