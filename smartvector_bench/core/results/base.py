"""What every result file shares: its top-level keys as dataclass fields, a ``schema_version`` it must
declare, validation whose errors name the file and the key, an atomic save and a load.

``save`` writes ``atomic.dumps_json(to_dict())``: sorted keys, two-space indent, floats as Python's repr. That is
how every experiment has always written its JSON, so moving an experiment onto its result object changes no
byte of what it writes; a field declared optional is left out when it is None, as the experiments did.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from pathlib import Path
from typing import Any, ClassVar

from smartvector_bench.core.atomic import atomic_write_json, dumps_json
from smartvector_bench.core.errors import BenchError

OPTIONAL = {"optional": True}  # field metadata: the key may be absent (None means absent)


class ResultError(BenchError):
    """A result file (or object) that does not have the shape of its kind; the message names file and key.
    ``file`` and ``key`` hold the two apart (``key`` None when the file is absent or not JSON), for a caller
    that reports them in columns of its own (the regression gate names its row by the key)."""

    def __init__(self, message: str, file: str | None = None, key: str | None = None) -> None:
        super().__init__(message)
        self.file, self.key = file, key


def optional(default=None):
    return dataclasses.field(default=default, metadata=OPTIONAL)


_JSON = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
         bool: "true or false"}


def _is(value: Any, want: type) -> bool:
    if want is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, want)


def check(ok: bool, where: str, key: str, what: str) -> None:
    """Raise ResultError(``<where>: <key>: <what>``) unless ``ok``."""
    if not ok:
        raise ResultError(f"{where}: {key}: {what}", where, key)


def check_type(value: Any, want: type | tuple, where: str, key: str, allow_none: bool = False) -> None:
    wants = want if isinstance(want, tuple) else (want,)
    if (value is None and allow_none) or any(_is(value, w) for w in wants):
        return
    words = " or ".join(_JSON.get(w, w.__name__) for w in wants) + (" or null" if allow_none else "")
    raise ResultError(f"{where}: {key}: expected {words}, got {json.dumps(value)[:60]}", where, key)


def check_finite(value: Any, where: str, key: str = "") -> None:
    """Every number in ``value`` finite: Python's json reads NaN and Infinity, which no result may hold (a value
    not measured is null); the error names the dotted key (``systems.bm25.test.top1``, ``top1_ci[0]``)."""
    if isinstance(value, float):
        check(math.isfinite(value), where, key or "(top level)",
              f"expected a finite number, got {json.dumps(value)} (not measured is null)")
    elif isinstance(value, dict):
        for k, v in value.items():
            check_finite(v, where, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_finite(v, where, f"{key}[{i}]")


def _types(hint) -> tuple[tuple[type, ...], bool]:
    """(JSON types, None allowed) of a field annotation such as ``dict``, ``str | None``, ``dict[str, Any]``."""
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    kinds = tuple(typing.get_origin(a) or a for a in args if a is not type(None))
    return kinds, type(None) in args


@dataclasses.dataclass
class ResultFile:
    """Base of the result kinds; a subclass declares its fields (the file's top-level keys) and ``_check``."""

    KIND: ClassVar[str] = "result"
    FILE: ClassVar[str] = "result.json"
    SCHEMA_VERSIONS: ClassVar[tuple[str, ...]] = ()  # the versions this class reads, current last

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, data: Any, source: str | Path | None = None):
        """The object of a parsed JSON document, validated; unknown and missing keys are errors."""
        where = str(source or f"<{cls.KIND} result>")
        check_type(data, dict, where, "(top level)")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        check(not unknown, where, unknown[0] if unknown else "", f"unknown key for a {cls.KIND} result "
              f"(known: {', '.join(fields)})")
        missing = [n for n, f in fields.items() if n not in data and not f.metadata.get("optional")]
        check(not missing, where, missing[0] if missing else "", f"missing (a {cls.KIND} result has it)")
        obj = cls(**data)
        obj.validate(where)
        return obj

    def to_dict(self) -> dict:
        """The JSON document (the field values themselves, not copies); optional fields left out when None."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if not (f.metadata.get("optional") and getattr(self, f.name) is None)}

    def dumps(self) -> str:
        return dumps_json(self.to_dict())

    def validate(self, source: str | Path | None = None):
        """Check the schema version, every field's JSON type, that every number is finite, then the kind's own
        rules; returns self."""
        where = str(source or f"<{self.KIND} result>")
        check(self.schema_version in self.SCHEMA_VERSIONS, where, "schema_version",
              f"{self.schema_version!r} is not a {self.KIND} schema this code reads "
              f"({', '.join(self.SCHEMA_VERSIONS)})")
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            kinds, none_ok = _types(hints[f.name])
            value = getattr(self, f.name)
            if kinds and kinds != (typing.Any,):
                check_type(value, kinds, where, f.name, allow_none=none_ok or bool(f.metadata.get("optional")))
        check_finite(self.to_dict(), where)
        self._check(where)
        return self

    def _check(self, where: str) -> None:
        """The kind's own rules (override)."""

    def save(self, path: str | Path) -> Path:
        """Validate, then write the file atomically (temp file, fsync, rename)."""
        path = Path(path)
        self.validate(path)
        atomic_write_json(path, self.to_dict())
        return path

    @classmethod
    def load(cls, path: str | Path, source: str | Path | None = None):
        """The file at ``path`` (or ``path/FILE`` for a folder), validated; errors name it as ``source`` (default:
        the path)."""
        path = Path(path)
        if path.is_dir():
            path = path / cls.FILE
        return cls.from_dict(read_json(path, source), source or path)


def read_json(path: str | Path, source: str | Path | None = None) -> Any:
    """The parsed JSON file at ``path``; ResultError naming it (as ``source``, default the path) when it is absent
    or not JSON."""
    where = str(source or path)
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultError(f"{where}: not found", where) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ResultError(f"{where}: not readable as JSON ({exc})", where) from None


def get_path(obj: Any, keys: tuple[str, ...], where: str, want: type | tuple | None = None,
             allow_none: bool = False, field: str = "") -> Any:
    """``obj[k1][k2]...`` (``obj`` being the value of the file's key ``field``) with an error naming the dotted
    key, ``field.k1.k2``, when one is missing or of the wrong type."""
    dotted = lambda n: ".".join(((field,) if field else ()) + tuple(keys[:n]))  # noqa: E731
    cur = obj
    for i, k in enumerate(keys):
        check(isinstance(cur, dict) and k in cur, where, dotted(i + 1), "missing")
        cur = cur[k]
    if want is not None:
        check_type(cur, want, where, dotted(len(keys)), allow_none=allow_none)
    return cur
