"""Load a BEIR-layout dataset folder (and, when present, its ``labels/``) into columnar arrays, validating as it goes.

Layout: ``corpus.jsonl`` (``_id``, ``title``, ``text``, ``metadata`` with the fields of :data:`CORPUS_META`),
``queries.jsonl`` (``_id``, ``text``, ``metadata`` with :data:`QUERY_META`), graded ``qrels/{dev,test}.tsv``
(score >= 1 is relevant; every query needs one) and, when the folder came from ``smartvector-gen``,
``manifest.json`` and ``labels/`` (:data:`LABEL_FILES`; see :mod:`smartvector_bench.labels`). Nothing a
retriever reads names a chunk's family, kind or answer: those live in ``labels/``, for the evaluator only.
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
from .labels import DOC_TYPES, KINDS, Timeline
from .timeutil import iso_to_days

SPLITS = ("dev", "test")
CATEGORIES = ("current", "recently_updated", "contested", "dependent", "historical")
# What a document store holds about a chunk; nothing here says which chunk answers what (that is in labels/).
CORPUS_META = ("doc_id", "version", "source", "authority", "created_at", "valid_from", "valid_to", "depends_on",
               "supersedes", "offset_start", "offset_end")
QUERY_META = ("query_time", "as_of", "category", "split")
LABEL_FILES = ("labels/chunks.jsonl", "labels/queries.jsonl", "labels/families.jsonl")


@dataclass
class Corpus:
    """One row per chunk (vector): what a real document store has. Times are float days since the epoch; an
    open ``valid_to`` is +inf. ``offset_start`` / ``offset_end`` are the chunk's character span in its
    document version."""

    ids: list[str]
    titles: list[str]
    texts: list[str]
    doc_id: np.ndarray
    version: np.ndarray
    source: np.ndarray
    authority: np.ndarray
    created_at: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    depends_on: Ragged
    supersedes: np.ndarray  # index of the chunk this one replaces, -1 if none
    offset_start: np.ndarray
    offset_end: np.ndarray
    index_of: dict[str, int] = field(repr=False, default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def superseded_by(self) -> np.ndarray:
        """Index of the successor of each chunk (-1 if none); the inverse of ``supersedes``."""
        out = np.full(len(self), -1, dtype=np.int64)
        has = self.supersedes >= 0
        out[self.supersedes[has]] = np.nonzero(has)[0]
        return out

    def position(self) -> np.ndarray:
        """Rank of each chunk within its document version by ``offset_start`` (0 = first)."""
        key = np.array([f"{d}\0{v}" for d, v in zip(self.doc_id, self.version)], dtype=object)
        order = np.lexsort((self.offset_start, key))
        pos = np.zeros(len(self), dtype=np.int64)
        prev, rank = None, 0
        for i in order.tolist():
            rank = rank + 1 if key[i] == prev else 0
            pos[i], prev = rank, key[i]
        return pos


@dataclass
class Queries:
    """Queries with their judgments (evaluator side: retrievers only ever see texts and times).

    ``relevant`` row ``q`` lists the corpus rows judged relevant (qrels score >= 1), best grade first, with
    ``grades`` aligned; ``stale`` / ``rumor`` come from the labels (empty without labels); ``family`` is the
    cluster a query belongs to (its policy family; the query's own id when the dataset has no labels).
    """

    ids: list[str]
    texts: list[str]
    query_time: np.ndarray
    as_of: np.ndarray
    category: np.ndarray
    split: np.ndarray
    relevant: Ragged
    grades: Ragged
    stale: Ragged
    rumor: Ragged
    family: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def gold(self) -> np.ndarray:
        """One relevant chunk per query (the best-graded, then lowest row; -1 if none): for simulated users."""
        first = self.relevant.indptr[:-1]
        has = self.relevant.counts() > 0
        out = np.full(len(self), -1, dtype=np.int64)
        out[has] = self.relevant.indices[first[has]]
        return out

    def subset(self, mask: np.ndarray) -> "Queries":
        rows = np.nonzero(mask)[0]
        return Queries(
            ids=[self.ids[i] for i in rows], texts=[self.texts[i] for i in rows],
            query_time=self.query_time[rows], as_of=self.as_of[rows], category=self.category[rows],
            split=self.split[rows], relevant=self.relevant.take(rows), grades=self.grades.take(rows),
            stale=self.stale.take(rows), rumor=self.rumor.take(rows), family=self.family[rows],
        )


@dataclass
class Labels:
    """The generator's labels, aligned with the corpus rows and the queries (``labels/``)."""

    chunk_family: np.ndarray  # object; "" where a chunk belongs to no family
    chunk_doc_type: np.ndarray  # object: policy / runbook / message
    chunk_kind: np.ndarray  # object: statement / scope / procedure / ...
    chunk_value: np.ndarray  # float64; NaN where the chunk states no value
    query_family: np.ndarray  # object
    query_asks: np.ndarray  # object: the document type whose statement is authoritative for the query
    timelines: dict[str, Timeline]


@dataclass
class Dataset:
    path: Path
    corpus: Corpus
    queries: Queries
    sha256: str
    seed: int | None
    manifest: dict | None
    labels: Labels | None = None


def read_jsonl(path: Path, allow_empty: bool = False) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line; errors name the file and line."""
    if not path.is_file():
        raise BenchError(f"{path}: file is missing (a dataset folder needs corpus.jsonl, queries.jsonl, qrels/)")
    rows = []
    try:
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
    except UnicodeDecodeError as exc:
        raise BenchError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    if not rows and not allow_empty:
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
        text = _need(obj, "text", where, str)
        texts.append(text)
        meta = _need(obj, "metadata", where, dict)
        for key in ("doc_id", "source"):
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
        if sup == cid:
            raise BenchError(f"{where}: 'metadata.supersedes' names the chunk itself")
        cols["supersedes"].append((lineno, None if sup == "missing" else sup))
        start = meta.get("offset_start", 0)
        end = meta.get("offset_end", start + len(text))
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in (start, end)) or end < start:
            raise BenchError(f"{where}: 'metadata.offset_start' / 'offset_end' must be integers 0 <= start <= end")
        cols["offset_start"].append(start)
        cols["offset_end"].append(end)

    def resolve(lineno: int, ref: str, key: str) -> int:
        if not isinstance(ref, str) or ref not in index_of:
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
        doc_id=np.array(cols["doc_id"], dtype=object), version=np.array(cols["version"], dtype=np.int64),
        source=np.array(cols["source"], dtype=object), authority=np.array(cols["authority"], dtype=np.float64),
        created_at=np.array(cols["created_at"]), valid_from=valid_from, valid_to=valid_to,
        depends_on=depends, supersedes=supersedes, offset_start=np.array(cols["offset_start"], dtype=np.int64),
        offset_end=np.array(cols["offset_end"], dtype=np.int64), index_of=index_of,
    )


def load_qrels(path: Path) -> dict[str, list[tuple[str, int]]]:
    """``{query id: [(corpus id, grade), ...]}`` in file order; BEIR header, integer grades >= 0."""
    if not path.is_file():
        raise BenchError(f"{path}: file is missing")
    out: dict[str, list[tuple[str, int]]] = {}
    try:
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
                if score < 0:
                    raise BenchError(f"{path}:{lineno}: score {score} must be >= 0")
                if any(c == parts[1] for c, _ in out.get(parts[0], [])):
                    raise BenchError(f"{path}:{lineno}: ({parts[0]}, {parts[1]}) is judged twice")
                out.setdefault(parts[0], []).append((parts[1], score))
    except UnicodeDecodeError as exc:
        raise BenchError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    return out


def _id_list(meta: dict, key: str, where: str, corpus: Corpus) -> list[int]:
    refs = _need(meta, key, where, list)
    for ref in refs:
        if not isinstance(ref, str) or ref not in corpus.index_of:
            raise BenchError(f"{where}: '{key}' refers to unknown chunk id {ref!r}")
    return [corpus.index_of[r] for r in refs]


def load_queries(path: Path, corpus: Corpus, qrels: dict[str, dict[str, list[tuple[str, int]]]]) -> Queries:
    rows = read_jsonl(path)
    ids, texts = [], []
    cols: dict[str, list] = {k: [] for k in QUERY_META}
    relevant, grades = [], []
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
        judged = [(c, g) for c, g in qrels[split].get(qid, []) if g >= 1]
        if not judged:
            raise BenchError(f"{where}: qrels/{split}.tsv has no relevant chunk (score >= 1) for query {qid!r}")
        for cid, _ in judged:
            if cid not in corpus.index_of:
                raise BenchError(f"qrels/{split}.tsv: query {qid!r} judges unknown chunk id {cid!r}")
        judged.sort(key=lambda cg: (-cg[1], corpus.index_of[cg[0]]))
        relevant.append([corpus.index_of[c] for c, _ in judged])
        grades.append([g for _, g in judged])
    for split in SPLITS:
        extra = sorted(set(qrels[split]) - seen)
        if extra:
            raise BenchError(f"qrels/{split}.tsv judges query {extra[0]!r} that queries.jsonl does not have")
    n = len(ids)
    empty = Ragged.from_lists([[] for _ in range(n)])
    return Queries(
        ids=ids, texts=texts, query_time=np.array(cols["query_time"]), as_of=np.array(cols["as_of"]),
        category=np.array(cols["category"], dtype=object), split=np.array(cols["split"], dtype=object),
        relevant=Ragged.from_lists(relevant), grades=Ragged.from_lists(grades), stale=empty, rumor=empty,
        family=np.array(ids, dtype=object),
    )


def load_labels(root: Path, corpus: Corpus, queries: Queries) -> Labels:
    """Read ``labels/`` (chunks, queries, families); fills ``queries.stale``, ``rumor`` and ``family``."""
    chunk_rows = read_jsonl(root / "labels" / "chunks.jsonl")
    n = len(corpus)
    family = np.full(n, "", dtype=object)
    doc_type = np.full(n, "", dtype=object)
    kind = np.full(n, "", dtype=object)
    value = np.full(n, np.nan)
    seen = np.zeros(n, dtype=bool)
    path = root / "labels" / "chunks.jsonl"
    for lineno, obj in chunk_rows:
        where = f"{path}:{lineno}"
        cid = _need(obj, "_id", where, str)
        if cid not in corpus.index_of:
            raise BenchError(f"{where}: unknown chunk id {cid!r}")
        i = corpus.index_of[cid]
        if seen[i]:
            raise BenchError(f"{where}: chunk {cid!r} is labelled twice")
        seen[i] = True
        family[i] = _need(obj, "family", where, str)
        doc_type[i] = _need(obj, "doc_type", where, str)
        if doc_type[i] not in DOC_TYPES:
            raise BenchError(f"{where}: 'doc_type' is {doc_type[i]!r}; allowed: {', '.join(DOC_TYPES)}")
        kind[i] = _need(obj, "kind", where, str)
        if kind[i] not in KINDS:
            raise BenchError(f"{where}: 'kind' is {kind[i]!r}; allowed: {', '.join(KINDS)}")
        v = obj.get("value")
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            raise BenchError(f"{where}: 'value' must be a number or null")
        value[i] = np.nan if v is None else float(v)
    if not seen.all():
        raise BenchError(f"{path}: chunk {corpus.ids[int(np.argmin(seen))]!r} has no labels")

    path = root / "labels" / "families.jsonl"
    timelines: dict[str, Timeline] = {}
    for lineno, obj in read_jsonl(path):
        where = f"{path}:{lineno}"
        key = _need(obj, "family", where, str)
        steps = _need(obj, "timeline", where, list)
        try:
            eff = np.array([iso_to_days(s["effective_from"]) for s in steps], dtype=np.float64)
            vals = np.array([float(s["value"]) for s in steps], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise BenchError(f"{where}: 'timeline' must be a list of {{effective_from, value}} ({exc})") from None
        if len(eff) == 0 or np.any(np.diff(eff) <= 0):
            raise BenchError(f"{where}: 'timeline' must be non-empty with increasing effective dates")
        timelines[key] = Timeline(eff, vals)

    path = root / "labels" / "queries.jsonl"
    q_index = {qid: i for i, qid in enumerate(queries.ids)}
    q_family = np.full(len(queries), "", dtype=object)
    q_asks = np.full(len(queries), "policy", dtype=object)
    stale: list[list[int]] = [[] for _ in range(len(queries))]
    rumor: list[list[int]] = [[] for _ in range(len(queries))]
    done = np.zeros(len(queries), dtype=bool)
    for lineno, obj in read_jsonl(path):
        where = f"{path}:{lineno}"
        qid = _need(obj, "_id", where, str)
        if qid not in q_index:
            raise BenchError(f"{where}: unknown query id {qid!r}")
        i = q_index[qid]
        if done[i]:
            raise BenchError(f"{where}: query {qid!r} is labelled twice")
        done[i] = True
        q_family[i] = _need(obj, "family", where, str)
        if q_family[i] not in timelines:
            raise BenchError(f"{where}: family {q_family[i]!r} is not in labels/families.jsonl")
        q_asks[i] = _need(obj, "asks", where, str)
        stale[i] = _id_list(obj, "stale", where, corpus)
        rumor[i] = _id_list(obj, "rumor", where, corpus)
    if not done.all():
        raise BenchError(f"{path}: query {queries.ids[int(np.argmin(done))]!r} has no labels")
    queries.stale = Ragged.from_lists(stale)
    queries.rumor = Ragged.from_lists(rumor)
    queries.family = q_family
    return Labels(chunk_family=family, chunk_doc_type=doc_type, chunk_kind=kind, chunk_value=value,
                  query_family=q_family, query_asks=q_asks, timelines=timelines)


def dataset_sha256(file_hashes: dict[str, str]) -> str:
    """Hash of the whole dataset: sha256 over sorted ``relative/path  sha256`` lines."""
    lines = "".join(f"{name}  {digest}\n" for name, digest in sorted(file_hashes.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


DATA_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv")


def _manifest_digest(entry, name: str, where: Path) -> str | None:
    """A manifest's ``files`` entry: ``{"sha256": ...}`` or a plain sha256 string."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict):
        digest = entry.get("sha256")
        if digest is None or isinstance(digest, str):
            return digest
    raise BenchError(f"{where}: 'files.{name}' must be a sha256 string or {{\"sha256\": ...}}")


def load_dataset(path: str | Path) -> Dataset:
    root = Path(path)
    if not root.is_dir():
        raise BenchError(f"dataset.path={path}: no such folder")
    hashes = {}
    for name in DATA_FILES:
        if not (root / name).is_file():
            raise BenchError(f"{root / name}: file is missing (a dataset folder needs {', '.join(DATA_FILES)})")
        hashes[name] = file_sha256(root / name)
    has_labels = (root / "labels").is_dir()
    if has_labels:
        for name in LABEL_FILES:
            if not (root / name).is_file():
                raise BenchError(f"{root / name}: file is missing (a labels/ folder needs {', '.join(LABEL_FILES)})")
            hashes[name] = file_sha256(root / name)
    manifest = None
    mpath = root / "manifest.json"
    if mpath.is_file():
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BenchError(f"{mpath}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        except UnicodeDecodeError as exc:
            raise BenchError(f"{mpath}: not valid UTF-8 (byte {exc.start})") from None
        if not isinstance(manifest, dict):
            raise BenchError(f"{mpath}: expected a JSON object")
        files = manifest.get("files", {})
        if not isinstance(files, dict):
            raise BenchError(f"{mpath}: 'files' must be an object of file name -> sha256")
        for name, digest in hashes.items():
            recorded = _manifest_digest(files.get(name), name, mpath) if name in files else None
            if recorded is not None and recorded != digest:
                raise BenchError(f"{root / name}: sha256 differs from manifest.json (file edited after generation?)")
        recorded = manifest.get("dataset_sha256")
        if recorded is not None and recorded != dataset_sha256(hashes):
            raise BenchError(f"{mpath}: 'dataset_sha256' does not match the files (a file was added, removed or edited)")
    corpus = load_corpus(root / "corpus.jsonl")
    qrels = {s: load_qrels(root / "qrels" / f"{s}.tsv") for s in SPLITS}
    queries = load_queries(root / "queries.jsonl", corpus, qrels)
    labels = load_labels(root, corpus, queries) if has_labels else None
    seed = manifest.get("config", {}).get("seed") if manifest else None
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise BenchError(f"{mpath}: 'config.seed' must be an integer, got {seed!r}")
    return Dataset(path=root, corpus=corpus, queries=queries, sha256=dataset_sha256(hashes), seed=seed,
                   manifest=manifest, labels=labels)
