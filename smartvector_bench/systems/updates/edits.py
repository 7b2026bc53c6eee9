"""The seeded edit stream that every update strategy replays, and the documents it starts from.

Documents (:func:`corpus_documents`, :func:`load_documents`): the latest version of every ``doc_id`` of a
BEIR dataset folder (the chunks in force when its last chunk took effect, so a chunk whose window spans
several versions counts), its text rebuilt by joining the chunk texts with ``"\\n"`` in ``offset_start`` order
(corpus rows may come in any order); the rebuild of a one-version document must reproduce every chunk's
recorded ``offset_start`` / ``offset_end`` exactly, or a :class:`BenchError` names the line. A dataset without
``doc_id`` or ``offset_start`` is refused in one line (:func:`check_corpus`).

Edits (:func:`make_edits`), drawn with ``numpy.random.default_rng(seed)``; each one picks an edit type
from the weighted ``mix`` and then a document uniformly (``paragraph_delete``: among documents with at
least two non-empty sections):

- ``single_word``: replace one word token by a different word from another document's vocabulary, or a
  number by a different number;
- ``sentence``: replace one whole (stripped) sentence by a different sentence of another document;
- ``paragraph_insert``: insert a section (a line; a paragraph for the paragraph chunker) of another
  document at a section boundary;
- ``paragraph_delete``: delete one non-empty section, never the last remaining one;
- ``revert``: restore the text the document had before its previous edit (so a second revert redoes).

A ``revert`` of a never-edited document, a ``paragraph_delete`` when no document has two sections and a
``sentence`` edit without a different sentence to use fall back to ``single_word``; the record keeps both
``requested`` and the applied ``type``. Every edit changes the text. Each record carries the old and the
new text, so all strategies replay the same edits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from smartvector_bench.core.dataset.chunking import split_sentences
from smartvector_bench.core.dataset import Corpus, load_corpus
from smartvector_bench.core.errors import BenchError

EDIT_TYPES = ("single_word", "sentence", "paragraph_insert", "paragraph_delete", "revert")
DEFAULT_MIX = {"single_word": 0.4, "sentence": 0.2, "paragraph_insert": 0.15, "paragraph_delete": 0.15,
               "revert": 0.1}

_TOKEN = re.compile(r"[A-Za-z]+|[0-9]+")
_WORD = re.compile(r"[A-Za-z]{3,}")


@dataclass(frozen=True)
class Edit:
    edit_id: int
    doc_id: str
    type: str  # the edit actually applied
    old_text: str
    new_text: str
    requested: str  # the drawn type (differs from ``type`` after a fallback)

    def describe(self) -> dict:
        """A compact record for result files (no texts)."""
        return {"edit_id": self.edit_id, "doc_id": self.doc_id, "type": self.type, "requested": self.requested,
                "chars_before": len(self.old_text), "chars_after": len(self.new_text)}


# -- documents -------------------------------------------------------------------------------------------------

NEEDS = ("doc_id", "offset_start")  # a document is its chunks, in offset order


def check_corpus(corpus: Corpus, where: str = "experiment=reembed_cost") -> None:
    """One-line BenchError naming the metadata fields the dataset lacks to rebuild its documents."""
    missing = [f for f in NEEDS if f not in corpus.present]
    if missing:
        raise BenchError(f"{where}: the dataset gives no metadata.{' / metadata.'.join(missing)} for every chunk; "
                         "it edits whole documents rebuilt from their chunks (doc_id groups them, offset_start "
                         "orders them), so it cannot run on this dataset")


def corpus_documents(corpus: Corpus, path: str | Path = "corpus.jsonl", where: str = "experiment=reembed_cost",
                     ) -> dict[str, str]:
    """``{doc_id: text}`` of the latest version of every document, sorted by id: its chunks joined with
    ``"\\n"`` in ``offset_start`` order (then ``offset_end``, then corpus order).

    The latest version is the chunks in force when the document's last chunk took effect (``valid_from``):
    the chunks of its highest version when every chunk of a version carries the version's window (the
    generated datasets), and also the unchanged chunks of earlier versions when one chunk spans several
    versions (``dataset=git_history``). Without validity times it is the chunks of the highest ``version``.
    When all of a document's chunks come from one version, their offsets must be exactly their spans in the
    rebuilt text, or a BenchError names the line (``path``); chunks carried over from earlier versions keep
    their old offsets, which then only order them."""
    check_corpus(corpus, where)
    rows_of: dict[str, list[int]] = {}
    order = np.lexsort((np.arange(len(corpus)), corpus.offset_end, corpus.offset_start))
    for i in order.tolist():
        rows_of.setdefault(str(corpus.doc_id[i]), []).append(i)
    windows = "valid_from" in corpus.present
    docs = {}
    for doc_id in sorted(rows_of):
        r = np.array(rows_of[doc_id], dtype=np.int64)
        version = corpus.version[r]
        if windows:
            t = float(corpus.valid_from[r[version == version.max()]].max())
            r = r[(corpus.valid_from[r] <= t) & (t < corpus.valid_to[r])]
            if not len(r):  # the latest version's window is empty of chunks (cannot happen: valid_to > valid_from)
                r = np.array(rows_of[doc_id], dtype=np.int64)
                r = r[corpus.version[r] == version.max()]
        else:
            r = r[version == version.max()]
        text = "\n".join(corpus.texts[i] for i in r)
        if len(set(corpus.version[r].tolist())) == 1:
            pos = 0
            for idx, i in enumerate(r.tolist()):
                start, end, chunk_text = int(corpus.offset_start[i]), int(corpus.offset_end[i]), corpus.texts[i]
                if (start, end) != (pos, pos + len(chunk_text)) or text[start:end] != chunk_text:
                    raise BenchError(f"{path}:{_line_of(path, i)}: {doc_id} v{int(corpus.version[i])} chunk {idx}: "
                                     f"offsets [{start}, {end}) do not match the text rebuilt by joining the chunks "
                                     f"with a newline (expected [{pos}, {pos + len(chunk_text)}))")
                pos += len(chunk_text) + 1
        docs[doc_id] = text
    return docs


def _line_of(path: str | Path, row: int) -> int | str:
    """The line of corpus row ``row`` (the loader skips blank lines); ``row + 1`` when the file is unreadable."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return row + 1
    seen = -1
    for lineno, line in enumerate(lines, 1):
        if line.strip(" \t\r"):
            seen += 1
            if seen == row:
                return lineno
    return row + 1


