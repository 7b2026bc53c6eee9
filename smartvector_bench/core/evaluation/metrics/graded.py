"""Per-query IR metrics over graded relevance judgments (several relevant chunks per query, grades 0/1/2).

Conventions shared by all functions here:

* ``ranked`` maps a query id to its doc (chunk) ids, best first; ``qrels`` maps a query id to
  ``{doc_id: grade}`` with integer grades ``>= 0`` (0 = judged non-relevant). Ids are strings.
* Every query id of ``qrels`` gets a value, and only those: a query missing from ``ranked`` or with an empty
  ranking scores 0.0 on every measure (so is a query whose judgments are all 0, or empty); queries of
  ``ranked`` that are not in ``qrels`` are ignored.
* Ranks are 1-based. If a ranking lists the same doc id twice, the first (best) occurrence counts and the
  later one still occupies its rank as a never-relevant result.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import ir_measures
from ir_measures import measures as _M
from ir_measures.measures.base import _NOT_PROVIDED

_BACKEND = ir_measures.pytrec_eval  # trec_eval semantics, pinned: never silently a different provider


def _check_qrels(qrels: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for qid, judged in qrels.items():
        if not isinstance(qid, str):
            raise ValueError(f"query ids must be str, got {qid!r}")
        row: dict[str, int] = {}
        for did, grade in judged.items():
            if not isinstance(did, str):
                raise ValueError(f"doc ids must be str, got {did!r} in query {qid!r}")
            try:
                ok = not isinstance(grade, (bool, str)) and int(grade) == grade and grade >= 0
            except (TypeError, ValueError, OverflowError):
                ok = False
            if not ok:
                raise ValueError(f"grades must be integers >= 0, got {grade!r} for ({qid!r}, {did!r})")
            row[did] = int(grade)
        out[qid] = row
    return out


def _ranking(ranked: Mapping[str, Sequence[str]], qid: str) -> list[str]:
    docs = ranked.get(qid, ())
    if isinstance(docs, str):
        raise ValueError(f"ranked[{qid!r}] must be a list of doc ids, not a str")
    docs = list(docs)
    if any(not isinstance(d, str) for d in docs):
        raise ValueError(f"doc ids must be str in ranked[{qid!r}]")
    return docs


def _run_row(docs: list[str], judged: Mapping[str, int]) -> list[str]:
    """The ranking with repeated ids replaced by placeholders that are in no qrels row (rank kept)."""
    seen: set[str] = set()
    taken = set(docs) | set(judged)
    out = []
    for rank, did in enumerate(docs):
        if did in seen:
            did = f"__duplicate_rank_{rank}__"
            while did in taken:
                did = "_" + did
            taken.add(did)
        seen.add(did)
        out.append(did)
    return out


def _scored(docs: list[str]) -> dict[str, float]:
    # Distinct, strictly decreasing scores: trec_eval sorts by score only, its docno tie rule never applies.
    return {did: float(len(docs) - rank) for rank, did in enumerate(docs)}


def _parse(measures: Iterable) -> list[tuple[str, object]]:
    if isinstance(measures, str):
        measures = (measures,)
    parsed = []
    for m in measures:
        name = m if isinstance(m, str) else str(m)
        try:
            measure = ir_measures.parse_measure(m) if isinstance(m, str) else m
        except (NameError, ValueError, SyntaxError) as exc:
            raise ValueError(f"unknown measure {m!r}: {exc}") from None
        parsed.append((name, measure))
    return parsed


def ir_metrics(ranked: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
               measures: Iterable = ("RR@10", "R@5", "nDCG@10")) -> dict[str, dict[str, float]]:
    """``{measure_name: {query_id: value}}`` for every query id in ``qrels``, computed by ``ir_measures``.

    ``measures`` are ``ir_measures`` names (``"RR@10"``, ``"R@5"``, ``"nDCG@10"``, ``"P@1"``,
    ``"Success@1"``, ...) or Measure objects; the keys of the result are the names as given. Backend:
    ``pytrec_eval`` (trec_eval) for every measure; a measure it cannot compute raises ``ValueError``.
    The run gives rank ``r`` (0-based) of a list of length ``L`` the score ``L - r``.

    * ``RR@k`` = 1 / rank of the first doc with grade >= 1 within the first ``k`` (0 if none). trec_eval's
      ``recip_rank`` has no cutoff (ir_measures would route ``RR@k`` to its MS MARCO provider), so it is
      computed as ``RR`` on the run truncated to its first ``k`` docs, which is the same number.
    * ``R@k`` = |docs with grade >= 1 in the first k| / |docs with grade >= 1 in qrels| (0 if none).
    * ``nDCG@k`` uses the grades as gains: ``DCG@k = sum_{r<=k} grade_r / log2(r + 1)``, divided by the
      DCG@k of the qrels sorted by grade (trec_eval ``ndcg_cut``); 0 when no doc has grade >= 1.

    "Relevant" is grade >= 1 (ir_measures' default ``rel=1``); pass e.g. ``"RR(rel=2)@10"`` for another level.
    """
    qrels = _check_qrels(qrels)
    parsed = _parse(measures)
    rows = {qid: _run_row(_ranking(ranked, qid), judged) for qid, judged in qrels.items()}

    # Plan the backend calls: one for all measures on the full run, one per RR cutoff on a truncated run.
    full: dict = {}                       # Measure -> [names]
    by_cut: dict[int, dict] = {}          # k -> {RR Measure without cutoff -> [names]}
    for name, m in parsed:
        if getattr(m, "NAME", None) == "RR" and m["cutoff"] is not _NOT_PROVIDED:
            k = int(m["cutoff"])
            base = _M.RR(**{p: v for p, v in m.params.items() if p != "cutoff"})
            if not _BACKEND.supports(base):
                raise ValueError(f"measure {name!r} is not supported by pytrec_eval")
            by_cut.setdefault(k, {}).setdefault(base, []).append(name)
        else:
            if not _BACKEND.supports(m):
                raise ValueError(f"measure {name!r} is not supported by pytrec_eval")
            full.setdefault(m, []).append(name)

    out = {name: {qid: 0.0 for qid in qrels} for name, _ in parsed}
    calls = [(full, None)] + [(group, k) for k, group in sorted(by_cut.items())]
    for group, k in calls:
        if not group:
            continue
        run = {qid: _scored(docs if k is None else docs[:k]) for qid, docs in rows.items()}
        # pytrec_eval drops queries with an empty qrels row or an empty ranking; they keep their 0.0.
        run = {qid: scores for qid, scores in run.items() if scores}
        for metric in _BACKEND.iter_calc(list(group), qrels, run):
            if metric.query_id not in qrels:
                continue
            for name in group[metric.measure]:
                out[name][metric.query_id] = float(metric.value)
    return out
