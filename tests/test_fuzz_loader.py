"""Fuzzing ``load_dataset`` with corrupted copies of one small generated dataset.

The property, for every drawn corruption: ``load_dataset`` either returns a ``Dataset`` (only where the
corruption leaves nothing the loader checks broken) or raises ``BenchError`` with a one-line message that names
the offending file (for a manifest with several problems, one ``BenchProblems``: a heading and one line per
problem); it never raises anything else and never writes into the folder (its listing, bytes, modes and mtimes
are unchanged, no temporary leftovers). Five families of corruption, each a test:

- raw bytes (truncate, flip, insert, delete, invalid UTF-8, BOM, UTF-16, NUL, empty, CRLF, ...) with the
  manifest as generated: any change of a checked file's bytes must be caught (the manifest has its sha256);
- the same bytes with the manifest's hashes recomputed afterwards (as the writer computes them), so the
  corrupted text reaches the decoders and parsers: a file that is not UTF-8, not JSON lines of objects or not
  a well-formed qrels table must be rejected naming that file;
- JSON shapes, also re-hashed: a line replaced by a non-object, a required key dropped, a value of the wrong
  type, NaN / Infinity, huge integers, bad or inverted times, duplicate ids, unknown ids in qrels and labels,
  self-supersession, supersession cycles and forks, edges to missing chunks, bad qrels rows, bad timelines;
- manifests: missing, not JSON, not an object, ``files`` of the wrong shape or with missing, extra or wrong
  entries, ``dataset_sha256`` wrong or missing, a wrong ``schema_version``, a seed that is not an integer;
- files: missing files, a folder or FIFO or dangling link where a file should be, a file where ``labels/`` or
  ``qrels/`` should be, swapped files, unreadable files (skipped as root, which ignores permissions; a
  separate test drops to an unprivileged user instead).

Each fuzz test prints how many examples each of its strategies ran (``pytest -s`` or the ``-rA`` summary) and
fails if its cases all loaded or all were rejected; it counts only its own cases, so it does not depend on which
tests ran before it or in which process. ``SVB_FUZZ_SCALE=4`` multiplies every ``max_examples`` (a longer local
run).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from data_gen.params import params_from_config
from data_gen.writer import write_dataset
from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.dataset import (CORPUS_META, DATA_FILES, LABEL_FILES, QUERY_META, Dataset, dataset_sha256,
                                       load_dataset)
from smartvector_bench.core.schema.check import validate_folder
from smartvector_bench.core.errors import BenchError, BenchProblems

from .conftest import IS_ROOT, run_as_nobody

CHECKED = DATA_FILES + LABEL_FILES
JSONL = tuple(n for n in CHECKED if n.endswith(".jsonl"))
TSV = tuple(n for n in CHECKED if n.endswith(".tsv"))
ANY_NAME = CHECKED + ("manifest.json", "labels", "qrels")
HEADER = "query-id\tcorpus-id\tscore"
SCALE = float(os.environ.get("SVB_FUZZ_SCALE", "1"))
# Each example writes and removes a folder: on tmpfs that is ~10x cheaper than on a busy disk.
TMP_DIR = os.environ.get("SVB_FUZZ_TMP") or next((d for d in ("/dev/shm",) if os.access(d, os.W_OK)), None)
COUNTS: Counter = Counter()  # strategy -> examples run (each fuzz test reports its own, see fuzz())
OUTCOMES: Counter = Counter()  # (test, "loaded" / "rejected")
RUNS: Counter = Counter()  # test -> cases run (picks the cases that also run the validator)
OUTCOMES_LAST = [""]  # the outcome of the case being run
VALIDATOR_EVERY = 8  # every 8th case also runs smartvector-validate (about 30 ms a case, jsonschema per row)


def fuzz_settings(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------------------------------- base


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> "Base":
    """One small valid dataset (2 families, 39 chunks, 6 queries), generated once for the module."""
    cfg = yaml.safe_load(Path(CONF_DIR, "dataset", "versioned_policies.yaml").read_text())
    cfg.update(n_families=2, versions=[2, 3], rumors_per_family=1, confirmations_per_family=1,
               queries={"current_per_family": 1, "historical_per_family": 1, "dependent_per_family": 1})
    folder = tmp_path_factory.mktemp("fuzz-base") / "ds"
    write_dataset(params_from_config(cfg), folder)
    ds = load_dataset(folder)  # the unmutated copy loads
    assert ds.labels is not None and ds.seed == 42
    files = {name: (folder / name).read_bytes() for name in CHECKED + ("manifest.json",)}
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == sorted(files)
    return Base(folder, files, ds)


@dataclass
class Base:
    folder: Path
    files: dict[str, bytes]
    ds: Dataset

    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return f"Base({self.folder})"

    def copy_to(self, folder: Path) -> None:
        """A fresh copy of the dataset (faster than ``shutil.copytree``, which also copies metadata)."""
        for sub in ("", "labels", "qrels"):
            (folder / sub).mkdir(exist_ok=True)
        for name, data in self.files.items():
            (folder / name).write_bytes(data)

    def lines(self, name: str) -> list[str]:
        return self.files[name].decode("utf-8").splitlines()

    def rows(self, name: str) -> list[dict]:
        return [json.loads(line) for line in self.lines(name)]


@dataclass
class Case:
    """One corruption: ``apply`` edits the copied folder; ``must_reject`` says the loader has no excuse to load
    it; a rejection must name one of ``named`` (None: any dataset file, for cross-file consequences)."""

    strategy: str
    desc: str
    apply: Callable[[Path], None]
    must_reject: bool
    named: tuple[str, ...] | None = None
    rehash: bool = False
    check: Callable[[Dataset], None] | None = None


# -------------------------------------------------------------------------------------------- the property


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (and ``root`` itself): kind, mode, mtime and, for regular files, the bytes."""
    out: dict[str, tuple] = {}

    def visit(path: Path, rel: str) -> None:
        st_ = os.lstat(path)
        mode = st_.st_mode
        if stat.S_ISLNK(mode):
            out[rel] = ("link", os.readlink(path))
        elif stat.S_ISDIR(mode):
            out[rel] = ("dir", mode, st_.st_mtime_ns)
            try:
                names = sorted(os.listdir(path))
            except PermissionError:
                return
            for name in names:
                visit(path / name, f"{rel}/{name}")
        elif stat.S_ISREG(mode):
            try:
                data = path.read_bytes()
            except PermissionError:
                data = None
            out[rel] = ("file", mode, st_.st_mtime_ns, data)
        else:  # FIFO and friends: never opened
            out[rel] = ("other", mode, st_.st_mtime_ns)

    visit(root, ".")
    return out


