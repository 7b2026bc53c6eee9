"""A figure whose inputs the dataset lacks is "not measured" everywhere, never 0: experiment=main on two
labels-free BEIR folders whose queries carry stale / rumor lists in their metadata (which the loader ignores:
only labels/queries.jsonl gives the sets), then every consumer of its metrics.json. Folder ``windowed``: a
generated dataset with labels/ moved into the queries' metadata (stale and rumor rates not measured, leakage
measured). Folder ``plain``: a plain BEIR folder without times (leakage not measured either)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from smartvector_bench.core.evaluation import verdicts as V
from smartvector_bench.core.results import MainMetrics
from smartvector_bench.tools.report import model, page
from smartvector_bench.tools.sweeps import collect
from smartvector_bench.tools.validate import validate_config

from .conftest import REPO, compose_config, write_tiny
from .test_dataset_schema import write_beir

sys.path.insert(0, str(REPO / "paper_figures"))
import common as fig_common  # noqa: E402
import fig_leakage  # noqa: E402
import fig_main  # noqa: E402

STALE = "no labels/ folder: the stale sets are unknown"
RUMOR = "no labels/ folder: the rumor sets are unknown"
LEAK = "corpus.jsonl does not give every chunk metadata.valid_from or created_at: the validity windows are unknown"
PER_QUERY = ("per query: no labels/ folder, so each query is its own cluster; intervals and permutation p-values "
             "treat the queries as independent")
ICC = "no two queries share a family: the intra-family correlation is undefined"
RATES = ("stale_rate", "rumor_rate")


def _labels_into_metadata(root: Path) -> Path:
    """The folder as a user would bring it: the stale / rumor lists in queries.jsonl's metadata, no labels/."""
    labels = {r["_id"]: r for r in map(json.loads, (root / "labels" / "queries.jsonl").read_text().splitlines())}
    rows = [json.loads(line) for line in (root / "queries.jsonl").read_text().splitlines() if line.strip()]
    for r in rows:
        if r["_id"] in labels:
            r.setdefault("metadata", {}).update(stale=labels[r["_id"]].get("stale", []),
                                                rumor=labels[r["_id"]].get("rumor", []))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.rmtree(root / "labels")
    (root / "manifest.json").unlink(missing_ok=True)  # its hashes cover labels/
    return root


def _run(folder: Path, out: Path) -> dict:
    cfg = compose_config([f"dataset.path={folder}", "embedder=hashing", "++experiment.progress=false"])
    return validate_config(cfg).run(cfg, out)


@pytest.fixture(scope="module")
def windowed(tmp_path_factory) -> tuple[Path, Path, dict]:
    base = tmp_path_factory.mktemp("notmeasured")
    folder = _labels_into_metadata(write_tiny(base / "ds"))
    return folder, base / "run", _run(folder, base / "run")


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> tuple[Path, Path, dict]:
    base = tmp_path_factory.mktemp("notmeasured_plain")
    folder = write_beir(base / "ds", n_docs=16)
    rows = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines()]
    for r in rows:  # d<i+1> is another version of q<i>'s document, as a user might list it
        r["metadata"] = {"stale": [f"d{(int(r['_id'][1:]) + 1) % 16}"]} if r["_id"][1:].isdigit() else {}
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder, base / "run", _run(folder, base / "run")


def _splits(m: dict):
    for system, per_split in m["systems"].items():
        for split, sm in per_split.items():
            yield system, split, sm


@pytest.mark.slow
def test_the_stale_lists_in_metadata_would_give_a_nonzero_stale_rate(windowed):
    """The test can fail: plain_cosine's top-1 is in a query's stale list for some test query, so the 0.0%
    metrics.json used to report was a wrong number, not a true zero."""
    folder, out, _ = windowed
    stale = {r["_id"]: set(r["metadata"]["stale"]) for r in map(json.loads, (folder / "queries.jsonl").open())}
    rows = [json.loads(line) for line in (out / "run_plain_cosine.jsonl").read_text().splitlines()[1:]]
    assert any(r["ranked"] and r["ranked"][0] in stale[r["query_id"]] for r in rows if r["split"] == "test")


