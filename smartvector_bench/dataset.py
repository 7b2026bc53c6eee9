"""Load a BEIR-layout dataset folder into columnar arrays, validating as it goes.

Layout: ``corpus.jsonl`` (``_id``, ``title``, ``text``, ``metadata``), ``queries.jsonl`` (``_id``, ``text``,
``metadata``), ``qrels/{dev,test}.tsv`` and, when the folder came from ``smartvector-gen``, ``manifest.json``.
Every error names the file and line it comes from.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .csr import Ragged
from .errors import BenchError
from .timeutil import iso_to_days

SPLITS = ("dev", "test")
CATEGORIES = ("current", "recently_updated", "contested", "dependent", "historical")
CORPUS_META = ("doc_id", "family", "version", "source", "authority", "created_at", "valid_from",
               "valid_to", "depends_on", "supersedes")
QUERY_META = ("query_time", "as_of", "category", "gold", "stale", "rumor", "split")


@dataclass
class Corpus:
    """One row per chunk (vector). Times are float days since the epoch; an open ``valid_to`` is +inf."""

    ids: list[str]
    titles: list[str]
    texts: list[str]
    doc_id: np.ndarray
    family: np.ndarray
    version: np.ndarray
    source: np.ndarray
    authority: np.ndarray
    created_at: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    depends_on: Ragged
    supersedes: np.ndarray  # index of the chunk this one replaces, -1 if none
    index_of: dict[str, int] = field(repr=False, default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def superseded_by(self) -> np.ndarray:
        """Index of the successor of each chunk (-1 if none); the inverse of ``supersedes``."""
        out = np.full(len(self), -1, dtype=np.int64)
        has = self.supersedes >= 0
        out[self.supersedes[has]] = np.nonzero(has)[0]
        return out


@dataclass
class Queries:
    ids: list[str]
    texts: list[str]
    query_time: np.ndarray
    as_of: np.ndarray
    category: np.ndarray
    split: np.ndarray
    gold: np.ndarray  # corpus index of the single gold chunk
    stale: Ragged
    rumor: Ragged

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, mask: np.ndarray) -> "Queries":
        rows = np.nonzero(mask)[0]
        return Queries(
            ids=[self.ids[i] for i in rows], texts=[self.texts[i] for i in rows],
            query_time=self.query_time[rows], as_of=self.as_of[rows], category=self.category[rows],
            split=self.split[rows], gold=self.gold[rows], stale=self.stale.take(rows),
            rumor=self.rumor.take(rows),
        )


@dataclass
class Dataset:
    path: Path
    corpus: Corpus
    queries: Queries
    sha256: str
    seed: int | None
    manifest: dict | None


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line; errors name the file and line."""
    if not path.is_file():
        raise BenchError(f"{path}: file is missing (a dataset folder needs corpus.jsonl, queries.jsonl, qrels/)")
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise BenchError(f"{path}:{lineno}: expected a JSON object")
            rows.append((lineno, obj))
    if not rows:
        raise BenchError(f"{path}: file is empty")
    return rows


def _need(obj: dict, key: str, where: str, kind: type | tuple[type, ...]):
    if key not in obj:
        raise BenchError(f"{where}: missing key {key!r}")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise BenchError(f"{where}: key {key!r} has the wrong type ({type(value).__name__})")
    return value


