"""smartvector-report over the committed results/: the page's numbers are metrics.json's (read through
MainMetrics), tidy.csv's and the claims rows', every system and filter is there, figures are data: URIs, nothing
points outside the file, and bad input is one line and exit 2 with nothing half written."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys

import pytest

from smartvector_bench.core.evaluation import claims as C
from smartvector_bench.core.report import MAIN_COLUMNS, categories, ordered
from smartvector_bench.core.results import MainMetrics, load_sweep
from smartvector_bench.tools.report import cli, model, page

from .conftest import REPO
from .report_dom import parse

RESULTS = REPO / "results"
EXTERNAL = re.compile(r"^\s*(https?:)?//", re.I)


def _write(tmp_path, path, name="report.html"):
    out = tmp_path / name
    assert cli.run([str(path), "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def main_page(tmp_path_factory):
    return parse(_write(tmp_path_factory.mktemp("run"), RESULTS / "main"))


@pytest.fixture(scope="module")
def results_page(tmp_path_factory):
    return parse(_write(tmp_path_factory.mktemp("results"), RESULTS))


def _same(cell_value: str, stored) -> bool:
    got = json.loads(cell_value)
    if stored is None or got is None:
        return got is stored
    return got == stored and (not isinstance(stored, float) or not math.isnan(stored))


def test_main_table_values_are_metrics_json_values(main_page):
    mm = MainMetrics.load(RESULTS / "main")
    section = main_page.one("section", cls="run", data_run="main")
    table = section.one("table", cls="main-table")
    keys = [th.attrs["data-key"] for th in table.find("th", cls="sortable")]
    assert keys[:len(MAIN_COLUMNS)] == [k for k, _ in MAIN_COLUMNS]
    assert table.one("th", data_key="system")
    rows = table.find("tr", data_system=True)
    assert [r.attrs["data-system"] for r in rows] == ordered(mm.systems)
    checked = 0
    for row in rows:
        for key in keys:
            td = row.one("td", data_key=key)
            assert _same(td.attrs["data-value"], mm.metric(row.attrs["data-system"], "test", key)), (row.attrs, key)
            checked += 1
    assert checked == len(rows) * len(keys) > 100
    # the text is the README's: point, then the interval in its own grey span
    top1 = [r for r in rows if r.attrs["data-system"] == "plain_cosine"][0].one("td", data_key="top1")
    lo, hi = mm.interval("plain_cosine", "test", "top1")
    assert top1.text == f"{100 * mm.metric('plain_cosine', 'test', 'top1'):.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"
    assert top1.one("span", cls="ci").text == f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def test_every_system_has_a_filter_a_category_row_and_a_drill_down(main_page):
    mm = MainMetrics.load(RESULTS / "main")
    section = main_page.one("section", cls="run", data_run="main")
    boxes = section.one("div", cls="system-filter").find("input", type="checkbox")
    assert [b.attrs["value"] for b in boxes] == ordered(mm.systems)
    assert all("checked" in b.attrs for b in boxes)
    cat = section.one("table", cls="category-table")
    cats = categories(mm.to_dict(), "test")
    for row in cat.find("tr", data_system=True):
        by_cat = mm.split(row.attrs["data-system"])["by_category"]
        for c in cats:
            assert _same(row.one("td", data_key=c).attrs["data-value"], by_cat.get(c, {}).get("top1"))
    assert len(cat.find("tr", data_system=True)) == len(mm.systems)
    options = section.one("select", cls="query-select").find("option")
    assert len(options) == mm.dataset["n_queries"]
    assert section.one("div", cls="query-detail")
    # the committed run files are format 1.1: text, as_of, every hit's label and the four signals come from them
    # (the 1.0 fallbacks, queries.jsonl and signals.jsonl, are tests/test_report_drill.py's)
    assert "from the folder's queries.jsonl" not in section.text and "need a run file made after" not in section.text
    assert "come from the folder's signals.jsonl" not in section.text
    assert "need a run file written with per-hit labels" not in section.text and "per-hit labels" in section.text
    prov = section.one("section", cls="provenance")
    assert mm.dataset["sha256"] in prov.text and mm.provenance["git"]["sha"] in prov.text
    assert mm.provenance["packages"]["faiss-cpu"] in prov.text


def test_the_drill_down_json_holds_every_query_and_at_most_ten_hits(main_page):
    data = json.loads(main_page.one("script", id="report-data").text)
    run = data["runs"]["main"]
    mm = MainMetrics.load(RESULTS / "main")
    assert run["systems"] == ordered(mm.systems)
    assert len(run["queries"]) == mm.dataset["n_queries"]
    assert run["per_hit_labels"] and not run["stored_queries"]  # every hit labelled, by the 1.1 run files
    assert {h["l"][0] for q in run["queries"].values() for h in q["hits"].values()} >= {"c", "s", "r"}
    for q in run["queries"].values():
        assert isinstance(q["text"], str) and q["text"] and isinstance(q["as_of"], str) and q["as_of"]
        for hit in q["hits"].values():
            assert 1 <= len(hit["c"]) <= 10 and len(hit["s"]) == len(hit["c"]) == len(hit["l"])
            assert all(s is None or s == round(s, 3) for s in hit["s"])


def test_figures_are_data_uris_and_nothing_points_outside(results_page, main_page):
    for page_root in (main_page, results_page):
        imgs = page_root.find("img")
        assert imgs and all(i.attrs["src"].startswith("data:image/png;base64,") for i in imgs)
        for node in page_root.iter():
            for attr in ("src", "href"):
                assert not EXTERNAL.match(node.attrs.get(attr, "")), (node.tag, node.attrs.get(attr))
        assert not page_root.find("link") and not page_root.find("script", src=True)
    pngs = sorted((REPO / model.FIGURES).glob("*.png"))
    figures = results_page.one("section", id="figures").find("img")
    assert len(figures) == len(pngs) > 0


def test_results_page_has_every_run_sweep_and_the_claims(results_page):
    runs = [s.attrs["data-run"] for s in results_page.find("section", cls="run")]
    assert runs == ["main", "main_large", "facts", "handbook"]
    sweeps = sorted(s.attrs["data-sweep"] for s in results_page.find("section", cls="sweep"))
    assert sweeps == ["ablation", "contradiction_sweep", "half_life", "regimes", "regimes_facts", "seeds", "tune"]
    rows = results_page.one("section", id="claims").one("table", cls="claims-table").find("tr", data_outcome=True)
    want = C.claim_rows(RESULTS)
    assert len(rows) == len(want)
    for tr, (claim, v) in zip(rows, want):
        tds = tr.find("td")
        assert (tds[0].text, tds[1].text, tds[2].text, tds[4].text) == (claim, v.figure, C.test_text(v), v.verdict)
    assert len(results_page.find("section", cls="provenance")) == len(runs) + len(sweeps)


def test_sweep_table_and_its_filters(tmp_path):
    folder = RESULTS / "contradiction_sweep"
    root = parse(_write(tmp_path, folder))
    section = root.one("section", cls="sweep", data_sweep="contradiction_sweep")
    tidy = load_sweep(folder)
    keys = model.swept_keys(folder, list(tidy.columns))
    assert keys == ["dataset.contradiction_rate", "dataset.seed"]
    selects = section.find("select", data_filter=True)
    assert [s.attrs["data-filter"] for s in selects] == keys
    for s, key in zip(selects, keys):
        values = [o.attrs["value"] for o in s.find("option")]
        assert values[0] == "" and sorted(values[1:]) == sorted({model._plain(v) for v in tidy[key]})
    rows = section.one("table", cls="sweep-table").one("tbody").find("tr")
    assert len(rows) == len(tidy)
    for tr, rec in zip(rows, tidy.to_dict("records")):
        assert tr.one("td", data_key="system").attrs["data-value"] == rec["system"]
        assert tr.one("td", data_key=keys[0]).attrs["data-value"] == model._plain(rec[keys[0]])
        assert _same(tr.one("td", data_key="top1").attrs["data-value"], rec["top1"])
    assert not root.find("section", id="claims")


@pytest.mark.parametrize("make", ["missing", "empty", "file", "other_results"])
def test_a_path_that_is_no_run_sweep_or_results_is_one_line_and_exit_2(tmp_path, capsys, make):
    path = tmp_path / "x"
    if make == "empty":
        path.mkdir()
    elif make == "file":
        path.write_text("hello")
    elif make == "other_results":
        path = RESULTS / "perf"
    assert cli.run([str(path), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("smartvector-report: error: ") and str(path) in err
    assert not (tmp_path / "out.html").exists()


def test_a_malformed_metrics_json_names_the_file_and_key_and_keeps_the_old_page(tmp_path, capsys):
    run = tmp_path / "main"
    shutil.copytree(RESULTS / "main", run)
    doc = json.loads((run / "metrics.json").read_text())
    doc["systems"]["bm25"]["test"]["top1"] = "high"
    (run / "metrics.json").write_text(json.dumps(doc))
    out = run / "report.html"
    out.write_text("the previous page")
    assert cli.run([str(run)]) == 2
    err = capsys.readouterr().err
    assert "metrics.json" in err and "systems.bm25.test.top1" in err and err.count("\n") == 1
    assert out.read_text() == "the previous page"
    assert [p.name for p in run.iterdir() if p.name.endswith(".tmp")] == []


def test_the_page_is_written_atomically(tmp_path, monkeypatch):
    out = tmp_path / "r.html"
    out.write_text("old")

    def boom(*_a, **_k):
        raise KeyboardInterrupt  # interrupted while rendering: the old page stays whole

    monkeypatch.setattr(page, "render", boom)
    with pytest.raises(KeyboardInterrupt):
        cli.run([str(RESULTS / "seeds"), "-o", str(out)])
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.html"]
    monkeypatch.undo()
    assert cli.run([str(RESULTS / "seeds"), "-o", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>") and [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_the_console_entry_prints_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "from smartvector_bench.tools.report.cli import main; main()",
                           str(tmp_path / "nowhere")], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"smartvector-report: error: {tmp_path / 'nowhere'}: not found"


def test_embedded_json_cannot_close_its_script():
    text = page.embedded_json({"q": "</script><script>alert(1)</script> <!--"})
    assert "</" not in text and "<!--" not in text
    assert json.loads(text) == {"q": "</script><script>alert(1)</script> <!--"}


def test_the_reliability_png_leaves_the_callers_matplotlib_backend_alone():
    code = ("import json, matplotlib, sys; matplotlib.use('svg'); "
            "from smartvector_bench.tools.report.reliability import reliability_png; "
            f"m = json.load(open({str(RESULTS / 'main' / 'metrics.json')!r})); "
            "png = reliability_png(m, list(m['systems'])); "
            "print(matplotlib.get_backend(), png[:4] == b'\\x89PNG', 'matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["svg", "True", "False"]
