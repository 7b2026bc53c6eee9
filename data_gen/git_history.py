"""``dataset=git_history``: a versioned corpus from the history of Markdown files in any git repository.

Every first-parent commit (oldest first) that touches a file matching ``glob`` is a version of that document,
dated by its committer time (UTC). Each version is cut into paragraphs (blank-line separated, YAML front
matter stripped, fenced code blocks kept whole); the paragraph lists of consecutive versions are aligned
(:func:`align`), so a paragraph that survives a commit keeps its chunk and validity window, a changed
paragraph starts a new chunk of the same *lineage* that supersedes the old one, and a removed paragraph (or a
deleted file) closes its chunk's window. Queries are drawn, seeded, from lineages with at least two versions;
their text is built from the words that every version of the lineage shares, so only time tells the versions
apart. The method, every config key and what the queries are and are not: docs/git_history.md.

Plain functions: :func:`git_params_from_config` (validation), :func:`walk_history` (git -> chunks),
:func:`make_queries`, :func:`render_git_history` (all files as text) and :func:`write_git_history` (atomic
write, as ``data_gen.writer.write_dataset``). Nothing reads the wall clock: the same repository commit and
config give byte-identical files.

The module is long (about 850 lines) because it is one pipeline whose stages share its small records (commit,
document, chunk, lineage); splitting the stages into modules (history, paragraphs, alignment, queries) belongs
with the package layout of issue 16.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections import Counter, defaultdict, deque
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import numpy as np

from smartvector_bench.core import __version__
from smartvector_bench.core.dataset import dataset_sha256
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.labels import GRADE_AUTHORITATIVE
from smartvector_bench.core.provenance import git_sha, package_versions

from .splits import assign_family_splits

SCHEMA_VERSION = "2.1"  # the reduced labels (family / stale / rumor only, no families.jsonl)
GENERATOR = "git_history"
SOURCE = "git"
CATEGORIES = ("current", "historical", "recently_updated")
_SECONDS_PER_DAY = 86400


# ---------------------------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class QueryCounts:
    current: int = 150
    historical: int = 150
    recently_updated: int = 100


@dataclass(frozen=True)
class GitHistoryParams:
    repo: str | None = None
    glob: tuple[str, ...] = ("**/*.md",)
    rev: str = "HEAD"
    seed: int = 42
    rename_similarity: int = 50
    min_chars: int = 40
    max_chars: int = 1500
    keep_code_blocks: bool = True
    skip_headings: bool = True
    normalize_whitespace: bool = True
    pair_similarity: float = 0.5
    authority: float = 1.0
    queries: QueryCounts = field(default_factory=QueryCounts)
    recent_days: int = 90
    query_words: int = 12
    min_query_words: int = 4
    max_queries_per_document: int = 4
    test_fraction: float = 0.5

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["glob"] = list(self.glob)
        return {"name": GENERATOR, **d}


_NOT_KEYS = {"name", "path"}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def git_params_from_config(cfg: dict[str, Any]) -> GitHistoryParams:
    """Validate the ``dataset`` config of ``name: git_history``; every message names ``dataset.<key>``. The
    repository itself is checked when the dataset is built (a preset may leave ``repo`` null)."""
    allowed = set(GitHistoryParams.__dataclass_fields__) | _NOT_KEYS
    unknown = sorted(set(cfg) - allowed)
    if unknown:
        raise BenchError(f"dataset.{unknown[0]}: unknown key for git_history; allowed: {', '.join(sorted(allowed))}")
    d = {k: v for k, v in cfg.items() if k not in _NOT_KEYS}
    if isinstance(d.get("repo"), os.PathLike):
        d["repo"] = os.fspath(d["repo"])
    if d.get("repo") is not None and (not isinstance(d["repo"], str) or not d["repo"].strip()):
        raise BenchError(f"dataset.repo={d['repo']!r}: must be the path of a git repository")
    if "glob" in d:
        g = d["glob"]
        globs = [g] if isinstance(g, str) else g
        if (not isinstance(globs, (list, tuple)) or not globs
                or any(not isinstance(x, str) or not x.strip() for x in globs)):
            raise BenchError(f"dataset.glob={g!r}: must be a pattern or a non-empty list of patterns "
                             "(e.g. 'docs/**/*.md')")
        for x in globs:
            if x.startswith("/") or ".." in x.split("/") or x.startswith(":"):
                raise BenchError(f"dataset.glob={x!r}: patterns are relative to the repository root "
                                 "(no leading '/', no '..', no pathspec magic)")
        d["glob"] = tuple(globs)
    if "rev" in d and (not isinstance(d["rev"], str) or not d["rev"].strip() or d["rev"].startswith("-")):
        raise BenchError(f"dataset.rev={d['rev']!r}: must be a commit, branch or tag name")
    for key, low in (("seed", 0), ("min_chars", 1), ("max_chars", 0), ("recent_days", 0), ("query_words", 1),
                     ("min_query_words", 1), ("max_queries_per_document", 1)):
        if key in d and (not _is_int(d[key]) or d[key] < low):
            raise BenchError(f"dataset.{key}={d[key]}: must be an integer >= {low}")
    if "rename_similarity" in d and (not _is_int(d["rename_similarity"]) or not 1 <= d["rename_similarity"] <= 100):
        raise BenchError(f"dataset.rename_similarity={d['rename_similarity']}: must be an integer percentage "
                         "in [1, 100]")
    for key in ("pair_similarity", "authority", "test_fraction"):
        v = d.get(key)
        if key in d and not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0):
            raise BenchError(f"dataset.{key}={v}: must be a number in [0, 1]")
    if "test_fraction" in d and not 0.0 < d["test_fraction"] < 1.0:
        raise BenchError(f"dataset.test_fraction={d['test_fraction']}: must be strictly between 0 and 1 "
                         "(each split needs documents)")
    for key in ("keep_code_blocks", "skip_headings", "normalize_whitespace"):
        if key in d and not isinstance(d[key], bool):
            raise BenchError(f"dataset.{key}={d[key]!r}: must be true or false")
    max_chars = d.get("max_chars", GitHistoryParams.max_chars)
    min_chars = d.get("min_chars", GitHistoryParams.min_chars)
    if max_chars and max_chars < min_chars:
        raise BenchError(f"dataset.max_chars={max_chars}: must be 0 (no cut) or >= dataset.min_chars={min_chars}")
    min_words = d.get("min_query_words", GitHistoryParams.min_query_words)
    if min_words > d.get("query_words", GitHistoryParams.query_words):
        raise BenchError(f"dataset.min_query_words={min_words}: must be <= dataset.query_words")
    if "queries" in d:
        q = d["queries"]
        if not isinstance(q, dict):
            raise BenchError(f"dataset.queries={q!r}: must be a mapping of category: count")
        allowed_q = set(QueryCounts.__dataclass_fields__)
        for k, v in q.items():
            if k not in allowed_q:
                raise BenchError(f"dataset.queries.{k}: unknown key; allowed: {', '.join(sorted(allowed_q))}")
            if not _is_int(v) or v < 0:
                raise BenchError(f"dataset.queries.{k}={v}: must be an integer >= 0")
        d["queries"] = QueryCounts(**q)
    return GitHistoryParams(**d)


# -------------------------------------------------------------------------------------------------- git


def _git(repo: str, *args: str, key: str = "dataset.repo") -> str:
    try:
        out = subprocess.run(["git", "-C", repo, "-c", "log.showSignature=false", *args], capture_output=True,
                             check=True)
    except FileNotFoundError:
        raise BenchError("git: not found on PATH (dataset=git_history runs the git command)") from None
    except subprocess.CalledProcessError as exc:
        msg = exc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BenchError(f"{key}={repo}: git {args[0]} failed: {msg[-1] if msg else exc.returncode}") from None
    return out.stdout.decode("utf-8", "replace")


def resolve_repo(params: GitHistoryParams) -> tuple[str, str, int]:
    """(repository path, commit sha of ``rev``, its committer time in epoch seconds), or a one-line error."""
    repo = params.repo
    if repo is None:
        raise BenchError("dataset.repo: required; give the path of a git repository (dataset.repo=PATH)")
    if not Path(repo).is_dir():
        raise BenchError(f"dataset.repo={repo}: is not a folder")
    try:
        inside = subprocess.run(["git", "-C", repo, "rev-parse", "--git-dir"], capture_output=True)
    except FileNotFoundError:
        raise BenchError("git: not found on PATH (dataset=git_history runs the git command)") from None
    if inside.returncode != 0:
        raise BenchError(f"dataset.repo={repo}: not a git repository")
    try:
        sha = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{params.rev}^{{commit}}",
                   key="dataset.rev").strip()
    except BenchError:
        raise BenchError(f"dataset.rev={params.rev}: not a commit of {repo}") from None
    when = int(_git(repo, "show", "-s", "--format=%ct", sha).strip())
    return repo, sha, when


@dataclass(frozen=True)
class Change:
    status: str  # A, M, T, D or R
    old_path: str | None
    new_path: str | None
    new_blob: str | None  # None when the new side is not a regular file


@dataclass(frozen=True)
class Commit:
    sha: str
    time: int  # committer time, epoch seconds
    changes: tuple[Change, ...]


def read_log(repo: str, sha: str, params: GitHistoryParams) -> list[Commit]:
    """The first-parent history of ``sha`` (oldest first), limited to the files matching ``glob``, with
    renames (``-M<rename_similarity>%``) and the blob of each file's new version."""
    specs = [f":(top,glob){g}" for g in params.glob]
    out = _git(repo, "log", "--first-parent", "--reverse", "--diff-merges=first-parent", "--raw", "--no-abbrev",
               "-z", f"-M{params.rename_similarity}%", "--no-color", "--format=%x01%H %ct", sha, "--", *specs)
    commits = []
    for block in out.split("\x01")[1:]:
        header, _, rest = block.partition("\0")
        csha, ctime = header.strip().split()
        tokens = rest.split("\0")
        changes, k = [], 0
        while k < len(tokens):
            meta = tokens[k].lstrip("\n")
            if not meta.startswith(":"):
                k += 1
                continue
            _, new_mode, _, new_blob, status = meta[1:].split()
            letter = status[0]
            if letter in "RC":
                old, new = tokens[k + 1], tokens[k + 2]
                k += 3
            else:
                old = new = tokens[k + 1]
                k += 2
            regular = new_mode in ("100644", "100755")
            if letter == "C":  # not produced without -C; a copy is a new file
                letter, old = "A", None
            if letter == "D":
                changes.append(Change("D", old, None, None))
            elif letter == "R":
                changes.append(Change("R", old, new, new_blob if regular else None))
            elif letter == "A":
                if regular:
                    changes.append(Change("A", None, new, new_blob))
            else:  # M, T (and U, X: treated as modifications)
                changes.append(Change("M", old, new, new_blob if regular else None))
        commits.append(Commit(csha, int(ctime), tuple(changes)))
    return commits


