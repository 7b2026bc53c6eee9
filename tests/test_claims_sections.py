"""The generated sections of the README and docs/ (the claims table with its real-data column, both profiles' main
tables, the seeds summary, the shortcut audit, the half-life and tune tables, ...) come from results/ and follow
the stated rules; here on the committed result files, copied and mutated, and on the committed results/
themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from smartvector_bench.core.schema import field_table

from .claims_cases import REPO, audit_json, claims, metrics, seeds_summary, sweep_summary, write

SECTIONS = ("claims", "main", "main_calibration", "main_large", "seeds", "audit", "reembed", "feedback", "half_life",
            "tune")
SYSTEMS = ("plain_cosine", "bm25", "bm25_valid", "valid_cosine", "recent_cosine", "smartvector", "smartvector_ref",
           "livevectorlake", "kg_smartvector", "metadata_filter", "oracle")
MISSING = {"main": "main/metrics.json", "main_calibration": "main/metrics.json",
           "main_large": "main_large/metrics.json",
           "audit": "shortcut_audit/shortcut_audit.json", "seeds": "seeds/summary.json",
           "reembed": "reembed_cost/reembed_cost.json", "feedback": "feedback_loop/feedback_loop.json",
           "half_life": "half_life/summary.json", "tune": "tune/summary.json"}


def complete(jobs: int = 5) -> dict:
    return sweep_summary("seeds", jobs)


def claim_row(results: Path, prefix: str):
    """``(claim, Verdict)`` of the main-table claim starting with ``prefix``."""
    return [r for r in claims.main_claims(results) if r[0].startswith(prefix)][0]


def top1_row(results: Path):
    return claim_row(results, "top-1")


def write_seeds(root: Path, k: dict, seeds=(1, 2, 3, 4, 5), summary: dict | None = None, confidence=None) -> Path:
    """results/seeds/queries.csv (written as CSV, empty confidence cells included) and a complete summary."""
    from tests.verdict_cases import frame

    def outcome(system, q, **_):
        conf = "" if confidence is None else confidence(system, q < k[system])
        return {"correct": q < k[system], "stale": q >= k.get(f"{system}:stale", 8), "confidence": conf}

    path = root / "seeds" / "queries.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame(outcome, tuple(s for s in k if ":" not in s), seeds=seeds).to_csv(path, index=False)
    write(root, "seeds/summary.json", complete(len(seeds)) if summary is None else summary)
    return path


# -- the claims table ------------------------------------------------------------------------------------------

def test_table_from_the_committed_results_has_a_verdict_per_claim():
    text = claims.table(REPO / "results")
    assert text.splitlines()[0] == ("| claim | ours (from results/) | test | p | verdict | on real facts "
                                    "(results/facts/) | rule |")
    rows = [r for r in text.splitlines()[2:] if r.startswith("|")]
    assert len(rows) >= 14
    verdicts = ("**holds**", "**partly**", "**does not hold**", "**not measured")
    assert all(any(v in r for v in verdicts) for r in rows), text


def test_missing_results_are_reported_not_invented(tmp_path):
    text = claims.table(tmp_path)
    for rel in ("seeds/queries.csv", "contradiction_sweep/queries.csv", "ablation/queries.csv",
                "reembed_cost/reembed_cost.json", "feedback_loop/feedback_loop.json", "lvl_eval/lvl_eval.json"):
        assert f"not measured (missing {rel})" in text
    assert "main/metrics.json missing" in text
    assert "**holds**" not in text and "**partly**" not in text and "**does not hold**" not in text
    texts = claims.sections(tmp_path)
    assert set(SECTIONS) <= set(texts)  # claims.py may add sections; these must be there
    for name, rel in MISSING.items():
        assert texts[name] == f"not measured (missing {rel})\n", name
    assert texts["schema"] == field_table() + "\n"  # from the schema file, not from results/
    for name in set(texts) - {"claims", "schema"}:  # nothing to show: every section says so
        assert texts[name].startswith("not measured (missing "), name


def test_hand_made_files_without_queries_csv_are_not_measured(tmp_path):
    """The fixture files have no per-query outcomes: the pooled rules say so, whatever the seed-42 figures."""
    write(tmp_path, "main/metrics.json", metrics())
    write(tmp_path, "main_large/metrics.json", metrics(large=True))
    write(tmp_path, "seeds/summary.json", seeds_summary())
    for claim, v in claims.main_claims(tmp_path) + claims.sweep_claims(tmp_path):
        assert v.verdict.startswith("not measured (missing ") and "queries.csv" in v.verdict, claim
        assert v.p_value is None
    claim, v = top1_row(tmp_path)
    assert v.verdict == "not measured (missing seeds/queries.csv)"
    assert "valid_cosine (validity window + cosine) 57.1%" in v.figure
    assert "the paper's own package" in v.figure  # smartvector_ref is in the main run
    assert ("seed 42 (70 test queries): 22.9% [14.9, 30.9] -> 27.1% [19.1, 35.1] (McNemar p 0.7, cluster "
            "permutation p 0.75)") in v.figure
    assert "large profile, seed 42 (574 test queries): 22.9% [14.9, 30.9] -> 27.1% [19.1, 35.1]" in v.figure
    row = [r for r in claims.table(tmp_path).splitlines() if r.startswith("| top-1")][0]
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert len(cells) == 7 and cells[3] == "-" and cells[4] == "**not measured (missing seeds/queries.csv)**"
    assert cells[5].startswith("**not measured (missing facts/metrics.json)**")
    assert cells[2].startswith("paired cluster sign-flip permutation") and "p < 0.05" in cells[2]


def test_verdict_follows_the_pooled_numbers(tmp_path):
    write(tmp_path, "main/metrics.json", metrics())
    write_seeds(tmp_path, {"plain_cosine": 2, "smartvector": 5})
    claim, v = top1_row(tmp_path)
    assert v.verdict == "holds" and v.p_value < 0.001
    assert v.figure.startswith("5 seeds pooled (240 test queries): 25.0% -> 62.5% (x2.50, +37.5 pts)")
    row = [r for r in claims.table(tmp_path).splitlines() if r.startswith("| top-1")][0]
    assert "| < 1e-4 | **holds** |" in row or f"| {v.p_value:.2g} | **holds** |" in row
    write_seeds(tmp_path, {"plain_cosine": 4, "smartvector": 5})  # significantly higher, not 1.5x
    assert top1_row(tmp_path)[1].verdict == "partly"
    write_seeds(tmp_path, {"plain_cosine": 5, "smartvector": 5})
    assert top1_row(tmp_path)[1].verdict == "does not hold"
    write_seeds(tmp_path, {"plain_cosine": 2, "smartvector": 5}, seeds=(1, 2, 3))  # as many seeds as before
    assert top1_row(tmp_path)[1].verdict.startswith("not measured (3 seed(s) with both")
    write_seeds(tmp_path, {"plain_cosine": 2, "smartvector": 5}, summary=sweep_summary("seeds", 6, failed=1))
    assert top1_row(tmp_path)[1].verdict.startswith("not measured (incomplete seeds sweep: 5 of 6 jobs complete")


def test_stale_rate_wording_and_verdict(tmp_path):
    k = {"plain_cosine": 2, "smartvector": 5, "smartvector_soft": 5, "plain_cosine:stale": 6,
         "smartvector_soft:stale": 7}
    write_seeds(tmp_path, k)
    claim, v = claim_row(tmp_path, "stale-answer rate")
    assert v.verdict == "holds"
    assert v.figure.startswith("5 seeds pooled: plain_cosine 25.0% -> smartvector_soft 12.5%")
    assert "hard smartvector 0.0% (0 by construction (status filter))" in v.figure
    write_seeds(tmp_path, {**k, "smartvector:stale": 7})  # hard as stale as soft: the filter changed nothing
    claim, v = claim_row(tmp_path, "stale-answer rate")
    assert "by construction" not in v.figure and "the same with the filter off" in v.figure
    write_seeds(tmp_path, {**k, "smartvector:stale": 6})  # hard variant not 0 and unlike the soft one
    claim, v = claim_row(tmp_path, "stale-answer rate")
    assert "by construction" not in v.figure and "what remains are lagging sources" in v.figure
    write_seeds(tmp_path, {**k, "smartvector_soft:stale": 6})  # the soft variant is as stale as plain
    assert claim_row(tmp_path, "stale-answer rate")[1].verdict == "does not hold"
    write_seeds(tmp_path, {s: v for s, v in k.items() if not s.startswith("smartvector_soft")})
    assert claim_row(tmp_path, "stale-answer rate")[1].verdict == \
        "not measured (no rows of smartvector_soft (split test))"


def test_ece_row_reads_confidences_from_the_csv(tmp_path):
    conf = {"plain_cosine": lambda ok: 0.9, "smartvector": lambda ok: 0.8 if ok else 0.1}
    write_seeds(tmp_path, {"plain_cosine": 2, "smartvector": 2}, confidence=lambda s, ok: conf[s](ok))
    claim, v = claim_row(tmp_path, "calibration error")
    assert v.verdict == "holds" and "ECE 0.650 -> 0.125" in v.figure and "AUROC 0.500 -> 1.000" in v.figure
    write_seeds(tmp_path, {"plain_cosine": 2, "smartvector": 2})  # every confidence missing: 0.0 for both
    claim, v = claim_row(tmp_path, "calibration error")
    assert v.verdict == "does not hold" and "ECE 0.250 -> 0.250" in v.figure


def test_the_real_data_column_judges_a_run_folder(tiny_main_run, tmp_path):
    """Claims 1-3 on a run folder at results/facts/ (here the tiny run): the seeds' rules with facts as clusters;
    the same numbers as the run's own per-query outcomes."""
    import shutil

    out, metrics = tiny_main_run
    shutil.copytree(out, tmp_path / "facts", ignore=shutil.ignore_patterns("dataset", ".*"))
    top1, stale, ece_ = claims.C.real_claims(tmp_path)
    test = metrics["systems"]
    assert top1.verdict in ("holds", "partly", "does not hold") and top1.p_value is not None
    assert f"plain_cosine {100 * test['plain_cosine']['test']['top1']:.1f}% -> smartvector " \
           f"{100 * test['smartvector']['test']['top1']:.1f}%" in top1.figure
    assert "smartvector_tuned (fitted on dev)" in top1.figure
    assert stale.verdict in ("holds", "partly", "does not hold") and "smartvector_soft" in stale.figure
    assert ece_.verdict in ("holds", "partly", "does not hold") and ece_.figure.startswith("ECE ")
    assert claims.C.real_claims(tmp_path / "nothing")[0].verdict == "not measured (missing facts/metrics.json)"