def load_documents(path: str | Path) -> dict[str, str]:
    """:func:`corpus_documents` of ``path/corpus.jsonl`` (loaded and checked by ``dataset.load_corpus``)."""
    corpus_path = Path(path) / "corpus.jsonl"
    return corpus_documents(load_corpus(corpus_path), corpus_path)


# -- edits -----------------------------------------------------------------------------------------------------

def _sentences(text: str) -> list[tuple[int, int]]:
    out = []
    for a, b in split_sentences(text):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            out.append((a, b))
    return out


def _pick(rng: np.random.Generator, items: list):
    return items[int(rng.integers(len(items)))]


class _Sources:
    """Replacement material from the *other* documents' initial texts (sorted, so draws are reproducible)."""

    def __init__(self, docs: dict[str, str], separator: str):
        self.ids = sorted(docs)
        self.words = {d: sorted(set(_WORD.findall(t))) for d, t in docs.items()}
        self.sentences = {d: sorted({t[a:b] for a, b in _sentences(t)}) for d, t in docs.items()}
        self.sections = {d: sorted({s.strip() for s in t.split(separator) if s.strip()}) for d, t in docs.items()}

    def others(self, kind: str, doc_id: str) -> list[str]:
        table = getattr(self, kind)
        pool = sorted({x for d in self.ids if d != doc_id for x in table[d]})
        return pool or table[doc_id]  # a one-document corpus draws from itself


def _single_word(rng, text: str, doc_id: str, src: _Sources, edit_id: int) -> str:
    tokens = list(_TOKEN.finditer(text))
    if not tokens:  # nothing to replace: append a word
        words = src.others("words", doc_id) or [f"edit{edit_id}"]
        return text + (" " if text else "") + _pick(rng, words)
    m = _pick(rng, tokens)
    tok = m.group()
    if tok.isdigit():
        step = int(rng.integers(1, 10))
        value = int(tok) + step if rng.random() < 0.5 or int(tok) < step else int(tok) - step
        repl = str(value)
    else:
        pool = [w for w in src.others("words", doc_id) if w.casefold() != tok.casefold()]
        repl = _pick(rng, pool) if pool else tok + "x"
    return text[:m.start()] + repl + text[m.end():]