class BlobReader:
    """Blob texts through one ``git cat-file --batch`` process (one request at a time, no deadlock)."""

    def __init__(self, repo: str):
        self._proc = subprocess.Popen(["git", "-C", repo, "cat-file", "--batch"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE)

    def text(self, blob: str) -> str:
        self._proc.stdin.write(blob.encode() + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().split()
        if len(header) != 3:
            raise BenchError(f"git cat-file: blob {blob} is missing ({b' '.join(header).decode()})")
        data = self._proc.stdout.read(int(header[2]))
        self._proc.stdout.read(1)
        return data.decode("utf-8", "replace")

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait()


# ----------------------------------------------------------------------------------------------- paragraphs

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n")


@dataclass(frozen=True)
class Unit:
    """One chunk-to-be of a document version: a paragraph (or a piece of a long one)."""

    text: str
    start: int  # character span in the version's text (line endings normalized to \n)
    end: int
    heading: str  # nearest Markdown heading at or above the unit ("" if none)


def strip_front_matter(text: str) -> int:
    """Offset where the body starts: after a leading YAML front matter block (``---`` ... ``---``/``...``)."""
    if not re.match(r"---[ \t]*\n", text):
        return 0
    m = re.compile(r"^(?:---|\.\.\.)[ \t]*$\n?", re.M).search(text, text.index("\n") + 1)
    return m.end() if m else 0


def _pieces(text: str, start: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut a paragraph longer than ``max_chars`` at sentence ends and line breaks into pieces of at most
    ``max_chars`` (greedy; a single sentence longer than that stays whole). Spans are absolute."""
    if not max_chars or len(text) <= max_chars:
        return [(start, start + len(text))]
    cuts = [m.end() for m in _SENTENCE_END.finditer(text)]
    segments, prev = [], 0
    for c in cuts + [len(text)]:
        if c > prev:
            segments.append((prev, c))
            prev = c
    out, cur_s, cur_e = [], None, None
    for s, e in segments:
        if cur_s is None:
            cur_s, cur_e = s, e
        elif e - cur_s > max_chars:
            out.append((cur_s, cur_e))
            cur_s, cur_e = s, e
        else:
            cur_e = e
    if cur_s is not None:
        out.append((cur_s, cur_e))
    spans = []
    for s, e in out:
        piece = text[s:e]
        lead = len(piece) - len(piece.lstrip())
        spans.append((start + s + lead, start + s + len(piece.rstrip())))
    return [(s, e) for s, e in spans if e > s]


def split_units(text: str, params: GitHistoryParams) -> list[Unit]:
    """Paragraphs of one version: runs of non-blank lines after the front matter (blank lines inside a fenced
    code block do not split it when ``keep_code_blocks``); heading-only paragraphs are dropped when
    ``skip_headings``; paragraphs longer than ``max_chars`` are cut at sentence ends; units shorter than
    ``min_chars`` are dropped. A unit's heading is the last ATX heading (``#`` .. ``######``) at or above its
    paragraph's first line. ``text`` must have ``\\n`` line endings."""
    units: list[Unit] = []
    heading = ""  # the last heading read so far
    para: list[tuple[int, str]] = []  # (offset, line) of the paragraph being read
    para_heading = ""
    fence: str | None = None

    def flush() -> None:
        if not para:
            return
        lines = [ln for _, ln in para]
        if not (params.skip_headings and all(_HEADING.match(ln) for ln in lines)):
            start = para[0][0] + len(lines[0]) - len(lines[0].lstrip())  # the first line's indent is not text
            end = para[-1][0] + len(para[-1][1].rstrip())
            for s, e in _pieces(text[start:end], start, params.max_chars):
                if e - s >= params.min_chars:
                    units.append(Unit(text[s:e], s, e, para_heading))
        para.clear()

    pos = strip_front_matter(text)
    while pos < len(text):
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl
        line = text[pos:end]
        pos = end + 1
        if fence is not None:  # inside a fenced code block: everything belongs to the paragraph
            para.append((end - len(line), line))
            fm = _FENCE.match(line)
            if fm and fm.group(1)[0] == fence[0] and len(fm.group(1)) >= len(fence) and \
                    not line.strip()[len(fm.group(1)):].strip():
                fence = None
            continue
        if not line.strip():
            flush()
            continue
        hm = _HEADING.match(line)
        if hm:
            heading = (hm.group(2) or "").strip()
        elif params.keep_code_blocks and _FENCE.match(line):
            fence = _FENCE.match(line).group(1)
        if not para:
            para_heading = heading
        para.append((end - len(line), line))
    flush()
    return units


# ---------------------------------------------------------------------------------------------- alignment

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z0-9]+)*")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _similarity(a: list[str], b: list[str], threshold: float) -> float:
    """Word-level ``SequenceMatcher.ratio`` (0 below ``threshold``, with the cheap upper bounds first)."""
    if not a and not b:
        return 1.0
    sm = SequenceMatcher(None, a, b, autojunk=False)
    if sm.real_quick_ratio() < threshold or sm.quick_ratio() < threshold:
        return 0.0
    r = sm.ratio()
    return r if r >= threshold else 0.0


def _pair_block(olds: list[int], news: list[int], old_tok: dict[int, list[str]], new_tok: dict[int, list[str]],
                threshold: float) -> list[tuple[int, int]]:
    """Order-preserving pairing of replaced paragraphs with the largest total similarity (>= threshold each)."""
    n, m = len(olds), len(news)
    if not n or not m:
        return []
    sim = [[_similarity(old_tok[i], new_tok[j], threshold) for j in news] for i in olds]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for a in range(1, n + 1):
        for b in range(1, m + 1):
            v = max(best[a - 1][b], best[a][b - 1])
            s = sim[a - 1][b - 1]
            if s > 0.0:
                v = max(v, best[a - 1][b - 1] + s)
            best[a][b] = v
    pairs, a, b = [], n, m
    while a and b:
        s = sim[a - 1][b - 1]
        if s > 0.0 and best[a][b] == best[a - 1][b - 1] + s:
            pairs.append((olds[a - 1], news[b - 1]))
            a, b = a - 1, b - 1
        elif best[a][b] == best[a - 1][b]:
            a -= 1
        else:
            b -= 1
    return pairs[::-1]


def align(old: list[str], new: list[str], threshold: float) -> tuple[dict[int, int], dict[int, int]]:
    """Match the paragraph keys of two versions: ``(kept, edited)``, each ``{new index: old index}``.

    ``SequenceMatcher`` over the paragraph lists gives the unchanged runs (kept). Among the rest, a new
    paragraph whose text equals a not yet matched old one (a moved paragraph) is kept too (first unmatched
    occurrence, in order). Inside each replaced region, the remaining old and new paragraphs are paired in
    order with the largest total word-level similarity, each pair at least ``threshold`` (edited). Old
    paragraphs left over are removed; new ones left over start new lineages."""
    sm = SequenceMatcher(None, old, new, autojunk=False)
    kept: dict[int, int] = {}
    blocks = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            kept.update({j1 + k: i1 + k for k in range(i2 - i1)})
        else:
            blocks.append((list(range(i1, i2)), list(range(j1, j2))))
    free_old: dict[str, deque[int]] = defaultdict(deque)
    for olds, _ in blocks:
        for i in olds:
            free_old[old[i]].append(i)
    moved_old: set[int] = set()
    for _, news in blocks:
        for j in news:
            if free_old.get(new[j]):
                i = free_old[new[j]].popleft()
                kept[j] = i
                moved_old.add(i)
    edited: dict[int, int] = {}
    for olds, news in blocks:
        o = [i for i in olds if i not in moved_old]
        n_ = [j for j in news if j not in kept]
        if o and n_:
            old_tok = {i: _tokens(old[i]) for i in o}
            new_tok = {j: _tokens(new[j]) for j in n_}
            for i, j in _pair_block(o, n_, old_tok, new_tok, max(threshold, 1e-9)):
                edited[j] = i
    return kept, edited


# ------------------------------------------------------------------------------------------------- history


@dataclass
class Chunk:
    id: str
    doc_id: str
    version: int
    path: str
    title: str
    text: str
    heading: str
    valid_from: int  # epoch seconds
    valid_to: int | None
    supersedes: str | None
    offset_start: int
    offset_end: int
    lineage: str


@dataclass
class Doc:
    doc_id: str
    path: str
    version: int = 0
    units: list[tuple[str, int]] = field(default_factory=list)  # (comparison key, chunk index)


@dataclass
class History:
    chunks: list[Chunk]
    lineages: dict[str, list[int]]  # lineage id -> chunk indices, oldest first
    head: str
    tip_time: int
    commits: int
    commits_clamped: int
    documents: int


def _hash_id(prefix: str, *parts: str, taken: set[str]) -> str:
    salt = 0
    while True:
        raw = "\0".join(parts) + (f"\0{salt}" if salt else "")
        cid = prefix + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]
        if cid not in taken:
            taken.add(cid)
            return cid
        salt += 1


