"""Fuzzing ``load_dataset`` with raw byte corruption of one checked file (truncate, flip, insert, delete,
invalid UTF-8, BOM, UTF-16, NUL, empty, CRLF, ...), with the manifest as generated and with its hashes
recomputed so the corrupted text reaches the decoders and parsers (machinery: tests/fuzz_cases.py)."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .fuzz_cases import CHECKED, INVALID_UTF8, Base, Case, fuzz, fuzz_settings, run_case, syntax_ok
from .fuzz_cases import base  # noqa: F401 - the module's one generated dataset (a fixture)

# -------------------------------------------------------------------------------------- 1+2. raw bytes

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
