"""Hostile config values (issue 28, "no upper bounds"): every resource key is bounded by a static cap, by the
dataset and by the machine, every generated date fits a four-digit year, and a run folder Hydra cannot create is
one line. Each case asserts the raised error or the exit code, the message, and what is left on disk."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import experiments.config as bounds
from data_gen.params import params_from_config
from experiments.main import MainSettings, run
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools import cli

from .conftest import REPO, TINY, compose_config, run_cli, write_tiny

FAST = TINY + ["embedder=hashing"]
RUN_FILES = ("metrics.json", "table.md", "run_plain_cosine.jsonl", "qrels_test.trec")


def _refused(overrides: list[str], out: Path, pattern: str) -> str:
    """run() on TINY with ``overrides`` raises one line matching ``pattern`` and writes no result file."""
    with pytest.raises(BenchError, match=pattern) as err:
        run(compose_config(FAST + overrides), out)
    assert "\n" not in str(err.value)
    assert not any((out / name).exists() for name in RUN_FILES), sorted(os.listdir(out))
    return str(err.value)


def _in_process(main, args: list[str]) -> tuple[int, str]:
    """A console script's ``main`` in this process (Hydra's parsing and composition included): (exit code, stderr)."""
    argv, err = sys.argv, io.StringIO()
    sys.argv = ["prog", *args]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code
    finally:
        sys.argv = argv
    return code, err.getvalue()


# -- static caps: refused with the other experiment.* keys, before any data is read ----------------------------

@pytest.mark.parametrize("override, message", [
    ("experiment.ece_bins=1000000000", r"^experiment\.ece_bins=1000000000: must be an integer in \[1, 10000\]$"),
    ("experiment.k=1000000000", r"^experiment\.k=1000000000: must be an integer in \[10, 10000\]$"),
    ("experiment.n_boot=1000000000", r"^experiment\.n_boot=1000000000: must be an integer in \[1, 100000\]$"),
    ("experiment.n_boot=1e9", r"^experiment\.n_boot=1000000000\.0: must be an integer in \[1, 100000\]$"),
    ("experiment.n_boot=10000000", r"^experiment\.n_boot=10000000: must be an integer in \[1, 100000\]$"),
    ("experiment.n_permutations=100000000",
     r"^experiment\.n_permutations=100000000: must be an integer in \[1, 1000000\]$"),
])
def test_static_caps_stop_the_run_before_the_dataset(tmp_path, override, message):
    _refused([override], tmp_path, message)
    assert not (tmp_path / "dataset").exists()  # refused before the generator wrote anything


@pytest.mark.parametrize("exp, key", [("reembed_cost", "n_boot"), ("lvl_eval", "n_boot"), ("lvl_eval", "k"),
                                      ("feedback_loop", "ece_bins"), ("feedback_loop", "n_boot")])
def test_every_experiment_caps_its_resampling_keys(tmp_path, exp, key):
    cfg = compose_config(["embedder=hashing", f"experiment={exp}", f"experiment.{key}=1000000000"])
    module = __import__(f"experiments.{exp}", fromlist=["run"])
    with pytest.raises(BenchError, match=rf"^experiment\.{key}=1000000000: must be an integer in \[\d+, \d+\]$"):
        module.run(cfg, tmp_path)
    assert list(tmp_path.iterdir()) == []


_HUGE = """
import resource, sys
# A regression fails with MemoryError instead of taking the machine (one light system: under an address-space
# limit some systems' thread pools stall instead of failing).
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from experiments.main import run
from smartvector_bench.core.errors import BenchError
from tests.conftest import TINY, compose_config
out = sys.argv[1]
for i, override in enumerate(sys.argv[2:]):
    try:
        run(compose_config(TINY + ["embedder=hashing", "systems=[plain_cosine]", override]), f"{out}/{i}")
        print("accepted", override)
    except BenchError as exc:
        print(exc)