def _rehash(folder: Path) -> None:
    """Recompute the manifest's hashes after a mutation, as ``data_gen.writer`` computes them (sha256 of each
    file's bytes, ``dataset_sha256`` over the checked files), so the mutated content reaches the parsers."""
    mpath = folder / "manifest.json"
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    files = {}
    for name in manifest["files"]:
        path = folder / name
        if path.is_file():
            data = path.read_bytes()
            files[name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    manifest["files"] = files
    manifest["dataset_sha256"] = dataset_sha256({k: v["sha256"] for k, v in files.items() if k in CHECKED})
    mpath.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _restore_permissions(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            if not p.is_symlink() and (p.is_dir() or p.is_file()):
                os.chmod(p, 0o755 if p.is_dir() else 0o644)


def run_case(test: str, base: Base, case: Case) -> None:
    COUNTS[case.strategy] += 1
    RUNS[test] += 1
    event(case.strategy)
    with tempfile.TemporaryDirectory(prefix="svb-fuzz-", dir=TMP_DIR) as tmp:
        folder = Path(tmp) / "ds"
        base.copy_to(folder)
        case.apply(folder)
        if case.rehash:
            _rehash(folder)
        before = _snapshot(Path(tmp))
        try:
            try:
                ds = load_dataset(folder)
            except BenchError as exc:
                msg = str(exc)
                OUTCOMES[(test, "rejected")] += 1
                OUTCOMES_LAST[0] = "rejected"
                lines = msg.split("\n")
                if isinstance(exc, BenchProblems) and len(exc.problems) > 1:  # a manifest's problems, all at once
                    assert lines[0].endswith(f"{len(exc.problems)} problems, each with its fix:") and \
                        lines[1:] == [f"  {p}" for p in exc.problems], f"{case.desc}: not a problem list: {msg!r}"
                else:
                    assert msg and len(lines) == 1, f"{case.desc}: message is not one line: {msg!r}"
                assert "\r" not in msg, f"{case.desc}: message holds a carriage return: {msg!r}"
                names = case.named or ANY_NAME
                assert any(n in msg for n in names), f"{case.desc}: message names none of {names}: {msg!r}"
                assert max(map(len, lines)) < 1000, f"{case.desc}: a line of the message is over 1000 characters"
            except Exception as exc:  # the contract: nothing but BenchError
                raise AssertionError(f"{case.desc}: {type(exc).__name__}: {exc}") from exc
            else:
                OUTCOMES[(test, "loaded")] += 1
                OUTCOMES_LAST[0] = "loaded"
                assert not case.must_reject, f"{case.desc}: loaded, but it must be rejected"
                assert isinstance(ds, Dataset)
                if case.check:
                    case.check(ds)
            if RUNS[test] % VALIDATOR_EVERY == 0:  # smartvector-validate agrees with the loader
                problems, _ = validate_folder(folder)
                rejected = OUTCOMES_LAST[0] == "rejected"
                assert bool(problems) == rejected, f"{case.desc}: loader {'rejected' if rejected else 'loaded'}, " \
                    f"validator found {[str(p) for p in problems[:3]]}"
            after = _snapshot(Path(tmp))
            assert after == before, f"{case.desc}: the folder changed: " + ", ".join(
                sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)))
        finally:
            _restore_permissions(Path(tmp))


def fuzz(test: str, family: str, search: Callable[..., None], base: Base) -> None:
    """Runs the Hypothesis ``search`` (all its examples) for the fuzz ``test``, whose strategies are named
    ``family:...``; prints how many examples each strategy ran, and fails if the test's cases all loaded or all
    were rejected (a fuzzer that tests one side of the loader only). Only this call's cases are counted."""
    counts, outcomes = COUNTS.copy(), OUTCOMES.copy()
    search(base)
    ran = {k.split(":", 1)[1]: n for k, n in (COUNTS - counts).items() if k.split(":")[0] == family}
    got = {o: n for (t, o), n in (OUTCOMES - outcomes).items() if t == test}
    lines = [f"{family + ' (total)':34s} {sum(ran.values()):6d}"]
    lines += [f"  {k:32s} {v:6d}" for k, v in sorted(ran.items())]
    lines.append(f"outcomes: loaded {got.get('loaded', 0)}, rejected {got.get('rejected', 0)}")
    report = "\n".join(lines)
    print(report)
    out = os.environ.get("SVB_FUZZ_COUNTS")
    if out:
        with open(out, "a", encoding="utf-8") as f:  # one write per test, whichever process runs it
            f.write(report + "\n")
    assert ran, f"{test}: no example ran"
    assert got.get("loaded") and got.get("rejected"), \
        f"{test}: its cases never {'loaded' if not got.get('loaded') else 'were rejected'}: {got}"


# ------------------------------------------------------------------------------------ syntax oracles


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number out of range")
    return value


def _decodes(data: bytes) -> str | None:
    if data.startswith(codecs.BOM_UTF8) or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def jsonl_ok(data: bytes) -> bool:
    """UTF-8 without BOM or NUL, and every non-blank line a strict-JSON object; at least one."""
    text = _decodes(data)
    if text is None:
        return False
    n = 0
    for line in text.split("\n"):
        if not line.strip(" \t\r"):
            continue
        try:
            obj = json.loads(line, parse_constant=_no_constant, parse_float=_finite)
        except (ValueError, RecursionError):
            return False
        if not isinstance(obj, dict):
            return False
        n += 1
    return n > 0