@pytest.mark.slow
def test_metrics_json_stores_null_with_the_reason(windowed, plain):
    for (_, out, m), leak_measured in ((windowed, True), (plain, False)):
        MainMetrics.load(out)  # the result class accepts it (and would refuse a null without its reason)
        want = {"stale_rate": STALE, "rumor_rate": RUMOR} | ({} if leak_measured else {"leakage_at_10": LEAK})
        assert {"plain_cosine", "bm25"} <= set(m["systems"])
        if leak_measured:
            assert "smartvector" in m["systems"]  # the system the reviewer saw at 0.0%
        for system, split, sm in _splits(m):
            at = (system, split)
            assert sm["not_measured"] == want, at
            for key in want:
                assert sm[key] is None and sm[f"{key}_ci"] == [None, None], at
                assert all(c[key] is None for c in sm["by_category"].values()), at
            if leak_measured:
                assert isinstance(sm["leakage_at_10"], float), at
            # what the dataset does measure is a number with its interval
            assert isinstance(sm["top1"], float) and None not in sm["top1_ci"], at
        assert m["dataset"]["clusters"] == PER_QUERY and m["dataset"]["labels"] is False
        assert m["power"]["icc"] is None and m["power"]["not_measured"] == {"icc": ICC}
        for info in m["system_info"].values():
            found = info.get("contradiction_detection")
            if found is not None:  # scored against the rumor sets: not measured; its own verdict count stays
                assert set(found["not_measured"]) == {"rumors_ingested", "rumors_demoted", "rumor_recall",
                                                      "loser_precision"}
                assert all(found[k] is None for k in found["not_measured"]) and isinstance(found["verdicts"], int)
        # nowhere in the file does a stale or rumor rate hold a number
        text = (out / "metrics.json").read_text()
        assert not any(f'"{k}": 0' in text or f'"{k}": 1' in text for k in RATES)


@pytest.mark.slow
def test_a_null_without_its_reason_is_refused(windowed):
    _, out, m = windowed
    doc = json.loads((out / "metrics.json").read_text())
    del doc["systems"]["plain_cosine"]["test"]["not_measured"]
    with pytest.raises(Exception, match=r"systems\.plain_cosine\.test\.stale_rate: null without a reason"):
        MainMetrics.from_dict(doc, "metrics.json")
    doc = json.loads((out / "metrics.json").read_text())
    doc["systems"]["plain_cosine"]["test"]["stale_rate"] = 0.0
    with pytest.raises(Exception, match=r"stale_rate: 0\.0 .*not measured \(no labels/ folder"):
        MainMetrics.from_dict(doc, "metrics.json")


@pytest.mark.slow
def test_run_files_hold_null_flags(windowed):
    _, out, m = windowed
    for system in m["systems"]:
        rows = [json.loads(line) for line in (out / f"run_{system}.jsonl").read_text().splitlines()[1:]]
        assert rows and all(r["stale"] is None and r["rumor"] is None for r in rows), system
        assert all(isinstance(r["correct"], bool) for r in rows)


@pytest.mark.slow
def test_table_md_prints_not_measured(windowed, plain):
    for (_, out, m), cols in ((windowed, 2), (plain, 3)):
        table = (out / "table.md").read_text()
        main_rows = [line for line in table.splitlines()
                     if line.split(" | ")[0][2:] in m["systems"] and line.count(" | ") == 10]  # 11 cells
        assert len(main_rows) == 2 * len(m["systems"])  # test and dev tables
        for row in main_rows:
            cells = row.strip("| ").split(" | ")
            assert cells[2] == cells[3] == "not measured", row  # stale rate, rumor rate
            assert (cells[8] == "not measured") == (cols == 3), row  # leakage@10
        line = "Not measured: stale rate (" + STALE + "); rumor rate (" + RUMOR + ")"
        assert table.count(line) == 2  # under the test and the dev table
        assert ("leakage@10 (" + LEAK + ")") in table if cols == 3 else "leakage@10 (corpus" not in table
        # the claims table beside the paper's: the reason, not "0.0% [0.0, 0.0]"
        for system in ("plain_cosine", "smartvector"):
            if system in m["systems"]:
                assert f"| {system} | stale rate | " in table
                claim = next(x for x in table.splitlines() if x.startswith(f"| {system} | stale rate | "))
                assert claim.endswith(f"| not measured ({STALE}) |"), claim
        assert "Intervals: 95% bootstrap over queries (no labels/ folder, so each query is its own cluster" in table
        assert "cluster bootstrap over policy families" not in table
        assert f"intra-family correlation not measured ({ICC})" in table


