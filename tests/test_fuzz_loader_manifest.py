"""Fuzzing ``load_dataset`` with corrupted manifests: missing, not JSON, not an object, ``files`` of the wrong
shape or with missing, extra or wrong entries, ``dataset_sha256`` wrong or missing, a wrong ``schema_version``,
a seed that is not an integer (machinery: tests/fuzz_cases.py)."""

from __future__ import annotations

import codecs
import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartvector_bench.core.dataset import Dataset

from .fuzz_cases import INVALID_UTF8, Base, Case, fuzz, fuzz_settings, junk, run_case
from .fuzz_cases import base  # noqa: F401 - the module's one generated dataset (a fixture)

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
