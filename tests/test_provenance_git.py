"""``provenance.git_sha``: what counts as uncommitted for a result."""

from __future__ import annotations

import subprocess

from smartvector_bench.core.results import provenance


def test_git_dirty_counts_the_code_and_configs_not_the_results(tmp_path, monkeypatch):
    """A reproduction writes results/, figures and README tables as it goes: they must not mark a later step's
    result as run from uncommitted code; a change to a package, conf/ or pyproject.toml must."""
    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    for f in ("smartvector_bench/a.py", "conf/c.yaml", "results/r.json", "README.md", "pyproject.toml"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("x\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "init")
    monkeypatch.setattr(provenance, "REPO", tmp_path)
    assert provenance.git_sha()["dirty"] is False
    for f in ("results/r.json", "README.md"):
        (tmp_path / f).write_text("y\n")
    assert provenance.git_sha()["dirty"] is False
    for f in ("smartvector_bench/a.py", "conf/c.yaml", "pyproject.toml"):
        (tmp_path / f).write_text("y\n")
        assert provenance.git_sha()["dirty"] is True
        git("checkout", "--", f)
