"""A Run is the boundary between retrieving and scoring (as in BEIR): saved runs can be re-scored later."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from smartvector_bench.core.atomic import atomic_write_text
from smartvector_bench.core.dataset import Corpus, Queries
from smartvector_bench.core.dataset.read import decode_utf8
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.timeutil import format_iso, from_days


@dataclass
class Run:
    """Ranked results of one system for a batch of queries, as corpus indices.

    ``ranked[q, r]`` is the corpus index at rank ``r`` (-1 where the system returned fewer than k results),
    ``scores`` the system's ranking score there (NaN for padding), ``confidence[q]`` the system's confidence
    in its top hit, in [0, 1] (NaN when it returned nothing).

    Optional, for a system whose scores are not continuous in its inputs (rank fusion, trees): ``bounds[q, r]``
    (lo, hi), every score hit ``r`` could take on another CPU (``core.run.rounding``: its inputs moved by float
    rounding; lo = -inf when it could drop out of the candidates), and ``confidence_bounds[q]`` (lo, hi) the same
    for the confidence. The regression gate compares such a run's reruns within them (``tools/gate/rankings.py``).
    """

    system: str
    ranked: np.ndarray  # (Q, k) int64
    scores: np.ndarray  # (Q, k) float64
    confidence: np.ndarray  # (Q,) float64
    bounds: np.ndarray | None = None             # (Q, k, 2) float64
    confidence_bounds: np.ndarray | None = None  # (Q, 2) float64

    def __post_init__(self) -> None:
        assert self.ranked.shape == self.scores.shape and self.ranked.shape[0] == self.confidence.shape[0]
        assert self.bounds is None or self.bounds.shape == (*self.ranked.shape, 2)
        assert self.confidence_bounds is None or self.confidence_bounds.shape == (self.ranked.shape[0], 2)

    @property
    def top1(self) -> np.ndarray:
        return self.ranked[:, 0] if self.ranked.shape[1] else np.full(len(self.confidence), -1, dtype=np.int64)


def rank_by_score(scores: np.ndarray, k: int, candidates: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k per row by descending score; ties go to the lower corpus index (a fixed, documented rule).

    ``scores`` is (Q, C); ``candidates`` (Q, C) maps columns to corpus indices (default: column = index).
    Rows may hold -inf for excluded entries; those are dropped (rank padded with -1 / NaN).
    """
    q, c = scores.shape
    cand = np.broadcast_to(np.arange(c, dtype=np.int64), (q, c)) if candidates is None else candidates
    # lexsort sorts by the last key first: score descending, then corpus index ascending.
    order = np.lexsort((cand, -scores), axis=1)[:, :k]
    ranked = np.take_along_axis(cand, order, axis=1).astype(np.int64)
    top = np.take_along_axis(scores, order, axis=1).astype(np.float64)
    dropped = ~np.isfinite(top)
    ranked[dropped] = -1
    top[dropped] = np.nan
    if ranked.shape[1] < k:  # fewer candidates than k
        pad = k - ranked.shape[1]
        ranked = np.pad(ranked, ((0, 0), (0, pad)), constant_values=-1)
        top = np.pad(top, ((0, 0), (0, pad)), constant_values=np.nan)
    return ranked, top


# The run file's own format version (``_meta.run_schema_version``; ``_meta.schema_version`` is the results'). 1.0
# (no key): ranked, scores, confidence and the top-1 flags per query. 1.1 adds the query's text and as_of, a label
# per hit and, for four-signal systems, each hit's signals: what the report's query drill-down shows. 1.2 adds,
# for a system that gives them (``Run.bounds``), each hit's score bounds and the confidence's under float rounding.
RUN_SCHEMA_VERSION = "1.2"
RUN_SCHEMA_VERSIONS = ("1.0", "1.1", RUN_SCHEMA_VERSION)
HIT_LABELS = ("correct", "stale", "rumor", "other")
# run file key <- the system's signal name (signals.fusion.SIGNALS): the relational signal is the graph's.
SIGNAL_KEYS = {"semantic": "semantic", "temporal": "temporal", "confidence": "confidence", "graph": "relational"}


