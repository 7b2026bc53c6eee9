"""Load a BEIR-layout dataset folder (and, when present, its ``labels/``) into columnar arrays, validating as it goes.

Layout: ``corpus.jsonl`` (``_id``, ``title``, ``text``, ``metadata`` with the fields of :data:`CORPUS_META`),
``queries.jsonl`` (``_id``, ``text``, ``metadata`` with :data:`QUERY_META`), graded ``qrels/{dev,test}.tsv``
(score >= 1 is relevant; every query needs one) and, when the folder came from ``smartvector-gen``,
``manifest.json`` and ``labels/`` (:data:`LABEL_FILES`; see :mod:`smartvector_bench.core.labels`). Nothing a
retriever reads names a chunk's family, kind or answer: those live in ``labels/``, for the evaluator only.
Every error is a :class:`BenchError` whose one-line message names the file and line it comes from (or the
file, for file-level problems, with the fix); nothing is ever written into the folder. With a ``manifest.json``
every file it lists is checked against its sha256 before anything is parsed.

The module is long (about 800 lines) because it is the boundary for untrusted input: each field's check sits
beside the parser of its file so the message can name the line, and the manifest, encoding and permission
checks come from the loader fuzz tests (tests/test_fuzz_loader.py). Moving the manifest checks and the
per-file readers into modules of their own belongs with the package layout (issue 16).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.labels import DOC_TYPES, KINDS, Timeline
from smartvector_bench.core.timeutil import parse_iso, to_days

SPLITS = ("dev", "test")
# Dataset layouts this loader reads: 2.0 (every field required, five categories) and 2.1, its superset
# (optional fields with defaults, free-form categories, optional qrels and labels files): schema/dataset.schema.json.
DATASET_SCHEMA_VERSIONS = (SCHEMA_VERSION, "2.1")
CATEGORIES = ("current", "recently_updated", "contested", "dependent", "historical")
# What a document store holds about a chunk; nothing here says which chunk answers what (that is in labels/).
CORPUS_META = ("doc_id", "version", "source", "authority", "created_at", "valid_from", "valid_to", "depends_on",
               "supersedes", "offset_start", "offset_end")
QUERY_META = ("query_time", "as_of", "category", "split")
QUERY_DEFAULTS = {"query_time": "as_of, else the corpus's latest time", "as_of": "query_time",
                  "category": "all", "split": "its qrels file's split, else assigned (SplitSettings)"}
LABEL_FILES = ("labels/chunks.jsonl", "labels/queries.jsonl", "labels/families.jsonl")
# What a missing corpus field means (schema/dataset.schema.json says the same). doc_id defaults to the chunk's
# own _id; created_at and valid_from stand in for each other, and with neither the chunk is in force for all time.
CORPUS_DEFAULTS = {"doc_id": "<the chunk's _id>", "version": 1, "source": "unknown", "authority": 1.0,
                   "created_at": "valid_from, else for all time", "valid_from": "created_at, else for all time",
                   "valid_to": None, "depends_on": [], "supersedes": None, "offset_start": 0,
                   "offset_end": "offset_start + len(text)"}


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
    # The metadata fields every row of the file gave; the others hold their documented defaults (a plain BEIR
    # folder has none). A system that needs a field checks it here, before anything is embedded.
    present: frozenset[str] = frozenset(CORPUS_META)

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
    split_assignment: dict | None = None  # how queries without a split got one (load_queries), for metrics.json


# ------------------------------------------------------------------------------------------ reading files
#
# The contract for bad input: a BenchError whose one-line message starts with the file (and line, where one
# applies) and says what is wrong; never another exception, and nothing is ever written into the folder.

MAX_INT = 2**53 - 1  # the largest integer every JSON reader holds exactly: bounds versions, offsets, values
_MISSING = object()
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SCORE = re.compile(r"[0-9]{1,9}")
_FIX = "regenerate the dataset with smartvector-gen, or delete manifest.json to load the folder unchecked"


def _show(value, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters: one line, whatever the value holds."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind_of(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _stat(path: Path) -> str:
    """``file``, ``dir``, ``other`` (FIFO, socket, device: never opened) or ``missing`` (also a broken link)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except (OSError, ValueError) as exc:
        raise BenchError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc}); "
                         "check the permissions of its folder") from None
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def _read_bytes(path: Path, needs: str) -> bytes:
    """The bytes of a file the dataset needs; ``needs`` says what the folder must hold (for the message)."""
    kind = _stat(path)
    if kind == "missing":
        if path.is_symlink():
            raise BenchError(f"{path}: is a broken symbolic link; {needs}")
        raise BenchError(f"{path}: file is missing; {needs}")
    if kind == "dir":
        raise BenchError(f"{path}: is a folder, not a file; {needs}")
    if kind == "other":
        raise BenchError(f"{path}: is not a regular file (a FIFO, socket or device?); {needs}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BenchError(f"{path}: cannot be read ({exc.strerror or exc}); check its permissions") from None


def _decode(path: Path, data: bytes) -> str:
    """UTF-8 text (no byte-order mark, no NUL)."""
    if data.startswith(codecs.BOM_UTF8):
        raise BenchError(f"{path}: starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM")
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        raise BenchError(f"{path}: is UTF-16 encoded; save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BenchError(f"{path}: not valid UTF-8 at line {line} (byte {exc.start}); save it as UTF-8") from None
    nul = text.find("\0")
    if nul >= 0:
        raise BenchError(f"{path}:{text.count(chr(10), 0, nul) + 1}: contains a NUL byte (a binary or UTF-16 file?)")
    return text


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _parse_json(text: str):
    """Strict JSON: NaN, Infinity and numbers that overflow a float are errors (ValueError)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def _json_error(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg}, column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if "integer string conversion" in str(exc):
        return "an integer with thousands of digits"
    return str(exc)


def read_jsonl(path: Path, allow_empty: bool = False, text: str | None = None) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line of ``path`` (or of ``text``, its already-read content);
    errors name the file and line."""
    if text is None:
        text = _decode(path, _read_bytes(path, "the dataset folder needs it"))
    rows = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip(" \t\r"):
            continue
        try:
            obj = _parse_json(line)
        except (ValueError, RecursionError) as exc:
            raise BenchError(f"{path}:{lineno}: not valid JSON ({_json_error(exc)})") from None
        if not isinstance(obj, dict):
            raise BenchError(f"{path}:{lineno}: expected a JSON object, got {_kind_of(obj)}")
        rows.append((lineno, obj))
    if not rows and not allow_empty:
        raise BenchError(f"{path}: file is empty (it needs one JSON object per line)")
    return rows


# ----------------------------------------------------------------------------------------- checking fields

_TYPE_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "an object", (int, float): "a number"}


def _need(obj: dict, key: str, where: str, kind: type | tuple[type, ...], prefix: str = ""):
    """``obj[key]`` of type ``kind`` (a bool is no number); ``prefix`` names the enclosing object."""
    name = prefix + key
    if key not in obj:
        raise BenchError(f"{where}: missing key {name!r}")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise BenchError(f"{where}: {name!r} must be {_TYPE_NAMES.get(kind, kind)}, got {_kind_of(value)}")
    return value


def _ident(obj: dict, key: str, where: str) -> str:
    """An id: a non-empty string that fits a qrels field (no tab or line break)."""
    value = _need(obj, key, where, str)
    if not value or any(c in value for c in "\t\n\r"):
        raise BenchError(f"{where}: {key!r} must be a non-empty string without tabs or line breaks, got "
                         f"{_show(value)}")
    return value


def _int(meta: dict, key: str, where: str, default=_MISSING, prefix: str = "metadata.") -> int:
    value = meta.get(key, default)
    if value is _MISSING:
        raise BenchError(f"{where}: missing key '{prefix}{key}'")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_INT:
        raise BenchError(f"{where}: '{prefix}{key}' must be an integer in [0, 2^53), got {_show(value)}")
    return value


def _number(value, where: str, name: str, nullable: bool = False) -> float:
    """A finite number (NaN for null where ``nullable``)."""
    if value is None and nullable:
        return np.nan
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise BenchError(f"{where}: {name!r} must be a number{' or null' if nullable else ''}, got {_kind_of(value)}")
    if not -MAX_INT <= value <= MAX_INT:
        raise BenchError(f"{where}: {name!r} is {_show(value)}; values must be within +-2^53")
    return float(value)


def _iso(value, where: str, name: str) -> float:
    """An ISO-8601 timestamp with a timezone, as days since the epoch."""
    example = "e.g. 2024-01-31T00:00:00Z"
    if not isinstance(value, str):
        raise BenchError(f"{where}: {name!r} must be an ISO-8601 UTC string ({example}), got {_kind_of(value)}")
    if not value.isascii() or not value.isprintable() or value != value.strip():
        raise BenchError(f"{where}: {name!r} is {_show(value)}, not an ISO-8601 timestamp ({example})")
    try:
        return to_days(parse_iso(value))
    except ValueError as exc:
        reason = str(exc)
        if reason.startswith("Invalid isoformat"):
            raise BenchError(f"{where}: {name!r} is {_show(value)}, not an ISO-8601 timestamp ({example})") from None
        raise BenchError(f"{where}: {name!r} {reason}" if "timestamp" in reason else
                         f"{where}: {name!r} is {_show(value)}: {reason}") from None
    except OverflowError:
        raise BenchError(f"{where}: {name!r} is {_show(value)}, out of range once converted to UTC") from None


def _time(meta: dict, key: str, where: str, nullable: bool = False) -> float:
    if key not in meta:
        raise BenchError(f"{where}: missing key 'metadata.{key}'")
    value = meta[key]
    if value is None and nullable:
        return np.inf
    return _iso(value, where, f"metadata.{key}")


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------------------------ corpus


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
        cid = _ident(obj, "_id", where)
        if cid in index_of:
            raise BenchError(f"{where}: duplicate _id {cid!r} (first on line {rows[index_of[cid]][0]})")
        index_of[cid] = len(ids)
        ids.append(cid)
        title = obj.get("title")
        if title is not None and not isinstance(title, str):
            raise BenchError(f"{where}: 'title' must be a string or null, got {_kind_of(title)}")
        titles.append(title or "")
        text_ = _need(obj, "text", where, str)
        texts.append(text_)
        meta = _need(obj, "metadata", where, dict) if "metadata" in obj else {}
        for key in CORPUS_META:
            given[key] += key in meta
        for key in ("doc_id", "source"):
            cols[key].append(_need(meta, key, where, str, prefix="metadata.") if key in meta else
                             cid if key == "doc_id" else CORPUS_DEFAULTS[key])
        cols["version"].append(_int(meta, "version", where, default=CORPUS_DEFAULTS["version"]))
        authority = (_need(meta, "authority", where, (int, float), prefix="metadata.") if "authority" in meta
                     else CORPUS_DEFAULTS["authority"])
        if not 0.0 <= authority <= 1.0:
            raise BenchError(f"{where}: 'metadata.authority' must be in [0, 1], got {_show(authority)}")
        cols["authority"].append(float(authority))
        created = _time(meta, "created_at", where) if "created_at" in meta else None
        valid_from = _time(meta, "valid_from", where) if "valid_from" in meta else None
        # A chunk with neither time is stored and in force for all time (a plain BEIR corpus).
        cols["created_at"].append(created if created is not None else valid_from if valid_from is not None
                                  else -np.inf)
        cols["valid_from"].append(valid_from if valid_from is not None else created if created is not None
                                  else -np.inf)
        cols["valid_to"].append(_time(meta, "valid_to", where, nullable=True) if "valid_to" in meta else np.inf)
        cols["depends_on"].append((lineno, _need(meta, "depends_on", where, list, prefix="metadata.")
                                   if "depends_on" in meta else []))
        sup = meta.get("supersedes")
        if sup is not None and not isinstance(sup, str):
            raise BenchError(f"{where}: 'metadata.supersedes' must be a chunk id or null, got {_kind_of(sup)}")
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
            raise BenchError(f"{path}:{lineno}: 'metadata.{key}' refers to unknown chunk id {_show(ref)}")
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


# ---------------------------------------------------------------------------------------- qrels, queries


def load_qrels(path: Path, text: str | None = None) -> dict[str, list[tuple[str, int, int]]]:
    """``{query id: [(corpus id, grade, line), ...]}`` in file order; BEIR header, integer grades >= 0."""
    if text is None:
        text = _decode(path, _read_bytes(path, "a dataset folder needs qrels/dev.tsv and qrels/test.tsv"))
    lines = text.split("\n")
    if lines[0].removesuffix("\r").split("\t") != ["query-id", "corpus-id", "score"]:
        raise BenchError(f"{path}:1: header must be 'query-id<TAB>corpus-id<TAB>score', got {_show(lines[0])}")
    out: dict[str, list[tuple[str, int, int]]] = {}
    first: dict[tuple[str, str], int] = {}
    for lineno, line in enumerate(lines[1:], 2):
        line = line.removesuffix("\r")
        if not line.strip(" \t"):
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise BenchError(f"{path}:{lineno}: expected 3 tab-separated fields (query-id, corpus-id, score), "
                             f"got {len(parts)}")
        qid, cid, score = parts
        if not qid or not cid:
            raise BenchError(f"{path}:{lineno}: empty {'query-id' if not qid else 'corpus-id'}")
        if not _SCORE.fullmatch(score):
            if re.fullmatch(r"-[0-9]+", score):
                raise BenchError(f"{path}:{lineno}: score {score} must be >= 0")
            raise BenchError(f"{path}:{lineno}: score {_show(score)} is not an integer (0, 1, 2, ...)")
        if (qid, cid) in first:
            raise BenchError(f"{path}:{lineno}: ({qid}, {cid}) is judged twice (first on line {first[qid, cid]})")
        first[qid, cid] = lineno
        out.setdefault(qid, []).append((cid, int(score), lineno))
    return out


def _id_list(meta: dict, key: str, where: str, corpus: Corpus) -> list[int]:
    refs = _need(meta, key, where, list)
    for ref in refs:
        if not isinstance(ref, str) or ref not in corpus.index_of:
            raise BenchError(f"{where}: '{key}' refers to unknown chunk id {_show(ref)}")
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


def load_queries(path: Path, corpus: Corpus, qrels: dict[str, dict[str, list[tuple[str, int, int]]]],
                 text: str | None = None, qrels_paths: dict[str, Path] | None = None,
                 split: SplitSettings | None = None) -> tuple[Queries, dict | None, set[str]]:
    """Queries and their judgments. Every metadata field is optional (:data:`QUERY_DEFAULTS`). A query without
    ``metadata.split`` takes the split of the qrels file that judges it when the folder has both dev and test
    qrels; otherwise a seeded split grouped by the document of its best-graded relevant chunk is assigned (the
    second value returned records how, ``None`` when nothing was assigned). A query without a split that no
    qrels file judges is left out (the third value: their ids) (a BEIR queries.jsonl lists every split's queries); one with a split must
    have a relevant chunk in its split's file."""
    rows = read_jsonl(path, text=text)
    qpaths = qrels_paths or {s: Path("qrels") / f"{s}.tsv" for s in qrels}
    ids, texts = [], []
    cols: dict[str, list] = {k: [] for k in QUERY_META}
    line_of: dict[str, int] = {}
    finite = np.concatenate([corpus.created_at, corpus.valid_from, corpus.valid_to])
    finite = finite[np.isfinite(finite)]
    default_time = float(finite.max()) if len(finite) else 0.0
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        qid = _ident(obj, "_id", where)
        if qid in line_of:
            raise BenchError(f"{where}: duplicate _id {qid!r} (first on line {line_of[qid]})")
        line_of[qid] = lineno
        ids.append(qid)
        texts.append(_need(obj, "text", where, str))
        meta = _need(obj, "metadata", where, dict) if "metadata" in obj else {}
        query_time = _time(meta, "query_time", where) if "query_time" in meta else None
        as_of = _time(meta, "as_of", where) if "as_of" in meta else None
        query_time = query_time if query_time is not None else as_of if as_of is not None else default_time
        cols["query_time"].append(query_time)
        cols["as_of"].append(as_of if as_of is not None else query_time)
        if "category" in meta:
            category = _need(meta, "category", where, str, prefix="metadata.")
            if not category.strip() or any(c in category for c in "\t\n\r"):
                raise BenchError(f"{where}: 'metadata.category' is {_show(category)}; it must be a non-empty name "
                                 "without tabs or line breaks (e.g. current, historical)")
        else:
            category = QUERY_DEFAULTS["category"]
        cols["category"].append(category)
        if "split" in meta:
            split_ = _need(meta, "split", where, str, prefix="metadata.")
            if split_ not in SPLITS:
                raise BenchError(f"{where}: 'metadata.split' is {_show(split_)}; allowed: {', '.join(SPLITS)}")
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
        family=np.array(kept_ids, dtype=object),
    ), assignment, set(ids) - set(kept_ids)


