"""paper_figures/claims.py writing and checking the documents: a malformed result file is a one-line error naming
file and key, --check names the sections out of date, and every marked section of README.md and docs/ is
replaced between its markers, reads back as generated and matches the committed results/."""

from __future__ import annotations

import re

import pytest

from .claims_cases import REPO, audit_json, claims, committed, metrics, seeds_summary, write

MARKER = re.compile(r"<!-- ([A-Za-z0-9_]+):start -->")


# -- malformed result files ------------------------------------------------------------------------------------

@pytest.mark.parametrize("rel, mutate, must_name", [
    ("main/metrics.json", lambda d: d["systems"]["smartvector"]["test"].pop("top1_ci"),
     "systems.smartvector.test.top1_ci"),
    ("main_large/metrics.json", lambda d: d["systems"]["oracle"]["test"].update(top1="0.7"),
     "systems.oracle.test.top1"),
    ("seeds/summary.json", lambda d: d["jobs"].update(failed=1), "jobs"),
    ("tune/summary.json", lambda d: d["results"].pop("winner"), "results.winner"),
    ("reembed_cost/reembed_cost.json", lambda d: d.pop("paper_claim"), "paper_claim"),
    ("feedback_loop/feedback_loop.json", lambda d: d["series"][3].pop("top1"), "series[3].top1"),
    ("lvl_eval/lvl_eval.json", lambda d: d.update(latency=[]), "latency"),
])
def test_a_malformed_result_file_is_one_line_naming_file_and_key(rel, mutate, must_name, tmp_path, capsys,
                                                                  monkeypatch):
    """Through its result class: the run stops before any document is written, exit 2, one line."""
    doc = committed(rel)
    mutate(doc)
    path = write(tmp_path, rel, doc)
    readme = tmp_path / "README.md"
    readme.write_text("<!-- claims:start -->\nold\n<!-- claims:end -->\n", encoding="utf-8")
    monkeypatch.setattr(claims, "DOCUMENTS", (readme,))
    for mode in ([], ["--write-readme"], ["--check"]):
        assert claims.main(["--results", str(tmp_path), *mode]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {path}: {must_name}: ") and err.count("\n") == 1, err
    assert readme.read_text(encoding="utf-8") == "<!-- claims:start -->\nold\n<!-- claims:end -->\n"


def test_check_mode_names_the_sections_out_of_date(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    write(results, "seeds/summary.json", seeds_summary())
    texts = claims.sections(results)
    readme = tmp_path / "README.md"
    readme.write_text("".join(f"<!-- {n}:start -->\n<!-- {n}:end -->\n" for n in texts))
    monkeypatch.setattr(claims, "DOCUMENTS", (readme,))
    assert claims.main(["--results", str(results), "--check"]) == 1
    err = capsys.readouterr().err
    assert "section claims" in err and "section seeds" in err
    claims.write_readme(readme, {n: t for n, t in texts.items() if n != "seeds"})
    assert claims.main(["--results", str(results), "--check"]) == 1
    err = capsys.readouterr().err
    assert "section seeds" in err and "section claims" not in err
    assert claims.main(["--results", str(results), "--write-readme"]) == 0
    assert claims.main(["--results", str(results), "--check"]) == 0


# -- writing the README ----------------------------------------------------------------------------------------

def test_readme_section_is_replaced_between_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{claims.START}\nold\n{claims.END}\nafter\n")
    claims.write_readme(readme, "| new |\n")  # a plain string is the claims section
    assert readme.read_text() == f"before\n{claims.START}\n| new |\n{claims.END}\nafter\n"
    readme.write_text("no markers")
    with pytest.raises(SystemExit):
        claims.write_readme(readme, "x")


def test_every_named_section_is_replaced_and_the_rest_kept(tmp_path):
    readme = tmp_path / "README.md"
    body = "".join(f"text {n}\n<!-- {n}:start -->\nold {n}\n<!-- {n}:end -->\n" for n in ("main", "claims", "audit"))
    readme.write_text("# title\n" + body + "tail\n")
    claims.write_readme(readme, {"main": "M\n", "audit": "A\n"})
    assert readme.read_text() == ("# title\ntext main\n<!-- main:start -->\nM\n<!-- main:end -->\n"
                                  "text claims\n<!-- claims:start -->\nold claims\n<!-- claims:end -->\n"
                                  "text audit\n<!-- audit:start -->\nA\n<!-- audit:end -->\ntail\n")
    with pytest.raises(SystemExit, match="feedback:start"):  # a section the README lacks is an error
        claims.write_readme(readme, {"feedback": "F\n"})


def test_written_readme_reads_back_as_the_sections(tmp_path):
    """write_readme(sections(results)) then reading every marker back gives sections(results) again."""
    results = tmp_path / "results"
    write(results, "main/metrics.json", metrics())
    write(results, "shortcut_audit/shortcut_audit.json", audit_json())
    write(results, "seeds/summary.json", seeds_summary())
    texts = claims.sections(results)
    readme = tmp_path / "README.md"
    readme.write_text("".join(f"## {n}\n<!-- {n}:start -->\n<!-- {n}:end -->\n\n" for n in texts))
    claims.write_readme(readme, texts)
    body = readme.read_text()
    assert MARKER.findall(body) == list(texts)
    for name in texts:
        assert _section(body, name) == texts[name]


def _section(body: str, name: str) -> str:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    assert start in body and end in body, name
    inside = body.split(start, 1)[1].split(end, 1)[0]
    return inside[1:] if inside.startswith("\n") else inside  # write_readme puts the text on its own line


def test_readme_holds_every_generated_section():
    texts = claims.sections(REPO / "results")
    placed: list[str] = []
    for doc in claims.DOCUMENTS:
        body = doc.read_text(encoding="utf-8")
        names = MARKER.findall(body)
        unknown = [n for n in names if n not in texts]
        assert not unknown, f"{doc.name} has sections claims.py does not generate: {unknown}"
        stale = [n for n in names if _section(body, n).strip() != texts[n].strip()]
        assert not stale, f"{doc.name} sections differ from results/ (run make claims): {stale}"
        placed += names
    # the README shows the headline table; the claims table is on the findings page it links
    assert "main" in MARKER.findall((REPO / "README.md").read_text(encoding="utf-8"))
    assert "claims" in MARKER.findall((REPO / "docs" / "findings.md").read_text(encoding="utf-8"))
    assert sorted(placed) == sorted(texts), "every generated section sits in exactly one document"
