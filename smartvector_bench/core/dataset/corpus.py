"""``corpus.jsonl`` -> :class:`Corpus`, with the references (``depends_on``, ``supersedes``) resolved and
checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.errors import BenchError

from .columns import Corpus, CORPUS_DEFAULTS, CORPUS_META
from .read import ident, kind_of, MAX_INT, meta_int, meta_time, need, read_jsonl, show


def load_corpus(path: Path, text: str | None = None) -> Corpus:
    """Every metadata field is optional (:data:`CORPUS_DEFAULTS`); ``Corpus.present`` lists the fields every row
    gave (``created_at`` and ``valid_from`` stand in for each other), so a system that needs one can refuse."""
    rows = read_jsonl(path, text=text)
    ids, titles, texts = [], [], []
    cols: dict[str, list] = {k: [] for k in CORPUS_META}
    index_of: dict[str, int] = {}
    given = {k: 0 for k in CORPUS_META}
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        cid = ident(obj, "_id", where)
        if cid in index_of:
            raise BenchError(f"{where}: duplicate _id {cid!r} (first on line {rows[index_of[cid]][0]})")
        index_of[cid] = len(ids)
        ids.append(cid)
        title = obj.get("title")
        if title is not None and not isinstance(title, str):
            raise BenchError(f"{where}: 'title' must be a string or null, got {kind_of(title)}")
        titles.append(title or "")
        text_ = need(obj, "text", where, str)
        texts.append(text_)
        meta = need(obj, "metadata", where, dict) if "metadata" in obj else {}
        for key in CORPUS_META:
            given[key] += key in meta
        for key in ("doc_id", "source"):
            cols[key].append(need(meta, key, where, str, prefix="metadata.") if key in meta else
                             cid if key == "doc_id" else CORPUS_DEFAULTS[key])
        cols["version"].append(meta_int(meta, "version", where, default=CORPUS_DEFAULTS["version"]))
        authority = (need(meta, "authority", where, (int, float), prefix="metadata.") if "authority" in meta
                     else CORPUS_DEFAULTS["authority"])
        if not 0.0 <= authority <= 1.0:
            raise BenchError(f"{where}: 'metadata.authority' must be in [0, 1], got {show(authority)}")
        cols["authority"].append(float(authority))
        created = meta_time(meta, "created_at", where) if "created_at" in meta else None
        valid_from = meta_time(meta, "valid_from", where) if "valid_from" in meta else None
        # A chunk with neither time is stored and in force for all time (a plain BEIR corpus).
        cols["created_at"].append(created if created is not None else valid_from if valid_from is not None
                                  else -np.inf)
        cols["valid_from"].append(valid_from if valid_from is not None else created if created is not None
                                  else -np.inf)
        cols["valid_to"].append(meta_time(meta, "valid_to", where, nullable=True) if "valid_to" in meta else np.inf)
        cols["depends_on"].append((lineno, need(meta, "depends_on", where, list, prefix="metadata.")
                                   if "depends_on" in meta else []))
        sup = meta.get("supersedes")
        if sup is not None and not isinstance(sup, str):
            raise BenchError(f"{where}: 'metadata.supersedes' must be a chunk id or null, got {kind_of(sup)}")
        if sup == cid:
            raise BenchError(f"{where}: 'metadata.supersedes' names the chunk itself")
        cols["supersedes"].append((lineno, sup))
        start = meta.get("offset_start", 0)
        end = meta.get("offset_end", start + len(text_) if isinstance(start, int) else 0)
        if (not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_INT for x in (start, end))
                or end < start):
            raise BenchError(f"{where}: 'metadata.offset_start' / 'offset_end' must be integers 0 <= start <= end")
        cols["offset_start"].append(start)
        cols["offset_end"].append(end)
    present = {k for k, n in given.items() if n == len(rows)}
    if "valid_from" in present or "created_at" in present:  # each stands in for the other (CORPUS_DEFAULTS),
        present |= {"valid_from", "created_at", "valid_to"}  # and a window without an end is open

    def resolve(lineno: int, ref, key: str) -> int:
        if not isinstance(ref, str) or ref not in index_of:
            raise BenchError(f"{path}:{lineno}: 'metadata.{key}' refers to unknown chunk id {show(ref)}")
        return index_of[ref]

    depends = []
    for row, (lineno, refs) in enumerate(cols["depends_on"]):
        targets = [resolve(lineno, r, "depends_on") for r in refs]
        if row in targets:
            raise BenchError(f"{path}:{lineno}: 'metadata.depends_on' names the chunk itself")
        if len(set(targets)) != len(targets):
            twice = next(t for t in targets if targets.count(t) > 1)
            raise BenchError(f"{path}:{lineno}: 'metadata.depends_on' lists chunk {ids[twice]!r} twice")
        depends.append(targets)
    supersedes = np.array([-1 if r is None else resolve(ln, r, "supersedes") for ln, r in cols["supersedes"]],
                          dtype=np.int64)
    _check_supersession(path, rows, ids, supersedes)
    valid_from = np.array(cols["valid_from"], dtype=np.float64)
    valid_to = np.array(cols["valid_to"], dtype=np.float64)
    bad = np.nonzero(valid_to <= valid_from)[0]
    if len(bad):
        raise BenchError(f"{path}:{rows[bad[0]][0]}: 'metadata.valid_to' is not after 'metadata.valid_from'")
    return Corpus(
        ids=ids, titles=titles, texts=texts,
        doc_id=np.array(cols["doc_id"], dtype=object), version=np.array(cols["version"], dtype=np.int64),
        source=np.array(cols["source"], dtype=object), authority=np.array(cols["authority"], dtype=np.float64),
        created_at=np.array(cols["created_at"], dtype=np.float64), valid_from=valid_from, valid_to=valid_to,
        depends_on=Ragged.from_lists(depends), supersedes=supersedes,
        offset_start=np.array(cols["offset_start"], dtype=np.int64),
        offset_end=np.array(cols["offset_end"], dtype=np.int64), index_of=index_of,
        present=frozenset(k for k in CORPUS_META if k in present),
    )


def _check_supersession(path: Path, rows: list[tuple[int, dict]], ids: list[str], supersedes: np.ndarray) -> None:
    """Version chains: a chunk has at most one successor, and no chain comes back to where it started."""
    successor: dict[int, int] = {}
    for i, j in enumerate(supersedes.tolist()):
        if j < 0:
            continue
        if j in successor:
            raise BenchError(f"{path}:{rows[i][0]}: 'metadata.supersedes' names {ids[j]!r}, which line "
                             f"{rows[successor[j]][0]} already supersedes (a chunk has at most one successor)")
        successor[j] = i
    state = [0] * len(ids)  # 0 unseen, 1 on the chain being walked, 2 done
    for start in range(len(ids)):
        chain, x = [], start
        while x >= 0 and state[x] == 0:
            state[x] = 1
            chain.append(x)
            x = int(supersedes[x])
        if x >= 0 and state[x] == 1:
            raise BenchError(f"{path}:{rows[x][0]}: 'metadata.supersedes' makes a cycle (chunk {ids[x]!r} ends up "
                             "superseding itself)")
        for y in chain:
            state[y] = 2