def as_of_text(queries: Queries, i: int) -> str:
    """Query ``i``'s as_of as its dataset stores it (ISO from the days when the dataset gives no string)."""
    stored = None if queries.as_of_text is None else queries.as_of_text[i]
    return stored if stored is not None else format_iso(from_days(float(queries.as_of[i])))


def json_number(x, digits: int | None = 6) -> float | None:
    """``x`` rounded (``digits=None``: as it is, which JSON round-trips exactly), or None when it is not finite: a
    bare NaN or Infinity is not JSON (strict readers refuse it)."""
    x = float(x)
    if not math.isfinite(x):
        return None
    return x if digits is None else round(x, digits)


# Run files keep every score, confidence and signal at full precision: the evaluator then gives the same metrics
# from the file as from the run in memory (a rounded confidence moves an isotonic map), exact ties stay exact and
# near ties stay apart, so the regression gate can tell a tie-rule change from float noise (tools/gate/).
RUN_DIGITS = None


def write_run_jsonl(path: Path, run: Run, queries: Queries, corpus: Corpus, judged: dict[str, np.ndarray],
                    meta: dict, k: int = 10, labels: list[list[str]] | None = None,
                    signals: dict[str, np.ndarray] | None = None, unmeasured=()) -> None:
    """First line ``{"_meta": {...}}`` (provenance: schema, system, dataset sha256, seed, git sha, config hash,
    packages; ``run_schema_version``), then one JSON line per query; ``judged`` holds the per-query ``correct``,
    ``stale``, ``rumor``. The query's ``family`` (a label: the evaluator's cluster) is written so pooled tests can
    be run from the file, its ``text`` and ``as_of`` (as queries.jsonl gives it; ISO from the days otherwise).
    ``labels`` (``evaluator.hit_labels``) gives one label per written hit; ``signals`` (``ScoresHits.hit_signals``,
    (Q, k) per signal) each hit's four signals, under :data:`SIGNAL_KEYS`, at full precision like the scores. A
    score or signal that is not finite is written as null. A flag whose rate is in ``unmeasured`` (``stale_rate``,
    ``rumor_rate``: the dataset has no such sets) is null, never false. BenchError when ``labels`` does not give
    one label per hit."""

    head = {**meta, "system": run.system, "k": k, "run_schema_version": RUN_SCHEMA_VERSION}
    unknown = {flag for flag, rate in (("stale", "stale_rate"), ("rumor", "rumor_rate")) if rate in unmeasured}
    lines = [json.dumps({"_meta": head}, ensure_ascii=False, sort_keys=True)]
    for i, qid in enumerate(queries.ids):
        keep = [r for r, j in enumerate(run.ranked[i, :k]) if j >= 0]
        ranked = [corpus.ids[run.ranked[i, r]] for r in keep]
        scores = [json_number(run.scores[i, r], RUN_DIGITS) for r in keep]
        rec = {
            "query_id": qid, "split": str(queries.split[i]), "category": str(queries.category[i]),
            "family": None if queries.family[i] is None else str(queries.family[i]),
            "text": queries.texts[i], "as_of": as_of_text(queries, i),
            "ranked": ranked, "scores": scores, "confidence": json_number(run.confidence[i], RUN_DIGITS),
            "correct": bool(judged["correct"][i]),
            **{flag: None if flag in unknown else bool(judged[flag][i]) for flag in ("stale", "rumor")},
        }
        if labels is not None:
            rec["labels"] = list(labels[i])
            if len(rec["labels"]) != len(ranked):
                raise BenchError(f"{path}: query {qid}: {len(rec['labels'])} labels for {len(ranked)} hits")
        if signals is not None:
            rec["signals"] = {key: [json_number(signals[name][i, r], RUN_DIGITS) for r in keep]
                              for key, name in SIGNAL_KEYS.items()}
        if run.bounds is not None:  # 1.2: an infinite end is null (lo: the hit could drop out)
            rec["bounds"] = [[json_number(x, RUN_DIGITS) for x in run.bounds[i, r]] for r in keep]
        if run.confidence_bounds is not None:
            rec["confidence_bounds"] = [json_number(x, RUN_DIGITS) for x in run.confidence_bounds[i]]
        lines.append(json.dumps(rec, ensure_ascii=False, allow_nan=False))
    atomic_write_text(path, "\n".join(lines) + "\n")