# ------------------------------------------------------------------------------------------------ labels


def load_labels(root: Path, corpus: Corpus, queries: Queries, texts: dict[str, str] | None = None,
                dropped: set[str] | None = None) -> Labels:
    """Read ``labels/`` (families, chunks, queries: each file optional, and every field but ``_id`` optional:
    schema/dataset.schema.json); fills ``queries.stale``, ``rumor`` and ``family``. ``texts`` holds the files'
    already-read content, by relative name; ``dropped`` the query ids the loader left out (judged nowhere)."""
    texts = texts or {}
    present = {name for name in LABEL_FILES if name in texts or _stat(root / name) != "missing"}

    def rows_of(name: str) -> tuple[Path, list[tuple[int, dict]]]:
        path = root / name
        return path, read_jsonl(path, text=texts.get(name))

    path, rows = rows_of("labels/families.jsonl") if "labels/families.jsonl" in present else (None, [])
    timelines: dict[str, Timeline] = {}
    line_of: dict[str, int] = {}
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        key = _need(obj, "family", where, str)
        if not key:
            raise BenchError(f"{where}: 'family' must be a non-empty string")
        if key in timelines:
            raise BenchError(f"{where}: family {key!r} is listed twice (first on line {line_of[key]})")
        line_of[key] = lineno
        steps = _need(obj, "timeline", where, list)
        if not steps:
            raise BenchError(f"{where}: 'timeline' must be a non-empty list of {{effective_from, value}}")
        eff, vals = [], []
        for k, step in enumerate(steps):
            if not isinstance(step, dict):
                raise BenchError(f"{where}: 'timeline[{k}]' must be an object {{effective_from, value}}, got "
                                 f"{_kind_of(step)}")
            for field_ in ("effective_from", "value"):
                if field_ not in step:
                    raise BenchError(f"{where}: 'timeline[{k}]' has no {field_!r}")
            eff.append(_iso(step["effective_from"], where, f"timeline[{k}].effective_from"))
            vals.append(_number(step["value"], where, f"timeline[{k}].value"))
        if any(b <= a for a, b in zip(eff, eff[1:])):
            raise BenchError(f"{where}: 'timeline' effective dates must increase")
        timelines[key] = Timeline(np.array(eff, dtype=np.float64), np.array(vals, dtype=np.float64))

    path, rows = rows_of("labels/chunks.jsonl") if "labels/chunks.jsonl" in present else (None, [])
    n = len(corpus)
    family = np.full(n, "", dtype=object)
    doc_type = np.full(n, "", dtype=object)
    kind = np.full(n, "", dtype=object)
    value = np.full(n, np.nan)
    seen = np.zeros(n, dtype=bool)
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        cid = _need(obj, "_id", where, str)
        if cid not in corpus.index_of:
            raise BenchError(f"{where}: unknown chunk id {_show(cid)}")
        i = corpus.index_of[cid]
        if seen[i]:
            raise BenchError(f"{where}: chunk {cid!r} is labelled twice")
        seen[i] = True
        family[i] = _need(obj, "family", where, str) if "family" in obj else ""
        if family[i] and timelines and family[i] not in timelines:
            raise BenchError(f"{where}: family {_show(family[i])} is not in labels/families.jsonl")
        if "doc_type" in obj:
            doc_type[i] = _need(obj, "doc_type", where, str)
            if doc_type[i] not in DOC_TYPES:
                raise BenchError(f"{where}: 'doc_type' is {_show(doc_type[i])}; allowed: {', '.join(DOC_TYPES)}")
        if "kind" in obj:
            kind[i] = _need(obj, "kind", where, str)
            if kind[i] not in KINDS:
                raise BenchError(f"{where}: 'kind' is {_show(kind[i])}; allowed: {', '.join(KINDS)}")
        value[i] = _number(obj.get("value"), where, "value", nullable=True)
    if rows and not seen.all():
        raise BenchError(f"{path}: chunk {corpus.ids[int(np.argmin(seen))]!r} has no labels")

    path, rows = rows_of("labels/queries.jsonl") if "labels/queries.jsonl" in present else (None, [])
    q_index = {qid: i for i, qid in enumerate(queries.ids)}
    q_family = np.array(queries.ids, dtype=object)
    q_asks = np.full(len(queries), "", dtype=object)
    stale: list[list[int]] = [[] for _ in range(len(queries))]
    rumor: list[list[int]] = [[] for _ in range(len(queries))]
    done = np.zeros(len(queries), dtype=bool)
    for lineno, obj in rows:
        where = f"{path}:{lineno}"
        qid = _need(obj, "_id", where, str)
        if qid not in q_index:
            if dropped and qid in dropped:
                continue  # a query no qrels file judges (left out by load_queries)
            raise BenchError(f"{where}: unknown query id {_show(qid)}")
        i = q_index[qid]
        if done[i]:
            raise BenchError(f"{where}: query {qid!r} is labelled twice")
        done[i] = True
        if "family" in obj:
            q_family[i] = _need(obj, "family", where, str)
            if not q_family[i] or (timelines and q_family[i] not in timelines):
                raise BenchError(f"{where}: family {_show(q_family[i])} is not in labels/families.jsonl")
        if "asks" in obj:
            q_asks[i] = _need(obj, "asks", where, str)
            if q_asks[i] not in DOC_TYPES:
                raise BenchError(f"{where}: 'asks' is {_show(q_asks[i])}; allowed: {', '.join(DOC_TYPES)}")
        stale[i] = _id_list(obj, "stale", where, corpus) if "stale" in obj else []
        rumor[i] = _id_list(obj, "rumor", where, corpus) if "rumor" in obj else []
    if rows and not done.all():
        raise BenchError(f"{path}: query {queries.ids[int(np.argmin(done))]!r} has no labels")
    queries.stale = Ragged.from_lists(stale)
    queries.rumor = Ragged.from_lists(rumor)
    queries.family = q_family
    return Labels(chunk_family=family, chunk_doc_type=doc_type, chunk_kind=kind, chunk_value=value,
                  query_family=q_family, query_asks=q_asks, timelines=timelines)


