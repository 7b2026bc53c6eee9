"""Fuzzing ``load_dataset`` with missing and odd files: a folder or FIFO or dangling link where a file should
be, a file where ``labels/`` or ``qrels/`` should be, swapped and unreadable files; and, deterministically, a
dataset path that is a file or missing, and unreadable files for an unprivileged user (machinery:
tests/fuzz_cases.py)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartvector_bench.core.dataset import Dataset, load_dataset
from smartvector_bench.core.errors import BenchError

from .conftest import IS_ROOT, run_as_nobody
from .fuzz_cases import (CHECKED, TMP_DIR, Base, Case, _restore_permissions, _snapshot, fuzz, fuzz_settings,
                         run_case)
from .fuzz_cases import base  # noqa: F401 - the module's one generated dataset (a fixture)

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
