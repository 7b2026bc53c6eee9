"""Reading the repository: the commit a ``rev`` names, the first-parent log of the matching files (with
renames) and blob texts."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from smartvector_bench.core.errors import BenchError

from .params import GitHistoryParams



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