# ---------------------------------------------------------------------------------------------- manifest


def dataset_sha256(file_hashes: dict[str, str]) -> str:
    """Hash of the whole dataset: sha256 over sorted ``relative/path  sha256`` lines."""
    lines = "".join(f"{name}  {digest}\n" for name, digest in sorted(file_hashes.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


DATA_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv")


def _entry_name(name: str) -> str:
    """A ``files`` key as the messages show it: as is when printable, else quoted."""
    return name if name.isprintable() and len(name) <= 100 else _show(name)


def _manifest_digest(entry, name: str, where: Path) -> tuple[str, int | None]:
    """A manifest's ``files`` entry: ``{"sha256": ..., "bytes": ...}`` (bytes optional) or a plain sha256 string."""
    label = _entry_name(name)
    digest = entry.get("sha256") if isinstance(entry, dict) else entry
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        raise BenchError(f"{where}: 'files.{label}' must be a sha256 string (64 lowercase hex digits) or "
                         f"{{\"sha256\": ..., \"bytes\": ...}}, got {_show(entry)}; {_FIX}")
    size = entry.get("bytes") if isinstance(entry, dict) else None
    if isinstance(entry, dict) and "bytes" in entry and (
            not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise BenchError(f"{where}: 'files.{label}.bytes' must be a non-negative integer, got {_show(size)}; {_FIX}")
    return digest, size


def _inside(name: str) -> bool:
    """A relative path inside the dataset folder (no absolute path, no ``..``, no empty part)."""
    parts = name.split("/")
    return bool(name) and name.isprintable() and "\\" not in name and all(p not in ("", ".", "..") for p in parts)


def _check_manifest(root: Path, raw: dict[str, bytes]) -> tuple[dict | None, int | None]:
    """Parse ``manifest.json`` (when present) and check every file it lists, and ``dataset_sha256``, against the
    bytes read (``raw``: the checked files). Returns the manifest and its seed."""
    mpath = root / "manifest.json"
    if _stat(mpath) == "missing" and not mpath.is_symlink():
        return None, None
    needs = f"manifest.json must be the generator's JSON manifest; {_FIX}"
    text = _decode(mpath, _read_bytes(mpath, needs))
    try:
        manifest = _parse_json(text)
    except json.JSONDecodeError as exc:
        raise BenchError(f"{mpath}:{exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise BenchError(f"{mpath}: not valid JSON ({_json_error(exc)})") from None
    if not isinstance(manifest, dict):
        raise BenchError(f"{mpath}: expected a JSON object, got {_kind_of(manifest)}; {_FIX}")
    if "files" not in manifest:
        raise BenchError(f"{mpath}: has no 'files' (the sha256 of every file); {_FIX}")
    files = manifest["files"]
    if not isinstance(files, dict):
        raise BenchError(f"{mpath}: 'files' must be an object of file name -> sha256, got {_kind_of(files)}; {_FIX}")
    recorded: dict[str, tuple[str, int | None]] = {}
    for name, entry in files.items():
        if not _inside(name):
            raise BenchError(f"{mpath}: 'files' names {_show(name)}, which is not a relative path inside the "
                             f"dataset folder; {_FIX}")
        recorded[name] = _manifest_digest(entry, name, mpath)
    version = manifest.get("schema_version", _MISSING)
    if version not in DATASET_SCHEMA_VERSIONS:
        got = "has no 'schema_version'" if version is _MISSING else f"'schema_version' is {_show(version)}"
        raise BenchError(f"{mpath}: {got}; this loader reads schema {' or '.join(DATASET_SCHEMA_VERSIONS)} "
                         "(regenerate the dataset with smartvector-gen)")

    def check(name: str, data: bytes) -> None:
        digest, size = recorded[name]
        if hashlib.sha256(data).hexdigest() != digest:
            raise BenchError(f"{root / name}: sha256 differs from manifest.json (file edited after generation?); "
                             f"{_FIX}")
        if size is not None and size != len(data):
            raise BenchError(f"{mpath}: 'files.{name}.bytes' is {size}, but the file has {len(data)} bytes; {_FIX}")

    for name, data in raw.items():
        if name not in recorded:
            raise BenchError(f"{mpath}: 'files' has no entry for {name}; {_FIX}")
        check(name, data)
    for name in sorted(set(recorded) - set(raw)):  # e.g. documents.jsonl / edits.jsonl of lvl_corpus
        check(name, _read_bytes(root / name, f"manifest.json lists it; {_FIX}"))
    want = manifest.get("dataset_sha256", _MISSING)
    if want is _MISSING:
        raise BenchError(f"{mpath}: has no 'dataset_sha256'; {_FIX}")
    if not isinstance(want, str) or not _SHA256.fullmatch(want):
        raise BenchError(f"{mpath}: 'dataset_sha256' must be a sha256 string (64 lowercase hex digits), got "
                         f"{_show(want)}; {_FIX}")
    if want != dataset_sha256({name: hashlib.sha256(data).hexdigest() for name, data in raw.items()}):
        raise BenchError(f"{mpath}: 'dataset_sha256' does not match the files (a file was added, removed or edited); "
                         f"{_FIX}")
    config = manifest.get("config", _MISSING)
    if config is _MISSING:
        return manifest, None
    if not isinstance(config, dict):
        raise BenchError(f"{mpath}: 'config' must be an object (the generator's parameters), got "
                         f"{_kind_of(config)}; {_FIX}")
    seed = config.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise BenchError(f"{mpath}: 'config.seed' must be an integer, got {_show(seed)}; {_FIX}")
    return manifest, seed


# ----------------------------------------------------------------------------------------------- dataset

_LAYOUT = ("a dataset folder holds corpus.jsonl, queries.jsonl, qrels/dev.tsv and/or qrels/test.tsv, and optionally "
           "labels/ and manifest.json (schema/dataset.schema.json)")


def load_dataset(path: str | Path, split: SplitSettings | None = None) -> Dataset:
    """Load and check a dataset folder. Bad input raises BenchError naming the file (and line); nothing is
    written. With a ``manifest.json``, every file it lists must match its sha256 first. ``split`` says how
    queries without a split get one (:func:`load_queries`)."""
    if not isinstance(path, (str, os.PathLike)):
        raise BenchError(f"dataset.path={_show(path)}: must be the path of a dataset folder")
    if not str(path).strip():
        raise BenchError(f"dataset.path={path}: is empty; give the dataset folder ({_LAYOUT})")
    if "\0" in str(path):
        raise BenchError(f"dataset.path={_show(str(path))}: contains a NUL character")
    root = Path(path)
    try:
        kind = _stat(root)
    except BenchError:
        raise BenchError(f"dataset.path={path}: cannot be read; check its permissions") from None
    if kind == "missing":
        raise BenchError(f"dataset.path={path}: does not exist")
    if kind == "file":
        raise BenchError(f"dataset.path={path}: is a file, not a dataset folder ({_LAYOUT})")
    if kind != "dir":
        raise BenchError(f"dataset.path={path}: is not a folder ({_LAYOUT})")
    for sub, fix in (("qrels", "qrels/ must be a folder holding dev.tsv and/or test.tsv"),
                     ("labels", "labels/ must be a folder holding chunks.jsonl, queries.jsonl and/or families.jsonl "
                                "(or be absent)")):
        if _stat(root / sub) not in ("dir", "missing"):
            raise BenchError(f"{root / sub}: is not a folder; {fix}")
    names = ["corpus.jsonl", "queries.jsonl"]
    qrels_names = [f"qrels/{s_}.tsv" for s_ in SPLITS if _stat(root / "qrels" / f"{s_}.tsv") != "missing"
                   or (root / "qrels" / f"{s_}.tsv").is_symlink()]
    if not qrels_names:
        raise BenchError(f"{root / 'qrels'}: has neither dev.tsv nor test.tsv; {_LAYOUT}")
    names += qrels_names
    raw = {name: _read_bytes(root / name, f"a dataset folder needs {', '.join(DATA_FILES)}") for name in names}
    has_labels = _stat(root / "labels") == "dir"
    if has_labels:
        label_names = [n for n in LABEL_FILES if _stat(root / n) != "missing" or (root / n).is_symlink()]
        if not label_names:
            raise BenchError(f"{root / 'labels'}: holds none of chunks.jsonl, queries.jsonl, families.jsonl "
                             "(remove labels/ to load the folder without labels)")
        for name in label_names:
            raw[name] = _read_bytes(root / name, "a labels/ file must be a readable file")
    manifest, seed = _check_manifest(root, raw)
    texts = {name: _decode(root / name, data) for name, data in raw.items()}
    corpus = load_corpus(root / "corpus.jsonl", texts["corpus.jsonl"])
    qpaths = {s_: root / "qrels" / f"{s_}.tsv" for s_ in SPLITS if f"qrels/{s_}.tsv" in raw}
    qrels = {s_: load_qrels(qpaths[s_], texts[f"qrels/{s_}.tsv"]) for s_ in qpaths}
    queries, assignment, dropped = load_queries(root / "queries.jsonl", corpus, qrels, texts["queries.jsonl"],
                                                qpaths, split=split)
    labels = load_labels(root, corpus, queries, texts, dropped=dropped) if has_labels else None
    hashes = {name: hashlib.sha256(data).hexdigest() for name, data in raw.items()}
    return Dataset(path=root, corpus=corpus, queries=queries, sha256=dataset_sha256(hashes), seed=seed,
                   manifest=manifest, labels=labels, split_assignment=assignment)

