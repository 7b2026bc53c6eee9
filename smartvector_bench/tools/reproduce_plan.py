"""The plan of ``python -m smartvector_bench.tools.reproduce`` (``make reproduce-all``): the ordered steps, each a
few commands, that regenerate every committed file under ``results/`` (and the figures and generated doc tables
made from it) from a clean clone after ``make install``.

1. ``experiments``: every single-run preset of ``experiments/__init__.py`` (``RUNS``: main, reembed_cost,
   feedback_loop, lvl_eval, main_large, handbook, facts, shortcut_audit), each ``python -m
   smartvector_bench.tools.publish --only <name>`` (the publisher reruns it through the CLI with one math thread
   and no embedding cache, then writes ``results/<name>/`` with its ``PROVENANCE.json``).
2. ``sweeps``: every sweep preset (``SWEEPS``), each ``smartvector-bench -m experiment=<preset>`` with one math
   thread (as the published jobs' ``machine.env`` records; the Hydra callback collects ``tidy.csv`` and
   ``summary.json``), then ``publish --only none --sweeps <preset>`` (the publisher never runs a sweep: without
   this step ``make results`` silently keeps the old sweep folders).
3. ``bench``: ``make bench``'s perf run into ``results/perf/`` and ``perf/embedding.json`` (a separate tool,
   ``tools/perf/embedding.py``, that ``make bench`` does not run).
4. ``derived``: the figures (``paper_figures/make_all.py``, fig_perf and fig_filtered_ann included), the generated
   tables of README.md and docs/ (``paper_figures/claims.py --write-readme``) and, last, the manifest
   ``results/expected.json`` (``tools/gate --write-expected``), which must follow every step that writes under
   ``results/``.

A step names what it produces under the results root (``produces``; ``tests/test_reproduce.py`` checks that every
published folder has a producer) and the files outside the clone it needs (``needs``: the git bundles in
``../shared/corpora`` that the handbook and facts datasets are built from, read from the presets' configs).
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from experiments import RUNS, SWEEPS
from smartvector_bench.core import CONF_DIR as _CONF
from smartvector_bench.tools.gate.common import REPO, RESULTS_DIR
from smartvector_bench.tools.gate.rerun import RERUN_ENV, bench_executable

MULTIRUN_DIR = REPO / "multirun"
CONF_DIR = Path(_CONF)
GROUPS = ("experiments", "sweeps", "bench", "derived")
# Every command: the model offline (as the Makefile exports it).
BASE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
# A sweep's jobs: one math thread each, as the published jobs ran (their metrics.json's machine.env) and as the
# gate's reruns of them run.
SWEEP_ENV = {**RERUN_ENV, "OPENBLAS_NUM_THREADS": "1"}
# An earlier reproduction's timings files, kept to compare with (``reproduce --render``): written by the reproduce
# runner of an earlier commit (each file's ``git`` and ``command`` say which), so no step of this plan makes them.
BEFORE_DIR = "timings_before"
# Committed files under results/ that no step writes: hand-written, or kept from an earlier commit.
STATIC = ("README.md", BEFORE_DIR)
TIMINGS_FILE = "timings.json"  # written by the reproduce runner itself


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    env: dict = field(default_factory=dict)   # added to os.environ (BASE_ENV first)

    def full_env(self) -> dict:
        return {**BASE_ENV, **self.env}

    def line(self) -> str:
        """The command as a shell line, paths inside the repository shown relative to it."""
        env = [f"{k}={v}" for k, v in self.env.items() if BASE_ENV.get(k) != v]
        return shlex.join([*env, *(show(a) for a in self.argv)])


@dataclass(frozen=True)
class Step:
    name: str
    group: str
    commands: tuple[Command, ...]
    produces: tuple[str, ...]          # what it writes under the results root (a folder, a file)
    what: str = ""
    writes: tuple[str, ...] = ()       # what it writes outside the results root (relative to the repository)
    needs: tuple[str, ...] = ()        # files that must exist first (relative to the repository)
    resumes: str | None = None         # a sweep folder whose complete jobs a rerun skips (not a clean start)

    def missing(self) -> list[str]:
        return [n for n in self.needs if not (REPO / n).exists()]


def show(arg: str) -> str:
    """An argument with the repository's absolute path (and the venv's interpreter) shortened."""
    root = str(REPO) + "/"
    if arg == sys.executable:
        try:
            return str(Path(arg).relative_to(REPO))
        except ValueError:
            return "python"
    return arg.replace(root, "") if root in arg else arg


def _arg(path: Path) -> str:
    """A path argument: relative to the repository (the commands run there) when inside it."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(Path(path).resolve())


