"""The layout shows the pipeline, and stays that way: no import circle among our modules, file by file, inside a
package as between packages (lazy imports inside functions and imports for annotations under ``TYPE_CHECKING``
count, so none can hide one), each layer imports only the layers below it, and no module outside the
tests and figure scripts grows past about 400 lines without saying why in its docstring.

Layers, bottom up: ``smartvector_bench.core`` (data in, run out, scored); ``smartvector_bench.systems`` and
``data_gen`` (both on core alone); ``experiments`` (core, systems, data_gen); ``smartvector_bench.tools`` and
``paper_figures`` (anything below them)."""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from pathlib import Path

import pytest

from .conftest import REPO

PACKAGES = ("smartvector_bench", "data_gen", "experiments", "paper_figures")
MAX_LINES = 400
LONG_REASON = "Why this module is long:"  # the docstring's own words, when a module must be longer

# layer -> the layers it may import (itself included)
ALLOWED = {
    "core": {"core"},
    "systems": {"core", "systems"},
    "data_gen": {"core", "data_gen"},
    "experiments": {"core", "systems", "data_gen", "experiments"},
    "tools": {"core", "systems", "data_gen", "experiments", "tools", "root"},
    "paper_figures": {"core", "systems", "data_gen", "experiments", "tools", "paper_figures", "root"},
    "root": {"core", "systems"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def layer(module: str) -> str:
    head, _, rest = module.partition(".")
    if head == "smartvector_bench":
        return rest.split(".")[0] if rest else "root"
    return head


def _owner(name: str) -> str | None:
    """The longest prefix of a dotted name that is one of our modules."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] + [f"{target}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            owner = _owner(name)
            if owner and owner != module:
                out.add(owner)
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_there_is_no_import_circle():
    assert _cycles(GRAPH) == []


def test_an_import_for_annotations_counts(tmp_path):
    """An import under ``TYPE_CHECKING`` is an edge too: such a circle is still a tangle to read."""
    path = tmp_path / "m.py"
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                    "    from smartvector_bench.systems.smartvector.retriever import SmartVector\n")
    assert "smartvector_bench.systems.smartvector.retriever" in _imports("smartvector_bench.x", path)


def test_each_layer_imports_only_the_layers_below_it():
    wrong = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() for t in targets
                   if layer(t) not in ALLOWED[layer(m)])
    assert wrong == []


def test_the_layers_are_the_ones_named():
    assert {layer(m) for m in MODULES} == set(ALLOWED)


def _too_long() -> list[str]:
    out = []
    for module, path in MODULES.items():
        if layer(module) == "paper_figures" and path.name.startswith("fig_"):
            continue  # figure boilerplate
        lines = len(path.read_text().splitlines())
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if lines > MAX_LINES and LONG_REASON not in doc:
            out.append(f"{path.relative_to(REPO)}: {lines} lines")
    return out


def test_no_module_is_long_without_saying_why():
    assert _too_long() == []


def test_no_test_file_is_long():
    """Tests are split by the module or concern they test; shared helpers live in a ``*_cases`` module."""
    long = [f"{p.name}: {n} lines" for p in sorted((REPO / "tests").glob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert long == []


# One spelling, the data format's (``rumor``), in code, strings and prose. A line quoting another spelling from
# outside (a foreign dataset's key, a corpus word to keep out) says so with SPELLING_MARK.
OTHER_SPELLING = "rumo" + "ur"  # built, so this file does not spell it
SPELLING_MARK = "external spelling"
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".json", ".j2", ".toml", ".txt", ".html", ".cfg", ".css", ".js"}


def _other_spellings(paths: list[Path]) -> list[str]:
    """Lines of ``paths`` that spell the word otherwise than ``rumor`` (any case), unless marked."""
    hits = []
    for path in paths:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OTHER_SPELLING in line.lower() and SPELLING_MARK not in line:
                hits.append(f"{path.name}:{i}")
    return hits


def _own_text_files() -> list[Path]:
    """Our code, configs and prose: every text file outside results/ (published outputs, rebuilt from code)."""
    tops = [REPO / d for d in ("conf", "smartvector_bench", "data_gen", "experiments", "tests", "paper_figures",
                               "docs", ".ci")]
    files = [p for top in tops if top.is_dir() for p in top.rglob("*")
             if p.is_file() and p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts]
    return sorted(files + [p for p in (REPO / "README.md", REPO / "pyproject.toml", REPO / "Makefile") if p.is_file()])


def test_one_spelling_of_rumor_in_code_and_prose(tmp_path):
    probe = tmp_path / "probe.md"
    other = OTHER_SPELLING
    probe.write_text(f"a {other} rate\nx = f'{{{other.upper()}}}'\nkey {other}_ids  # {SPELLING_MARK}\na rumor\n",
                     encoding="utf-8")
    # the check sees any case, in any text, and passes a marked line and the format's spelling
    assert _other_spellings([probe]) == ["probe.md:1", "probe.md:2"]
    files = _own_text_files()
    assert len(files) > 300 and REPO / "README.md" in files
    assert _other_spellings(files) == [], ("spell it rumor; a line quoting a word from outside (real text, a "
                                           f"foreign key) says so with '{SPELLING_MARK}'")


@pytest.mark.parametrize("module", ["smartvector_bench.core", "smartvector_bench.systems", "smartvector_bench.tools"])
def test_each_package_says_what_it_is(module):
    assert ast.get_docstring(ast.parse(MODULES[module].read_text()))


def _private_hydra(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level]
    return [f"{path.relative_to(REPO)}: {name}" for name in names if name.split(".")[:2] == ["hydra", "_internal"]]


def test_hydra_is_read_through_its_public_api():
    """No module imports ``hydra._internal`` (tests may, to check a rebuilt helper against Hydra's own)."""
    assert _private_hydra(REPO / "tests" / "test_hydra_public.py")  # the check sees such an import
    assert [hit for path in MODULES.values() for hit in _private_hydra(path)] == []


def test_hypothesis_draws_repeat_unless_asked_to_explore():
    """conftest.py loads the repeatable profile (the same examples on every run and host); the environment can ask
    for fresh draws."""
    from hypothesis import settings

    if os.environ.get("HYPOTHESIS_PROFILE", "repeatable") == "repeatable":
        assert settings().derandomize
    assert settings.get_profile("explore").derandomize is False