def _sentence(rng, text: str, doc_id: str, src: _Sources) -> str | None:
    """None when the document has no sentence or no different sentence exists."""
    spans = _sentences(text)
    if not spans:
        return None
    a, b = _pick(rng, spans)
    pool = [s for s in src.others("sentences", doc_id) if s != text[a:b]]
    if not pool:
        return None
    return text[:a] + _pick(rng, pool) + text[b:]


def _paragraph_insert(rng, text: str, doc_id: str, src: _Sources, sep: str) -> str:
    sections = text.split(sep)
    k = int(rng.integers(len(sections) + 1))
    pool = src.others("sections", doc_id) or ["An inserted section."]
    return sep.join(sections[:k] + [_pick(rng, pool)] + sections[k:])


def _nonempty_sections(text: str, sep: str) -> list[int]:
    return [i for i, s in enumerate(text.split(sep)) if s.strip()]


def _paragraph_delete(rng, text: str, sep: str) -> str:
    sections = text.split(sep)
    i = _pick(rng, _nonempty_sections(text, sep))
    return sep.join(sections[:i] + sections[i + 1:])


def check_mix(mix: dict, where: str = "mix") -> dict[str, float]:
    """Validate edit-type weights: known types, numbers >= 0, at least one > 0."""
    if not isinstance(mix, dict) or not mix:
        raise BenchError(f"{where}={mix!r}: must be a mapping of edit type to weight; allowed types: "
                         f"{', '.join(EDIT_TYPES)}")
    out = {}
    for name, weight in mix.items():
        if name not in EDIT_TYPES:
            raise BenchError(f"{where}.{name}: unknown edit type; allowed: {', '.join(EDIT_TYPES)}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0 \
                or not np.isfinite(weight):
            raise BenchError(f"{where}.{name}={weight!r}: must be a number >= 0")
        out[name] = float(weight)
    if sum(out.values()) <= 0:
        raise BenchError(f"{where}: all weights are 0; give at least one of {', '.join(EDIT_TYPES)} a weight > 0")
    return out


def make_edits(docs: dict[str, str], n_edits: int, mix: dict[str, float] | None = None, seed: int = 0,
               separator: str = "\n") -> list[Edit]:
    """A reproducible stream of ``n_edits`` edits over ``docs`` (``{doc_id: text}``)."""
    if not docs:
        raise BenchError("no documents to edit")
    weights = check_mix(DEFAULT_MIX if mix is None else mix)
    types = [t for t in EDIT_TYPES if weights.get(t, 0.0) > 0]
    probs = np.array([weights[t] for t in types])
    probs = probs / probs.sum()
    rng = np.random.default_rng(seed)
    src = _Sources(docs, separator)
    ids = sorted(docs)
    current = dict(docs)
    before_last: dict[str, str] = {}  # text each document had before its previous edit
    edits: list[Edit] = []
    for edit_id in range(n_edits):
        requested = types[int(rng.choice(len(types), p=probs))]
        kind = requested
        if kind == "paragraph_delete":
            eligible = [d for d in ids if len(_nonempty_sections(current[d], separator)) >= 2]
            if eligible:
                doc_id = _pick(rng, eligible)
            else:
                kind, doc_id = "single_word", _pick(rng, ids)
        else:
            doc_id = _pick(rng, ids)
        if kind == "revert" and doc_id not in before_last:
            kind = "single_word"
        old = current[doc_id]
        new: str | None = None
        if kind == "sentence" and (new := _sentence(rng, old, doc_id, src)) is None:
            kind = "single_word"
        if kind == "single_word":
            new = _single_word(rng, old, doc_id, src, edit_id)
        elif kind == "paragraph_insert":
            new = _paragraph_insert(rng, old, doc_id, src, separator)
        elif kind == "paragraph_delete":
            new = _paragraph_delete(rng, old, separator)
        elif kind == "revert":
            new = before_last[doc_id]
        if new is None or new == old:  # cannot happen with the rules above; never record a no-op
            raise AssertionError(f"edit {edit_id} ({kind}) on {doc_id} did not change the text")
        edits.append(Edit(edit_id, doc_id, kind, old, new, requested))
        before_last[doc_id] = old
        current[doc_id] = new
    return edits


def final_texts(docs: dict[str, str], edits: list[Edit]) -> dict[str, str]:
    out = dict(docs)
    for e in edits:
        out[e.doc_id] = e.new_text
    return out
