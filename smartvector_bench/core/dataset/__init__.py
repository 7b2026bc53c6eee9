"""Load a BEIR-layout dataset folder (and, when present, its ``labels/``) into columnar arrays, validating as it goes.

Layout: ``corpus.jsonl`` (``_id``, ``title``, ``text``, ``metadata`` with the fields of :data:`CORPUS_META`),
``queries.jsonl`` (``_id``, ``text``, ``metadata`` with :data:`QUERY_META`), graded ``qrels/{dev,test}.tsv``
(score >= 1 is relevant; every query needs one) and, when the folder came from ``smartvector-gen``,
``manifest.json`` and ``labels/`` (:data:`LABEL_FILES`; see :mod:`smartvector_bench.core.evaluation.judgments`). Nothing
a retriever reads names a chunk's family, kind or answer: those live in ``labels/``, for the evaluator only.
Every error is a :class:`BenchError` whose one-line message names the file and line it comes from (or the
file, for file-level problems, with the fix); nothing is ever written into the folder. The manifest is optional:
without it the folder loads unchecked (one line on stderr says so); with it every file it lists is checked
against its sha256 before anything is parsed, and all its problems are raised together, each with its fix
(:class:`~smartvector_bench.core.errors.BenchProblems`).

This is the boundary for untrusted input: each field's check sits beside the parser of its file so the message
can name the line; the manifest, encoding and permission checks come from the loader fuzz tests
(tests/test_fuzz_loader_*.py). Modules: ``columns`` (the classes and field names), ``read`` (one file, one
field), ``corpus``, ``queries`` (qrels, queries and the split), ``labels``, ``manifest`` and ``loader``
(:func:`load_dataset`). This ``__init__`` re-exports the public API.
"""

from __future__ import annotations

from .columns import (CATEGORIES, Corpus, CORPUS_DEFAULTS, CORPUS_META, Dataset, DATASET_SCHEMA_VERSIONS, LABEL_FILES,
                      Labels, Queries, QUERY_DEFAULTS, QUERY_META, SPLITS)
from .read import file_sha256, MAX_INT, read_jsonl
from .corpus import load_corpus
from .queries import assign_grouped_split, load_qrels, load_queries, SplitSettings
from .labels import load_labels
from .manifest import DATA_FILES, dataset_sha256, manifest_problems, ManifestProblem
from .loader import load_dataset

__all__ = ["assign_grouped_split", "CATEGORIES", "Corpus", "CORPUS_DEFAULTS", "CORPUS_META", "DATA_FILES", "Dataset",
           "DATASET_SCHEMA_VERSIONS", "dataset_sha256", "file_sha256", "LABEL_FILES", "Labels", "load_corpus",
           "load_dataset", "load_labels", "load_qrels", "load_queries", "manifest_problems", "ManifestProblem",
           "MAX_INT", "Queries", "QUERY_DEFAULTS", "QUERY_META", "read_jsonl", "SPLITS", "SplitSettings"]
