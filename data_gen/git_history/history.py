"""Replaying the history: every commit that touches a matching file is a version of its document; a paragraph
that survives keeps its chunk and validity window, an edited one starts a new chunk of the same lineage."""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from smartvector_bench.core.errors import BenchError

from .git import BlobReader, Commit, read_log, resolve_repo
from .paragraphs import align, comparison_key, split_units
from .params import GitHistoryParams



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
    key_of = comparison_key(params)
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