# -- the other generated sections ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, large", [("main", False), ("main_large", True)])
def test_main_sections_render_each_profile(tmp_path, name, large):
    m = metrics(large=large)
    if not large:  # without its calibration block: the README's calibration section says so
        m["calibration"] = {}
    write(tmp_path, f"{name}/metrics.json", m)
    text = claims.sections(tmp_path)[name]
    dataset = "versioned_policies_large" if large else "versioned_policies"
    assert text.startswith(f"`{dataset}`, seed 42: ")
    assert f"in {100 if large else 12} families" in text and f"`results/{name}/metrics.json`" in text
    assert "| n (families) | p vs plain_cosine: McNemar / cluster permutation |" in text
    table = text.split("\n\n")[1]  # after the head line; the power line (and calibration) follow
    rows = [line.split(" | ")[0].lstrip("| ") for line in table.splitlines() if line.startswith("| ")][1:]
    assert sorted(rows) == sorted(m["systems"]) and rows == claims.ordered(m["systems"])  # the table's order
    assert rows.index("plain_cosine") < rows.index("smartvector") < rows.index("oracle")
    assert f"({50 if large else 6}) |" in text  # test families per system
    assert "minimum detectable top-1 difference" in text and "over valid_cosine" in text
    other = "main" if large else "main_large"
    assert claims.sections(tmp_path)[other] == f"not measured (missing {other}/metrics.json)\n"
    if not large:
        assert claims.sections(tmp_path)["main_calibration"] == \
            "not measured (missing main/metrics.json: calibration)\n"


