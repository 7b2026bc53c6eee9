"""Fuzzing ``load_dataset`` with JSON shape corruption, re-hashed: non-objects, dropped keys, wrong types,
NaN / Infinity, huge integers, bad or inverted times, duplicate and unknown ids, supersession cycles and forks,
bad qrels rows and bad timelines must be rejected naming the line (machinery: tests/fuzz_cases.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartvector_bench.core.dataset import CORPUS_META, QUERY_META

from .fuzz_cases import BIG, JSONL, TSV, Base, Case, dump, fuzz, fuzz_settings, get, junk, run_case
from .fuzz_cases import base  # noqa: F401 - the module's one generated dataset (a fixture)

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


def put(obj: Any, path: tuple, value: Any) -> None:
    get(obj, path[:-1])[path[-1]] = value


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
