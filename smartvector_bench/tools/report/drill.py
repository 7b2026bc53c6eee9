"""The query drill-down's data: per query of a run folder, its text and as_of, and each system's top 10 from
``run_<system>.jsonl`` with each hit's label and, where the run file gives them, its four signals.

Run files written before per-hit fields existed (format 1.0) hold only ``ranked`` / ``scores`` / ``correct`` /
``stale`` / ``rumor``. With the folder's ``queries.jsonl`` (``stored_queries``: the run's dataset judgments, sha256
checked) every hit is labelled from its stored sets and text and as_of come from it (``stored_queries`` True);
without it, hit 1 is labelled from the flags, hits 2-10 "correct" where the folder's stored qrels grade the chunk
>= 1 (the evaluator's relevant set) and "other" otherwise, and the page says so (``per_hit_labels`` False).
Text and as_of come from the run line (``text``, ``as_of``), else ``queries.jsonl``, else ``dataset/queries.jsonl``.
The signals come from the run file, else from the folder's ``signals.jsonl`` (``stored_signals``: recomputed for
the stored hits and checked to fuse to the stored scores; ``stored_signals`` True, ``signals_source`` its source). Run files are read by ``core.run.read_run_rows`` (the
format and every line's labels and signals checked); any malformed input is a BenchError naming file:line.

The JSON is compact: chunk ids are indexes into one list per run, labels one letter per hit, floats rounded.
"""

from __future__ import annotations

import math
from pathlib import Path

from smartvector_bench.core.dataset.read import decode_utf8, json_error, parse_json
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import read_run_rows
from smartvector_bench.tools.report import stored_queries, stored_signals

TOP = 10
DIGITS = 3  # the page shows three decimals
SIGNALS = ("semantic", "temporal", "confidence", "graph")
LABELS = {"correct": "c", "stale": "s", "rumor": "r", "other": "o"}


def _round(x):
    """Three decimals; None for None and for a non-finite value (a bare NaN would make the page's JSON invalid)."""
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return round(float(x), DIGITS) if math.isfinite(x) else None


def _text(path: Path) -> str:
    """The UTF-8 text of ``path``; BenchError naming it (and the line of a bad byte) otherwise."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BenchError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return decode_utf8(path, data)


def read_qrels(folder: Path) -> dict[str, set[str]]:
    """Query id -> the chunks graded >= 1 in the folder's ``qrels_*.trec`` (``qid 0 chunk grade`` lines)."""
    out: dict[str, set[str]] = {}
    for path in sorted(folder.glob("qrels_*.trec")):
        for lineno, line in enumerate(_text(path).splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
                raise BenchError(f"{path}:{lineno}: expected 'query 0 chunk grade'")
            if int(parts[3]) >= 1:
                out.setdefault(parts[0], set()).add(parts[2])
    return out


def read_dataset_queries(folder: Path) -> dict[str, dict]:
    """Query id -> {text, as_of} from ``dataset/queries.jsonl`` when the run folder keeps its dataset; as_of is
    ``metadata.as_of``, else ``metadata.query_time`` (the loader's default). BenchError (file:line) on a bad line."""
    path = folder / "dataset" / "queries.jsonl"
    if not path.is_file():
        return {}
    out = {}
    for lineno, line in enumerate(_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = parse_json(line)
        except (ValueError, RecursionError) as exc:
            raise BenchError(f"{path}:{lineno}: not valid JSON ({json_error(exc)})") from None
        meta = (q.get("metadata") or {}) if isinstance(q, dict) else None
        if not isinstance(meta, dict):
            raise BenchError(f"{path}:{lineno}: expected an object with '_id', 'text' and an object 'metadata'")
        out[str(q.get("_id"))] = {"text": q.get("text"), "as_of": meta.get("as_of", meta.get("query_time"))}
    return out


def hit_labels(rec: dict, relevant: set[str], stored: dict | None = None) -> tuple[str, str]:
    """(one letter per hit, where they come from: "run" (the run file's labels), "stored" (``queries.jsonl``'s
    sets, ``stored`` being the query's line) or "flags" (hit 1 from the flags, the rest from the qrels))."""
    ranked = rec["ranked"][:TOP]
    given = rec.get("labels")
    if isinstance(given, list):  # read_run_rows checked: one label of HIT_LABELS per hit
        return "".join(LABELS[lab] for lab in given[:TOP]), "run"
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


def _side_signals(side: dict, system: str, rec: dict, n: int, path: Path) -> dict | None:
    """The query's signals from ``signals.jsonl`` (None without a line); BenchError if its hits are not the run's."""
    line = side.get((system, str(rec["query_id"])))
    if line is None:
        return None
    if [str(c) for c in line["ranked"]] != [str(c) for c in rec["ranked"]]:
        raise BenchError(f"{path}: {system} query {rec['query_id']}: its ranked hits are not "
                         f"run_{system}.jsonl's; store it again (publish --store-signals)")
    return _signals(line, n)


def drill_data(folder: Path, systems: list[str], dataset_sha256: str | None = None) -> dict:
    """The embedded drill-down of one run folder (see the module docstring); systems without a run file are
    listed in ``missing``. ``dataset_sha256`` (metrics.json's) must be ``queries.jsonl``'s when that is given."""
    relevant, dataset = read_qrels(folder), read_dataset_queries(folder)
    stored = stored_queries.read(folder, dataset_sha256) or {}
    side, side_source = stored_signals.read(folder, dataset_sha256) or ({}, None)
    index: dict[str, int] = {}  # chunk id -> its position in the run's chunk list
    queries: dict[str, dict] = {}
    order: list[str] = []
    present, missing, sources, has_signals, from_side = [], [], set(), False, False
    for system in systems:
        path = folder / f"run_{system}.jsonl"
        if not path.is_file():
            missing.append(system)
            continue
        present.append(system)
        _, rows = read_run_rows(path)
        for rec in rows:
            qid = rec["query_id"]
            q = queries.get(qid)
            if q is None:
                ds = stored.get(qid) or dataset.get(qid, {})
                q = queries[qid] = {"split": rec.get("split"), "category": rec.get("category"),
                                    "text": rec.get("text") or ds.get("text"), "as_of": rec.get("as_of") or ds.get("as_of"),
                                    "hits": {}}
                order.append(qid)
            ranked = [str(c) for c in rec["ranked"][:TOP]]
            labels, source = hit_labels(rec, relevant.get(qid, set()), stored.get(qid))
            sources.add(source)
            ids = [index.setdefault(c, len(index)) for c in ranked]
            hit = {"c": ids, "s": [_round(x) for x in (rec.get("scores") or [])[:TOP]], "l": labels}
            sig = _signals(rec, len(ranked))
            if not sig and side and (sig := _side_signals(side, system, rec, len(ranked),
                                                                    folder / stored_signals.FILE)):
                from_side = True
            if sig:
                hit["g"], has_signals = sig, True
            q["hits"][system] = hit
    chunks = sorted(index, key=index.get)
    return {"systems": present, "missing": missing, "chunks": chunks, "order": order, "queries": queries,
            "per_hit_labels": "flags" not in sources and bool(present), "stored_queries": "stored" in sources,
            "has_signals": has_signals, "signals": list(SIGNALS), "stored_signals": from_side,
            "signals_source": side_source if from_side else None}