def read_run_lines(path: Path) -> tuple[dict, list[tuple[int, object]]]:
    """A run file's ``_meta`` (format checked) and its other non-blank lines as (line number, parsed JSON), not
    checked further. BenchError (``file:line``) on an unreadable file, bad UTF-8 or JSON, a bad header."""
    try:
        lines = decode_utf8(Path(path), Path(path).read_bytes()).splitlines()
    except OSError as exc:
        raise BenchError(f"{path}: cannot read ({exc.strerror})") from None
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append((lineno, json.loads(line)))
        except ValueError as exc:
            raise BenchError(f"{path}:{lineno}: not valid JSON ({exc})") from None
    if not out or not isinstance(out[0][1], dict) or "_meta" not in out[0][1]:
        raise BenchError(f"{path}:1: expected a {{\"_meta\": ...}} header line")
    meta = out[0][1]["_meta"]
    version = meta.get("run_schema_version", "1.0")
    if version not in RUN_SCHEMA_VERSIONS:
        raise BenchError(f"{path}:1: _meta.run_schema_version={version!r}; this reader knows "
                         f"{', '.join(RUN_SCHEMA_VERSIONS)}")
    return meta, out[1:]


def check_run_row(rec: dict) -> str | None:
    """What is wrong with one query line's optional 1.1 fields (labels, signals) against its ranked list, or
    None; a 1.0 line (without them) is fine."""
    n = len(rec.get("ranked") or [])
    labels = rec.get("labels")
    if labels is not None:
        if not isinstance(labels, list) or len(labels) != n:
            return f"'labels' must list one label per ranked hit ({n})"
        if bad := [x for x in labels if x not in HIT_LABELS]:
            return f"'labels' holds {bad[0]!r}; allowed: {', '.join(HIT_LABELS)}"
    sig = rec.get("signals")
    if sig is not None:
        if not isinstance(sig, dict) or set(sig) != set(SIGNAL_KEYS):
            return f"'signals' must map {', '.join(SIGNAL_KEYS)} to lists"
        if bad := [key for key, v in sig.items() if not isinstance(v, list) or len(v) != n]:
            return f"'signals.{bad[0]}' must hold one value per ranked hit ({n})"
    bounds = rec.get("bounds")
    if bounds is not None and (not isinstance(bounds, list) or len(bounds) != n
                               or not all(isinstance(b, list) and len(b) == 2 for b in bounds)):
        return f"'bounds' must hold one [lo, hi] pair per ranked hit ({n})"
    cb = rec.get("confidence_bounds")
    if cb is not None and (not isinstance(cb, list) or len(cb) != 2):
        return "'confidence_bounds' must be a [lo, hi] pair"
    return None


def read_run_rows(path: Path) -> tuple[dict, list[dict]]:
    """A run file's ``_meta`` and its query lines as dicts, either format: a 1.0 line gets ``text``, ``as_of``,
    ``labels`` and ``signals`` as None. BenchError (``file:line``) on a bad header, JSON or 1.1 field."""
    meta, rows = read_run_lines(path)
    out = []
    for lineno, rec in rows:
        if not isinstance(rec, dict) or "query_id" not in rec or not isinstance(rec.get("ranked"), list):
            raise BenchError(f"{path}:{lineno}: a query line needs 'query_id' and a 'ranked' list")
        if err := check_run_row(rec):
            raise BenchError(f"{path}:{lineno}: {err}")
        out.append({"text": None, "as_of": None, "labels": None, "signals": None, **rec})
    return meta, out