def tsv_ok(data: bytes) -> bool:
    """UTF-8 without BOM or NUL, the BEIR header, and rows of three fields with a non-negative integer score."""
    text = _decodes(data)
    if text is None:
        return False
    lines = text.split("\n")
    if lines[0].removesuffix("\r") != HEADER:
        return False
    for line in lines[1:]:
        line = line.removesuffix("\r")
        if not line.strip(" \t"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not re.fullmatch(r"[0-9]{1,9}", parts[2]) or not parts[0] or not parts[1]:
            return False
    return True


def syntax_ok(name: str, data: bytes) -> bool:
    return tsv_ok(data) if name.endswith(".tsv") else jsonl_ok(data)


# -------------------------------------------------------------------------------------- 1+2. raw bytes

INVALID_UTF8 = [b"\xff", b"\xfe", b"\xc3", b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\xa0\xa1"]
BYTE_OPS = ("truncate", "flip", "insert", "delete", "invalid_utf8", "bom", "utf16", "utf16le", "empty", "nul",
            "crlf", "blank_line", "swap_lines", "drop_line", "duplicate_line", "append_garbage")


def _write(folder: Path, name: str, data: bytes) -> None:
    (folder / name).write_bytes(data)


def byte_mutation(data: st.DataObject, base: Base, rehash: bool) -> tuple[Case, bytes, bytes]:
    name = data.draw(st.sampled_from(CHECKED), label="file")
    op = data.draw(st.sampled_from(BYTE_OPS), label="op")
    old = base.files[name]
    n = len(old)
    pos = data.draw(st.integers(0, n - 1), label="pos")
    lines = old.split(b"\n")[:-1]  # every generated file ends with a newline
    if op == "truncate":
        new = old[:pos]
    elif op == "flip":
        new = old[:pos] + bytes([old[pos] ^ data.draw(st.integers(1, 255), label="mask")]) + old[pos + 1:]
    elif op == "insert":
        new = old[:pos] + data.draw(st.binary(min_size=1, max_size=8), label="bytes") + old[pos:]
    elif op == "delete":
        k = data.draw(st.integers(1, 16), label="len")
        new = old[:pos] + old[pos + k:]
    elif op == "invalid_utf8":
        new = old[:pos] + data.draw(st.sampled_from(INVALID_UTF8), label="seq") + old[pos:]
    elif op == "bom":
        new = codecs.BOM_UTF8 + old
    elif op == "utf16":
        new = old.decode("utf-8").encode("utf-16")
    elif op == "utf16le":
        new = old.decode("utf-8").encode("utf-16-le")
    elif op == "empty":
        new = b""
    elif op == "nul":
        new = old[:pos] + b"\0" * data.draw(st.integers(1, 3), label="k") + old[pos:]
    elif op == "crlf":
        new = old.replace(b"\n", b"\r\n")
    elif op == "append_garbage":
        new = old + data.draw(st.sampled_from([b"{", b"[1]\n", b"null\n", b"\x00", b"x\ty\n", b"}\n"]),
                              label="tail")
    else:
        i = data.draw(st.integers(1 if name.endswith(".tsv") else 0, len(lines) - 1), label="line")
        if op == "blank_line":
            lines.insert(i, data.draw(st.sampled_from([b"", b" ", b"\t", b"\r"]), label="blank"))
        elif op == "swap_lines":
            j = data.draw(st.integers(1 if name.endswith(".tsv") else 0, len(lines) - 1), label="other")
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "drop_line":
            del lines[i]
        else:  # duplicate_line
            lines.insert(i, lines[i])
        new = b"".join(line + b"\n" for line in lines)
    changed = new != old
    if rehash:
        must = not syntax_ok(name, new)
        named = (name,) if must else None
    else:
        must, named = changed, (name,)
    case = Case(f"{'rehashed' if rehash else 'raw'}:{op}", f"{op} {name} at {pos} (rehash={rehash})",
                lambda folder: _write(folder, name, new), must_reject=must, named=named, rehash=rehash)
    return case, old, new


@fuzz_settings(500)
@given(data=st.data())
def _raw_search(base, data):
    case, old, new = byte_mutation(data, base, rehash=False)
    run_case("raw", base, case)


@pytest.mark.slow
def test_raw_byte_corruption_fails_the_manifest_check(base):
    fuzz("raw", "raw", _raw_search, base)

@fuzz_settings(1200)
@given(data=st.data())
def _rehashed_search(base, data):
    case, old, new = byte_mutation(data, base, rehash=True)
    run_case("rehashed", base, case)


@pytest.mark.slow
def test_rehashed_byte_corruption_reaches_the_parsers(base):
    fuzz("rehashed", "rehashed", _rehashed_search, base)

# ----------------------------------------------------------------------------------------- 3. JSON shapes

NUM = {"int", "float"}
# Allowed JSON kinds per (file, key path); "[]" is any list element. Paths not listed are not read.
SCHEMA: dict[str, dict[str, set[str]]] = {
    "corpus.jsonl": {
        "_id": {"str"}, "title": {"str", "null"}, "text": {"str"}, "metadata": {"dict"},
        "metadata.doc_id": {"str"}, "metadata.version": {"int"}, "metadata.source": {"str"},
        "metadata.authority": NUM, "metadata.created_at": {"str"}, "metadata.valid_from": {"str"},
        "metadata.valid_to": {"str", "null"}, "metadata.depends_on": {"list"}, "metadata.depends_on[]": {"str"},
        "metadata.supersedes": {"str", "null"}, "metadata.offset_start": {"int"}, "metadata.offset_end": {"int"},
    },
    "queries.jsonl": {
        "_id": {"str"}, "text": {"str"}, "metadata": {"dict"}, "metadata.query_time": {"str"},
        "metadata.as_of": {"str"}, "metadata.category": {"str"}, "metadata.split": {"str"},
    },
    "labels/chunks.jsonl": {
        "_id": {"str"}, "family": {"str"}, "doc_type": {"str"}, "kind": {"str"}, "value": NUM | {"null"},
    },
    "labels/queries.jsonl": {
        "_id": {"str"}, "family": {"str"}, "asks": {"str"}, "stale": {"list"}, "stale[]": {"str"},
        "rumor": {"list"}, "rumor[]": {"str"},
    },
    "labels/families.jsonl": {
        "family": {"str"}, "timeline": {"list"}, "timeline[]": {"dict"}, "timeline[].effective_from": {"str"},
        "timeline[].value": NUM,
    },
}
# Schema 2.1 (smartvector_bench/core/schema/dataset.schema.json): every metadata and label field has a default.
OPTIONAL = {"corpus.jsonl": {"title", "metadata"} | {f"metadata.{k}" for k in CORPUS_META},
            "queries.jsonl": {"metadata"} | {f"metadata.{k}" for k in QUERY_META},
            "labels/chunks.jsonl": {"family", "doc_type", "kind", "value"},
            "labels/queries.jsonl": {"family", "asks", "stale", "rumor"}}
INT_FIELDS = {("corpus.jsonl", "metadata.version"), ("corpus.jsonl", "metadata.offset_start"),
              ("corpus.jsonl", "metadata.offset_end")}
VALUE_FIELDS = {("labels/chunks.jsonl", "value"), ("labels/families.jsonl", "timeline[].value")}
TIME_FIELDS = {"corpus.jsonl": ["metadata.created_at", "metadata.valid_from", "metadata.valid_to"],
               "queries.jsonl": ["metadata.query_time", "metadata.as_of"],
               "labels/families.jsonl": ["timeline[0].effective_from"]}
BAD_TIMES = ["", "yesterday", "2024-13-01T00:00:00Z", "2024-02-30T00:00:00Z", "2024-01-01T00:00:00",
             "2024-01-01", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "-2024-01-01T00:00:00Z",
             "2024-01-01T00:00:00Z\u0000", "2024-01-01T25:00:00Z", "2024-01-01T00:00:00ZZ", " ",
             "\u0662\u0660\u0662\u0664-01-01T00:00:00Z"]
BIG = "__BIG_INT__"


def kind(v: Any) -> str:
    if v is None:
        return "null"
    for t, k in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (list, "list"), (dict, "dict")):
        if isinstance(v, t):
            return k
    raise TypeError(type(v))


def schema_key(path: tuple) -> str:
    out = ""
    for p in path:
        out += "[]" if isinstance(p, int) else (("." if out else "") + p)
    return out


def leaf_paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path in ``obj`` (containers included)."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append(prefix + (k,))
            out += leaf_paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append(prefix + (i,))
            out += leaf_paths(v, prefix + (i,))
    return out


def get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def put(obj: Any, path: tuple, value: Any) -> None:
    get(obj, path[:-1])[path[-1]] = value


def dump(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))  # NaN -> NaN token
    return text.replace(f'"{BIG}"', "9" * 5000)


junk = st.recursive(st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=False,
                                                                                 allow_infinity=False)
                    | st.text(max_size=8), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
KIND_VALUES = {
    "null": st.none(), "bool": st.booleans(),
    "int": st.one_of(st.integers(-3, 3), st.integers(-2**70, 2**70)),
    "float": st.one_of(st.floats(-2, 2, allow_nan=False), st.floats(allow_nan=False, allow_infinity=False)),
    "str": st.one_of(st.text(max_size=12), st.sampled_from(["", "null", "0", "c0000000000", "\u2028", "a\tb",
                                                            "a\nb", "\x85", "\ud7ff"])),
    "list": st.lists(junk, max_size=3), "dict": st.dictionaries(st.text(max_size=4), junk, max_size=3),
}
SHAPE_OPS = ("not_object", "drop_key", "retype", "nonfinite", "huge_int", "bad_time", "valid_time",
             "window_inverted", "negative", "duplicate_id", "unknown_ref", "self_supersede", "self_depend",
             "supersede_cycle", "supersede_fork", "bad_enum", "qrels_row", "qrels_unknown", "qrels_split",
             "query_split", "timeline", "deep_nesting", "duplicate_key")