def _time(meta: dict, key: str, where: str, nullable: bool = False) -> float:
    value = meta.get(key, "missing")
    if value == "missing":
        raise BenchError(f"{where}: missing key 'metadata.{key}'")
    if value is None and nullable:
        return np.inf
    if not isinstance(value, str):
        raise BenchError(f"{where}: 'metadata.{key}' must be an ISO-8601 UTC string")
    try:
        return iso_to_days(value)
    except ValueError as exc:
        raise BenchError(f"{where}: 'metadata.{key}' {exc}") from None


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_corpus(path: Path) -> Corpus:
    rows = read_jsonl(path)
    ids, titles, texts = [], [], []
    cols: dict[str, list] = {k: [] for k in CORPUS_META}
    index_of: dict[str, int] = {}
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        cid = _need(obj, "_id", where, str)
        if cid in index_of:
            raise BenchError(f"{where}: duplicate _id {cid!r}")
        index_of[cid] = len(ids)
        ids.append(cid)
        titles.append(obj.get("title", "") or "")
        texts.append(_need(obj, "text", where, str))
        meta = _need(obj, "metadata", where, dict)
        for key in ("doc_id", "family", "source"):
            cols[key].append(_need(meta, key, where + " metadata", str))
        cols["version"].append(_need(meta, "version", where + " metadata", int))
        authority = _need(meta, "authority", where + " metadata", (int, float))
        if not 0.0 <= authority <= 1.0:
            raise BenchError(f"{where}: 'metadata.authority' must be in [0, 1], got {authority}")
        cols["authority"].append(float(authority))
        for key in ("created_at", "valid_from"):
            cols[key].append(_time(meta, key, where))
        cols["valid_to"].append(_time(meta, "valid_to", where, nullable=True))
        cols["depends_on"].append((lineno, _need(meta, "depends_on", where + " metadata", list)))
        sup = meta.get("supersedes", "missing")
        if sup != "missing" and sup is not None and not isinstance(sup, str):
            raise BenchError(f"{where}: 'metadata.supersedes' must be a chunk id or null")
        cols["supersedes"].append((lineno, None if sup == "missing" else sup))

    def resolve(lineno: int, ref: str, key: str) -> int:
        if ref not in index_of:
            raise BenchError(f"{path}:{lineno}: 'metadata.{key}' refers to unknown chunk id {ref!r}")
        return index_of[ref]

    depends = Ragged.from_lists([[resolve(ln, r, "depends_on") for r in refs] for ln, refs in cols["depends_on"]])
    supersedes = np.array([-1 if r is None else resolve(ln, r, "supersedes") for ln, r in cols["supersedes"]],
                          dtype=np.int64)
    valid_from = np.array(cols["valid_from"])
    valid_to = np.array(cols["valid_to"])
    bad = np.nonzero(valid_to <= valid_from)[0]
    if len(bad):
        raise BenchError(f"{path}:{rows[bad[0]][0]}: 'metadata.valid_to' is not after 'metadata.valid_from'")
    return Corpus(
        ids=ids, titles=titles, texts=texts,
        doc_id=np.array(cols["doc_id"], dtype=object), family=np.array(cols["family"], dtype=object),
        version=np.array(cols["version"], dtype=np.int64), source=np.array(cols["source"], dtype=object),
        authority=np.array(cols["authority"], dtype=np.float64),
        created_at=np.array(cols["created_at"]), valid_from=valid_from, valid_to=valid_to,
        depends_on=depends, supersedes=supersedes, index_of=index_of,
    )