def read_run_jsonl(path: Path, queries: Queries, corpus: Corpus) -> tuple[dict, Run]:
    """Load a saved run back (for re-scoring without re-running a model); rows are aligned to ``queries``."""

    meta, rows = read_run_lines(path)
    k = int(meta["k"])
    row_of = {qid: i for i, qid in enumerate(queries.ids)}
    ranked = np.full((len(queries), k), -1, dtype=np.int64)
    scores = np.full((len(queries), k), np.nan)
    confidence = np.full(len(queries), np.nan)
    for lineno, rec in rows:
        if rec["query_id"] not in row_of:
            raise BenchError(f"{path}:{lineno}: unknown query id {rec['query_id']!r}")
        i = row_of[rec["query_id"]]
        for r, (cid, sc) in enumerate(zip(rec["ranked"], rec["scores"])):
            if cid not in corpus.index_of:
                raise BenchError(f"{path}:{lineno}: unknown chunk id {cid!r}")
            ranked[i, r], scores[i, r] = corpus.index_of[cid], np.nan if sc is None else sc
        confidence[i] = np.nan if rec["confidence"] is None else rec["confidence"]
    return meta, Run(meta["system"], ranked, scores, confidence)


# ------------------------------------------------------------------------------------------------ TREC export
#
# Plain TREC files that trec_eval, ir-measures and ranx read as they are. They cannot carry a header or
# comment lines (the tools reject them), so their provenance is the ``{"_meta": ...}`` line of the
# ``run_<system>.jsonl`` beside them and the ``metrics.json`` of the same folder.

TREC_SCORES = ("rank", "system")


def _trec_token(value: str, what: str) -> str:
    value = str(value)
    if not value or any(ch.isspace() for ch in value):
        raise ValueError(f"{what} {value!r} cannot be written to a TREC file: it must be non-empty, without "
                         f"whitespace")
    return value


def _split_rows(queries: Queries, split: str | None) -> list[int]:
    if split is None:
        return list(range(len(queries)))
    return [i for i in range(len(queries)) if str(queries.split[i]) == split]


def trec_run_lines(run: Run, queries: Queries, corpus: Corpus, k: int = 10, tag: str | None = None,
                   split: str | None = None, score: str = "rank") -> list[str]:
    """The run as TREC run lines ``qid Q0 docid rank score tag`` (no trailing newlines), queries in
    ``queries`` order (only those of ``split`` when given), one line per returned hit of the first ``k``
    (padding ``-1`` is skipped), ``rank`` from 1; ``tag`` defaults to ``run.system``.

    Score convention (``score="rank"``, the default): a query with ``n`` hits gives its hit at rank ``r``
    (1-based) the score ``n - r + 1``, i.e. ``n, n-1, ..., 1``: distinct and strictly decreasing. trec_eval,
    pytrec_eval, ir-measures and ranx rank by score (trec_eval breaks ties by docid, descending), not by the
    rank column, so the system's own scores would let them reorder our ties (ours go to the lower corpus
    index, :func:`rank_by_score`; six-decimal rounding makes more) and any system whose order is not its
    score order. These are the scores the evaluator itself hands ir-measures
    (``metrics.graded._scored``: ``L - r`` for 0-based ``r``), so scoring this file with the qrels of
    :func:`qrels_trec_lines` reproduces ``metrics.json``'s ``mrr_at_10`` (``RR@10``), ``recall_at_5``
    (``R@5``) and ``ndcg_at_10`` (``nDCG@10``) exactly, provided queries without any hit count as 0
    (they have no line: ``trec_eval -c``; ir-measures already scores a qrels query missing from the run 0).
    ``score="system"`` writes the system's scores instead (rounded to 6 decimals; the JSONL run file keeps them whole),
    for inspection only: tools may then see a different order than the one we evaluated.

    A doc listed twice in one query keeps its first (best) line only: TREC tools keep one score per
    (qid, docid). The evaluator counts the repeat as a non-relevant result at its rank, so such a run
    would score differently (no bundled system returns repeats). Ids and the tag must be whitespace-free
    (``ValueError`` otherwise).
    """
    if score not in TREC_SCORES:
        raise ValueError(f"score must be one of {TREC_SCORES}, got {score!r}")
    if run.ranked.shape[0] != len(queries):
        raise ValueError(f"run {run.system!r} has {run.ranked.shape[0]} rows but there are {len(queries)} queries")
    tag = _trec_token(run.system if tag is None else tag, "tag")
    lines: list[str] = []
    for i in _split_rows(queries, split):
        qid = _trec_token(queries.ids[i], "query id")
        seen: set[int] = set()
        hits: list[tuple[int, float]] = []
        for j, s in zip(run.ranked[i, :k], run.scores[i, :k]):
            j = int(j)
            if j < 0 or j in seen:
                continue
            seen.add(j)
            hits.append((j, float(s)))
        n = len(hits)
        for r, (j, s) in enumerate(hits, 1):
            if score == "rank":
                value = str(n - r + 1)
            else:
                if not np.isfinite(s):
                    raise ValueError(f"run {run.system!r}: query {qid!r} rank {r} has score {s}")
                value = repr(round(s, 6))
            lines.append(f"{qid} Q0 {_trec_token(corpus.ids[j], 'chunk id')} {r} {value} {tag}")
    return lines


