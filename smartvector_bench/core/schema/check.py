"""``smartvector-validate DIR``: every problem of a dataset folder, not just the first.

Each line of each file is checked against its row schema in ``dataset.schema.json`` (jsonschema, Draft 2020-12),
then ids and references across files (duplicate ids, unknown chunks in ``depends_on`` / ``supersedes`` / qrels /
labels, windows, splits), then the manifest, with the loader's own check (every problem of it, each with its fix:
:func:`smartvector_bench.core.dataset.manifest_problems`). Every problem is reported as ``file:line: field: what is
wrong and what is allowed``. When none is found, the folder is loaded with the benchmark's own loader
(:func:`smartvector_bench.core.dataset.load_dataset`), so a folder this command accepts is one the benchmark runs on.
Exit 0 when valid, 1 with problems (a file that cannot be read, a symlink loop included, is one problem line, and
no reference into it is then reported), 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jsonschema

from smartvector_bench.core.dataset import (CORPUS_META, DATA_FILES, LABEL_FILES, load_dataset, manifest_problems,
                                            SPLITS, SplitSettings)
from smartvector_bench.core.dataset.read import (QRELS_HEADER, decode_utf8, iso_days, json_lines, path_kind,
                                                 read_bytes, tsv_lines)
from smartvector_bench.core.cli_errors import one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.schema import load_schema, schema_version

ROW_SCHEMA = {"corpus.jsonl": "corpus_row", "queries.jsonl": "query_row", "labels/chunks.jsonl": "label_chunk_row",
              "labels/queries.jsonl": "label_query_row", "labels/families.jsonl": "label_family_row"}
QRELS = tuple(f"qrels/{s}.tsv" for s in SPLITS)


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("date-time", raises=BenchError)
def _date_time(value) -> bool:
    if isinstance(value, str):
        iso_days(value, "", "")  # the loader's own parser: timezone required, in range
    return True


def _allowed(schema: dict) -> str:
    """What a schema node allows, in words."""
    if "$ref" in schema:
        node = load_schema()["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
        return _allowed({**node, **{k: v for k, v in schema.items() if k != "$ref"}})
    if "oneOf" in schema:
        return " or ".join(_allowed(s) for s in schema["oneOf"])
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds or []
    names = {"string": "a string", "integer": "an integer", "number": "a number", "array": "a list",
             "object": "an object", "null": "null", "boolean": "true/false"}
    text = " or ".join(names.get(k, k) for k in kinds)
    if schema.get("format") == "date-time":
        text = "an ISO-8601 time with a timezone (e.g. 2024-01-31T00:00:00Z)"
    if "minimum" in schema and "maximum" in schema and schema["maximum"] <= 1:
        text += f" in [{schema['minimum']}, {schema['maximum']}]"
    elif "minimum" in schema and schema["minimum"] == 0:
        text += " >= 0"
    if schema.get("minLength") or schema.get("pattern") == "^[^\\t\\n\\r]+$":
        text = "a non-empty string without tabs or line breaks" if "string" in kinds else text
    return text or schema.get("description", "")


def _inline(node, defs: dict):
    """``node`` with every local ``$ref`` replaced by its definition (validating is then about 3x faster)."""
    if isinstance(node, list):
        return [_inline(x, defs) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        merged = {**defs[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline(merged, defs)
    return {k: _inline(v, defs) if k not in ("enum", "default") else v for k, v in node.items()}


@lru_cache(maxsize=None)
def _validator(definition: str):
    defs = load_schema()["$defs"]
    return jsonschema.Draft202012Validator(_inline(defs[definition], defs), format_checker=_FORMATS)


def _row_problems(validator, name: str, lineno: int, obj) -> list[Problem]:
    out = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path]):
        path = ".".join(str(p) for p in err.absolute_path)
        if err.validator == "required":
            missing = err.message.split("'")[1] if "'" in err.message else err.message
            out.append(Problem(name, lineno, f"{path}.{missing}" if path else missing, "missing (required)"))
            continue
        if err.validator == "format":
            msg = str(err.cause).removeprefix(": '' ") if err.cause else err.message
            out.append(Problem(name, lineno, path, msg))
            continue
        got = json.dumps(err.instance)[:60]
        out.append(Problem(name, lineno, path or None, f"is {got}; allowed: {_allowed(err.schema)}"))
    return out


def _jsonl(root: Path, name: str, problems: list[Problem], ids: dict | None = None) -> list[tuple[int, dict]]:
    """(line, object) of every object line with a string id; problems for the lines that break their row
    schema. ``ids`` collects the
    line of every row with a usable ``_id``, clean or not (so one bad field does not make its id unknown)."""
    try:
        text = decode_utf8(root / name, read_bytes(root / name, "the dataset folder needs it"))
    except BenchError as exc:
        problems.append(Problem(name, None, None, str(exc).split(": ", 1)[-1]))
        return []
    validator = _validator(ROW_SCHEMA[name])
    rows = []
    for lineno, obj, exc in json_lines(text):
        if exc is not None:
            problems.append(Problem(name, lineno, None, f"not valid JSON ({str(exc)[:80]})"))
            continue
        found = _row_problems(validator, name, lineno, obj)
        problems += found
        if ids is not None and isinstance(obj, dict) and isinstance(obj.get("_id"), str) and obj["_id"]:
            if obj["_id"] in ids:
                problems.append(Problem(name, lineno, "_id", f"duplicate {obj['_id']!r} (first on line "
                                                             f"{ids[obj['_id']]})"))
            else:
                ids[obj["_id"]] = lineno
        key = "family" if name == "labels/families.jsonl" else "_id"
        if isinstance(obj, dict) and isinstance(obj.get(key), str):
            rows.append((lineno, obj))  # cross-file checks read it too (they check the types they use)
    if not text.strip():
        problems.append(Problem(name, None, None, "file is empty (it needs one JSON object per line)"))
    return rows


def _qrels(root: Path, name: str, problems: list[Problem]) -> list[tuple[int, str, str, int]]:
    try:
        text = decode_utf8(root / name, read_bytes(root / name, "qrels"))
    except BenchError as exc:
        problems.append(Problem(name, None, None, str(exc).split(": ", 1)[-1]))
        return []
    header, rows = tsv_lines(text)
    if header.removesuffix("\r").split("\t") != QRELS_HEADER:
        problems.append(Problem(name, 1, None, "header must be 'query-id<TAB>corpus-id<TAB>score'"))
    out, seen = [], {}
    for lineno, parts in rows:
        if len(parts) != 3:
            problems.append(Problem(name, lineno, None, f"expected 3 tab-separated fields, got {len(parts)}"))
            continue
        qid, cid, score = parts
        if not score.isascii() or not score.isdigit() or len(score) > 9:
            problems.append(Problem(name, lineno, "score", f"is {score[:20]!r}; allowed: an integer >= 0"))
            continue
        if (qid, cid) in seen:
            problems.append(Problem(name, lineno, None, f"({qid}, {cid}) is judged twice (first on line "
                                                        f"{seen[qid, cid]})"))
            continue
        seen[qid, cid] = lineno
        out.append((lineno, qid, cid, int(score)))
    return out


def _references(corpus, queries, qrels, labels, chunk_ids: dict, query_ids: dict, problems: list[Problem]) -> None:
    successor: dict[str, int] = {}
    def good(value, kind) -> bool:
        return isinstance(value, kind) and not isinstance(value, bool)

    def time(value):
        try:
            return iso_days(value, "", "")
        except BenchError:
            return None

    for lineno, obj in corpus:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        deps = meta.get("depends_on") if isinstance(meta.get("depends_on"), list) else []
        for ref in (r for r in deps if isinstance(r, str)):
            if ref not in chunk_ids:
                problems.append(Problem("corpus.jsonl", lineno, "metadata.depends_on", f"unknown chunk id {ref!r}"))
            elif ref == obj["_id"]:
                problems.append(Problem("corpus.jsonl", lineno, "metadata.depends_on", "names the chunk itself"))
        sup = meta.get("supersedes")
        if isinstance(sup, str):
            if sup not in chunk_ids:
                problems.append(Problem("corpus.jsonl", lineno, "metadata.supersedes", f"unknown chunk id {sup!r}"))
            elif sup == obj["_id"]:
                problems.append(Problem("corpus.jsonl", lineno, "metadata.supersedes", "names the chunk itself"))
            elif sup in successor:
                problems.append(Problem("corpus.jsonl", lineno, "metadata.supersedes",
                                        f"{sup!r} is already superseded on line {successor[sup]} (one successor)"))
            else:
                successor[sup] = lineno
        start, end = time(meta.get("valid_from", meta.get("created_at"))), time(meta.get("valid_to"))
        if start is not None and end is not None and end <= start:
            problems.append(Problem("corpus.jsonl", lineno, "metadata.valid_to", "is not after valid_from"))
        lo, hi = meta.get("offset_start", 0), meta.get("offset_end")
        if good(lo, int) and good(hi, int) and hi < lo:
            problems.append(Problem("corpus.jsonl", lineno, "metadata.offset_end", "is before offset_start"))
    split_of = dict.fromkeys(query_ids)
    split_of.update({obj["_id"]: obj["metadata"].get("split") for _, obj in queries
                     if isinstance(obj.get("metadata"), dict) and obj["metadata"].get("split") in SPLITS})
    relevant: dict[str, set[str]] = {}
    for name, rows in qrels.items():
        split = name.split("/")[1].removesuffix(".tsv")
        for lineno, qid, cid, score in rows:
            if qid not in query_ids:
                problems.append(Problem(name, lineno, "query-id", f"{qid!r} is not in queries.jsonl"))
            elif split_of[qid] not in (None, split):
                problems.append(Problem(name, lineno, "query-id", f"{qid!r} is a {split_of[qid]!r} query; its "
                                                                  f"judgments belong in qrels/{split_of[qid]}.tsv"))
            if cid not in chunk_ids:
                problems.append(Problem(name, lineno, "corpus-id", f"unknown chunk id {cid!r}"))
            if score >= 1:
                relevant.setdefault(qid, set()).add(split)
    for lineno, obj in queries:
        split = split_of[obj["_id"]]
        if split is not None and split not in relevant.get(obj["_id"], set()):
            problems.append(Problem("queries.jsonl", lineno, "metadata.split",
                                    f"query {obj['_id']!r} has no relevant chunk (score >= 1) in qrels/{split}.tsv"))
    if not relevant:
        problems.append(Problem("qrels", None, None, "no query has a relevant chunk (score >= 1)"))
    families = {obj["family"] for _, obj in labels.get("labels/families.jsonl", []) if isinstance(obj["family"], str)}
    for name, known, refs in (("labels/chunks.jsonl", chunk_ids, ()), ("labels/queries.jsonl", query_ids,
                                                                        ("stale", "rumor"))):
        for lineno, obj in labels.get(name, []):
            if obj["_id"] not in known:
                problems.append(Problem(name, lineno, "_id", f"unknown id {obj['_id']!r}"))
            if families and isinstance(obj.get("family"), str) and obj["family"] and obj["family"] not in families:
                problems.append(Problem(name, lineno, "family", f"{obj['family']!r} is not in labels/families.jsonl"))
            for key in refs:
                for ref in obj.get(key) if isinstance(obj.get(key), list) else []:
                    if isinstance(ref, str) and ref not in chunk_ids:
                        problems.append(Problem(name, lineno, key, f"unknown chunk id {ref!r}"))


def _manifest(root: Path, problems: list[Problem], skip: set[str] = frozenset()) -> None:
    """The loader's own manifest check (every problem, each with its fix), so both list the same problems; none
    about the files in ``skip`` (already reported as unread), nor then the digest that covers them."""
    raw = {}
    for name in DATA_FILES + LABEL_FILES:  # what the loader reads and the manifest must cover
        try:
            if path_kind(root / name) == "file":
                raw[name] = (root / name).read_bytes()
        except (BenchError, OSError):
            pass  # an unreadable file is reported as that file's problem
    try:
        _, _, found = manifest_problems(root, raw)
    except BenchError as exc:  # manifest.json's folder cannot be read
        problems.append(Problem("manifest.json", None, None, str(exc)))
        return
    problems += [Problem(p.file, p.line, p.field, f"{p.what}; {p.fix}") for p in found if p.file not in skip
                 and not (skip and p.field == "dataset_sha256")]  # the digest of files already reported unread


def validate_folder(path: str | Path, split: SplitSettings | None = None):
    """``(problems, dataset)``: every problem found, and the loaded dataset when there are none."""
    root = Path(path)
    problems: list[Problem] = []
    kinds: dict[str, str] = {}

    def kind(name: str) -> str:
        """``path_kind`` of ``root/name``; "unreadable", with its problem recorded, for a symlink loop or a path
        that cannot be looked at (one line for the file, not a traceback)."""
        if name not in kinds:
            try:
                kinds[name] = path_kind(root / name if name else root)
            except BenchError as exc:
                kinds[name] = "unreadable"
                problems.append(Problem(name or str(root), None, None, str(exc).split(": ", 1)[-1]))
        return kinds[name]

    gone = ("missing", "unreadable")  # nothing to read
    if kind("") != "dir":
        return problems or [Problem(str(root), None, None, "is not a dataset folder (it does not exist or is a "
                                                           "file)")], None
    for name in ("corpus.jsonl", "queries.jsonl"):
        if kind(name) == "missing":
            why = "is a broken symbolic link" if (root / name).is_symlink() else "file is missing"
            problems.append(Problem(name, None, None, f"{why} (required)"))
    present_qrels = [q for q in QRELS if kind(q) not in gone]
    if not present_qrels and not any(kinds[q] == "unreadable" for q in QRELS):
        problems.append(Problem("qrels/", None, None, "needs dev.tsv and/or test.tsv"))
    chunk_ids: dict[str, int] = {}
    query_ids: dict[str, int] = {}
    corpus = _jsonl(root, "corpus.jsonl", problems, chunk_ids) if kind("corpus.jsonl") not in gone else []
    queries = _jsonl(root, "queries.jsonl", problems, query_ids) if kind("queries.jsonl") not in gone else []
    qrels = {q: _qrels(root, q, problems) for q in present_qrels}
    labels = {n: _jsonl(root, n, problems) for n in LABEL_FILES if kind(n) not in gone}
    unread = {p.file for p in problems if p.line is None} & {"corpus.jsonl", "queries.jsonl", *QRELS, *LABEL_FILES}
    if not unread:  # else the ids of an unread file would all be "unknown": noise, not news
        _references(corpus, queries, qrels, labels, chunk_ids, query_ids, problems)
    _manifest(root, problems, skip=unread)
    if problems:
        order = {n: i for i, n in enumerate(("corpus.jsonl", "queries.jsonl") + QRELS + LABEL_FILES)}
        return sorted(problems, key=lambda p: (order.get(p.file, len(order)), p.file, p.line or 0)), None
    try:
        return [], load_dataset(root, split=split)
    except BenchError as exc:  # what the row checks cannot see (e.g. a supersession cycle)
        where, _, msg = str(exc).partition(": ")
        rel = where.removeprefix(str(root) + "/")
        file, _, line = rel.partition(":")
        return [Problem(file, int(line) if line.isdigit() else None, None, msg)], None


def summary(ds) -> str:
    q = ds.queries
    splits = ", ".join(f"{s} {int((q.split == s).sum())}" for s in SPLITS)
    cats = ", ".join(f"{c} {int((q.category == c).sum())}" for c in sorted(set(q.category.tolist())))
    missing = [k for k in CORPUS_META if k not in ds.corpus.present]
    declared = (ds.manifest or {}).get("schema_version", "undeclared")
    lines = [f"{ds.path}: valid against schema {schema_version()} (declared: {declared}): {len(ds.corpus)} chunks, {len(q)} queries ({splits}); "
             f"categories: {cats}",
             "  corpus fields given: " + (", ".join(sorted(ds.corpus.present)) or "none")
             + ("; defaults for: " + ", ".join(missing) if missing else ""),
             f"  labels: {'yes' if ds.labels is not None else 'none (stale and rumor rates are not measured)'}"]
    if ds.split_assignment:
        a = ds.split_assignment
        lines.append(f"  split assigned to {a['n_queries']} queries ({a['method']}; seed {a['seed']}, test_fraction "
                     f"{a['test_fraction']}: {a['n_test']} test)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="smartvector-validate", description=(
        "Check a dataset folder against the benchmark's schema (smartvector_bench/core/schema/dataset.schema.json) and "
        "report every problem as file:line: field: message. Exit 0 when valid, 1 with problems."))
    parser.add_argument("folder", help="the dataset folder (corpus.jsonl, queries.jsonl, qrels/, optional labels/ "
                                       "and manifest.json)")
    parser.add_argument("--split-seed", type=int, default=0, help="seed of the split assigned to queries that "
                                                                  "have none (default 0)")
    parser.add_argument("--test-fraction", type=float, default=0.5, help="share of groups put in test (default 0.5)")
    parser.add_argument("--max-problems", type=int, default=200, help="print at most this many (default 200)")
    args = parser.parse_args(argv)
    if not 0.0 < args.test_fraction < 1.0:
        parser.error(f"--test-fraction={args.test_fraction}: must be in (0, 1)")
    try:
        problems, ds = validate_folder(args.folder, SplitSettings(seed=args.split_seed,
                                                                  test_fraction=args.test_fraction))
    except BenchError as exc:  # anything the checks above could not turn into a problem line: still one line
        print(f"{parser.prog}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    try:
        for p in problems[: args.max_problems]:
            print(p)
        if problems:
            more = len(problems) - args.max_problems
            print(f"{args.folder}: {len(problems)} problem{'s' if len(problems) != 1 else ''}"
                  + (f" ({more} not shown; --max-problems)" if more > 0 else ""), file=sys.stderr)
            return 1
        print(summary(ds))
    except BrokenPipeError:  # e.g. piped into head
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
