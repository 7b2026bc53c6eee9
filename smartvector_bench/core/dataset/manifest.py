"""``manifest.json``: the dataset digest and the check of every listed file against its sha256, before
anything is parsed. The manifest is optional, but a present one is checked whole: every problem is found in one
pass (:func:`manifest_problems`, which ``smartvector-validate`` lists too) and raised as one
:class:`BenchProblems`, each problem with its fix, so a user never fixes one only to meet the next."""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from smartvector_bench.core.errors import BenchError, BenchProblems

from .columns import DATASET_SCHEMA_VERSIONS
from .read import decode_utf8, json_error, kind_of, MISSING, parse_json, path_kind, read_bytes, SHA256_HEX, show

DATA_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv")
UNCHECKED = "or delete manifest.json to load the folder unchecked"  # the way out every problem offers
_VERSIONS = " or ".join(DATASET_SCHEMA_VERSIONS)


def dataset_sha256(file_hashes: dict[str, str]) -> str:
    """Hash of the whole dataset: sha256 over sorted ``relative/path  sha256`` lines."""
    lines = "".join(f"{name}  {digest}\n" for name, digest in sorted(file_hashes.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


@dataclass(frozen=True)
class ManifestProblem:
    """One problem: ``file`` (relative to the folder: manifest.json or a file it lists), its ``line`` in
    manifest.json (None: the file as a whole), the manifest ``field``, what is wrong and how to fix it."""

    file: str
    line: int | None
    field: str | None
    what: str
    fix: str

    def text(self, root: Path | None = None) -> str:
        where = (str(root / self.file) if root is not None else self.file) + (f":{self.line}" if self.line else "")
        return f"{where}: {self.field + ': ' if self.field else ''}{self.what}; {self.fix}"


def _entry_name(name: str) -> str:
    """A ``files`` key as the messages show it: as is when printable, else quoted."""
    return name if name.isprintable() and len(name) <= 100 else show(name)


def _inside(name: str) -> bool:
    """A relative path inside the dataset folder (no absolute path, no ``..``, no empty part)."""
    parts = name.split("/")
    return bool(name) and name.isprintable() and "\\" not in name and all(p not in ("", ".", "..") for p in parts)


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line of every object key of a valid JSON text, by its key path (list items keep their list's path),
    so a problem names the line to edit. Empty when the text is nested too deeply to walk."""
    decoder = json.JSONDecoder()
    ws = re.compile(r"[ \t\n\r]*")
    newlines = [i for i, c in enumerate(text) if c == "\n"]
    out: dict[tuple[str, ...], int] = {}

    def walk(pos: int, path: tuple[str, ...]) -> int:
        pos = ws.match(text, pos).end()
        if text[pos] not in "{[":
            return decoder.raw_decode(text, pos)[1]
        close = "}" if text[pos] == "{" else "]"
        pos = ws.match(text, pos + 1).end()
        while text[pos] != close:
            key = path
            if close == "}":
                name, end = json.decoder.scanstring(text, pos + 1)
                key = path + (name,)
                out.setdefault(key, bisect.bisect_left(newlines, pos) + 1)
                pos = ws.match(text, end).end() + 1  # past the ':'
            pos = ws.match(text, walk(pos, key)).end()
            if text[pos] == ",":
                pos = ws.match(text, pos + 1).end()
        return pos + 1

    try:
        walk(0, ())
    except RecursionError:
        return {}
    return out


def _generator_name(manifest: dict) -> str | None:
    """The ``dataset=`` that regenerates the folder, when smartvector-gen wrote the manifest (None for a
    hand-written one: regenerating would replace the user's own data with a synthetic dataset)."""
    generator = manifest.get("generator")
    if not isinstance(generator, str) or not generator.startswith(("smartvector-bench", "git_history")):
        return None
    config = manifest.get("config")
    name = config.get("name") if isinstance(config, dict) else None
    return name if isinstance(name, str) and re.fullmatch(r"[a-z_]{1,40}", name) else "versioned_policies"


def _version_problem(version) -> tuple[str, bool] | None:
    """(what is wrong with ``schema_version``, whether regenerating fixes it), or None when it is readable."""
    if version in DATASET_SCHEMA_VERSIONS:
        return None
    if version is MISSING:
        return f"missing; this loader reads schema {_VERSIONS}", True
    parsed = re.fullmatch(r"([0-9]{1,4})(?:\.([0-9]{1,4}))?", version) if isinstance(version, str) else None
    number = (int(parsed[1]), int(parsed[2] or 0)) if parsed else None
    known = [tuple(map(int, v.split("."))) for v in DATASET_SCHEMA_VERSIONS]
    if number is not None and number < min(known):
        return f"{show(version)} is older than {DATASET_SCHEMA_VERSIONS[0]} (this loader reads schema {_VERSIONS})", \
            True
    if number is not None and number > max(known):
        return f"{show(version)} is newer than this loader, which reads schema {_VERSIONS}", False
    return f"is {show(version)}; allowed: {' or '.join(map(json.dumps, DATASET_SCHEMA_VERSIONS))}", True


def manifest_problems(root: Path, raw: dict[str, bytes]) -> tuple[dict | None, int | None, list[ManifestProblem]]:
    """``(manifest, seed, problems)``: ``manifest.json`` (None when absent), its ``config.seed``, and every
    problem found, checking the files it lists and ``dataset_sha256`` against the bytes read (``raw``: the
    files the loader reads, by relative name). A manifest that cannot be read as a JSON object is one problem."""
    mpath = root / "manifest.json"
    if path_kind(mpath) == "missing" and not mpath.is_symlink():
        return None, None, []

    def fatal(what: str, line: int | None = None, fix: str = f"regenerate the folder with smartvector-gen, "
                                                              f"{UNCHECKED}"):
        return None, None, [ManifestProblem("manifest.json", line, None, what, fix)]

    try:
        text = decode_utf8(mpath, read_bytes(mpath, "manifest.json must be a readable JSON file"))
    except BenchError as exc:
        rest = str(exc).removeprefix(str(mpath))
        at = re.match(r":([0-9]+): ", rest)
        # the message says how to fix the file (permissions, encoding); the other way out is the same as ever
        return fatal(rest[at.end():] if at else rest.removeprefix(": "), int(at[1]) if at else None, UNCHECKED)
    try:
        manifest = parse_json(text)
    except json.JSONDecodeError as exc:
        return fatal(f"not valid JSON ({exc.msg}, column {exc.colno})", exc.lineno)
    except (ValueError, RecursionError) as exc:
        return fatal(f"not valid JSON ({json_error(exc)})")
    if not isinstance(manifest, dict):
        return fatal(f"expected a JSON object, got {kind_of(manifest)}")
    lines = _key_lines(text)
    name = _generator_name(manifest)
    regen = (f"regenerate the folder (`smartvector-gen dataset={name} out_dir=<new folder>` with the settings in "
             f"its 'config') {UNCHECKED}" if name else
             f"correct manifest.json (docs/datasets.md) {UNCHECKED}")
    problems: list[ManifestProblem] = []

    def add(key: tuple[str, ...], what: str, fix: str = regen, field: str | None = None) -> None:
        """A problem of manifest.json's ``key`` (its path of keys), at the line of its deepest part present."""
        line = next((lines[key[:k]] for k in range(len(key), 0, -1) if key[:k] in lines), None)
        problems.append(ManifestProblem("manifest.json", line, field or ".".join(key), what, fix))

    version = _version_problem(manifest.get("schema_version", MISSING))
    if version:
        add(("schema_version",), version[0], regen if version[1] else f"upgrade smartvector-bench, {UNCHECKED}")
    files = manifest.get("files", MISSING)
    recorded: dict[str, tuple[str, int | None]] = {}
    if files is MISSING:
        add(("files",), "missing (the sha256 of every file)")
    elif not isinstance(files, dict):
        add(("files",), f"must be an object of file name -> sha256, got {kind_of(files)}")
    else:
        for entry_name, entry in files.items():
            label = _entry_name(entry_name)
            digest = entry.get("sha256") if isinstance(entry, dict) else entry
            size = entry.get("bytes") if isinstance(entry, dict) else None
            if not _inside(entry_name):
                add(("files",), f"names {show(entry_name)}, which is not a relative path inside the dataset folder")
            elif not isinstance(digest, str) or not SHA256_HEX.fullmatch(digest):
                add(("files", entry_name), 'must be a sha256 string (64 lowercase hex digits) or {"sha256": ..., '
                                      f'"bytes": ...}}, got {show(entry)}',
                    field=f"files.{label}")
            elif isinstance(entry, dict) and "bytes" in entry and (
                    not isinstance(size, int) or isinstance(size, bool) or size < 0):
                add(("files", entry_name, "bytes"), f"must be a non-negative integer, got {show(size)}",
                    field=f"files.{label}.bytes")
            else:
                recorded[entry_name] = digest, size
        unlisted = [n for n in raw if n not in files]
        if unlisted:
            add(("files",), f"has no entry for {', '.join(unlisted)}")
    for entry_name in sorted(recorded):  # listed files beyond raw: e.g. documents.jsonl / edits.jsonl of lvl_corpus
        digest, size = recorded[entry_name]
        data = raw.get(entry_name)
        if data is None:
            try:
                data = read_bytes(root / entry_name, "manifest.json lists it")
            except BenchError as exc:
                problems.append(ManifestProblem(entry_name, None, None,
                                                str(exc).removeprefix(f"{root / entry_name}: "),
                                                f"restore it, remove its entry, {regen}"))
                continue
        if hashlib.sha256(data).hexdigest() != digest:
            problems.append(ManifestProblem(entry_name, None, None, "sha256 differs from manifest.json (file "
                                            "edited after generation?)", f"restore the file, {regen}"))
        elif size is not None and size != len(data):
            add(("files", entry_name, "bytes"), f"is {size}, but the file has {len(data)} bytes")
    want = manifest.get("dataset_sha256", MISSING)
    if want is MISSING:
        add(("dataset_sha256",), "missing (the sha256 of the data and labels files together)")
    elif not isinstance(want, str) or not SHA256_HEX.fullmatch(want):
        add(("dataset_sha256",), f"must be a sha256 string (64 lowercase hex digits), got {show(want)}")
    elif want != dataset_sha256({n: hashlib.sha256(data).hexdigest() for n, data in raw.items()}):
        add(("dataset_sha256",), "does not match the files it covers (the data files and labels/): one was added, "
                                 "removed or edited since the manifest was written")
    config = manifest.get("config", MISSING)
    seed = None
    if config is not MISSING and not isinstance(config, dict):
        add(("config",), f"must be an object (the generator's parameters), got {kind_of(config)}")
    elif config is not MISSING:
        seed = config.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            add(("config", "seed"), f"must be an integer, got {show(seed)}")
    return manifest, seed, problems


def check_manifest(root: Path, raw: dict[str, bytes]) -> tuple[dict | None, int | None]:
    """The manifest (None when absent) and its seed; every problem of a present one raises one
    :class:`BenchProblems` that lists them all."""
    manifest, seed, problems = manifest_problems(root, raw)
    if problems:
        raise BenchProblems(f"{root / 'manifest.json'}: {len(problems)} problems, each with its fix:",
                            [p.text(root) for p in problems])
    return manifest, seed


def query_shortfall(manifest: dict | None) -> dict[str, dict[str, int]]:
    """Each query category the generator wrote fewer queries of than asked, ``{category: {asked, written}}``, from
    a manifest's ``counts.queries_requested`` and ``counts.queries_by_category`` ({} when they are absent or met:
    the pools of a git history can be smaller than the counts asked)."""
    counts = (manifest or {}).get("counts") if isinstance(manifest, dict) else None
    asked = (counts or {}).get("queries_requested")
    written = (counts or {}).get("queries_by_category") or {}
    if not isinstance(asked, dict) or not isinstance(written, dict):
        return {}
    return {c: {"asked": int(n), "written": int(written.get(c, 0))} for c, n in sorted(asked.items())
            if isinstance(n, int) and not isinstance(n, bool) and isinstance(written.get(c, 0), int)
            and written.get(c, 0) < n}


def shortfall_text(short: dict[str, dict[str, int]]) -> str:
    """``short`` (:func:`query_shortfall`) in words: "historical 108 of 150 asked, ..."."""
    return ", ".join(f"{c} {v['written']} of {v['asked']} asked" for c, v in short.items())