def _edit_line(name: str, lineno: int, text: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        lines = (folder / name).read_text(encoding="utf-8").split("\n")
        lines[lineno] = text
        (folder / name).write_text("\n".join(lines), encoding="utf-8")
    return apply


def _edit_lines(edits: dict[str, dict[int, str | None]]) -> Callable[[Path], None]:
    """Replace (str) or delete (None) lines of several files; ``-1`` appends."""
    def apply(folder: Path) -> None:
        for name, changes in edits.items():
            lines = (folder / name).read_text(encoding="utf-8").split("\n")[:-1]
            for i, text in sorted(changes.items(), reverse=True):
                if i == -1:
                    lines.append(text)
                elif text is None:
                    del lines[i]
                else:
                    lines[i] = text
            (folder / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return apply


def shape_mutation(data: st.DataObject, base: Base) -> Case:
    op = data.draw(st.sampled_from(SHAPE_OPS), label="op")
    S = f"shape:{op}"

    def case(name: str, lineno: int, obj_or_text: Any, must: bool, desc: str) -> Case:
        text = obj_or_text if isinstance(obj_or_text, str) else dump(obj_or_text)  # a str is the line's raw text
        return Case(S, f"{op} {name}:{lineno + 1}: {desc}", _edit_line(name, lineno, text), must,
                    named=(name,) if must else None, rehash=True)

    def pick(name: str) -> tuple[int, dict]:
        rows = base.rows(name)
        i = data.draw(st.integers(0, len(rows) - 1), label="line")
        return i, rows[i]

    jsonl = st.sampled_from(JSONL)
    if op == "not_object":
        name = data.draw(jsonl, label="file")
        i, _ = pick(name)
        v = data.draw(st.one_of(st.lists(junk, max_size=3), st.text(max_size=10), st.integers(),
                                st.floats(allow_nan=False, allow_infinity=False), st.none(), st.booleans(), junk))
        if isinstance(v, dict):
            v = [v]
        return case(name, i, dump(v), True, f"line is {kind(v)}")  # dumped: a str here is JSON, not raw text
    if op in ("drop_key", "retype", "nonfinite", "huge_int"):
        name = data.draw(jsonl, label="file")
        i, row = pick(name)
        paths = leaf_paths(row)
        if op == "huge_int":
            paths = [p for p in paths if kind(get(row, p)) in ("int", "float", "null")] or paths
        path = data.draw(st.sampled_from(paths), label="path")
        key = schema_key(path)
        allowed = SCHEMA[name].get(key)
        if op == "drop_key":
            del get(row, path[:-1])[path[-1]]
            required = (allowed is not None and key not in OPTIONAL.get(name, set())
                        and not isinstance(path[-1], int))
            return case(name, i, row, required, f"drop {key}")
        if op == "retype":
            old = kind(get(row, path))
            new_kind = data.draw(st.sampled_from(sorted(set(KIND_VALUES) - {old})), label="kind")
            value = data.draw(KIND_VALUES[new_kind], label="value")
            put(row, path, value)
            return case(name, i, row, allowed is not None and new_kind not in allowed, f"{key}: {old} -> {new_kind}")
        if op == "nonfinite":
            put(row, path, data.draw(st.sampled_from([float("nan"), float("inf"), float("-inf")])))
            return case(name, i, row, True, f"{key} = NaN/Infinity")
        big = data.draw(st.sampled_from([2**53, 10**19, -10**19, 10**30, 10**400, BIG]), label="big")
        put(row, path, big)
        must = (big == BIG or (allowed is not None and ((name, key) in INT_FIELDS or (name, key) in VALUE_FIELDS
                                                       or key == "metadata.authority" or "int" not in allowed)))
        return case(name, i, row, must, f"{key} = huge {str(big)[:12]}")
    if op in ("bad_time", "valid_time"):
        name = data.draw(st.sampled_from(sorted(TIME_FIELDS)), label="file")
        i, row = pick(name)
        key = data.draw(st.sampled_from(TIME_FIELDS[name]), label="key")
        path = tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\[\]]+", key) if p)
        if op == "bad_time":
            put(row, path, data.draw(st.sampled_from(BAD_TIMES), label="time"))
            return case(name, i, row, True, f"{key} bad time")
        t = data.draw(st.sampled_from(["1900-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2100-01-01T00:00:00+14:00",
                                       "2024-06-01T12:00:00.123456+00:00", "2024-06-01T12:00:00-11:00"]))
        put(row, path, t)
        return case(name, i, row, False, f"{key} = {t}")
    if op == "window_inverted":
        i, row = pick("corpus.jsonl")
        m = row["metadata"]
        if data.draw(st.booleans(), label="equal"):
            m["valid_to"] = m["valid_from"]
        else:
            m["valid_to"], m["valid_from"] = "2000-01-01T00:00:00Z", m["valid_from"]
        return case("corpus.jsonl", i, row, True, "valid_to <= valid_from")
    if op == "negative":
        choice = data.draw(st.sampled_from(["offset_start", "offset_end", "version", "authority", "score",
                                            "offset_order"]))
        if choice == "score":
            lines = base.lines("qrels/dev.tsv")
            i = data.draw(st.integers(1, len(lines) - 1))
            q, c, _ = lines[i].split("\t")
            return case("qrels/dev.tsv", i, f"{q}\t{c}\t-1", True, "negative score")
        i, row = pick("corpus.jsonl")
        m = row["metadata"]
        if choice == "offset_order":
            m["offset_start"], m["offset_end"] = m["offset_end"] + 1, m["offset_end"]
        else:
            m[choice] = -1 if choice != "authority" else -0.1
        return case("corpus.jsonl", i, row, True, f"negative {choice}")
    if op == "duplicate_id":
        name = data.draw(jsonl, label="file")
        key = "family" if name == "labels/families.jsonl" else "_id"
        rows = base.rows(name)
        i, j = data.draw(st.lists(st.integers(0, len(rows) - 1), min_size=2, max_size=2, unique=True), label="ij")
        row = rows[i]
        row[key] = rows[j][key]
        return case(name, i, row, True, f"{key} of line {i + 1} = line {j + 1}'s")
    if op == "unknown_ref":
        where = data.draw(st.sampled_from(["depends_on", "supersedes", "chunk_label", "query_label", "stale",
                                           "rumor", "query_family", "chunk_family"]))
        ghost = data.draw(st.sampled_from(["c0000000000", "q9999", "", "C35AE4085FD", " c35ae4085fd"]))
        if where in ("depends_on", "supersedes"):
            i, row = pick("corpus.jsonl")
            if where == "depends_on":
                row["metadata"]["depends_on"].append(ghost)
            else:
                row["metadata"]["supersedes"] = ghost
            return case("corpus.jsonl", i, row, True, f"{where} -> {ghost!r}")
        name = {"chunk_label": "labels/chunks.jsonl", "chunk_family": "labels/chunks.jsonl"}.get(
            where, "labels/queries.jsonl")
        i, row = pick(name)
        if where in ("chunk_label", "query_label"):
            row["_id"] = ghost
        elif where in ("stale", "rumor"):
            row[where].append(ghost)
        else:
            row["family"] = "no_such.family" + ghost
        return case(name, i, row, True, f"{where} -> {ghost!r}")
    if op in ("self_supersede", "self_depend"):
        i, row = pick("corpus.jsonl")
        if op == "self_supersede":
            row["metadata"]["supersedes"] = row["_id"]
        else:
            row["metadata"]["depends_on"].append(row["_id"])
        return case("corpus.jsonl", i, row, True, op)
    if op in ("supersede_cycle", "supersede_fork"):
        rows = base.rows("corpus.jsonl")
        line_of = {r["_id"]: n for n, r in enumerate(rows)}
        pairs = [(n, line_of[r["metadata"]["supersedes"]]) for n, r in enumerate(rows) if r["metadata"]["supersedes"]]
        a, b = data.draw(st.sampled_from(pairs), label="pair")  # line a supersedes line b
        if op == "supersede_cycle":  # b supersedes a: a <-> b (or b -> a -> b's chain)
            row = rows[b]
            row["metadata"]["supersedes"] = rows[a]["_id"]
            return case("corpus.jsonl", b, row, True, "supersession cycle")
        others = [n for n in range(len(rows)) if n not in (a, b) and rows[n]["metadata"]["supersedes"] is None]
        c = data.draw(st.sampled_from(others), label="c")
        row = rows[c]
        row["metadata"]["supersedes"] = rows[b]["_id"]
        return case("corpus.jsonl", c, row, True, "two chunks supersede the same one")
    if op == "bad_enum":
        name, key = data.draw(st.sampled_from([("queries.jsonl", ("metadata", "category")),
                                               ("queries.jsonl", ("metadata", "split")),
                                               ("labels/chunks.jsonl", ("doc_type",)),
                                               ("labels/chunks.jsonl", ("kind",)),
                                               ("labels/queries.jsonl", ("asks",))]))
        i, row = pick(name)
        v = data.draw(st.sampled_from(["", "trivia", "Policy", "policy ", "DEV", "train", "statement\u200b"]))
        put(row, key, v)
        must = v == "" if key == ("metadata", "category") else True  # categories are free-form names
        return case(name, i, row, must, f"{'.'.join(key)} = {v!r}")
    if op in ("qrels_row", "qrels_unknown", "qrels_split"):
        name = data.draw(st.sampled_from(TSV), label="file")
        lines = base.lines(name)
        i = data.draw(st.integers(1, len(lines) - 1), label="line")
        q, c, g = lines[i].split("\t")
        if op == "qrels_row":
            text = data.draw(st.sampled_from([
                f"{q}\t{c}", f"{q}\t{c}\t{g}\t{g}", f"{q} {c} {g}", f"{q}\t{c}\tone", f"{q}\t{c}\t1.5",
                f"{q}\t{c}\t", f"{q}\t{c}\t+1", f"{q}\t{c}\t1e3", f"{q}\t{c}\t" + "9" * 30, f"{q}\t{c}\t\u0663",
                f"\t{c}\t{g}", f"{q}\t\t{g}", f"{q}\t{c}\t 1", f"{q}\t{c}\t1_0", f"{c}\t{q}\t{g}",
                f"{q}\t{c}\t-0"]), label="row")
            return case(name, i, text, True, f"qrels row {text!r}")
        if op == "qrels_unknown":
            text = data.draw(st.sampled_from([f"{q}\tc0000000000\t{g}", f"{q}\tc0000000000\t0",
                                              f"q9999\t{c}\t{g}", f"q9999\t{c}\t0", f"{q.lower()}x\t{c}\t{g}"]))
            return Case(S, f"{op} {name}: append {text!r}", _edit_lines({name: {-1: text}}), True, named=(name,),
                        rehash=True)
        # qrels_split: move a judgment into the other split's file (or duplicate it there)
        other = TSV[1 - TSV.index(name)]
        move = data.draw(st.booleans(), label="move")
        edits = {other: {-1: lines[i]}}
        if move:
            edits[name] = {i: None}
        return Case(S, f"{op}: {'move' if move else 'copy'} {name}:{i + 1} to {other}", _edit_lines(edits), True,
                    named=None, rehash=True)
    if op == "query_split":
        i, row = pick("queries.jsonl")
        row["metadata"]["split"] = "dev" if row["metadata"]["split"] == "test" else "test"
        return Case(S, f"{op} queries.jsonl:{i + 1}", _edit_line("queries.jsonl", i, dump(row)), True, named=None,
                    rehash=True)
    if op == "timeline":
        i, row = pick("labels/families.jsonl")
        tl = row["timeline"]
        how = data.draw(st.sampled_from(["empty", "reverse", "repeat", "drop_key", "string_value", "bool_value",
                                         "null_date", "number_date", "not_list", "step_list"]))
        if how == "empty":
            row["timeline"] = []
        elif how == "reverse":
            row["timeline"] = tl[::-1]
        elif how == "repeat":
            row["timeline"] = tl + [tl[-1]]
        elif how == "drop_key":
            del tl[0][data.draw(st.sampled_from(["effective_from", "value"]))]
        elif how == "string_value":
            tl[0]["value"] = str(tl[0]["value"])
        elif how == "bool_value":
            tl[0]["value"] = True
        elif how == "null_date":
            tl[0]["effective_from"] = None
        elif how == "number_date":
            tl[0]["effective_from"] = 19723
        elif how == "not_list":
            row["timeline"] = tl[0]
        else:
            row["timeline"] = [[s["effective_from"], s["value"]] for s in tl]
        return case("labels/families.jsonl", i, row, True, f"timeline {how}")
    if op == "deep_nesting":
        name = data.draw(jsonl, label="file")
        i, row = pick(name)
        depth = data.draw(st.sampled_from([50, 5000, 100000]))
        text = dump(row)[:-1] + ',"zz":' + "[" * depth + "]" * depth + "}"
        return case(name, i, text, depth > 1000, f"nesting {depth}")  # shallow junk in an unread key is fine
    # duplicate_key: the same key twice in one object (JSON allows it; the last wins)
    name = data.draw(jsonl, label="file")
    i, row = pick(name)
    key = data.draw(st.sampled_from(sorted(row)), label="key")
    text = dump(row)[:-1] + "," + json.dumps(key) + ":" + dump(row[key]) + "}"
    return case(name, i, text, False, f"duplicate key {key}")


@fuzz_settings(2000)
@given(data=st.data())
def _shapes_search(base, data):
    run_case("shapes", base, shape_mutation(data, base))


@pytest.mark.slow
def test_json_shape_corruption_is_rejected_naming_the_line(base):
    fuzz("shapes", "shape", _shapes_search, base)

# ------------------------------------------------------------------------------------------- 4. manifests

MANIFEST_OPS = ("delete", "not_json", "not_object", "empty", "invalid_utf8", "bom", "utf16", "nan", "directory",
                "files_missing", "files_shape", "entry_missing", "entry_shape", "entry_wrong_hash",
                "entry_plain_string", "entry_extra_missing_file", "entry_extra_outside", "entry_extra_existing",
                "entry_bytes", "dataset_sha256", "schema_version", "seed", "config", "unchecked_fields")


def manifest_mutation(data: st.DataObject, base: Base) -> Case:
    op = data.draw(st.sampled_from(MANIFEST_OPS), label="op")
    text = base.files["manifest.json"].decode("utf-8")
    m = json.loads(text)
    must, check, extra_file = True, None, None
    desc = op
    if op == "delete":
        new: bytes | None = None
        must = False

        def check(ds: Dataset) -> None:
            assert ds.manifest is None and ds.seed is None
    elif op == "not_json":
        new = text[:data.draw(st.integers(0, len(text) - 2), label="cut")].encode()
    elif op == "not_object":
        new = json.dumps(data.draw(st.one_of(st.lists(junk, max_size=3), st.text(max_size=5), st.integers(),
                                             st.none(), st.booleans(), st.just([m])))).encode()
    elif op == "empty":
        new = data.draw(st.sampled_from([b"", b"\n", b" "]))
    elif op == "invalid_utf8":
        pos = data.draw(st.integers(0, len(text)))
        new = text.encode()[:pos] + data.draw(st.sampled_from(INVALID_UTF8)) + text.encode()[pos:]
    elif op == "bom":
        new = codecs.BOM_UTF8 + text.encode()
    elif op == "utf16":
        new = text.encode("utf-16")
    elif op == "nan":
        m["counts"]["relevant_per_query_mean"] = data.draw(st.sampled_from([float("nan"), float("inf")]))
        new = json.dumps(m).encode()
    elif op == "directory":
        new = None
    else:
        files = m["files"]
        name = data.draw(st.sampled_from(sorted(files)), label="entry")
        if op == "files_missing":
            del m["files"]
        elif op == "files_shape":
            m["files"] = data.draw(st.one_of(st.just(sorted(files)), st.just([files]), st.text(max_size=3),
                                             st.integers(), st.none(), st.booleans(),
                                             st.just({k: v["sha256"] for k, v in files.items()}).map(
                                                 lambda d: list(d.items()))))
        elif op == "entry_missing":
            del files[name]
        elif op == "entry_shape":
            files[name] = data.draw(st.one_of(st.integers(), st.none(), st.booleans(), st.lists(junk, max_size=2),
                                              st.just({}), st.just({"bytes": files[name]["bytes"]}),
                                              st.just({"sha256": None}), st.just({"sha256": 42}),
                                              st.just({"sha256": [files[name]["sha256"]]}),
                                              st.just({"sha256": files[name]["sha256"][:63]}),
                                              st.just({"sha256": files[name]["sha256"], "bytes": "20"}),
                                              st.just({"sha256": files[name]["sha256"], "bytes": None})))
        elif op == "entry_wrong_hash":
            digest = files[name]["sha256"]
            files[name]["sha256"] = data.draw(st.sampled_from([
                hashlib.sha256(b"x").hexdigest(), digest[::-1], digest.upper(), "0" * 64, digest[1:] + "0",
                hashlib.sha256(base.files["corpus.jsonl"]).hexdigest() if name != "corpus.jsonl" else "f" * 64]))
            must = files[name]["sha256"] != digest
        elif op == "entry_plain_string":
            files[name] = files[name]["sha256"]  # the other accepted form
            must = False
        elif op in ("entry_extra_missing_file", "entry_extra_outside"):
            extra = ("extra.jsonl" if op == "entry_extra_missing_file"
                     else data.draw(st.sampled_from(["../outside.txt", "/etc/hostname", "labels/../../x", "",
                                                     "qrels/../../../etc/passwd"])))
            files[extra] = {"sha256": hashlib.sha256(b"").hexdigest(), "bytes": 0}
            desc = f"{op} {extra!r}"
        elif op == "entry_extra_existing":
            payload = b"notes\n"
            extra_file = ("notes.txt", payload)
            right = data.draw(st.booleans(), label="right")
            files["notes.txt"] = {"sha256": hashlib.sha256(payload if right else b"other").hexdigest(),
                                  "bytes": len(payload)}
            must = not right
            desc = f"{op} right={right}"
        elif op == "entry_bytes":
            files[name]["bytes"] = files[name]["bytes"] + data.draw(st.sampled_from([1, -1, 10**6]))
        elif op == "dataset_sha256":
            how = data.draw(st.sampled_from(["missing", "wrong", "null", "number", "list", "upper"]))
            m.pop("dataset_sha256") if how == "missing" else None
            if how != "missing":
                m["dataset_sha256"] = {"wrong": "0" * 64, "null": None, "number": 1, "list": [m["dataset_sha256"]],
                                       "upper": m["dataset_sha256"].upper()}[how]
            desc = f"dataset_sha256 {how}"
        elif op == "schema_version":
            how = data.draw(st.sampled_from(["missing", "1.0", "2.2", "3", 2.0, 2, None, ["2.0"], "2.0 "]))
            if how == "missing":
                del m["schema_version"]
            else:
                m["schema_version"] = how
            desc = f"schema_version {how!r}"
        elif op == "seed":
            seed = data.draw(st.one_of(st.sampled_from(["42", 42.0, True, False, [42], {"v": 42}, "", 4.2e1]),
                                       st.integers(-2**63, 2**63), st.none()), label="seed")
            m["config"]["seed"] = seed
            must = not (seed is None or (isinstance(seed, int) and not isinstance(seed, bool)))
            desc = f"seed {seed!r}"
            if not must:
                def check(ds: Dataset, seed=seed) -> None:
                    assert ds.seed == seed and type(ds.seed) is type(seed)
        elif op == "config":
            how = data.draw(st.sampled_from(["missing", "list", "string", "null"]))
            if how == "missing":
                del m["config"]
                must = False

                def check(ds: Dataset) -> None:
                    assert ds.seed is None
            else:
                m["config"] = {"list": [42], "string": "seed=42", "null": None}[how]
            desc = f"config {how}"
        else:  # unchecked_fields: counts, generator, provenance are not the loader's business
            how = data.draw(st.sampled_from(["counts", "generator", "provenance", "new_key"]))
            if how == "counts":
                m["counts"]["vectors"] = 99999
            elif how == "generator":
                m["generator"] = "someone else"
            elif how == "provenance":
                del m["provenance"]
            else:
                m["comment"] = "hand-edited"
            must = False
            desc = f"unchecked {how}"
        new = (json.dumps(m, indent=2, sort_keys=True) + "\n").encode()

    def apply(folder: Path) -> None:
        mpath = folder / "manifest.json"
        if op in ("delete", "directory"):
            mpath.unlink()
            if op == "directory":
                mpath.mkdir()
                (mpath / "manifest.json").write_bytes(base.files["manifest.json"])
        else:
            mpath.write_bytes(new)
        if extra_file:
            (folder / extra_file[0]).write_bytes(extra_file[1])

    return Case(f"manifest:{op}", desc, apply, must, named=("manifest.json",), check=check)


@fuzz_settings(600)
@given(data=st.data())
def _manifest_search(base, data):
    run_case("manifest", base, manifest_mutation(data, base))


@pytest.mark.slow
def test_manifest_corruption_is_rejected(base):
    fuzz("manifest", "manifest", _manifest_search, base)

# ------------------------------------------------------------------------------------------------ 5. files

FILE_OPS = ("remove", "directory", "fifo", "dangling_link", "labels_removed", "labels_is_file", "qrels_is_file",
            "swap", "extra_files", "unreadable", "unreadable_dir", "link_to_copy")


def file_mutation(data: st.DataObject, base: Base) -> Case:
    ops = [op for op in FILE_OPS if not (IS_ROOT and op.startswith("unreadable"))]
    op = data.draw(st.sampled_from(ops), label="op")
    keep_manifest = data.draw(st.booleans(), label="keep_manifest")
    name = data.draw(st.sampled_from(CHECKED), label="file")
    must, named, check = True, (name,), None

    def apply(folder: Path) -> None:
        path = folder / name
        if not keep_manifest:
            (folder / "manifest.json").unlink()
        if op == "remove":
            path.unlink()
        elif op == "directory":
            path.unlink()
            path.mkdir()
            (path / "x.jsonl").write_bytes(base.files[name])
        elif op == "fifo":
            path.unlink()
            os.mkfifo(path)
        elif op == "dangling_link":
            path.unlink()
            path.symlink_to(folder / "nowhere" / "x")
        elif op == "link_to_copy":
            outside = folder.parent / "outside"
            outside.mkdir(exist_ok=True)
            (outside / path.name).write_bytes(base.files[name])
            path.unlink()
            path.symlink_to(outside / path.name)
        elif op == "labels_removed":
            shutil.rmtree(folder / "labels")
        elif op == "labels_is_file":
            shutil.rmtree(folder / "labels")
            (folder / "labels").write_bytes(base.files["labels/chunks.jsonl"])
        elif op == "qrels_is_file":
            shutil.rmtree(folder / "qrels")
            (folder / "qrels").write_bytes(base.files["qrels/dev.tsv"])
        elif op == "swap":
            other = folder / swap_with
            tmp = folder / ".swap"
            os.replace(path, tmp)
            os.replace(other, path)
            os.replace(tmp, other)
        elif op == "extra_files":
            (folder / ".DS_Store").write_bytes(b"\0\1junk")
            (folder / "corpus.jsonl~").write_bytes(b"{not json")
            (folder / "labels" / "README").write_text("hand notes\n")
            (folder / "qrels" / "train.tsv").write_text("garbage\n")
        elif op == "unreadable":
            os.chmod(path, 0)
        else:  # unreadable_dir
            os.chmod(path.parent if path.parent != folder else folder / "labels", 0)

    swap_with = None
    if op == "swap":
        swap_with = data.draw(st.sampled_from([n for n in CHECKED if n != name]), label="other")
        named = (name, swap_with)
    elif op == "remove" and name.startswith("labels/") and not keep_manifest:
        must, named = False, None  # schema 2.1: each labels file is optional
    elif op == "labels_removed":
        must = keep_manifest  # the manifest's dataset_sha256 covers labels/; without it, labels are optional
        named = ("manifest.json",)
        if not must:
            def check(ds: Dataset) -> None:
                assert ds.labels is None
    elif op == "labels_is_file":
        named = ("labels",)
    elif op == "qrels_is_file":
        named = ("qrels",)
    elif op in ("extra_files", "link_to_copy"):
        must, named = False, None
    elif op == "unreadable_dir":
        named = ("labels", "qrels") if name.startswith(("labels", "qrels")) else ("labels",)
    desc = f"{op} {name}{' with ' + swap_with if swap_with else ''} (manifest kept: {keep_manifest})"
    return Case(f"files:{op}", desc, apply, must, named=named, check=check)


@fuzz_settings(250)
@given(data=st.data())
def _files_search(base, data):
    run_case("files", base, file_mutation(data, base))


@pytest.mark.slow
def test_missing_and_odd_files_are_rejected(base):
    fuzz("files", "files", _files_search, base)

# ------------------------------------------------------------------------------------ deterministic cases


def _row_edit(name: str, line: int, edit: Callable[[dict], Any]) -> Callable[[Path], None]:
    """Edit the JSON object on ``line`` (1-based) of ``name`` in place."""
    def apply(folder: Path) -> None:
        lines = (folder / name).read_text(encoding="utf-8").split("\n")
        row = json.loads(lines[line - 1])
        edit(row)
        lines[line - 1] = dump(row)
        (folder / name).write_text("\n".join(lines), encoding="utf-8")
    return apply


def _text_edit(name: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        text = (folder / name).read_text(encoding="utf-8")
        assert old in text
        (folder / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    return apply


def _manifest_edit(edit: Callable[[dict], Any]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        m = json.loads((folder / "manifest.json").read_text())
        edit(m)
        (folder / "manifest.json").write_text(json.dumps(m))
    return apply


def _set(path: str, value: Any) -> Callable[[dict], None]:
    keys = path.split(".")
    return lambda row: get(row, tuple(int(k) if k.isdigit() else k for k in keys[:-1])).__setitem__(keys[-1], value)


def _first_superseding(folder: Path) -> tuple[int, int]:
    rows = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines()]
    line_of = {r["_id"]: n for n, r in enumerate(rows, 1)}
    a = next(n for n, r in enumerate(rows, 1) if r["metadata"]["supersedes"])
    return a, line_of[rows[a - 1]["metadata"]["supersedes"]]


def _supersede_fork(folder: Path) -> None:
    a, b = _first_superseding(folder)
    rows = (folder / "corpus.jsonl").read_text().splitlines()
    target = json.loads(rows[b - 1])["_id"]
    c = next(n for n, line in enumerate(rows, 1) if n not in (a, b) and json.loads(line)["metadata"]["supersedes"]
             is None)
    _row_edit("corpus.jsonl", c, _set("metadata.supersedes", target))(folder)


def _supersede_cycle(folder: Path) -> None:
    a, b = _first_superseding(folder)
    rows = (folder / "corpus.jsonl").read_text().splitlines()
    _row_edit("corpus.jsonl", b, _set("metadata.supersedes", json.loads(rows[a - 1])["_id"]))(folder)


def _qrels_into_other_split(folder: Path) -> None:
    dev = (folder / "qrels" / "dev.tsv").read_text().splitlines()
    with (folder / "qrels" / "test.tsv").open("a") as fh:
        fh.write(dev[1] + "\n")


def _self_depend(row: dict) -> None:
    row["metadata"]["depends_on"].append(row["_id"])


# Each defect the fuzzer (or reading the loader) found, pinned as one deterministic case: (what, mutation,
# re-hash the manifest afterwards, the message it must give). Before the fix each of these either loaded or
# raised something other than BenchError.
DEFECTS = [
    ("huge version: OverflowError", _row_edit("corpus.jsonl", 1, _set("metadata.version", 10**19)), True,
     r"corpus\.jsonl:1: 'metadata\.version' must be an integer in \[0, 2\^53\)"),
    ("5000-digit integer: ValueError", _text_edit("corpus.jsonl", '"version":', '"version":' + "9" * 5000 + ",\"v\":"),
     True, r"corpus\.jsonl:1: not valid JSON \(an integer with thousands of digits\)"),
    ("NaN token accepted", _row_edit("labels/chunks.jsonl", 1, _set("value", float("nan"))), True,
     r"labels/chunks\.jsonl:1: not valid JSON \(NaN is not a JSON number\)"),
    ("1e400 read as infinity", _text_edit("labels/chunks.jsonl", '"value":null', '"value":1e400'), True,
     r"labels/chunks\.jsonl:\d+: not valid JSON \(number 1e400 is out of range\)"),
    ("numeric effective_from: AttributeError",
     _row_edit("labels/families.jsonl", 1, lambda r: r["timeline"][0].__setitem__("effective_from", 19723)), True,
     r"labels/families\.jsonl:1: 'timeline\[0\]\.effective_from' must be an ISO-8601 UTC string"),
    ("string timeline value accepted",
     _row_edit("labels/families.jsonl", 1, lambda r: r["timeline"][0].__setitem__("value", "180")), True,
     r"labels/families\.jsonl:1: 'timeline\[0\]\.value' must be a number, got a string"),
    ("boolean timeline value accepted",
     _row_edit("labels/families.jsonl", 1, lambda r: r["timeline"][0].__setitem__("value", True)), True,
     r"labels/families\.jsonl:1: 'timeline\[0\]\.value' must be a number, got true/false"),
    ("duplicate family silently replaced", _text_edit("labels/families.jsonl", "\n", "\n" + (
        "{\"family\":\"password_rotation.db_superuser\",\"timeline\":[{\"effective_from\":\"2024-01-01T00:00:00Z\","
        "\"value\":1}]}\n")), True, r"labels/families\.jsonl:2: family 'password_rotation\.db_superuser' is listed "
                                   r"twice \(first on line 1\)"),
    ("time out of range in UTC: OverflowError",
     _row_edit("queries.jsonl", 1, _set("metadata.as_of", "0001-01-01T00:00:00+05:00")), True,
     r"queries\.jsonl:1: 'metadata\.as_of' is '0001-01-01T00:00:00\+05:00', out of range once converted to UTC"),
    ("time with a trailing NUL accepted",
     _row_edit("corpus.jsonl", 2, _set("metadata.created_at", "2024-01-01T00:00:00Z\x00")), True,
     r"corpus\.jsonl:2: 'metadata\.created_at' is '2024-01-01T00:00:00Z\\x00', not an ISO-8601 timestamp"),
    ("deep nesting: RecursionError", _text_edit("queries.jsonl", "{", "{\"x\":" + "[" * 5000 + "]" * 5000 + ","),
     True, r"queries\.jsonl:1: not valid JSON \(nested too deeply\)"),
    ("score '+1' accepted", _text_edit("qrels/dev.tsv", "\t2\n", "\t+1\n"), True,
     r"qrels/dev\.tsv:2: score '\+1' is not an integer"),
    ("30-digit score: OverflowError", _text_edit("qrels/dev.tsv", "\t2\n", "\t" + "9" * 30 + "\n"), True,
     r"qrels/dev\.tsv:2: score '9{30}' is not an integer"),
    ("unknown chunk judged 0 accepted", _text_edit("qrels/dev.tsv", "\n", "\nq0002\tc0000000000\t0\n"), True,
     r"qrels/dev\.tsv: query 'q0002' judges unknown chunk id 'c0000000000' \(line 2\)"),
    ("judgment in the other split's file ignored", _qrels_into_other_split, True,
     r"qrels/test\.tsv:\d+: query 'q0002' is a 'dev' query \(queries\.jsonl:\d+\); its judgments belong in "
     r"qrels/dev\.tsv"),
    ("chunk depending on itself accepted", _row_edit("corpus.jsonl", 1, _self_depend), True,
     r"corpus\.jsonl:1: 'metadata\.depends_on' names the chunk itself"),
    ("two successors of one chunk accepted", _supersede_fork, True,
     r"corpus\.jsonl:\d+: 'metadata\.supersedes' names '\w+', which line \d+ already supersedes"),
    ("supersession cycle accepted", _supersede_cycle, True,
     r"corpus\.jsonl:\d+: 'metadata\.supersedes' makes a cycle"),
    ("supersedes 'missing' read as none", _row_edit("corpus.jsonl", 1, _set("metadata.supersedes", "missing")), True,
     r"corpus\.jsonl:1: 'metadata\.supersedes' refers to unknown chunk id 'missing'"),
    ("negative version accepted", _row_edit("corpus.jsonl", 1, _set("metadata.version", -1)), True,
     r"corpus\.jsonl:1: 'metadata\.version' must be an integer in \[0, 2\^53\), got -1"),
    ("non-string title accepted", _row_edit("corpus.jsonl", 1, _set("title", {"x": 1})), True,
     r"corpus\.jsonl:1: 'title' must be a string or null, got an object"),
    ("huge label value accepted", _row_edit("labels/chunks.jsonl", 1, _set("value", 10**30)), True,
     r"labels/chunks\.jsonl:1: 'value' is 1000000000000000000000000000000; values must be within \+-2\^53"),
    ("chunk of an unknown family accepted", _row_edit("labels/chunks.jsonl", 1, _set("family", "no.such")), True,
     r"labels/chunks\.jsonl:1: family 'no\.such' is not in labels/families\.jsonl"),
    ("unknown 'asks' accepted", _row_edit("labels/queries.jsonl", 1, _set("asks", "trivia")), True,
     r"labels/queries\.jsonl:1: 'asks' is 'trivia'; allowed: policy, runbook, message"),
    ("manifest without schema_version accepted", _manifest_edit(lambda m: m.pop("schema_version")), False,
     r"manifest\.json: schema_version: missing; this loader reads schema 2\.0 or 2\.1; regenerate the folder"),
    ("manifest of another schema accepted", _manifest_edit(lambda m: m.update(schema_version="1.0")), False,
     r"manifest\.json:1: schema_version: '1\.0' is older than 2\.0 \(this loader reads schema 2\.0 or 2\.1\); "
     r"regenerate the folder \(`smartvector-gen dataset=versioned_policies out_dir=<new folder>`"),
    ("manifest without dataset_sha256 accepted", _manifest_edit(lambda m: m.pop("dataset_sha256")), False,
     r"manifest\.json: dataset_sha256: missing \(.*\); regenerate the folder"),
    ("manifest without files accepted", _manifest_edit(lambda m: m.pop("files")), False,
     r"manifest\.json: files: missing \(the sha256 of every file\); regenerate"),
    ("files entry {sha256: null} skipped",
     _manifest_edit(lambda m: m["files"]["corpus.jsonl"].update(sha256=None)), False,
     r"manifest\.json:1: files\.corpus\.jsonl: must be a sha256 string \(64 lowercase hex digits\)"),
    ("files entry missing accepted", _manifest_edit(lambda m: m["files"].pop("queries.jsonl")), False,
     r"manifest\.json:1: files: has no entry for queries\.jsonl"),
    ("files entry outside the folder ignored",
     _manifest_edit(lambda m: m["files"].update({"../x": hashlib.sha256(b"").hexdigest()})), False,
     r"manifest\.json:1: files: names '\.\./x', which is not a relative path inside the dataset folder"),
    ("files entry for a missing file ignored",
     _manifest_edit(lambda m: m["files"].update({"documents.jsonl": hashlib.sha256(b"").hexdigest()})), False,
     r"documents\.jsonl: file is missing; manifest\.json lists it"),
    ("wrong 'bytes' ignored", _manifest_edit(lambda m: m["files"]["corpus.jsonl"].update(bytes=1)), False,
     r"manifest\.json:1: files\.corpus\.jsonl\.bytes: is 1, but the file has \d+ bytes"),
    ("config null: AttributeError", _manifest_edit(lambda m: m.update(config=None)), False,
     r"manifest\.json:1: config: must be an object \(the generator's parameters\), got null"),
    ("manifest.json a folder: treated as no manifest",
     lambda f: ((f / "manifest.json").unlink(), (f / "manifest.json").mkdir()), False,
     r"manifest\.json: is a folder, not a file"),
    ("manifest.json a FIFO: treated as no manifest",
     lambda f: ((f / "manifest.json").unlink(), os.mkfifo(f / "manifest.json")), False,
     r"manifest\.json: is not a regular file \(a FIFO, socket or device\?\)"),
    ("labels a file: loaded without labels",
     lambda f: (shutil.rmtree(f / "labels"), (f / "labels").write_text("x"), (f / "manifest.json").unlink()), False,
     r"labels: is not a folder; labels/ must be a folder holding chunks\.jsonl"),
]


@pytest.mark.parametrize("what, mutate, rehash, message", DEFECTS, ids=[d[0] for d in DEFECTS])
def test_each_defect_found_stays_fixed(base, what, mutate, rehash, message):
    with tempfile.TemporaryDirectory(prefix="svb-fuzz-", dir=TMP_DIR) as tmp:
        folder = Path(tmp) / "ds"
        base.copy_to(folder)
        mutate(folder)
        if rehash:
            _rehash(folder)
        before = _snapshot(Path(tmp))
        with pytest.raises(BenchError) as exc:
            load_dataset(folder)
        assert re.search(message, str(exc.value)), str(exc.value)
        assert "\n" not in str(exc.value) and _snapshot(Path(tmp)) == before


def test_path_that_is_a_file_or_missing_is_named(base, tmp_path):
    target = tmp_path / "corpus.jsonl"
    target.write_bytes(base.files["corpus.jsonl"])
    with pytest.raises(BenchError) as exc:
        load_dataset(target)
    assert str(exc.value) == (f"dataset.path={target}: is a file, not a dataset folder (a dataset folder holds "
                              "corpus.jsonl, queries.jsonl, qrels/dev.tsv and/or qrels/test.tsv, and optionally "
                              "labels/ and manifest.json (schema/dataset.schema.json))")
    missing = tmp_path / "nope"
    with pytest.raises(BenchError, match=rf"^dataset\.path={re.escape(str(missing))}: does not exist$"):
        load_dataset(missing)
    with pytest.raises(BenchError, match=r"^dataset\.path=: is empty"):
        load_dataset("")
    for bad in (None, 42):
        with pytest.raises(BenchError, match=r"^dataset\.path="):
            load_dataset(bad)  # type: ignore[arg-type]


def _load_as_nobody(folder: Path) -> str:
    """``load_dataset(folder)`` in a forked child that dropped root for ``nobody``: what it raised, as text."""

    def load() -> str:
        try:
            load_dataset(folder)
            return "loaded"
        except BenchError as exc:
            return f"BenchError: {exc}"

    return run_as_nobody(load)


@pytest.mark.parametrize("target", ["qrels/test.tsv", "labels", "manifest.json"])
def test_unreadable_file_is_a_bench_error_for_an_unprivileged_user(base, target):
    """chmod 000 does not stop root, so as root the load runs in a forked child that switched to ``nobody``."""
    tmp = Path(tempfile.mkdtemp(prefix="svb-fuzz-perm-", dir=TMP_DIR))
    try:
        os.chmod(tmp, 0o755)
        folder = tmp / "ds"
        base.copy_to(folder)
        for p in [folder, folder / "labels", folder / "qrels"]:
            os.chmod(p, 0o755)
        for name in base.files:
            os.chmod(folder / name, 0o644)
        os.chmod(folder / target, 0)
        before = _snapshot(tmp)
        if IS_ROOT:
            got = _load_as_nobody(folder)
        else:
            try:
                load_dataset(folder)
                got = "loaded"
            except BenchError as exc:
                got = f"BenchError: {exc}"
        assert _snapshot(tmp) == before
        if target == "labels":  # the folder cannot be listed: the first label file cannot be looked at
            want = (f"BenchError: {folder / 'labels' / 'chunks.jsonl'}: cannot be read (Permission denied); check "
                    "the permissions of its folder")
        else:
            want = f"BenchError: {folder / target}: cannot be read (Permission denied); check its permissions"
            want += "; or delete manifest.json to load the folder unchecked" if target == "manifest.json" else ""
        assert got == want
    finally:
        _restore_permissions(tmp)
        shutil.rmtree(tmp)
