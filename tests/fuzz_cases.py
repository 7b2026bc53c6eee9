"""Shared machinery of the ``load_dataset`` fuzz tests (tests/test_fuzz_loader_*.py), which fuzz the loader
with corrupted copies of one small generated dataset.

The property, for every drawn corruption: ``load_dataset`` either returns a ``Dataset`` (only where the
corruption leaves nothing the loader checks broken) or raises ``BenchError`` with a one-line message that names
the offending file (for a manifest with several problems, one ``BenchProblems``: a heading and one line per
problem); it never raises anything else and never writes into the folder (its listing, bytes, modes and mtimes
are unchanged, no temporary leftovers). Five families of corruption, each a test:

- raw bytes (truncate, flip, insert, delete, invalid UTF-8, BOM, UTF-16, NUL, empty, CRLF, ...) with the
  manifest as generated: any change of a checked file's bytes must be caught (the manifest has its sha256);
- the same bytes with the manifest's hashes recomputed afterwards (as the writer computes them), so the
  corrupted text reaches the decoders and parsers: a file that is not UTF-8, not JSON lines of objects or not
  a well-formed qrels table must be rejected naming that file (both: tests/test_fuzz_loader_bytes.py);
- JSON shapes, also re-hashed: a line replaced by a non-object, a required key dropped, a value of the wrong
  type, NaN / Infinity, huge integers, bad or inverted times, duplicate ids, unknown ids in qrels and labels,
  self-supersession, supersession cycles and forks, edges to missing chunks, bad qrels rows, bad timelines
  (tests/test_fuzz_loader_shapes.py);
- manifests: missing, not JSON, not an object, ``files`` of the wrong shape or with missing, extra or wrong
  entries, ``dataset_sha256`` wrong or missing, a wrong ``schema_version``, a seed that is not an integer
  (tests/test_fuzz_loader_manifest.py);
- files: missing files, a folder or FIFO or dangling link where a file should be, a file where ``labels/`` or
  ``qrels/`` should be, swapped files, unreadable files (skipped as root, which ignores permissions; a
  separate test drops to an unprivileged user instead) (tests/test_fuzz_loader_files.py).

Each defect the fuzzers found is pinned as one deterministic case in tests/test_fuzz_loader_defects.py.

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
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

from data_gen.params import params_from_config
from data_gen.writer import write_dataset
from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.dataset import DATA_FILES, LABEL_FILES, Dataset, dataset_sha256, load_dataset
from smartvector_bench.core.schema.check import validate_folder
from smartvector_bench.core.errors import BenchError, BenchProblems

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


# ------------------------------------------------------ used by several families and the defects

INVALID_UTF8 = [b"\xff", b"\xfe", b"\xc3", b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\xa0\xa1"]
BIG = "__BIG_INT__"


def get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def dump(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))  # NaN -> NaN token
    return text.replace(f'"{BIG}"', "9" * 5000)


junk = st.recursive(st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=False,
                                                                                 allow_infinity=False)
                    | st.text(max_size=8), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
