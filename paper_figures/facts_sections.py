"""The generated sections of ``results/facts/`` (experiment=facts, docs/facts.md) for ``make claims``: the main table
with its power line, top-1 by category, and the 20 seeded sample queries with the texts of their relevant and
stale chunks, so a reader can check the labels. Read from ``facts/metrics.json`` and the dataset's
``facts/manifest.json`` (its ``counts`` and ``samples``) only."""

from __future__ import annotations

from pathlib import Path

from smartvector_bench.core.evaluation.claims import result
from smartvector_bench.core.report import category_table, main_table, power_line
from smartvector_bench.core.results import MainMetrics
from smartvector_bench.core.results.base import read_json

FOLDER = "facts"
TEXT_CHARS = 400  # a chunk's text in the samples: enough to see the value, short enough to read 20 of them


def _manifest(results: Path) -> dict | None:
    path = results / FOLDER / "manifest.json"
    return read_json(path) if path.is_file() else None


def facts_section(results: Path) -> str:
    mm, man = result(results, FOLDER, MainMetrics), _manifest(results)
    if mm is None or man is None:
        return "not measured (missing facts/metrics.json or facts/manifest.json)\n"
    m, d, c = mm.to_dict(), mm.dataset, man.get("counts", {})
    kinds = ", ".join(f"{k} {v}" for k, v in (c.get("facts_by_kind") or {}).items())
    corpora = ", ".join(f"{k} {v}" for k, v in (c.get("facts_by_corpus") or {}).items())
    cats = ", ".join(f"{k} {v}" for k, v in sorted((c.get("queries_by_category") or {}).items()))
    split = c.get("queries_by_split") or {}
    ov = c.get("question_overlap") or {}
    head = (f"{c.get('facts', '?')} facts ({corpora}; {kinds}) in {c.get('groups', '?')} split groups: "
            f"{d['n_vectors']} paragraph chunks, {d['n_queries']} queries ({cats}; test {split.get('test', '?')}, "
            f"dev {split.get('dev', '?')}), {c.get('queries_with_stale', '?')} of them with a stale chunk "
            f"(`results/facts/`, dataset sha256 {d['sha256'][:12]}). Intervals resample facts. The questions are "
            f"written by hand: on average {100 * ov.get('mean', 0):.0f}% of a question's content words occur in "
            f"its relevant paragraph (at most {100 * ov.get('max', 0):.0f}%), and none is a substring of a chunk.")
    note = "".join(f" Not run: {why}." for why in (mm.skipped_systems or {}).values())
    rss = (mm.resources or {}).get("peak_rss_mb")
    note += f" The whole run's peak memory: {rss / 1024:.1f} GB." if rss else ""
    return f"{head}{note}\n\n{main_table(m, 'test')}\n\n{power_line(m)}\n"


def facts_categories(results: Path) -> str:
    mm = result(results, FOLDER, MainMetrics)
    return f"{category_table(mm.to_dict(), 'test')}\n" if mm else "not measured (missing facts/metrics.json)\n"


def _text(t: str) -> str:
    """A chunk's text on one line, cut, with no Markdown link or table syntax left live (the page's own
    links point into the handbook's site, not into this repository)."""
    t = " ".join(t.split()).replace("|", "\\|").replace("](", "]\\(")
    return t if len(t) <= TEXT_CHARS else t[:TEXT_CHARS] + " ..."


def _window(ch: dict) -> str:
    return f"{ch['valid_from'][:10]} .. {(ch['valid_to'] or 'now')[:10]}"


def facts_samples(results: Path) -> str:
    man = _manifest(results)
    samples = (man or {}).get("samples")
    if not samples:
        return "not measured (missing facts/manifest.json or its samples)\n"
    out = []
    for s in samples:
        out.append(f"- **{s['query_id']}** ({s['category']}, {s['split']}; fact `{s['fact']}`, {s['kind']}), as of "
                   f"{s['as_of'][:10]}: *{s['question']}* The value then: **{s['value']}**.")
        for ch in s["relevant"]:
            out.append(f"  - relevant, grade {ch['grade']}: `{ch['title']}` ({_window(ch)}): {_text(ch['text'])}")
        for ch in s["stale"]:
            out.append(f"  - stale: `{ch['title']}` ({_window(ch)}): {_text(ch['text'])}")
        if s["n_stale"] > len(s["stale"]):
            out.append(f"  - and {s['n_stale'] - len(s['stale'])} older stale chunk(s)")
    return "\n".join(out) + "\n"


def sections(results: Path) -> dict[str, str]:
    return {"facts": facts_section(results), "facts_categories": facts_categories(results),
            "facts_samples": facts_samples(results)}
