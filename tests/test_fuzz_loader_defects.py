"""Each defect the ``load_dataset`` fuzzers (or reading the loader) found, pinned as one deterministic case that
must raise ``BenchError`` with its one-line message and leave the folder unchanged (machinery:
tests/fuzz_cases.py)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest

from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.errors import BenchError

from .fuzz_cases import TMP_DIR, _rehash, _snapshot, dump, get
from .fuzz_cases import base  # noqa: F401 - the module's one generated dataset (a fixture)

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
