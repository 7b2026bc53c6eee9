"""``qrels/{dev,test}.tsv`` and ``queries.jsonl`` -> :class:`Queries`, including the split of queries that
carry none (:class:`SplitSettings`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.errors import BenchError

from .columns import Corpus, Queries, QUERY_DEFAULTS, QUERY_META, SPLITS
from .read import (decode_utf8, ident, meta_time, need, QRELS_HEADER, QRELS_SCORE, read_bytes, read_jsonl, show,
                   tsv_lines)


def load_qrels(path: Path, text: str | None = None) -> dict[str, list[tuple[str, int, int]]]:
    """``{query id: [(corpus id, grade, line), ...]}`` in file order; BEIR header, integer grades >= 0."""
    if text is None:
        text = decode_utf8(path, read_bytes(path, "a dataset folder needs qrels/dev.tsv and qrels/test.tsv"))
    header, rows = tsv_lines(text)
    if header.removesuffix("\r").split("\t") != QRELS_HEADER:
        raise BenchError(f"{path}:1: header must be 'query-id<TAB>corpus-id<TAB>score', got {show(header)}")
    out: dict[str, list[tuple[str, int, int]]] = {}
    first: dict[tuple[str, str], int] = {}
    for lineno, parts in rows:
        if len(parts) != 3:
            raise BenchError(f"{path}:{lineno}: expected 3 tab-separated fields (query-id, corpus-id, score), "
                             f"got {len(parts)}")
        qid, cid, score = parts
        if not qid or not cid:
            raise BenchError(f"{path}:{lineno}: empty {'query-id' if not qid else 'corpus-id'}")
        if not QRELS_SCORE.fullmatch(score):
            if re.fullmatch(r"-[0-9]+", score):
                raise BenchError(f"{path}:{lineno}: score {score} must be >= 0")
            raise BenchError(f"{path}:{lineno}: score {show(score)} is not an integer (0, 1, 2, ...)")
        if (qid, cid) in first:
            raise BenchError(f"{path}:{lineno}: ({qid}, {cid}) is judged twice (first on line {first[qid, cid]})")
        first[qid, cid] = lineno
        out.setdefault(qid, []).append((cid, int(score), lineno))
    return out


def id_list(meta: dict, key: str, where: str, corpus: Corpus) -> list[int]:
    """``meta[key]``, a list of chunk ids of ``corpus``, as corpus rows."""
    refs = need(meta, key, where, list)
    for ref in refs:
        if not isinstance(ref, str) or ref not in corpus.index_of:
            raise BenchError(f"{where}: '{key}' refers to unknown chunk id {show(ref)}")
    return [corpus.index_of[r] for r in refs]


@dataclass(frozen=True)
class SplitSettings:
    """How queries without a split get one (``dataset.split_seed``, ``dataset.test_fraction``)."""

    seed: int = 0
    test_fraction: float = 0.5


def assign_grouped_split(groups: list[str], settings: SplitSettings) -> dict[str, str]:
    """``{group: "dev" | "test"}``: the sorted distinct groups in a seeded order, the first
    ``round(n * test_fraction)`` (at least one, and one left for dev when there are two or more) in test."""
    distinct = sorted(set(groups))
    order = np.random.default_rng(settings.seed).permutation(len(distinct))
    n_test = int(round(len(distinct) * settings.test_fraction))
    n_test = min(max(n_test, 1), len(distinct) - 1) if len(distinct) > 1 else len(distinct)
    return {distinct[int(i)]: "test" if rank < n_test else "dev" for rank, i in enumerate(order)}


# Keys of a query row (or its metadata) that hold labels the loader never reads from there: stale and rumor
# sets come from labels/queries.jsonl only (a retriever sees queries.jsonl), so a BEIR export that carries them
# in metadata gets a warning instead of rates silently left unmeasured.
LABEL_LIKE = re.compile(r"stale|rumou?r", re.IGNORECASE)


def ignored_labels_note(path: Path, found: dict[str, list[int]], has_query_labels: bool) -> str:
    """The warning for label-like keys of ``queries.jsonl`` (``found``: key -> [queries, first line])."""
    keys = ", ".join(f"{k} ({n} quer{'y' if n == 1 else 'ies'})" for k, (n, _) in sorted(found.items()))
    return (f"{path}:{min(line for _, line in found.values())}: warning: ignored {keys}: stale and rumor sets are "
            "read from labels/queries.jsonl only, one line per query: "
            '{"_id": "<query id>", "stale": ["<chunk id>", ...], "rumor": ["<chunk id>", ...]} '
            "(docs/datasets.md, Labels)" + ("" if has_query_labels else
                                            "; this folder has none, so the stale and rumor rates are not measured"))


def load_queries(path: Path, corpus: Corpus, qrels: dict[str, dict[str, list[tuple[str, int, int]]]],
                 text: str | None = None, qrels_paths: dict[str, Path] | None = None,
                 split: SplitSettings | None = None,
                 ignored: dict[str, list[int]] | None = None) -> tuple[Queries, dict | None, set[str]]:
    """Queries and their judgments. Every metadata field is optional (:data:`QUERY_DEFAULTS`). A query without
    ``metadata.split`` takes the split of the qrels file that judges it when the folder has both dev and test
    qrels; otherwise a seeded split grouped by the document of its best-graded relevant chunk is assigned (the
    second value returned records how, ``None`` when nothing was assigned). A query without a split that no
    qrels file judges is left out (the third value: their ids) (a BEIR queries.jsonl lists every split's queries); one with a split must
    have a relevant chunk in its split's file. ``ignored``, when given, collects the label-like keys
    (:data:`LABEL_LIKE`, e.g. ``metadata.stale``) as key -> [queries that have it, first line]."""
    rows = read_jsonl(path, text=text)
    qpaths = qrels_paths or {s: Path("qrels") / f"{s}.tsv" for s in qrels}
    ids, texts, as_of_text = [], [], []
    cols: dict[str, list] = {k: [] for k in QUERY_META}
    line_of: dict[str, int] = {}
    finite = np.concatenate([corpus.created_at, corpus.valid_from, corpus.valid_to])
    finite = finite[np.isfinite(finite)]
    default_time = float(finite.max()) if len(finite) else 0.0
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        qid = ident(obj, "_id", where)
        if qid in line_of:
            raise BenchError(f"{where}: duplicate _id {qid!r} (first on line {line_of[qid]})")
        line_of[qid] = lineno
        ids.append(qid)
        texts.append(need(obj, "text", where, str))
        meta = need(obj, "metadata", where, dict) if "metadata" in obj else {}
        if ignored is not None:
            for key in [k for k in obj if LABEL_LIKE.search(k)] + [f"metadata.{k}" for k in meta
                                                                    if LABEL_LIKE.search(k)]:
                ignored.setdefault(key, [0, lineno])[0] += 1
        query_time = meta_time(meta, "query_time", where) if "query_time" in meta else None
        as_of = meta_time(meta, "as_of", where) if "as_of" in meta else None
        query_time = query_time if query_time is not None else as_of if as_of is not None else default_time
        cols["query_time"].append(query_time)
        cols["as_of"].append(as_of if as_of is not None else query_time)
        stored = meta.get("as_of") if as_of is not None else meta.get("query_time")
        as_of_text.append(stored if isinstance(stored, str) else None)
        if "category" in meta:
            category = need(meta, "category", where, str, prefix="metadata.")
            if not category.strip() or any(c in category for c in "\t\n\r"):
                raise BenchError(f"{where}: 'metadata.category' is {show(category)}; it must be a non-empty name "
                                 "without tabs or line breaks (e.g. current, historical)")
        else:
            category = QUERY_DEFAULTS["category"]
        cols["category"].append(category)
        if "split" in meta:
            split_ = need(meta, "split", where, str, prefix="metadata.")
            if split_ not in SPLITS:
                raise BenchError(f"{where}: 'metadata.split' is {show(split_)}; allowed: {', '.join(SPLITS)}")
        else:
            split_ = None
        cols["split"].append(split_)
    split_of = dict(zip(ids, cols["split"]))
    judged_in: dict[str, list[str]] = {}
    # Every judgment names a known query and chunk, and a query with a split is judged in its split's file.
    for name, judgments in qrels.items():
        qpath = qpaths[name]
        for qid, judged in judgments.items():
            if qid not in split_of:
                raise BenchError(f"{qpath}:{judged[0][2]}: query {qid!r} is not in queries.jsonl")
            if split_of[qid] is not None and split_of[qid] != name:
                raise BenchError(f"{qpath}:{judged[0][2]}: query {qid!r} is a {split_of[qid]!r} query "
                                 f"(queries.jsonl:{line_of[qid]}); its judgments belong in qrels/{split_of[qid]}.tsv")
            for cid, _, lineno in judged:
                if cid not in corpus.index_of:
                    raise BenchError(f"{qpath}: query {qid!r} judges unknown chunk id {cid!r} (line {lineno})")
            judged_in.setdefault(qid, []).append(name)
    both = all(s_ in qrels for s_ in SPLITS)
    keep, relevant, grades = [], [], []
    for n, ((lineno, _), qid, split_) in enumerate(zip(rows, ids, cols["split"])):
        files = [split_] if split_ is not None else judged_in.get(qid, [])
        judged = [(c, g) for f in files for c, g, _ in qrels.get(f, {}).get(qid, []) if g >= 1]
        if not judged:
            if split_ is None:
                continue  # judged nowhere: another split's query in a BEIR folder
            raise BenchError(f"{path}:{lineno}: qrels/{split_}.tsv has no relevant chunk (score >= 1) for query "
                             f"{qid!r}")
        if split_ is None and both and len(files) > 1:
            raise BenchError(f"{path}:{lineno}: query {qid!r} has no 'metadata.split' and is judged in both "
                             "qrels/dev.tsv and qrels/test.tsv; give it a split or judge it in one file")
        if split_ is None and both:
            cols["split"][n] = files[0]
        judged.sort(key=lambda cg: (-cg[1], corpus.index_of[cg[0]]))
        keep.append(n)
        relevant.append([corpus.index_of[c] for c, _ in judged])
        grades.append([g for _, g in judged])
    if not keep:
        raise BenchError(f"{path}: no query has a relevant chunk (score >= 1) in {', '.join(sorted(qrels))} qrels")
    assignment = None
    todo = [j for j, n in enumerate(keep) if cols["split"][n] is None]
    if todo:
        settings = split or SplitSettings()
        groups = [str(corpus.doc_id[relevant[j][0]]) for j in todo]
        side = assign_grouped_split(groups, settings)
        for j, g in zip(todo, groups):
            cols["split"][keep[j]] = side[g]
        assignment = {"method": "seeded, grouped by the doc_id of each query's best-graded relevant chunk",
                      "seed": settings.seed, "test_fraction": settings.test_fraction, "n_queries": len(todo),
                      "n_groups": len(side), "n_test": sum(cols["split"][keep[j]] == "test" for j in todo)}
    empty = Ragged.from_lists([[] for _ in keep])
    kept_ids = [ids[n] for n in keep]
    return Queries(
        ids=kept_ids, texts=[texts[n] for n in keep],
        query_time=np.array([cols["query_time"][n] for n in keep], dtype=np.float64),
        as_of=np.array([cols["as_of"][n] for n in keep], dtype=np.float64),
        category=np.array([cols["category"][n] for n in keep], dtype=object),
        split=np.array([cols["split"][n] for n in keep], dtype=object),
        relevant=Ragged.from_lists(relevant), grades=Ragged.from_lists(grades), stale=empty, rumor=empty,
        family=np.array(kept_ids, dtype=object), as_of_text=[as_of_text[n] for n in keep],
    ), assignment, set(ids) - set(kept_ids)