def walk_history(params: GitHistoryParams, progress: bool | None = None) -> History:
    """Replay the first-parent history of the matching files into chunks with validity windows. ``repo`` may
    also be a ``git bundle`` file (``*.bundle``): it is cloned (bare) into a temporary folder for the walk."""
    repo = params.repo
    if isinstance(repo, str) and repo.endswith(".bundle") and Path(repo).is_file():
        with tempfile.TemporaryDirectory(prefix="svb-git-") as tmp:
            try:
                subprocess.run(["git", "clone", "-q", "--bare", repo, f"{tmp}/repo"], check=True,
                               capture_output=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                err = (getattr(exc, "stderr", b"") or b"").decode(errors="replace").strip().splitlines()
                raise BenchError(f"dataset.repo={repo}: git clone of the bundle failed"
                                 f"{': ' + err[-1] if err else ''}") from None
            return _walk_history(replace(params, repo=f"{tmp}/repo"), progress)
    return _walk_history(params, progress)


def _walk_history(params: GitHistoryParams, progress: bool | None = None) -> History:
    from tqdm import tqdm

    repo, head, head_time = resolve_repo(params)
    commits = read_log(repo, head, params)
    if not commits:
        raise BenchError(f"dataset.glob={list(params.glob)}: matches no file in the history of {params.rev} "
                         f"in {repo} (patterns are relative to the repository root, e.g. 'docs/**/*.md')")
    chunks: list[Chunk] = []
    lineages: dict[str, list[int]] = {}
    taken: set[str] = set()
    active: dict[str, Doc] = {}
    n_docs = 0
    key_of = (lambda s: " ".join(s.split())) if params.normalize_whitespace else (lambda s: s)
    blobs = BlobReader(repo)
    clamped, last_t = 0, None

    def update(doc: Doc, blob: str | None, commit: Commit, t: int) -> None:
        doc.version += 1
        text = blobs.text(blob).replace("\r\n", "\n").replace("\r", "\n") if blob else ""
        units = split_units(text, params)
        new_keys = [key_of(u.text) for u in units]
        kept, edited = align([k for k, _ in doc.units], new_keys, params.pair_similarity)
        closed = set(range(len(doc.units))) - set(kept.values())
        new_units = []
        for j, u in enumerate(units):
            if j in kept:
                new_units.append((new_keys[j], doc.units[kept[j]][1]))
                continue
            cid = _hash_id("c", commit.sha, doc.doc_id, str(j), taken=taken)
            if j in edited:
                prev = chunks[doc.units[edited[j]][1]]
                lineage, sup = prev.lineage, prev.id
            else:
                lineage, sup = _hash_id("f", cid, taken=taken), None
                lineages[lineage] = []
            title = f"{doc.path}: {u.heading}" if u.heading else doc.path
            chunks.append(Chunk(cid, doc.doc_id, doc.version, doc.path, title, u.text, u.heading, t, None, sup,
                                u.start, u.end, lineage))
            lineages[lineage].append(len(chunks) - 1)
            new_units.append((new_keys[j], len(chunks) - 1))
        for i in closed:
            chunks[doc.units[i][1]].valid_to = t
        doc.units = new_units

    def close(doc: Doc, t: int) -> None:
        for _, ci in doc.units:
            chunks[ci].valid_to = t
        doc.units = []

    try:
        for commit in tqdm(commits, desc="commits", unit="commit", disable=(None if progress is None
                                                                            else not progress)):
            # Strictly increasing times along the walk (committer times can repeat or go back after a rebase).
            t = commit.time if last_t is None or commit.time > last_t else last_t + 1
            clamped += t != commit.time
            last_t = t
            sources: dict[str, Doc | None] = {}
            for ch in commit.changes:
                if ch.status in ("D", "R"):
                    sources[ch.old_path] = active.pop(ch.old_path, None)
            for ch in commit.changes:
                if ch.status == "D":
                    doc = sources.get(ch.old_path)
                    if doc is not None:
                        close(doc, t)
                    continue
                doc = sources.get(ch.old_path) if ch.status == "R" else active.get(ch.new_path)
                if ch.new_blob is None:  # the file became a symlink / submodule: the document ends
                    if doc is not None:
                        active.pop(ch.new_path, None)
                        close(doc, t)
                    continue
                if doc is None:
                    n_docs += 1
                    doc = Doc(_hash_id("d", commit.sha, ch.new_path, taken=taken), ch.new_path)
                doc.path = ch.new_path
                active[ch.new_path] = doc
                update(doc, ch.new_blob, commit, t)
    finally:
        blobs.close()
    tip = max(head_time, last_t)
    return History(chunks, lineages, head, tip, len(commits), clamped, n_docs)


# ------------------------------------------------------------------------------------------------- queries

# Function words and Markdown / web debris that carry no topic (never used as query words).
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her here
hers him his how if in into is it its itself just may me might more most must my no nor not now of off on once
only or other our ours out over own same shall she should so some such than that the their theirs them then
there these they this those through to too under until up upon very was we were what when where which while who
whom why will with would you your yours yourself etc via per get got use used using make made one two also
http https www com org gov html htm md png jpg svg pdf href src url link links img div span class id nbsp amp
quot endif endfor include page site baseurl raw endraw liquid
""".split())


@dataclass
class Query:
    id: str
    text: str
    lineage: str
    doc_id: str
    category: str
    as_of: int
    query_time: int
    relevant: int  # chunk index
    split: str = ""

    @property
    def family(self) -> str:  # what assign_family_splits groups by: the document
        return self.doc_id


def _content_words(text: str) -> list[str]:
    return [w for w in _tokens(text) if len(w) >= 3 and w not in STOPWORDS and not w.isdigit()]


def query_text(history: History, lineage: str, df: Counter, params: GitHistoryParams) -> str | None:
    """Text of every query about ``lineage``, the same whatever version is meant: the head (the heading, or the
    file name's words when no heading is above the paragraph; verbatim when every version has the same one,
    else the words they all share), a colon, and the ``query_words`` rarest
    content words (document frequency over the corpus, ties by position) that every version contains, in
    the order of the lineage's first version. None when fewer than ``min_query_words`` words are shared."""
    members = [history.chunks[i] for i in history.lineages[lineage]]
    shared = set(_content_words(members[0].text))
    for c in members[1:]:
        shared &= set(_content_words(c.text))
    order: list[str] = []
    for w in _content_words(members[0].text):
        if w in shared and w not in order:
            order.append(w)
    if len(order) < params.min_query_words:
        return None
    rank = sorted(range(len(order)), key=lambda k: (df[order[k]], k))[:params.query_words]
    words = [order[k] for k in sorted(rank)]
    # A version's head is its heading, or the words of its file name when no heading is above it.
    heads = [c.heading or re.sub(r"[-_.]+", " ", Path(c.path).stem) for c in members]
    if len(set(heads)) == 1:
        head = heads[0]
    else:
        common = set(_tokens(heads[0]))
        for h in heads[1:]:
            common &= set(_tokens(h))
        head = " ".join(w for w in dict.fromkeys(_tokens(heads[0])) if w in common)
    return f"{head}: {' '.join(words)}" if head else " ".join(words)


def _in_force(c: Chunk, t: int) -> bool:
    return c.valid_from <= t and (c.valid_to is None or t < c.valid_to)


def make_queries(history: History, params: GitHistoryParams) -> list[Query]:
    """Seeded queries of the three categories (see docs/git_history.md), split dev/test by document."""
    chunks, tip = history.chunks, history.tip_time
    df: Counter = Counter()
    for c in chunks:
        df.update(set(_content_words(c.text)))
    recent = params.recent_days * _SECONDS_PER_DAY
    pools: dict[str, list[str]] = {k: [] for k in CATEGORIES}
    texts: dict[str, str] = {}
    for lid in sorted(history.lineages):
        members = history.lineages[lid]
        if len(members) < 2:
            continue
        text = query_text(history, lid, df, params)
        if text is None:
            continue
        texts[lid] = text
        last = chunks[members[-1]]
        if last.valid_to is None:
            pools["recently_updated" if tip - last.valid_from <= recent else "current"].append(lid)
        pools["historical"].append(lid)
    per_doc: Counter = Counter()
    queries: list[Query] = []
    want = asdict(params.queries)
    pick_rng = np.random.default_rng([params.seed, 1])
    time_rng = np.random.default_rng([params.seed, 2])
    for category in ("recently_updated", "current", "historical"):  # the scarcest pool first
        pool = pools[category]
        taken = 0
        for k in pick_rng.permutation(len(pool)).tolist():
            if taken >= want[category]:
                break
            lid = pool[k]
            members = history.lineages[lid]
            doc = chunks[members[0]].doc_id
            if per_doc[doc] >= params.max_queries_per_document:
                continue
            if category == "historical":
                closed = [i for i in members if chunks[i].valid_to is not None]
                ci = closed[int(time_rng.integers(len(closed)))]
                c = chunks[ci]
                as_of = int(time_rng.integers(c.valid_from, c.valid_to))  # whole seconds in [from, to)
            else:
                ci, as_of = members[-1], tip
            assert _in_force(chunks[ci], as_of)
            queries.append(Query("", texts[lid], lid, doc, category, as_of, tip, ci))
            per_doc[doc] += 1
            taken += 1
    if not queries:
        raise BenchError(f"dataset.repo={params.repo}: no lineage with two versions and at least "
                         f"dataset.min_query_words={params.min_query_words} shared words; no query can be made "
                         "(widen dataset.glob or lower dataset.min_chars / dataset.min_query_words)")
    n_docs = len({q.doc_id for q in queries})
    if n_docs >= 2:
        # whole documents, round(n_docs * test_fraction) of them (at least one per split) in test, chosen so
        # that each category's test share is close to test_fraction (data_gen.splits)
        n_test = min(max(int(round(n_docs * params.test_fraction)), 1), n_docs - 1)
        assign_family_splits(queries, n_test / n_docs, np.random.default_rng([params.seed, 3]))
    else:
        for q in queries:
            q.split = "test"
    order = np.random.default_rng([params.seed, 4]).permutation(len(queries)).tolist()
    queries = [queries[k] for k in order]
    width = max(4, len(str(len(queries))))
    for n, q in enumerate(queries, 1):
        q.id = f"q{n:0{width}d}"
    return queries


# ---------------------------------------------------------------------------------------------- rendering


def _iso(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n" for r in rows)


def _qrels(rows: list[tuple[str, str, int]]) -> str:
    return "\n".join(["query-id\tcorpus-id\tscore"] + [f"{q}\t{c}\t{g}" for q, c, g in rows]) + "\n"


def render_git_history(params: GitHistoryParams, progress: bool | None = None) -> dict[str, str]:
    """Every file of the dataset folder as text, keyed by relative path (manifest.json included)."""
    history = walk_history(params, progress=progress)
    queries = make_queries(history, params)
    chunks = history.chunks
    order = sorted(range(len(chunks)), key=lambda i: chunks[i].id)  # ids are hashes: no chronology in the order
    corpus = [{"_id": c.id, "title": c.title, "text": c.text, "metadata": {
        "doc_id": c.doc_id, "version": c.version, "source": SOURCE, "authority": float(params.authority),
        "created_at": _iso(c.valid_from), "valid_from": _iso(c.valid_from), "valid_to": _iso(c.valid_to),
        "depends_on": [], "supersedes": c.supersedes, "offset_start": c.offset_start, "offset_end": c.offset_end}}
        for c in (chunks[i] for i in order)]
    by_id = sorted(queries, key=lambda q: q.id)
    qrels: dict[str, list] = {"dev": [], "test": []}
    for q in by_id:
        qrels[q.split].append((q.id, chunks[q.relevant].id, GRADE_AUTHORITATIVE))

    def stale(q: Query) -> list[str]:
        # the lineage's other versions that exist at as_of and are not in force then (i.e. superseded)
        return sorted(chunks[i].id for i in history.lineages[q.lineage]
                      if i != q.relevant and chunks[i].valid_from <= q.as_of and not _in_force(chunks[i], q.as_of))

    files = {
        "corpus.jsonl": _jsonl(corpus),
        "queries.jsonl": _jsonl([{"_id": q.id, "text": q.text, "metadata": {
            "query_time": _iso(q.query_time), "as_of": _iso(q.as_of), "category": q.category, "split": q.split}}
            for q in by_id]),
        "qrels/dev.tsv": _qrels(qrels["dev"]),
        "qrels/test.tsv": _qrels(qrels["test"]),
        "labels/chunks.jsonl": _jsonl([{"_id": chunks[i].id, "family": chunks[i].lineage} for i in order]),
        "labels/queries.jsonl": _jsonl([{"_id": q.id, "family": q.lineage, "stale": stale(q), "rumor": []}
                                        for q in by_id]),
    }
    hashes = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in files.items()}
    lineage_sizes = [len(v) for v in history.lineages.values()]
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "generator": GENERATOR,
        "generator_code": f"smartvector-bench {__version__} data_gen.git_history",
        "provenance": {"git": git_sha(), "packages": {k: v for k, v in package_versions().items()
                                                       if k in ("smartvector-bench", "numpy")}},
        "config": params.to_dict(),
        "repo": {"head": history.head, "rev": params.rev, "tip_time": _iso(history.tip_time)},
        "counts": {
            "vectors": len(chunks),
            "vectors_open_at_tip": sum(c.valid_to is None for c in chunks),
            "documents": history.documents,
            "document_versions": len({(c.doc_id, c.version) for c in chunks}),
            "lineages": len(history.lineages),
            "lineages_with_versions": sum(n >= 2 for n in lineage_sizes),
            "commits": history.commits,
            "commits_time_clamped": history.commits_clamped,
            "queries": len(queries),
            "queries_requested": asdict(params.queries),
            "queries_by_category": dict(sorted(Counter(q.category for q in queries).items())),
            "queries_by_split": dict(sorted(Counter(q.split for q in queries).items())),
            "documents_by_split": dict(sorted(Counter(s for _, s in {(q.doc_id, q.split) for q in queries}).items())),
            "relevant_per_query_mean": 1.0,
        },
        "files": {name: {"sha256": digest, "bytes": len(files[name].encode("utf-8"))}
                  for name, digest in hashes.items()},
        "dataset_sha256": dataset_sha256(hashes),
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def write_git_history(params: GitHistoryParams, out_dir: str | Path, overwrite: bool = False,
                      progress: bool | None = None) -> dict:
    """Build and write the folder atomically (a temporary sibling renamed into place); returns the manifest."""
    from .writer import write_folder

    if Path(out_dir).exists() and not overwrite:
        raise BenchError(f"out_dir={out_dir}: already exists; choose another folder or pass overwrite=true")
    return write_folder(render_git_history(params, progress=progress), out_dir)
