"""``dataset=git_history``: a versioned corpus from the history of Markdown files in any git repository.

Every first-parent commit (oldest first) that touches a file matching ``glob`` is a version of that document,
dated by its committer time (UTC). Each version is cut into paragraphs (blank-line separated, YAML front
matter stripped, fenced code blocks kept whole); the paragraph lists of consecutive versions are aligned
(:func:`align`), so a paragraph that survives a commit keeps its chunk and validity window, a changed
paragraph starts a new chunk of the same *lineage* that supersedes the old one, and a removed paragraph (or a
deleted file) closes its chunk's window. Queries are drawn, seeded, from lineages with at least two versions;
their text is built from the words that every version of the lineage shares, so only time tells the versions
apart. The method, every config key and what the queries are and are not: docs/git_history.md.

Plain functions: :func:`git_params_from_config` (validation), :func:`walk_history` (git -> chunks),
:func:`make_queries`, :func:`render_git_history` (all files as text) and :func:`write_git_history` (atomic
write, as ``data_gen.writer.write_dataset``). Nothing reads the wall clock: the same repository commit and
config give byte-identical files.

One stage per module: ``params`` (config), ``git`` (log and blobs), ``paragraphs`` (units and alignment),
``history`` (the walk), ``queries`` and ``render`` (files and the write). This ``__init__`` re-exports the
public API.
"""

from __future__ import annotations

from .history import Chunk, History, walk_history
from .paragraphs import Unit, align, split_units, strip_front_matter
from .params import GitHistoryParams, QueryCounts, git_params_from_config
from .queries import Query, make_queries, query_text
from .render import render_git_history, write_git_history

__all__ = ["Chunk", "GitHistoryParams", "History", "Query", "QueryCounts", "Unit", "align", "git_params_from_config",
           "make_queries", "query_text", "render_git_history", "split_units", "strip_front_matter", "walk_history",
           "write_git_history"]