@pytest.mark.slow
def test_the_report_page_shows_not_measured(windowed, plain):
    for (_, out, m), leak_measured in ((windowed, True), (plain, False)):
        page_model, data = model.page_model(out)
        run = page_model["runs"][0]
        want = {"stale_rate": STALE, "rumor_rate": RUMOR} | ({} if leak_measured else {"leakage_at_10": LEAK})
        assert run["not_measured_by_metric"] == want
        assert run["not_measured"].startswith("Not measured: stale rate (" + STALE)
        assert run["intervals"].startswith("Intervals: 95% bootstrap over queries")
        for row in run["rows"]:
            for cell in row["cells"]:
                if cell["key"] in want:
                    assert (cell["text"], cell["value"], cell["ci"], cell["why"]) == (
                        "not measured", "null", "", want[cell["key"]]), (row["system"], cell)
                else:
                    assert cell["why"] == "" and cell["text"] != "not measured"
        html = page.render(page_model, data)
        assert f'data-value="null" title="{STALE}">not measured<' in html
        assert run["not_measured"].replace("'", "&#39;") in html and "Intervals: 95% bootstrap over queries" in html


@pytest.mark.slow
def test_no_verdict_from_a_null(windowed, tmp_path):
    """queries.csv as the collector writes it from the run files (five jobs of this folder, as five seeds):
    the stale cells are empty, the stale verdict is not measured, the top-1 and ECE verdicts are judged."""
    _, out, m = windowed
    jobs = [SimpleNamespace(job=SimpleNamespace(num=i, swept={}), status="complete", folder=out,
                            metrics={**m, "dataset": {**m["dataset"], "seed": i}}) for i in range(1, 6)]
    c = SimpleNamespace(results=jobs, sweep_dir=out.parent, plan=SimpleNamespace(swept_keys=[]))
    csv = tmp_path / "queries.csv"
    csv.write_text(collect._csv_text(collect.query_frame(c)))
    df = pd.read_csv(csv, dtype={"query_id": str, "family": str})
    assert df["stale"].isna().all() and df["rumor"].isna().all() and df["correct"].notna().all()
    summary = {"all_complete": True, "jobs": {"planned": 5, "complete": 5}, "failed": [], "missing": []}
    stale = V.stale_rate_falls(df, summary, n_resamples=200)
    assert stale.outcome == "not measured" and "stale not measured for" in stale.verdict
    assert "the dataset has no stale sets" in stale.verdict and stale.p_value is None
    assert V.top1_doubles(df, summary, n_resamples=200).outcome != "not measured"
    assert V.ece_falls(df, summary, n_boot=50).outcome != "not measured"


def _drawn(figure, results: Path, tmp_path: Path, monkeypatch):
    kept = []
    monkeypatch.setattr(fig_common, "save", lambda fig, out_dir, name: kept.append(fig) or fig_common.Outcome(name))
    outcome = figure.make(results, tmp_path / "figs")
    return outcome, kept


def _texts(fig) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


@pytest.mark.slow
def test_figures_say_not_measured(windowed, plain, tmp_path, monkeypatch):
    for name, (_, out, m) in (("windowed", windowed), ("plain", plain)):
        results = tmp_path / name / "results"
        results.mkdir(parents=True)
        (results / "main").symlink_to(out)
        outcome, kept = _drawn(fig_main, results, tmp_path / name, monkeypatch)
        assert outcome.skipped is None and len(kept) == 1
        texts = _texts(kept[0])
        assert "stale rate: not measured" in texts and "rumor rate: not measured" in texts
        assert texts.count("not measured") == 2 * len(m["systems"])  # each bar of both panels, none as 0.0%
        assert f"not measured: stale rate ({STALE}); rumor rate ({RUMOR})" in texts
        assert any("over queries (no families: each query its own cluster)" in t for t in texts)
        outcome, kept = _drawn(fig_leakage, results, tmp_path / name, monkeypatch)
        if name == "plain":  # nothing to draw: no bar may read as 0%
            assert outcome.skipped == f"leakage@10 not measured ({LEAK})" and not kept
        else:
            assert outcome.skipped is None and any("over queries" in t for t in _texts(kept[0]))
