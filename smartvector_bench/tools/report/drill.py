"""The query drill-down's data: per query of a run folder, its text and as_of, and each system's top 10 from
``run_<system>.jsonl`` with each hit's label and, where the run file gives them, its four signals.

Run files written before per-hit fields existed (format 1.0) hold only ``ranked`` / ``scores`` / ``correct`` /
``stale`` / ``rumor``. With the folder's ``queries.jsonl`` (``stored_queries``: the run's dataset judgments, sha256
checked) every hit is labelled from its stored sets and text and as_of come from it (``stored_queries`` True);
without it, hit 1 is labelled from the flags, hits 2-10 "correct" where the folder's stored qrels grade the chunk
>= 1 (the evaluator's relevant set) and "other" otherwise, and the page says so (``per_hit_labels`` False).
Text and as_of come from the run line (``text``, ``as_of``), else ``queries.jsonl``, else ``dataset/queries.jsonl``.
The signals come from run files only (``has_signals``).

The JSON is compact: chunk ids are indexes into one list per run, labels one letter per hit, floats rounded.
"""

from __future__ import annotations

import json
from pathlib import Path

from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.report import stored_queries

TOP = 10
DIGITS = 3  # the page shows three decimals
SIGNALS = ("semantic", "temporal", "confidence", "graph")
LABELS = {"correct": "c", "stale": "s", "rumor": "r", "other": "o"}


def _round(x):
    return None if x is None else round(float(x), DIGITS)


def read_run_file(path: Path) -> tuple[dict, list[dict]]:
    """(the ``_meta`` header, the query lines) of one run file; BenchError naming the file and line otherwise."""
    meta, rows = {}, []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise BenchError(f"{path}:{lineno}: not a JSON line ({exc})") from None
            if lineno == 1 and isinstance(rec, dict) and "_meta" in rec:
                meta = rec["_meta"]
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("query_id"), str) \
                    or not isinstance(rec.get("ranked"), list):
                raise BenchError(f"{path}:{lineno}: expected an object with query_id and ranked")
            rows.append(rec)
    return meta, rows


def read_qrels(folder: Path) -> dict[str, set[str]]:
    """Query id -> the chunks graded >= 1 in the folder's ``qrels_*.trec`` (``qid 0 chunk grade`` lines)."""
    out: dict[str, set[str]] = {}
    for path in sorted(folder.glob("qrels_*.trec")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
                raise BenchError(f"{path}:{lineno}: expected 'query 0 chunk grade'")
            if int(parts[3]) >= 1:
                out.setdefault(parts[0], set()).add(parts[2])
    return out


def read_dataset_queries(folder: Path) -> dict[str, dict]:
    """Query id -> {text, as_of} from ``dataset/queries.jsonl`` when the run folder keeps its dataset."""
    path = folder / "dataset" / "queries.jsonl"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            out[str(q.get("_id"))] = {"text": q.get("text"), "as_of": (q.get("metadata") or {}).get("as_of")}
    return out


def hit_labels(rec: dict, relevant: set[str], stored: dict | None = None) -> tuple[str, str]:
    """(one letter per hit, where they come from: "run" (the run file's labels), "stored" (``queries.jsonl``'s
    sets, ``stored`` being the query's line) or "flags" (hit 1 from the flags, the rest from the qrels))."""
    ranked = rec["ranked"][:TOP]
    given = rec.get("labels")
    if isinstance(given, list):
        return "".join(LABELS.get(lab, "o") for lab in given[:TOP]).ljust(len(ranked), "o"), "run"
    if stored is not None:
        return "".join(LABELS[stored_queries.label_of(str(c), stored)] for c in ranked), "stored"
    first = "c" if rec.get("correct") else "s" if rec.get("stale") else "r" if rec.get("rumor") else "o"
    rest = "".join("c" if cid in relevant else "o" for cid in ranked[1:])
    return (first + rest) if ranked else "", "flags"


def _signals(rec: dict, n: int) -> dict | None:
    sig = rec.get("signals")
    if not isinstance(sig, dict):
        return None
    return {k: [_round(x) for x in (sig.get(k) or [])[:n]] for k in SIGNALS if sig.get(k) is not None}


def drill_data(folder: Path, systems: list[str], dataset_sha256: str | None = None) -> dict:
    """The embedded drill-down of one run folder (see the module docstring); systems without a run file are
    listed in ``missing``. ``dataset_sha256`` (metrics.json's) must be ``queries.jsonl``'s when that is given."""
    relevant, dataset = read_qrels(folder), read_dataset_queries(folder)
    stored = stored_queries.read(folder, dataset_sha256) or {}
    index: dict[str, int] = {}  # chunk id -> its position in the run's chunk list
    queries: dict[str, dict] = {}
    order: list[str] = []
    present, missing, sources, has_signals = [], [], set(), False
    for system in systems:
        path = folder / f"run_{system}.jsonl"
        if not path.is_file():
            missing.append(system)
            continue
        present.append(system)
        _, rows = read_run_file(path)
        for rec in rows:
            qid = rec["query_id"]
            q = queries.get(qid)
            if q is None:
                ds = stored.get(qid) or dataset.get(qid, {})
                q = queries[qid] = {"split": rec.get("split"), "category": rec.get("category"),
                                    "text": rec.get("text", ds.get("text")), "as_of": rec.get("as_of", ds.get("as_of")),
                                    "hits": {}}
                order.append(qid)
            ranked = [str(c) for c in rec["ranked"][:TOP]]
            labels, source = hit_labels(rec, relevant.get(qid, set()), stored.get(qid))
            sources.add(source)
            ids = [index.setdefault(c, len(index)) for c in ranked]
            hit = {"c": ids, "s": [_round(x) for x in (rec.get("scores") or [])[:TOP]], "l": labels}
            sig = _signals(rec, len(ranked))
            if sig:
                hit["g"], has_signals = sig, True
            q["hits"][system] = hit
    chunks = sorted(index, key=index.get)
    return {"systems": present, "missing": missing, "chunks": chunks, "order": order, "queries": queries,
            "per_hit_labels": "flags" not in sources and bool(present), "stored_queries": "stored" in sources,
            "has_signals": has_signals, "signals": list(SIGNALS)}