def load_qrels(path: Path) -> dict[str, list[tuple[str, int]]]:
    if not path.is_file():
        raise BenchError(f"{path}: file is missing")
    out: dict[str, list[tuple[str, int]]] = {}
    with path.open(encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if header != ["query-id", "corpus-id", "score"]:
            raise BenchError(f"{path}:1: header must be 'query-id<TAB>corpus-id<TAB>score'")
        for lineno, line in enumerate(fh, 2):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                raise BenchError(f"{path}:{lineno}: expected 3 tab-separated fields, got {len(parts)}")
            try:
                score = int(parts[2])
            except ValueError:
                raise BenchError(f"{path}:{lineno}: score {parts[2]!r} is not an integer") from None
            out.setdefault(parts[0], []).append((parts[1], score))
    return out


def load_queries(path: Path, corpus: Corpus, qrels: dict[str, dict[str, list[tuple[str, int]]]]) -> Queries:
    rows = read_jsonl(path)
    ids, texts = [], []
    cols: dict[str, list] = {k: [] for k in QUERY_META}
    seen: set[str] = set()
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        qid = _need(obj, "_id", where, str)
        if qid in seen:
            raise BenchError(f"{where}: duplicate _id {qid!r}")
        seen.add(qid)
        ids.append(qid)
        texts.append(_need(obj, "text", where, str))
        meta = _need(obj, "metadata", where, dict)
        cols["query_time"].append(_time(meta, "query_time", where))
        cols["as_of"].append(_time(meta, "as_of", where))
        category = _need(meta, "category", where + " metadata", str)
        if category not in CATEGORIES:
            raise BenchError(f"{where}: 'metadata.category' is {category!r}; allowed: {', '.join(CATEGORIES)}")
        cols["category"].append(category)
        split = _need(meta, "split", where + " metadata", str)
        if split not in SPLITS:
            raise BenchError(f"{where}: 'metadata.split' is {split!r}; allowed: {', '.join(SPLITS)}")
        cols["split"].append(split)
        gold = _need(meta, "gold", where + " metadata", str)
        if gold not in corpus.index_of:
            raise BenchError(f"{where}: 'metadata.gold' refers to unknown chunk id {gold!r}")
        cols["gold"].append(corpus.index_of[gold])
        judged = qrels[split].get(qid)
        if judged != [(gold, 1)]:
            raise BenchError(f"{where}: qrels/{split}.tsv must list exactly ({qid}, {gold}, 1) for this query, "
                             f"found {judged}")
        for key in ("stale", "rumor"):
            refs = _need(meta, key, where + " metadata", list)
            for ref in refs:
                if ref not in corpus.index_of:
                    raise BenchError(f"{where}: 'metadata.{key}' refers to unknown chunk id {ref!r}")
            cols[key].append([corpus.index_of[r] for r in refs])
    for split in SPLITS:
        extra = sorted(set(qrels[split]) - seen)
        if extra:
            raise BenchError(f"qrels/{split}.tsv judges query {extra[0]!r} that queries.jsonl does not have")
    return Queries(
        ids=ids, texts=texts, query_time=np.array(cols["query_time"]), as_of=np.array(cols["as_of"]),
        category=np.array(cols["category"], dtype=object), split=np.array(cols["split"], dtype=object),
        gold=np.array(cols["gold"], dtype=np.int64), stale=Ragged.from_lists(cols["stale"]),
        rumor=Ragged.from_lists(cols["rumor"]),
    )


def dataset_sha256(file_hashes: dict[str, str]) -> str:
    """Hash of the whole dataset: sha256 over sorted ``relative/path  sha256`` lines."""
    lines = "".join(f"{name}  {digest}\n" for name, digest in sorted(file_hashes.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


DATA_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv")


def load_dataset(path: str | Path) -> Dataset:
    root = Path(path)
    if not root.is_dir():
        raise BenchError(f"dataset.path={path}: no such folder")
    hashes = {}
    for name in DATA_FILES:
        if not (root / name).is_file():
            raise BenchError(f"{root / name}: file is missing (a dataset folder needs {', '.join(DATA_FILES)})")
        hashes[name] = file_sha256(root / name)
    manifest = None
    if (root / "manifest.json").is_file():
        try:
            manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BenchError(f"{root / 'manifest.json'}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        for name, digest in hashes.items():
            recorded = manifest.get("files", {}).get(name, {}).get("sha256")
            if recorded is not None and recorded != digest:
                raise BenchError(f"{root / name}: sha256 differs from manifest.json (file edited after generation?)")
    corpus = load_corpus(root / "corpus.jsonl")
    qrels = {s: load_qrels(root / "qrels" / f"{s}.tsv") for s in SPLITS}
    queries = load_queries(root / "queries.jsonl", corpus, qrels)
    seed = manifest.get("config", {}).get("seed") if manifest else None
    return Dataset(path=root, corpus=corpus, queries=queries, sha256=dataset_sha256(hashes), seed=seed,
                   manifest=manifest)