"""


def test_huge_values_are_refused_before_any_allocation(tmp_path):
    """The three cases that once grew to 22 GB or ran out of memory, in a process limited to 3 GB."""
    huge = ["experiment.ece_bins=1000000000", "experiment.k=1000000000", "experiment.n_boot=1000000000"]
    out = subprocess.run([sys.executable, "-c", _HUGE, str(tmp_path), *huge], cwd=REPO, capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines] == huge, out.stdout
    assert all("must be an integer in [" in ln for ln in lines), out.stdout
    assert not list(tmp_path.iterdir())


# -- bounds from the dataset: checked right after it is loaded, before anything is embedded ----------------------

def test_k_at_most_the_corpus_size(tmp_path):
    msg = _refused(["experiment.k=5000"], tmp_path, r"^experiment\.k=5000: at most the corpus size \((\d+) chunks in ")
    n = len(load_dataset(tmp_path / "dataset").corpus)
    assert msg.endswith(f"; allowed: 10..{n}")


def test_ece_bins_at_most_the_judged_queries(tmp_path):
    msg = _refused(["experiment.ece_bins=5000"], tmp_path,
                   r"^experiment\.ece_bins=5000: at most the number of judged queries \(\d+ queries in ")
    assert msg.endswith(f"; allowed: 1..{len(load_dataset(tmp_path / 'dataset').queries)}")


def test_a_small_dataset_keeps_the_defaults(tmp_path):
    """A corpus or query set smaller than the default k or ece_bins is not refused (short lists are padded)."""
    tiny = SimpleNamespace(corpus=range(4), queries=range(3), path=tmp_path)
    bounds.check_data_bounds(MainSettings(), tiny)  # no error
    with pytest.raises(BenchError, match=r"^experiment\.k=11: at most the corpus size \(4 chunks in .*; "
                                         r"allowed: 10\.\.10$"):
        bounds.check_data_bounds(MainSettings(k=11), tiny)
    assert list(tmp_path.iterdir()) == []


# -- resampling: memory and time estimated before the work --------------------------------------------------------

def test_resampling_over_the_memory_budget_is_refused(monkeypatch):
    monkeypatch.setattr(bounds, "available_memory", lambda: 2 << 30)  # 2 GB
    s = SimpleNamespace(n_boot=100_000, n_permutations=10_000)
    with pytest.raises(BenchError, match=r"^experiment\.n_boot=100000: needs about 2\.4 GB of memory \(1000 queries\), "
                                         r"more than half the 2\.1 GB available; allowed here: 1\.\.44739$"):
        bounds.check_resampling(s, 1000, 1e-6, what="1000 queries")
    with pytest.raises(BenchError, match=r"^experiment\.n_permutations=1000000: needs about 8\.0 GB .*; "
                                         r"allowed here: 1\.\.134217$"):
        bounds.check_resampling(SimpleNamespace(n_boot=10, n_permutations=1_000_000), 100, 0.0, tests=2, what="x")


def test_resampling_over_the_time_budget_is_refused_and_a_long_one_is_announced(monkeypatch, capsys):
    monkeypatch.setattr(bounds, "available_memory", lambda: 64 << 30)
    s = SimpleNamespace(n_boot=100_000)
    with pytest.raises(BenchError, match=r"^experiment\.n_boot=100000: about 2\.8 h of resampling \(13 systems\), over "
                                         r"the 60 min budget; allowed here: 1\.\.36000$"):
        bounds.check_resampling(s, 12, 0.1, what="13 systems")
    assert capsys.readouterr().err == ""
    assert bounds.check_resampling(SimpleNamespace(n_boot=1000), 12, 0.1, what="13 systems") == pytest.approx(100)
    assert capsys.readouterr().err == "experiment.n_boot=1000: resampling takes about 100 s (13 systems; estimate)\n"


def test_a_run_over_a_budget_stops_before_embedding(tmp_path, monkeypatch):
    """Through experiment=main: the estimate is checked right after the dataset is loaded."""
    monkeypatch.setattr(bounds, "available_memory", lambda: 2_000_000)
    _refused(["experiment.n_boot=100000"], tmp_path / "a",
             r"^experiment\.n_boot=100000: needs about 5 MB of memory \(\d+ systems, 15 queries, 2 families per "
             r"split\), more than half the 2 MB available; allowed here: 1\.\.\d+$")
    monkeypatch.setattr(bounds, "available_memory", lambda: None)  # unknown: only the time is checked
    monkeypatch.setattr(bounds, "TIME_BUDGET_S", 60.0)
    _refused(["experiment.n_boot=100000"], tmp_path / "b",
             r"^experiment\.n_boot=100000: about \d+ min of resampling \(\d+ systems, 15 queries, 2 families per "
             r"split\), over the 60 s budget; allowed here: 1\.\.\d+$")
    assert sorted(os.listdir(tmp_path / "b")) == ["dataset"]  # the generated dataset only: nothing embedded


def test_the_memory_budget_reads_the_address_space_limit():
    """A process limit (ulimit -v) is part of what the check calls available."""
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31)); "
            "from experiments.config import available_memory; print(available_memory())")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stderr
    assert 0 < int(out.stdout) < 1 << 31


def test_the_defaults_fit_the_budgets(tmp_path, capsys):
    """The default main run, every system, is not refused and prints no estimate."""
    ds = load_dataset(write_tiny(tmp_path / "ds"))
    bounds.check_evaluation_bounds(MainSettings(), ds, systems=13)
    assert capsys.readouterr().err == ""
    assert sorted(os.listdir(tmp_path)) == ["ds"]


# -- dates: every generated timestamp fits 0001..9999, zero-padded ------------------------------------------------

@pytest.mark.parametrize("override, message", [
    ("horizon_days=1000000000", r"^dataset\.horizon_days=1000000000: must be an integer in \[1, 3652058\]$"),
    ("horizon_days=1e9", r"^dataset\.horizon_days=1000000000\.0: must be an integer in \[1, 3652058\]$"),
    ("horizon_days=3652055", r"^dataset\.horizon_days=3652055: allowed: 1\.\.3652051 with dataset\.query_window_days=7 "
                             r"\(the generated dates span 3652062 days; they must fit in the 3652058 from 0001-01-01"),
    ("start=9999-12-01T00:00:00Z", r"^dataset\.start=9999-12-01T00:00:00Z: with dataset\.horizon_days=365 and "
                                   r"dataset\.query_window_days=7 the generated dates run past 9999-12-31T23:59:59Z "
                                   r"\(the last four-digit year\); allowed: dataset\.start <= 9998-12-24T23:59:59Z, or "
                                   r"dataset\.horizon_days <= 23$"),
    ("query_window_days=4000000", r"^dataset\.query_window_days=4000000: must be an integer in \[0, 3652058\]$"),
    ("start=99999-01-01T00:00:00Z", r"^dataset\.start=99999-01-01T00:00:00Z: .*allowed: an ISO-8601 time with a "
                                    r"timezone from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z$"),
])
def test_dates_past_year_9999_are_refused_naming_the_key(tmp_path, override, message):
    _refused([f"dataset.{override}"], tmp_path, message)
    assert list(tmp_path.iterdir()) == []  # checked with the config, before the generator ran


def test_lvl_corpus_dates_are_bounded_too():
    cfg = compose_config(["dataset=lvl_corpus", "dataset.start=9999-12-01T00:00:00Z"])["dataset"]
    with pytest.raises(BenchError, match=r"^dataset\.start=9999-12-01T00:00:00Z: with dataset\.version_gap_days=36 "
                                         r"and dataset\.n_versions=5 the generated dates run past .*, or "
                                         r"dataset\.version_gap_days <= 6$"):
        params_from_config(cfg)


def test_year_one_is_written_zero_padded_and_loads(tmp_path):
    ds = load_dataset(write_tiny(tmp_path / "ds", ["dataset.start=0001-01-01T00:00:00Z"]))
    row = json.loads((tmp_path / "ds" / "corpus.jsonl").read_text().splitlines()[0])
    assert row["metadata"]["created_at"].startswith("0001-")
    query = json.loads((tmp_path / "ds" / "queries.jsonl").read_text().splitlines()[0])
    assert query["metadata"]["as_of"][:5] == "0002-"
    assert ds.queries.as_of.min() < -700_000  # days before 1970, loaded by our own loader


# -- queries: no count left ----------------------------------------------------------------------------------------

def test_all_query_counts_zero_names_the_keys(tmp_path):
    zero = [f"dataset.queries.{k}=0" for k in ("current_per_family", "historical_per_family", "dependent_per_family")]
    _refused(zero, tmp_path, r"^dataset\.queries: every count is 0; at least one of current_per_family, "
                             r"historical_per_family, dependent_per_family must be > 0$")
    assert list(tmp_path.iterdir()) == []


def test_counts_that_apply_to_no_family_name_the_keys(tmp_path):
    no_runbooks = ["dataset.queries.current_per_family=0", "dataset.queries.historical_per_family=0",
                   "dataset.runbook_fraction=0"]
    _refused(no_runbooks, tmp_path, r"^dataset\.queries: no query generated: current_per_family=0, "
                                    r"historical_per_family=0 .* dependent_per_family=1 \(needs runbook families: "
                                    r"dataset\.runbook_fraction > 0\); raise one that applies$")
    assert not (tmp_path / "dataset").exists()


# -- through the CLI: exit 2, one line, nothing left ---------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["experiment.k=5000"], r"experiment\.k=5000: at most the corpus size \(\d+ chunks in "),
    (["dataset.start=9999-12-01T00:00:00Z"], r"dataset\.start=9999-12-01T00:00:00Z: with dataset\.horizon_days=365"),
    (["experiment.n_boot=1e9"], r"experiment\.n_boot=1000000000\.0: must be an integer in \[1, 100000\]"),
])
def test_cli_bad_values_exit_2_in_one_line_and_leave_no_run_folder(tmp_path, args, message):
    code, err = _in_process(cli.main, [*FAST, *args, f"hydra.run.dir={tmp_path / 'run'}"])
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("smartvector-bench: error: "), err
    assert re.search(message, err), err
    assert not (tmp_path / "run").exists()


def test_a_run_folder_hydra_cannot_create_is_one_line_for_every_script(tmp_path):
    from data_gen import cli as gen_cli

    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for main, prog, extra in ((cli.main, "smartvector-bench", FAST), (gen_cli.main, "smartvector-gen",
                                                                      [f"out_dir={tmp_path / 'gen'}"])):
        code, err = _in_process(main, [*extra, f"hydra.run.dir={blocker}/run"])
        assert code == 2, err
        assert err == (f"{prog}: error: hydra.run.dir: cannot write {blocker}/run: Not a directory; choose a folder "
                       "you can write\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


def test_proc_run_dir_through_the_console_script(tmp_path):
    r = run_cli("smartvector-bench", *FAST, "hydra.run.dir=/proc/nope", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("smartvector-bench: error: hydra.run.dir: cannot write /proc/nope: No such file or directory; "
                        "choose a folder you can write\n")
    assert not Path("/proc/nope").exists() and list(tmp_path.iterdir()) == []


def test_the_cost_constants_are_documented_with_their_values():
    doc = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    for text, value in (("`TIME_BUDGET_S` = 1 h", bounds.TIME_BUDGET_S == 3600),
                        ("`EVAL_RESAMPLE_S` = 1.2 ms", bounds.EVAL_RESAMPLE_S == 1.2e-3),
                        ("`BOOT_BYTES` = 24 B", bounds.BOOT_BYTES == 24),
                        ("`PERM_BYTES` = 80 B", bounds.PERM_BYTES == 80),
                        ("`n_boot` <= 100,000", bounds.MAXIMUM["n_boot"] == 100_000)):
        assert text in doc and value, text