def write_run_trec(path: Path, run: Run, queries: Queries, corpus: Corpus, k: int = 10, tag: str | None = None,
                   split: str | None = None, score: str = "rank") -> None:
    """Write :func:`trec_run_lines` to ``path`` atomically (provenance: the JSONL run file and metrics.json)."""

    lines = trec_run_lines(run, queries, corpus, k=k, tag=tag, split=split, score=score)
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def qrels_trec_lines(queries: Queries, corpus: Corpus, split: str | None = None) -> list[str]:
    """The graded judgments as TREC qrels lines ``qid 0 docid grade``: every relevant chunk (grade >= 1) of
    every query (of ``split`` when given), queries in ``queries`` order, best grade first. These are the
    qrels the evaluator gives ir-measures; the dataset's grade-0 judgments are not kept by the loader and
    change none of the measures (gain 0, never relevant)."""
    lines: list[str] = []
    for i in _split_rows(queries, split):
        qid = _trec_token(queries.ids[i], "query id")
        for c, g in zip(queries.relevant.row(i), queries.grades.row(i)):
            lines.append(f"{qid} 0 {_trec_token(corpus.ids[int(c)], 'chunk id')} {int(g)}")
    return lines


def write_qrels_trec(path: Path, queries: Queries, corpus: Corpus, split: str | None = None) -> None:
    """Write :func:`qrels_trec_lines` to ``path`` atomically."""

    atomic_write_text(path, "".join(line + "\n" for line in qrels_trec_lines(queries, corpus, split=split)))


def read_run_trec(path: Path) -> dict[str, list[tuple[str, float]]]:
    """``{qid: [(docid, score), ...]}`` of a TREC run file, each list in its rank-column order (for
    round-trips). Raises BenchError on a line without 6 columns, a non-numeric rank or score, or a
    (qid, docid) or (qid, rank) given twice."""

    out: dict[str, list[tuple[int, str, float]]] = {}
    seen: set[tuple[str, str]] = set()
    ranks: set[tuple[str, int]] = set()
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        cols = line.split()
        if len(cols) != 6:
            raise BenchError(f"{path}:{lineno}: expected 6 columns 'qid Q0 docid rank score tag', got {len(cols)}")
        qid, _, docid, rank, value, _ = cols
        try:
            r, s = int(rank), float(value)
        except ValueError:
            raise BenchError(f"{path}:{lineno}: rank {rank!r} / score {value!r} is not a number") from None
        if (qid, docid) in seen or (qid, r) in ranks:
            raise BenchError(f"{path}:{lineno}: query {qid!r} lists doc {docid!r} or rank {r} twice")
        seen.add((qid, docid))
        ranks.add((qid, r))
        out.setdefault(qid, []).append((r, docid, s))
    return {qid: [(d, s) for _, d, s in sorted(rows)] for qid, rows in out.items()}
