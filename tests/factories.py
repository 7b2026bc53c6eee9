"""Builders the tests share: a :class:`Corpus` from a few hand-written rows, the chunk offsets the generator
writes, and an outside plug-in tree. One copy, so that a change to the corpus format is made once."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus

INF = float("inf")


def section_offsets(doc_id, version, texts) -> tuple[np.ndarray, np.ndarray]:
    """``(offset_start, offset_end)`` of each chunk: the chunks of one document version, in row order, joined
    by a newline (the layout the generator writes)."""
    start, end, at = [], [], {}
    for d, v, t in zip(doc_id, version, texts):
        s = at.get((d, int(v)), 0)
        start.append(s)
        end.append(s + len(t))
        at[(d, int(v))] = s + len(t) + 1
    return np.array(start, dtype=np.int64), np.array(end, dtype=np.int64)


def make_corpus(rows: list[dict], **defaults) -> Corpus:
    """A corpus of ``rows``: text (``w<i>``), doc (``d<i>``), authority, created; optional id (``c<i>``), version
    (1), valid_from (= created), valid_to (inf), depends (list of indices), supersedes (-1), source (wiki).
    ``defaults`` fill any key a row leaves out (e.g. ``authority=0.5, created=0.0``)."""
    rows = [{"text": f"w{i}", "doc": f"d{i}", "source": "wiki", **defaults, **r} for i, r in enumerate(rows)]
    n = len(rows)
    ids = [r.get("id", f"c{i}") for i, r in enumerate(rows)]
    offsets = section_offsets([r["doc"] for r in rows], [r.get("version", 1) for r in rows], [r["text"] for r in rows])
    return Corpus(
        ids=ids, titles=[""] * n, texts=[r["text"] for r in rows],
        doc_id=np.array([r["doc"] for r in rows], dtype=object),
        version=np.array([r.get("version", 1) for r in rows], dtype=np.int64),
        source=np.array([r["source"] for r in rows], dtype=object),
        authority=np.array([r["authority"] for r in rows], dtype=np.float64),
        created_at=np.array([r["created"] for r in rows], dtype=np.float64),
        valid_from=np.array([r.get("valid_from", r["created"]) for r in rows], dtype=np.float64),
        valid_to=np.array([r.get("valid_to", INF) for r in rows], dtype=np.float64),
        depends_on=Ragged.from_lists([list(r.get("depends", [])) for r in rows]),
        supersedes=np.array([r.get("supersedes", -1) for r in rows], dtype=np.int64),
        offset_start=offsets[0], offset_end=offsets[1],
        index_of={cid: i for i, cid in enumerate(ids)},
    )


def plugin_tree(root: Path, module: str, source: str, configs: dict[str, str]) -> tuple[Path, Path]:
    """An outside plug-in under ``root``: (the folder to put on PYTHONPATH, holding ``module`` - a package when the
    name has no ``.py`` - with ``source``; a config dir whose ``retriever/<name>.yaml`` holds each of ``configs``
    under its ``# @package retrievers.<name>`` header)."""
    src = root / "src"
    target = src / module if module.endswith(".py") else src / module / "__init__.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")
    (root / "conf" / "retriever").mkdir(parents=True, exist_ok=True)
    for name, body in configs.items():
        (root / "conf" / "retriever" / f"{name}.yaml").write_text(f"# @package retrievers.{name}\n{body}",
                                                                  encoding="utf-8")
    return src, root / "conf"