def test_the_default_profiles_calibration_is_its_own_section():
    """The README's headline table is the main table and its power line; its calibration table sits in
    docs/results.md, rendered from the same metrics.json (main_large keeps both in one section)."""
    texts = claims.sections(REPO / "results")
    assert "Calibration on the test split" not in texts["main"] and "minimum detectable" in texts["main"]
    assert texts["main_calibration"].startswith("`versioned_policies`, seed 42 (`results/main/metrics.json`). "
                                                "Calibration on the test split")
    assert "| system | ECE | Brier | AUROC" in texts["main_calibration"]
    assert "Calibration on the test split" in texts["main_large"]


def test_audit_section_is_the_audit_table_without_its_title(tmp_path):
    write(tmp_path, "shortcut_audit/shortcut_audit.json", audit_json())
    text = claims.sections(tmp_path)["audit"]
    assert not text.startswith("#") and "# Shortcut audit" not in text
    assert text.startswith("Mean over seeds [1, 2]")
    for rule, kind in (("valid_cosine", "baseline"), ("has_digit", "surface"), ("kind", "surface"),
                       ("source", "trust")):
        assert f"| {rule} | {kind} | " in text
    assert "+20.0" in text and "**above** the bar of 5 points" in text


def test_seeds_section(tmp_path):
    write(tmp_path, "seeds/summary.json", seeds_summary())
    text = claims.sections(tmp_path)["seeds"]
    assert text.startswith("Dataset seeds 1, 2, 3 (`results/seeds/`)")
    assert "| valid_cosine | 20.0% (3.0) | 20.0% (3.0) | 20.0% (3.0) | 0.200 (0.030) |" in text
    assert [line.split(" | ")[0].lstrip("| ") for line in text.splitlines() if line.startswith("| ")][1:] == [
        "plain_cosine", "valid_cosine", "smartvector", "oracle"]


