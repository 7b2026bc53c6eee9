"""Reading one file of an untrusted folder (bytes, encoding, strict JSON, JSON lines) and checking one field,
each failure a one-line BenchError naming the file and line."""

from __future__ import annotations

import codecs
import errno
import hashlib
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Iterator

import numpy as np

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.timeutil import parse_iso, to_days

#
# The contract for bad input: a BenchError whose one-line message starts with the file (and line, where one
# applies) and says what is wrong; never another exception, and nothing is ever written into the folder.

MAX_INT = 2**53 - 1  # the largest integer every JSON reader holds exactly: bounds versions, offsets, values
MISSING = object()  # the default that tells an absent key from one set to null
SHA256_HEX = re.compile(r"[0-9a-f]{64}")  # a sha256 as the manifest writes it (lower-case hex)
QRELS_SCORE = re.compile(r"[0-9]{1,9}")  # a qrels grade: a non-negative integer that fits an int32


def show(value, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters: one line, whatever the value holds."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def kind_of(value) -> str:
    """What a JSON value is, in a message's words (``a string``, ``null``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def path_kind(path: Path) -> str:
    """``file``, ``dir``, ``other`` (FIFO, socket, device: never opened) or ``missing`` (also a broken link)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # not a permission problem: say what it is
            raise BenchError(f"{path}: is a symbolic link loop (it, or a folder on its path, leads back to itself); "
                             "point it at a file or remove it") from None
        raise BenchError(f"{path}: cannot be read ({exc.strerror or exc}); check the permissions of its folder") \
            from None
    except ValueError as exc:  # e.g. a NUL byte in the path
        raise BenchError(f"{path}: cannot be read ({exc})") from None
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def read_bytes(path: Path, needs: str) -> bytes:
    """The bytes of a file the dataset needs; ``needs`` says what the folder must hold (for the message)."""
    kind = path_kind(path)
    if kind == "missing":
        if path.is_symlink():
            raise BenchError(f"{path}: is a broken symbolic link; {needs}")
        raise BenchError(f"{path}: file is missing; {needs}")
    if kind == "dir":
        raise BenchError(f"{path}: is a folder, not a file; {needs}")
    if kind == "other":
        raise BenchError(f"{path}: is not a regular file (a FIFO, socket or device?); {needs}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BenchError(f"{path}: cannot be read ({exc.strerror or exc}); check its permissions") from None


def decode_utf8(path: Path, data: bytes) -> str:
    """UTF-8 text (no byte-order mark, no NUL)."""
    if data.startswith(codecs.BOM_UTF8):
        raise BenchError(f"{path}: starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM")
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        raise BenchError(f"{path}: is UTF-16 encoded; save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BenchError(f"{path}: not valid UTF-8 at line {line} (byte {exc.start}); save it as UTF-8") from None
    nul = text.find("\0")
    if nul >= 0:
        raise BenchError(f"{path}:{text.count(chr(10), 0, nul) + 1}: contains a NUL byte (a binary or UTF-16 file?)")
    return text


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def parse_json(text: str):
    """Strict JSON: NaN, Infinity and numbers that overflow a float are errors (ValueError)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def json_error(exc: Exception) -> str:
    """Why :func:`parse_json` failed, in one line (for the message that names the file and line)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg}, column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if "integer string conversion" in str(exc):
        return "an integer with thousands of digits"
    return str(exc)


def json_lines(text: str) -> Iterator[tuple[int, object, Exception | None]]:
    """(line number, parsed value, None) for every non-blank line of a JSON-lines text; a line that is not valid
    JSON gives (line number, None, the parse error) instead, so each caller words its own message."""
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip(" \t\r"):
            continue
        try:
            yield lineno, parse_json(line), None
        except (ValueError, RecursionError) as exc:
            yield lineno, None, exc


QRELS_HEADER = ["query-id", "corpus-id", "score"]


def tsv_lines(text: str) -> tuple[str, list[tuple[int, list[str]]]]:
    """(the first line as written, [(line number, tab-separated fields)] of every non-blank line after it), with
    ``\r`` line endings dropped: the shared reading of a qrels file."""
    lines = text.split("\n")
    rows = []
    for lineno, line in enumerate(lines[1:], 2):
        line = line.removesuffix("\r")
        if line.strip(" \t"):
            rows.append((lineno, line.split("\t")))
    return lines[0], rows


def read_jsonl(path: Path, allow_empty: bool = False, text: str | None = None) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line of ``path`` (or of ``text``, its already-read content);
    errors name the file and line."""
    if text is None:
        text = decode_utf8(path, read_bytes(path, "the dataset folder needs it"))
    rows = []
    for lineno, obj, exc in json_lines(text):
        if exc is not None:
            raise BenchError(f"{path}:{lineno}: not valid JSON ({json_error(exc)})") from None
        if not isinstance(obj, dict):
            raise BenchError(f"{path}:{lineno}: expected a JSON object, got {kind_of(obj)}")
        rows.append((lineno, obj))
    if not rows and not allow_empty:
        raise BenchError(f"{path}: file is empty (it needs one JSON object per line)")
    return rows


# ----------------------------------------------------------------------------------------- checking fields

_TYPE_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "an object", (int, float): "a number"}


def need(obj: dict, key: str, where: str, kind: type | tuple[type, ...], prefix: str = ""):
    """``obj[key]`` of type ``kind`` (a bool is no number); ``prefix`` names the enclosing object."""
    name = prefix + key
    if key not in obj:
        raise BenchError(f"{where}: missing key {name!r}")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise BenchError(f"{where}: {name!r} must be {_TYPE_NAMES.get(kind, kind)}, got {kind_of(value)}")
    return value


def ident(obj: dict, key: str, where: str) -> str:
    """An id: a non-empty string that fits a qrels field (no tab or line break)."""
    value = need(obj, key, where, str)
    if not value or any(c in value for c in "\t\n\r"):
        raise BenchError(f"{where}: {key!r} must be a non-empty string without tabs or line breaks, got "
                         f"{show(value)}")
    return value


def meta_int(meta: dict, key: str, where: str, default=MISSING, prefix: str = "metadata.") -> int:
    """``meta[key]`` (or ``default``), an integer in [0, 2^53)."""
    value = meta.get(key, default)
    if value is MISSING:
        raise BenchError(f"{where}: missing key '{prefix}{key}'")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_INT:
        raise BenchError(f"{where}: '{prefix}{key}' must be an integer in [0, 2^53), got {show(value)}")
    return value


def number(value, where: str, name: str, nullable: bool = False) -> float:
    """A finite number (NaN for null where ``nullable``)."""
    if value is None and nullable:
        return np.nan
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise BenchError(f"{where}: {name!r} must be a number{' or null' if nullable else ''}, got {kind_of(value)}")
    if not -MAX_INT <= value <= MAX_INT:
        raise BenchError(f"{where}: {name!r} is {show(value)}; values must be within +-2^53")
    return float(value)


def iso_days(value, where: str, name: str) -> float:
    """An ISO-8601 timestamp with a timezone, as days since the epoch."""
    example = "e.g. 2024-01-31T00:00:00Z"
    if not isinstance(value, str):
        raise BenchError(f"{where}: {name!r} must be an ISO-8601 UTC string ({example}), got {kind_of(value)}")
    if not value.isascii() or not value.isprintable() or value != value.strip():
        raise BenchError(f"{where}: {name!r} is {show(value)}, not an ISO-8601 timestamp ({example})")
    try:
        return to_days(parse_iso(value))
    except ValueError as exc:
        reason = str(exc)
        if reason.startswith("Invalid isoformat"):
            raise BenchError(f"{where}: {name!r} is {show(value)}, not an ISO-8601 timestamp ({example})") from None
        raise BenchError(f"{where}: {name!r} {reason}" if "timestamp" in reason else
                         f"{where}: {name!r} is {show(value)}: {reason}") from None
    except OverflowError:
        raise BenchError(f"{where}: {name!r} is {show(value)}, out of range once converted to UTC") from None


def meta_time(meta: dict, key: str, where: str, nullable: bool = False) -> float:
    """``metadata.<key>``, an ISO-8601 timestamp, as days since the epoch (``inf`` for null where ``nullable``)."""
    if key not in meta:
        raise BenchError(f"{where}: missing key 'metadata.{key}'")
    value = meta[key]
    if value is None and nullable:
        return np.inf
    return iso_days(value, where, f"metadata.{key}")


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
