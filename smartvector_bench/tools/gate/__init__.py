"""``python -m smartvector_bench.tools.gate``: the CI regression gate (``make regress``).

Why: every number the project publishes under ``results/`` must be one the gate can reproduce or recompute, so
a hand edit, a collector or evaluator bug, or a code change that moves a metric fails CI naming the number.

First checks the committed results (``results/``, every file recorded in the ``manifest`` of
``results/expected.json``; see ``files.py``): a recorded file missing or with another
sha256, a file present but not recorded, or one that differs from its ``PROVENANCE.json`` fails naming the file;
then every expected value and invariant is recomputed from the committed files, a miss named by file and key
(``results/main/metrics.json: systems.plain_cosine.test.ece expected 0.1234, committed 0.1334``). Every result
file is read through the result object of its kind (``smartvector_bench/core/results/``: MainMetrics, ...,
SweepSummary), so one without the shape of its kind is a single miss naming file and key
(``results/main/metrics.json: systems.bm25.dev.ece_ci: expected [lo, hi], got None``); and every
published sweep's ``summary.json`` is recomputed from its own ``tidy.csv`` by a second implementation
(``sweeps.py``: ``results/seeds/summary.json: results.systems.smartvector.test.top1.mean
summary 0.269, tidy.csv gives 0.259``). This takes a few seconds and always covers the whole tree.

Then reruns through the real CLI (``smartvector-bench experiment=<name>``, the same command
``smartvector_bench/tools/publish.py`` publishes with, recorded in each ``results/<name>/PROVENANCE.json``) main,
main_large, reembed_cost, feedback_loop and lvl_eval (with ``experiment.repeats=1``: its five latency
repetitions only feed timing figures, which are never compared; every other figure is exact at 6 decimals),
compares every metric listed in ``results/expected.json`` with the new outputs (an experiment published but not
yet in the expected file: against values derived from its committed files, with a note) and checks invariants
that must hold for any run. Then reruns a few jobs of each published sweep (``sweep_reruns.REDUCED``: the
preset's own multirun, as recorded, with its swept keys narrowed on the command line) and compares their tidy
rows with the committed ones. Prints ``metric | expected | got | tolerance | verdict`` for the misses
(``--verbose``: every row) and exits non-zero on any miss (committed or rerun), naming the metric.

    python -m smartvector_bench.tools.gate                              # committed check, then every rerun
    python -m smartvector_bench.tools.gate --only main                  # committed check, rerun and check main
    python -m smartvector_bench.tools.gate --only seeds,tune            # committed check, two reduced sweep reruns
    python -m smartvector_bench.tools.gate --results DIR                # DIR is the results root (DIR/expected.json)
    python -m smartvector_bench.tools.gate --results-from DIR           # committed check, compare DIR, no rerun
    python -m smartvector_bench.tools.gate --no-committed --results-from outputs/main/<time>/   # DIR only
    python -m smartvector_bench.tools.gate --write-expected             # derive results/expected.json from results/

``--results-from DIR`` takes a results root (``DIR/<experiment>/<files>``, e.g. ``results/``) or one
experiment's run folder (``DIR/metrics.json``, e.g. ``outputs/main/<time>/``); the committed results themselves
(``--results-from results``) are compared once, by the committed check. ``--write-expected`` records the values
(every published experiment: lvl_eval's timing figures and shortcut_audit's reruns excepted, see
``expected.EXTRA_SKIP``)
and the manifest of every file under the results root, and prints every change against the file it replaces
(``changed <path>: old -> new``, ``added``, ``removed``; ``expected.json unchanged`` when nothing changed); rerun
it after every republication (``make results``, ``make bench``) or edit of a file under ``results/``.

Metric paths are ``<experiment>.<keys into the experiment's JSON>`` (``main.systems.smartvector.test.top1``,
list items by position: ``...top1_ci.0``) and, for a CSV, ``<experiment>.csv[col=value,...].<column>``
(one row selected by its key columns) and ``<experiment>.csv.columns`` (the header must keep every column).
Each expected entry has a ``kind``:

- ``exact4``: numbers (or lists of numbers) equal after rounding to 4 decimals (``tolerance`` 0.0); a p-value
  (last key ``p_value`` or ``*_p``: ``mcnemar_p``, ``permutation_p``, ...) must moreover agree on a log scale,
  ``|log10 got - log10 value| <= 0.01`` (zero only equals zero), so 1e-6 vs 3e-6 differ where both read 0.0000;
- ``exact6``: the same at 6 decimals (the stored precision), lists may hold None (an empty bin): the ECE bins'
  ``accuracy`` and ``mean_confidence``;
- ``exact``: equal as is (strings, booleans, lists of strings);
- ``abs``: ``|got - value| <= tolerance`` (with a ``why``), for the few values that are float noise;
- ``columns``: the CSV header holds every expected column.

A metric that is expected but missing from the new output (its key or column disappeared) is a miss; so is
``None`` or NaN where a number is expected. Invariants (every split of every system in ``main`` and
``main_large``): each rate, ECE, leakage, MRR and recall and their intervals in [0, 1], McNemar p in [0, 1],
``mrr_at_1 == top1`` (MRR@1 recomputed from the run file's ranked lists against the dataset's gold chunk),
``n_queries`` = the split's judged queries in ``run_<system>.jsonl``, dev + test = all the dataset's queries,
``sum(ece_bins.counts) == n_queries``, categories summing to the split; and an independent recomputation
(``recompute.recompute_rows``, the gate's own code, not the evaluator's) from each run file's ranked ids and confidences
and the dataset's judgments (regenerated from its seed, checked against its sha256): stale and rumour rates,
ECE and every bin's count / accuracy / mean confidence, MRR@10, recall@5, nDCG@10 (``ir_measures``,
``pytrec_eval`` provider), per split and per category, equal to the stored values at their 6 decimals (ECE
and mean confidences within 1e-6: the run file rounds confidences), and the run file's correct / stale /
rumor flags equal to the recomputed ones. When metrics.json has them (issue 14), ``brier`` (mean squared error
of the raw top-1 confidence, None/NaN as 0.0) and ``auroc`` (Mann-Whitney U from ``scipy.stats.rankdata``,
ties half; None for a split of one class) are recomputed too, within 1e-6, their intervals in [0, 1], and the
``calibration`` block's raw test ece / brier / auroc, n_dev / n_test and bin counts must equal the splits'.
Exit codes: 0 all pass, 1 a miss, 2 bad input.

The experiments it knows (what each publishes, which it reruns, each sweep's reduced rerun) are declared once,
in ``experiments/__init__.py``. One module per concern, each importing only those above it in this list:

- ``common.py``: the results folder, exit codes, bad input, result files read through their result objects;
  ``report.py``: rows and their printing;
- ``rerun.py``: reruns through the CLI (shared with the publisher, ``smartvector_bench/tools/publish.py``);
- ``files.py``: the manifest and provenance hashes; ``paths.py``: outputs, metric paths, tolerances;
- ``recompute.py``: main's metrics recomputed from the run files; ``invariants.py``: what must hold for any run;
- ``expected.py``: derive, compare, read and write ``results/expected.json``;
- ``sweeps.py``: sweep summaries recomputed from tidy.csv; ``sweep_reruns.py``: the reduced sweep reruns;
- ``committed.py``: the committed check; ``cli.py`` (and ``__main__.py``): the options, ``run_gate``, ``main``.
"""
