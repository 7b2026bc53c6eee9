"""The regimes table (smartvector_bench/tools/sweeps/regimes.py) on hand-made job folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.sweeps import regimes as table


def job(root: Path, name: str, seed: int, regime: str | None, outcomes: dict[str, list[bool]]) -> None:
    """A job folder: metrics.json (dataset seed and regime) and one run file per system; queries q0.. with
    families f0, f0, f1, f1, ...; the odd ones are dev."""
    folder = root / name
    folder.mkdir(parents=True)
    ds = {"seed": seed, "sha256": "x", **({"metadata": {"regime": regime}} if regime else {})}
    (folder / "metrics.json").write_text(json.dumps({"dataset": ds, "systems": {s: {} for s in outcomes}}))
    for system, correct in outcomes.items():
        lines = [json.dumps({"_meta": {"system": system}})]
        lines += [json.dumps({"query_id": f"q{i}", "split": "dev" if i % 2 else "test", "family": f"f{i // 2}",
                              "correct": c}) for i, c in enumerate(correct)]
        (folder / f"run_{system}.jsonl").write_text("\n".join(lines) + "\n")


def test_table_pairs_each_query_with_itself_under_full(tmp_path):
    n = 16
    job(tmp_path, "dataset.metadata=full,dataset.seed=1", 1, None, {"a": [True] * n, "b": [True] * n})
    job(tmp_path, "dataset.metadata=created_only,dataset.seed=1", 1, "created_only",
        {"a": [i % 4 != 0 for i in range(n)]})  # b left out under created_only
    job(tmp_path, "dataset.metadata=full,dataset.seed=2", 2, "full", {"a": [False] * n, "b": [True] * n})
    job(tmp_path, "dataset.metadata=created_only,dataset.seed=2", 2, "created_only", {"a": [False] * n})
    (tmp_path / "a_failed_job").mkdir()  # no metrics.json: left out
    t = table.write_table(tmp_path, tmp_path / "out", n_permutations=999)
    rows = {(r.system, r.regime): r for r in t.itertuples()}
    assert set(rows) == {("a", "full"), ("a", "created_only"), ("b", "full")}
    assert rows["a", "full"].top1 == 0.5 and rows["a", "full"].n_queries == 16 and rows["a", "full"].n_seeds == 2
    co = rows["a", "created_only"]
    # test queries are the even ones: under seed 1, q0, q4, q8, q12 turn wrong (4 of 8), seed 2 stays wrong
    assert co.top1 == 0.25 and co.drop == -0.25 and co.n_paired == 16 and co.n_clusters == 16
    assert 0 < co.p_value < 0.2
    assert rows["b", "full"].drop is None
    md = (tmp_path / "out" / "regimes.md").read_text()
    assert "| system | full | created_only |" in md
    assert "| a | 50.0% | 25.0% (-25.0, p=" in md and "| b | 100.0% |  |" in md
    csv = (tmp_path / "out" / "regimes.csv").read_text().splitlines()
    assert csv[0] == ",".join(table.COLUMNS) and len(csv) == 4


def test_two_jobs_with_the_same_seed_and_regime_are_refused(tmp_path):
    job(tmp_path, "x", 1, None, {"a": [True]})
    job(tmp_path, "y", 1, "full", {"a": [True]})
    with pytest.raises(BenchError, match="a second job with dataset.seed=1 and dataset.metadata=full"):
        table.query_outcomes(tmp_path)


def test_the_cli_writes_the_table_and_refuses_an_empty_folder(tmp_path, capsys):
    job(tmp_path / "s", "j", 1, None, {"a": [True, False]})
    table.main([str(tmp_path / "s"), "--out", str(tmp_path / "o")])
    assert "| a | 100.0% |" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        table.main([str(tmp_path / "o"), "--out", str(tmp_path / "o2")])
    assert exc.value.code == 2
