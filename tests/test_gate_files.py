"""The gate's file listing: smartvector-report's pages are derived, gitignored and unrecorded at any depth."""

from __future__ import annotations

import subprocess

from smartvector_bench.tools.gate import files as gate_files

from .conftest import REPO


def test_report_pages_at_any_depth_are_not_listed_nor_fail_the_manifest(tmp_path):
    (tmp_path / "main").mkdir()
    (tmp_path / "main" / "metrics.json").write_text("{}")
    expected = tmp_path / "expected.json"
    manifest = gate_files.build_manifest(tmp_path, expected)
    for rel in ("report.html", "main/report.html", "sweeps/a/report.html"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("<html></html>")
    (tmp_path / "main" / "notes.html").write_text("x")  # any other file is still listed
    assert gate_files.list_files(tmp_path, expected) == ["main/metrics.json", "main/notes.html"]
    failed = [c.file for c in gate_files.check_manifest(tmp_path, manifest, expected) if not c.ok]
    assert failed == ["main/notes.html"]


def test_report_pages_under_results_are_gitignored():
    paths = ["results/report.html", "results/main/report.html", "results/sweeps/x/report.html"]
    out = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=REPO, capture_output=True, text=True)
    assert out.stdout.split() == paths