_DATASET = re.compile(r"override /dataset:\s*(\w+)")
_BUNDLE = re.compile(r"^\s*repo:\s*(\S+\.bundle)\b", re.M)


def bundles(preset: str) -> tuple[str, ...]:
    """The git bundles a preset's dataset is built from (``repo: ....bundle`` in its yaml or its dataset's), as
    paths relative to the repository (the configs' paths are relative to the working folder, the repository)."""
    text = (CONF_DIR / "experiment" / f"{preset}.yaml").read_text(encoding="utf-8")
    found = _BUNDLE.findall(text)
    for ds in _DATASET.findall(text):
        path = CONF_DIR / "dataset" / f"{ds}.yaml"
        if path.is_file():
            found += _BUNDLE.findall(path.read_text(encoding="utf-8"))
    return tuple(dict.fromkeys(found))


def plan(results_dir: Path = RESULTS_DIR, multirun_dir: Path = MULTIRUN_DIR, figures_dir: Path | None = None,
         sweep_launcher: str | None = None) -> list[Step]:
    """Every step, in the order they must run."""
    py, res, mr = sys.executable, _arg(results_dir), _arg(multirun_dir)
    publish = (py, "-m", "smartvector_bench.tools.publish")
    steps = [Step(name, "experiments", (Command((*publish, "--only", name, "--results-dir", res)),),
                  produces=(name,), needs=bundles(name), what=f"rerun experiment={name} and publish it")
             for name in RUNS]
    for preset in SWEEPS:
        sweep = [*bench_executable(), "-m", f"experiment={preset}"]
        if Path(multirun_dir).resolve() != MULTIRUN_DIR.resolve():
            sweep.append(f"hydra.sweep.dir={Path(multirun_dir).resolve() / preset}")
        if sweep_launcher:
            sweep.append(f"hydra/launcher={sweep_launcher}")
        steps.append(Step(preset, "sweeps", (
            Command(tuple(sweep), dict(SWEEP_ENV)),
            Command((*publish, "--only", "none", "--sweeps", preset, "--multirun-dir", mr, "--results-dir", res))),
            produces=(preset,), needs=bundles(preset), resumes=str(Path(multirun_dir) / preset),
            what=f"the {preset} sweep (every job), collected, then published"))
    perf = Path(results_dir) / "perf"
    steps += [
        Step("perf", "bench", (Command((py, "-m", "smartvector_bench.tools.perf.cli", "bench_profile=full",
                                         f"out_dir={_arg(perf)}")),),
             produces=("perf",), what="make bench: performance at 10K-1M vectors"),
        Step("perf_embedding", "bench", (Command((py, "-m", "smartvector_bench.tools.perf.embedding", "--out",
                                                   _arg(perf / "embedding.json"))),),
             produces=("perf/embedding.json",), what="batched vs per-text embedding cost (not part of make bench)"),
    ]
    figures = (py, "paper_figures/make_all.py", "--results", res, *(("--out", _arg(figures_dir)) if figures_dir else ()))
    steps += [
        Step("figures", "derived", (Command(figures, {"MPLBACKEND": "Agg"}),),
             produces=(), writes=(_arg(figures_dir) if figures_dir else "paper_figures/figures",),
             what="make figures: every figure from results/ alone"),
        Step("claims", "derived", (Command((py, "paper_figures/claims.py", "--results", res, "--write-readme")),),
             produces=(), writes=("README.md", "docs/findings.md", "docs/results.md", "docs/datasets.md"),
             what="make claims: the generated tables of README.md and docs/"),
        Step("expected", "derived", (Command((py, "-m", "smartvector_bench.tools.gate", "--write-expected",
                                              "--results", res)),),
             produces=("expected.json",), what="the manifest of every file under results/ (last)"),
    ]
    return steps


def select(steps: list[Step], only: list[str], skip: list[str]) -> list[Step]:
    """The steps named (by name or group) in ``only`` (all when empty) minus those in ``skip``, in plan order.
    An unknown name raises ValueError naming it and the allowed ones."""
    known = {s.name for s in steps} | set(GROUPS)
    for name in [*only, *skip]:
        if name not in known:
            raise ValueError(f"unknown step {name!r}; allowed: {', '.join(GROUPS)} or a step: "
                             f"{', '.join(s.name for s in steps)}")

    def hit(step: Step, names: list[str]) -> bool:
        return step.name in names or step.group in names

    return [s for s in steps if (not only or hit(s, only)) and not hit(s, skip)]