def test_half_life_and_tune_sections_quote_the_stored_grid_and_winner(tmp_path):
    grid = {"rows": {"key": "retrievers.smartvector.temporal.half_life_days", "values": ["7", "30"]},
            "columns": {"key": "retrievers.smartvector.confidence.half_life_days", "values": ["7", "30"]},
            "split": "test", "systems": {"smartvector": {"top1": [[0.1, 0.2], [0.3, 0.45]], "ece": [[0, 0], [0, 0]]}}}
    write(tmp_path, "half_life/summary.json", sweep_summary("half_life", results=grid))
    (tmp_path / "half_life" / "tidy.csv").write_text("job,dataset_seed\n0,42\n1,42\n", encoding="utf-8")
    text = claims.sections(tmp_path)["half_life"]
    assert "dataset seed 42" in text
    assert "| 7 | 10.0% | 20.0% |" in text and "| 30 | 30.0% | 45.0% |" in text
    winner = {"overrides": "w=1", "dev": {"top1": 0.5}, "test": {"top1": 0.4, "top1_ci": [0.3, 0.5],
                                                                   "stale_rate": 0.1, "ece": 0.2}}
    write(tmp_path, "tune/summary.json", sweep_summary("tune", results={
        "system": "smartvector", "winner": winner, "final": False, "n_candidates": 3, "n_planned": 4,
        "selection": "dev", "dev_top5": []}))
    (tmp_path / "tune" / "tidy.csv").write_text("job,dataset_seed\n0,42\n", encoding="utf-8")
    text = claims.sections(tmp_path)["tune"]
    assert "3 of 4 grid points" in text and "test top-1 is 40.0% [30.0, 50.0]" in text and "provisional" in text
