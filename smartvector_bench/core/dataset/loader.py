""":func:`load_dataset`: the folder's layout checks, then each file's reader."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from smartvector_bench.core.errors import BenchError

from .columns import Dataset, LABEL_FILES, SPLITS
from .corpus import load_corpus
from .labels import load_labels
from .manifest import check_manifest, DATA_FILES, dataset_sha256, query_shortfall, shortfall_text
from .queries import ignored_labels_note, load_qrels, load_queries, SplitSettings
from .read import decode_utf8, path_kind, read_bytes, show

_LAYOUT = ("a dataset folder holds corpus.jsonl, queries.jsonl, qrels/dev.tsv and/or qrels/test.tsv, and optionally "
           "labels/ and manifest.json (schema/dataset.schema.json)")


def load_dataset(path: str | Path, split: SplitSettings | None = None) -> Dataset:
    """Load and check a dataset folder. Bad input raises BenchError naming the file (and line); nothing is
    written. With a ``manifest.json``, every file it lists must match its sha256 first (all its problems in one
    BenchProblems); without one the folder loads unchecked. ``split`` says how queries without a split get one
    (:func:`load_queries`). What the caller should know but is no error (no manifest; label-like query
    metadata, which is ignored) is one line each on stderr, and in ``Dataset.notes``."""
    if not isinstance(path, (str, os.PathLike)):
        raise BenchError(f"dataset.path={show(path)}: must be the path of a dataset folder")
    if not str(path).strip():
        raise BenchError(f"dataset.path={path}: is empty; give the dataset folder ({_LAYOUT})")
    if "\0" in str(path):
        raise BenchError(f"dataset.path={show(str(path))}: contains a NUL character")
    root = Path(path)
    try:
        kind = path_kind(root)
    except BenchError as exc:  # a symlink loop, a folder we may not look into: path_kind says which
        raise BenchError(f"dataset.path={path}: {str(exc).split(': ', 1)[-1]}") from None
    if kind == "missing":
        raise BenchError(f"dataset.path={path}: does not exist")
    if kind == "file":
        raise BenchError(f"dataset.path={path}: is a file, not a dataset folder ({_LAYOUT})")
    if kind != "dir":
        raise BenchError(f"dataset.path={path}: is not a folder ({_LAYOUT})")
    for sub, fix in (("qrels", "qrels/ must be a folder holding dev.tsv and/or test.tsv"),
                     ("labels", "labels/ must be a folder holding chunks.jsonl, queries.jsonl and/or families.jsonl "
                                "(or be absent)")):
        if path_kind(root / sub) not in ("dir", "missing"):
            raise BenchError(f"{root / sub}: is not a folder; {fix}")
    names = ["corpus.jsonl", "queries.jsonl"]
    qrels_names = [f"qrels/{s_}.tsv" for s_ in SPLITS if path_kind(root / "qrels" / f"{s_}.tsv") != "missing"
                   or (root / "qrels" / f"{s_}.tsv").is_symlink()]
    if not qrels_names:
        raise BenchError(f"{root / 'qrels'}: has neither dev.tsv nor test.tsv; {_LAYOUT}")
    names += qrels_names
    raw = {name: read_bytes(root / name, f"a dataset folder needs {', '.join(DATA_FILES)}") for name in names}
    has_labels = path_kind(root / "labels") == "dir"
    if has_labels:
        label_names = [n for n in LABEL_FILES if path_kind(root / n) != "missing" or (root / n).is_symlink()]
        if not label_names:
            raise BenchError(f"{root / 'labels'}: holds none of chunks.jsonl, queries.jsonl, families.jsonl "
                             "(remove labels/ to load the folder without labels)")
        for name in label_names:
            raw[name] = read_bytes(root / name, "a labels/ file must be a readable file")
    manifest, seed = check_manifest(root, raw)
    texts = {name: decode_utf8(root / name, data) for name, data in raw.items()}
    corpus = load_corpus(root / "corpus.jsonl", texts["corpus.jsonl"])
    qpaths = {s_: root / "qrels" / f"{s_}.tsv" for s_ in SPLITS if f"qrels/{s_}.tsv" in raw}
    qrels = {s_: load_qrels(qpaths[s_], texts[f"qrels/{s_}.tsv"]) for s_ in qpaths}
    ignored: dict[str, list[int]] = {}
    queries, assignment, dropped = load_queries(root / "queries.jsonl", corpus, qrels, texts["queries.jsonl"],
                                                qpaths, split=split, ignored=ignored)
    labels = load_labels(root, corpus, queries, texts, dropped=dropped) if has_labels else None
    hashes = {name: hashlib.sha256(data).hexdigest() for name, data in raw.items()}
    notes = []
    if manifest is None:
        notes.append(f"{root}: note: no manifest.json, so the folder loads unchecked (no recorded sha256 or schema "
                     "version to check its files against; smartvector-gen writes one)")
    if short := query_shortfall(manifest):
        notes.append(f"{root}: warning: fewer queries than asked ({shortfall_text(short)}; manifest.json counts): "
                     "the per-category figures rest on fewer queries")
    if ignored:
        notes.append(ignored_labels_note(root / "queries.jsonl", ignored, "labels/queries.jsonl" in raw))
    # stderr, not logging or warnings: every entry point then shows them the same way, and stdout stays the
    # command's output (tables, the validator's summary)
    for note in notes:
        print(note, file=sys.stderr)
    return Dataset(path=root, corpus=corpus, queries=queries, sha256=dataset_sha256(hashes), seed=seed,
                   manifest=manifest, labels=labels, split_assignment=assignment, notes=tuple(notes))
