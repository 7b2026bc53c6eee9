"""The filtered-ANN case's table (``filtered_ann.csv``) and its section of ``perf.md``, built from the summary
rows of case ``filtered_ann`` (:mod:`.filtered_ann`), so both come from the same rows as ``summary.csv``.

One line per (system, size, superseded share): recall@10 of the exact filtered top-10, queries left with fewer
than 10 in-force results, per-query latency (median, p05, p95 over single-query calls) and its ratio against
exact filtered FAISS flat in the same run, build seconds; a store not run at a size has one line saying why.
The paper figure (``paper_figures/fig_filtered_ann.py``) reads ``filtered_ann.csv`` alone.
"""

from __future__ import annotations

import math
import re

CASE = "filtered_ann"
FIELDS = ("system", "k_prime", "n_vectors", "superseded_share", "recall_at_10", "short_queries", "n_queries",
          "latency_ms_median", "latency_ms_p05", "latency_ms_p95", "ratio_vs_flat", "build_s", "fallback_queries",
          "note")
# The table's order: the baseline, FAISS's two ways, the stores, SmartVector (unknown names last, sorted).
FAMILIES = ("faiss_flat", "faiss_hnsw_unfiltered", "faiss_hnsw_post", "faiss_hnsw_idselector", "lancedb_prefilter", "lancedb_postfilter",
            "milvus_lite", "chroma", "smartvector_rerank")
_KNOB = re.compile(r"^(?P<family>.+?)_(?P<kind>k|ef)(?P<value>\d+)$")


def split_system(system: str) -> tuple[str, str]:
    """(family, knob): ``faiss_hnsw_post_k100`` -> (``faiss_hnsw_post``, ``100``); ``..._ef128`` -> (``...``,
    ``ef=128``); a name without a knob -> (name, "")."""
    m = _KNOB.match(system)
    if not m:
        return system, ""
    return m["family"], m["value"] if m["kind"] == "k" else f"ef={m['value']}"


def share_of(vectors: str) -> str:
    """The superseded share of a ``vectors`` label (``synthetic:superseded=0.9`` -> ``0.9``; "" if none)."""
    return vectors.split("superseded=", 1)[1] if "superseded=" in vectors else ""


def table(summary: list[dict]) -> list[dict]:
    """The lines of ``filtered_ann.csv`` from ``summary.csv``'s rows (any case; others are ignored)."""
    groups: dict[tuple, dict[str, dict]] = {}
    for r in summary:
        if r["case"] == CASE:
            groups.setdefault((r["system"], int(r["n_vectors"]), r["vectors"]), {})[r["metric"]] = r
    out = []
    for (system, n, vectors), m in groups.items():
        family, knob = split_system(system)
        lat, rec = m.get("query_ms"), m.get("recall_at_10")

        def value(metric: str, stat: str = "median"):
            return float(m[metric][stat]) if metric in m else ""

        skipped = "skipped" in m
        note = (m["skipped"] if skipped else (rec or lat or next(iter(m.values()))))["note"]
        ratio = lat.get("ratio_vs_flat", "") if lat else ""
        out.append({"system": family, "k_prime": knob, "n_vectors": n, "superseded_share": share_of(vectors),
                    "recall_at_10": value("recall_at_10"), "short_queries": value("short_queries"),
                    "n_queries": int(value("n_queries")) if "n_queries" in m else "",
                    "latency_ms_median": value("query_ms"),
                    "latency_ms_p05": value("query_ms", "p05"), "latency_ms_p95": value("query_ms", "p95"),
                    "ratio_vs_flat": float(ratio) if ratio != "" else "", "build_s": value("build_s"),
                    "fallback_queries": value("fallback_queries"),
                    "note": ("skipped: " if skipped else "") + note})
    out.sort(key=_order)
    return out


def _order(r: dict) -> tuple:
    fam = r["system"]
    knob = r["k_prime"]
    num = int(knob.split("=")[-1]) if knob else -1
    return (r["n_vectors"], r["superseded_share"] == "", r["superseded_share"],
            FAMILIES.index(fam) if fam in FAMILIES else len(FAMILIES), fam, num)


def _num(v, fmt: str) -> str:
    if v == "" or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return f"{v:,.0f}" if abs(v) >= 1000 else format(v, fmt)  # 1,030 ms, not 1.03e+03


def markdown(rows: list[dict], section: dict | None = None) -> str:
    """perf.md's section (empty when the run has no filtered-ANN rows)."""
    if not rows:
        return ""
    s = section or {}
    lines = ["", "## Filtered ANN: most vectors superseded (issue 32, item 4)", "",
             "Each document of the scale data has V versions (a version is a perturbation of its predecessor, "
             "cosine 0.8865), only the latest in force: 50%, 90%, 99% of the vectors superseded (V = 2, 10, 100). "
             "Queries are perturbations of in-force and superseded vectors (cosine 0.694), half each; the filter is "
             "the as-of predicate `valid_from <= now AND valid_to > now`. recall@10 is against the exact filtered "
             "top-10 (FAISS flat over the in-force vectors, `faiss_flat`); k' is the number of candidates asked for "
             "before the filter (SmartVector: its C cosine candidates). short: queries left with fewer than 10 "
             "in-force results. Latency: one query per call, median [p05, p95] over calls; x flat: ratio of medians "
             "against `faiss_flat` in the same run (smartvector_bench/tools/perf/filtered_ann.py).", ""]
    if s:
        lines += [f"Config: {s.get('n_queries')} queries, {s.get('reps')} pass(es); HNSW {s.get('hnsw')}; "
                  f"IDSelector efSearch {s.get('idselector_ef')}.", ""]
    lines += ["| system | N | superseded | k' | recall@10 | short | latency ms median [p05, p95] | x flat | "
              "build s | note |", "|---|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    systems: dict[str, str] = {}  # each family's configuration, said once below the table
    for r in rows:
        lat = (f"{_num(r['latency_ms_median'], '.3g')} [{_num(r['latency_ms_p05'], '.3g')}, "
               f"{_num(r['latency_ms_p95'], '.3g')}]") if r["latency_ms_median"] != "" else ""
        if r["note"].startswith("skipped: "):
            note = r["note"]
        else:
            systems.setdefault(r["system"], r["note"])
            fb, nq = r["fallback_queries"], r["n_queries"]
            parts = [f"first {nq} queries only"] if nq != "" and s.get("n_queries") and nq < int(s["n_queries"]) else []
            parts += [f"{fb:.0f} scored exhaustively"] if fb not in ("", 0.0) else []
            note = "; ".join(parts)
        lines.append(f"| {r['system']} | {r['n_vectors']:,} | {r['superseded_share']} | {r['k_prime']} | "
                     f"{_num(r['recall_at_10'], '.3f')} | {_num(r['short_queries'], '.0f')} | {lat} | "
                     f"{_num(r['ratio_vs_flat'], '.2f')} | {_num(r['build_s'], '.1f')} | {note} |")
    lines += ["", "Systems (the first configuration of each, as run):", ""]
    lines += [f"- `{name}`: {note}" for name, note in systems.items()]
    return "\n".join(lines) + "\n"
