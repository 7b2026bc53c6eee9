"""What README.md and docs/ point at exists: every repository path they name (globs and ``<placeholder>`` parts
allowed), every ``python -m`` module, every dotted ``smartvector_bench`` / ``data_gen`` / ``experiments`` name,
every relative link with its ``#anchor``, and every function a link names (the README's metrics table); and the
README's example retriever runs. A file that moves makes this fail until the page is rewritten."""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run

from .conftest import write_tiny

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TOP = ("smartvector_bench", "data_gen", "experiments", "paper_figures", "tests", "conf", "results", "docs")
# A repository path: one of the top-level folders, not preceded by a path or word character (so
# DIR/retriever/... or ../shared/... are not read as ours), then path characters.
PATH = re.compile(r"(?<![\w/.-])((?:%s)/[\w./*<>-]*)" % "|".join(TOP))
MODULE = re.compile(r"python -m ([\w.]+)")
DOTTED = re.compile(r"(?<![\w.])((?:smartvector_bench|data_gen|experiments)\.[\w.]*\w)")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def _pages():
    return [pytest.param(p, id=str(p.relative_to(REPO))) for p in PAGES]


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _exists(path: str) -> bool:
    path = re.sub(r"<[^>]*>", "*", path.rstrip(".,;:"))
    return any(REPO.glob(path)) if "*" in path else (REPO / path).exists()


@pytest.mark.parametrize("page", _pages())
def test_every_repository_path_exists(page):
    missing = sorted({p for p in PATH.findall(_text(page)) if not _exists(p)})
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


def _module_file(name: str) -> Path | None:
    base = REPO / Path(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@pytest.mark.parametrize("page", _pages())
def test_every_python_dash_m_module_exists(page):
    bad = []
    for name in MODULE.findall(_text(page)):
        base = REPO / Path(*name.split("."))
        if not (base.with_suffix(".py").is_file() or (base / "__main__.py").is_file()):
            bad.append(name)
    assert not bad, f"{page.name}: `python -m` of modules that cannot run: {bad}"


@pytest.mark.parametrize("page", _pages())
def test_every_dotted_name_resolves(page):
    """``smartvector_bench.core.run.read_run_jsonl``: the longest module prefix imports, the rest are attributes."""
    bad = []
    for name in sorted(set(DOTTED.findall(_text(page)))):
        parts = name.split(".")
        cut = next((i for i in range(len(parts), 0, -1) if _module_file(".".join(parts[:i]))), 0)
        if not cut:
            bad.append(name)
            continue
        obj = importlib.import_module(".".join(parts[:cut]))
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                bad.append(name)
                break
            obj = getattr(obj, attr)
    assert not bad, f"{page.name} names what does not exist: {bad}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (``-`` and ``_`` kept), spaces to ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # '#' in code is no heading
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def _definitions(path: Path) -> set[str]:
    return set(re.findall(r"^\s*(?:def|class) (\w+)", path.read_text(encoding="utf-8"), flags=re.M))


@pytest.mark.parametrize("page", _pages())
def test_every_relative_link_its_anchor_and_named_function_exist(page):
    bad = []
    for text, target in LINK.findall(_text(page)):
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not checked here
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            bad.append(f"{target} (no such file)")
            continue
        if anchor and anchor not in _anchors(dest):
            bad.append(f"{target} (no heading with that anchor)")
        func = re.fullmatch(r"`(\w+)`", text)
        if func and dest.suffix == ".py" and func.group(1) not in _definitions(dest):
            bad.append(f"{target} (no def or class {func.group(1)})")
    assert not bad, f"{page.name}: broken links: {bad}"


def test_the_readme_metrics_table_links_a_function_per_row():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| metric ")]
    assert len(rows) >= 10
    for row in rows:
        assert re.search(r"\[`\w+`\]\(smartvector_bench/core/(evaluation/)?(metrics/\w+|evaluator)\.py\)", row), row


def test_the_readme_stays_short():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


# -- the README's example retriever ----------------------------------------------------------------------------

def _readme_example() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Add a retriever", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


@pytest.fixture
def example(tmp_path, monkeypatch):
    (tmp_path / "my_ret").mkdir()
    (tmp_path / "my_ret" / "__init__.py").write_text(_readme_example(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_ret", None)  # another test's my_ret (tests/test_plugins.py) may still be imported
    importlib.invalidate_caches()
    yield importlib.import_module("my_ret")
    sys.modules.pop("my_ret", None)


def test_the_readme_example_retriever_runs(example, tmp_path):
    ds = load_dataset(write_tiny(tmp_path / "tiny"))
    corpus, as_of = ds.corpus, ds.queries.as_of
    ret = example.CreatedCosine()
    ret.check_dataset(corpus)
    with pytest.raises(BenchError, match="my_ret needs metadata.created_at"):
        ret.check_dataset(dataclasses.replace(corpus, present=frozenset()))
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(corpus), 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[rng.integers(0, len(corpus), size=len(as_of))]
    ret.index(corpus, vectors, serve_time=float(np.max(as_of)))
    run = ret.search(queries, as_of, 10)
    assert isinstance(run, Run) and run.ranked.shape == (len(as_of), 10)
    hit = run.ranked >= 0
    assert hit[:, 0].all()  # every query has a chunk created by its as_of in the tiny dataset
    created = corpus.created_at[np.where(hit, run.ranked, 0)]
    assert (created[hit] <= np.broadcast_to(as_of[:, None], hit.shape)[hit]).all()
    assert np.isnan(run.scores[~hit]).all() and ((run.confidence >= 0) & (run.confidence <= 1)).all()
    assert ret.describe() == {"rule": "cosine among the chunks created by as_of"}
