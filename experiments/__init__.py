"""Experiments: each is a plain ``run(cfg, out_dir)`` function; ``smartvector-bench experiment=<name>`` picks one.

The one declaration of the experiments, read by the CLI's config check (``smartvector_bench/tools/validate.py``),
the publisher (``smartvector_bench/tools/publish.py``) and the regression gate (``smartvector_bench/tools/gate/``):

- ``KINDS``: each ``experiment.name`` with the module holding its ``validate(cfg)`` and ``run(cfg, out_dir)``
  and what one run writes (the result JSON it writes last, the files published from it, its per-row CSV);
- ``PRESETS``: each ``conf/experiment/<preset>.yaml`` with the kind it runs (its composed ``experiment.name``),
  whether it is a sweep (a Hydra multirun, ``hydra.sweeper.params``), and what the gate does with it.

``tests/test_cli_experiments.py`` composes every preset and checks that conf/experiment/ and this declaration
agree. Plain data only: importing this package imports no experiment.
"""

from __future__ import annotations

from dataclasses import dataclass

RUN_FILES = ("metrics.json", "table.md", "run_*.jsonl", "run_*.trec", "qrels_*.trec")
# Published when a run writes them: a trained system's model (ltr), which the gate searches with on another CPU.
OPTIONAL_RUN_FILES = ("model_*.txt",)


@dataclass(frozen=True)
class Kind:
    """An experiment function: ``experiment.name``, its module and what one run writes."""

    name: str
    module: str                      # has validate(cfg) and run(cfg, out_dir)
    result_file: str                 # the JSON it writes last (its presence marks a complete run)
    files: tuple[str, ...]           # what is published into results/<preset>/ (glob patterns)
    csv_file: str | None = None      # a per-row CSV checked by column
    csv_key: tuple[str, ...] = ()    # the columns that identify one CSV row


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("main", "experiments.main", "metrics.json", RUN_FILES),
    Kind("reembed_cost", "experiments.reembed_cost", "reembed_cost.json", ("reembed_cost.json", "table.md")),
    Kind("feedback_loop", "experiments.feedback_loop", "feedback_loop.json",
         ("feedback_loop.json", "feedback_loop.csv", "feedback_loop_runs.jsonl", "table.md"),
         csv_file="feedback_loop.csv", csv_key=("round", "system", "split")),
    Kind("lvl_eval", "experiments.lvl_eval", "lvl_eval.json", ("lvl_eval.json", "table.md", "lvl_eval_*.csv")),
    Kind("shortcut_audit", "experiments.shortcut_audit", "shortcut_audit.json",
         ("shortcut_audit.json", "shortcut_audit.csv", "table.md"),
         csv_file="shortcut_audit.csv", csv_key=("profile", "seed", "rule")),
)}


@dataclass(frozen=True)
class Preset:
    """A ``conf/experiment/<name>.yaml``. A single run is published into ``results/<name>/`` (``make results``);
    a sweep from ``multirun/<name>/`` once collected."""

    name: str
    kind: str                               # the experiment.name it runs (every sweep job runs main)
    sweep: bool = False                     # a Hydra multirun preset
    regress: bool = True                    # rerun by `make regress`; False: only checked from results/
    gate_overrides: tuple[str, ...] = ()    # added to the gate's rerun (a sweep: narrowed to a few of its jobs)
    extra_files: tuple[str, ...] = ()       # published beside the kind's files

    @property
    def result_file(self) -> str:
        return KINDS[self.kind].result_file

    @property
    def files(self) -> tuple[str, ...]:
        return KINDS[self.kind].files + self.extra_files

    @property
    def csv_file(self) -> str | None:
        return KINDS[self.kind].csv_file

    @property
    def csv_key(self) -> tuple[str, ...]:
        return KINDS[self.kind].csv_key


# In this order in results/expected.json and in the gate's and the publisher's output.
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("main", "main"),
    Preset("reembed_cost", "reembed_cost"),
    Preset("feedback_loop", "feedback_loop"),
    # Published with its five latency repetitions; the gate reruns it with one: the repetitions feed only the
    # timing figures, which are never compared, so every compared figure and the code path stay the same.
    Preset("lvl_eval", "lvl_eval", gate_overrides=("experiment.repeats=1",)),
    # The main table on the large profile (every system but smartvector_ref).
    Preset("main_large", "main"),
    # The 18F Handbook's git history: needs the bundle in ../shared/corpora, so it is published by `make results`
    # and checked from results/, not rerun.
    Preset("handbook", "main", regress=False, extra_files=("dataset/manifest.json",)),
    # Real facts that changed over both bundles in ../shared/corpora (dataset=facts, docs/facts.md): published by
    # `make results`, checked from results/, not rerun (as the handbook).
    Preset("facts", "main", regress=False, extra_files=("dataset/manifest.json",)),
    # Ten generated datasets (5 seeds x 2 profiles): published by `make results`, checked from results/.
    Preset("shortcut_audit", "shortcut_audit", regress=False),
    # The sweeps are never rerun whole in CI (27-128 jobs): the gate reruns each on one or two of its own jobs,
    # its swept keys narrowed on the command line, so that all five fit in a few minutes on two cores; seeds is
    # the slowest (its one job runs every system).
    Preset("seeds", "main", sweep=True, gate_overrides=("dataset.seed=1",)),
    Preset("ablation", "main", sweep=True, gate_overrides=("weights=paper,no_confidence", "dataset.seed=1")),
    Preset("contradiction_sweep", "main", sweep=True,
           gate_overrides=("dataset.contradiction_rate=0.0,0.75", "dataset.seed=1")),
    Preset("half_life", "main", sweep=True,
           gate_overrides=("retrievers.smartvector.temporal.half_life_days=30",
                           "retrievers.smartvector.confidence.half_life_days=7,365")),
    # Every system under each metadata regime (dataset.metadata: the store's fields rewritten at load time, the
    # judgments kept; issue 31): 5 seeds x 4 regimes on the default profile, and the facts data (needs the bundles,
    # so it is checked from results/, not rerun). The gate reruns one created_only job (the other regimes' code
    # paths are the unit tests'; full is the seeds sweep's job).
    Preset("regimes", "main", sweep=True, gate_overrides=("dataset.seed=1", "dataset.metadata=created_only")),
    Preset("regimes_facts", "main", sweep=True, regress=False, gate_overrides=("dataset.metadata=full,created_only",)),
    Preset("tune", "main", sweep=True,
           gate_overrides=("retrievers.smartvector.weights.semantic=0.7", "retrievers.smartvector.weights.temporal=0",
                           "retrievers.smartvector.weights.confidence=0.25",
                           "retrievers.smartvector.weights.relational=0,0.15")),
)}
RUNS = {n: p for n, p in PRESETS.items() if not p.sweep}      # the single-run presets, published by name
SWEEPS = {n: p for n, p in PRESETS.items() if p.sweep}
