"""``python -m data_gen.facts``: the authoring tool of the fact files. Walks each corpus's history (cached under
``.cache/facts/``; the dataset build never reads the cache), checks every fact and prints one line per fact, every
failing fact's error, and for ``--show ID`` the history's timeline, the paragraphs that state the fact and the
queries it gives with their relevant and stale chunks.

    python -m data_gen.facts                      # every corpus of conf/dataset/facts.yaml
    python -m data_gen.facts --corpus handbook --show hb-incidentals
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
from pathlib import Path

from omegaconf import OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.errors import BenchError

from ..git_history import History, walk_history
from .params import CorpusParams, facts_params_from_config
from .queries import fact_queries
from .render import check_fact, fact_rng
from .spec import load_fact_file
from .timeline import as_periods, day, derive, statements

CACHE = Path(".cache/facts")


def cached_history(cp: CorpusParams, cache: Path | None) -> History:
    """The corpus's walked history, from ``cache`` when the repository file, the walk's settings and the
    git_history code are the same."""
    repo = Path(cp.repo)
    code = "".join(p.read_text() for p in sorted(Path(__file__).parents[1].joinpath("git_history").glob("*.py")))
    stat = repo.stat() if repo.exists() else None
    key = hashlib.sha256(json.dumps([cp.git.to_dict(), str(repo.resolve()), stat and (stat.st_size, stat.st_mtime_ns),
                                     hashlib.sha256(code.encode()).hexdigest()], default=str).encode()).hexdigest()[:16]
    path = cache / f"{cp.name}-{key}.pickle" if cache else None
    if path is not None and path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)
    history = walk_history(cp.git, progress=None)  # a bar on a terminal only
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with tmp.open("wb") as fh:
            pickle.dump(history, fh)
        tmp.replace(path)
    return history


def check_facts(cp: CorpusParams, history: History, show_id: str | None, seed: int, max_historical: int) -> int:
    """Check every fact of one corpus; prints a line per fact; returns the number of failing facts."""
    facts = [f for path in cp.fact_files for f in load_fact_file(path)[1]]
    tip = history.tip_time
    failed = 0
    print(f"{cp.name}: {len(facts)} facts in {', '.join(map(str, cp.fact_files))} ({len(history.chunks)} chunks, "
          f"tip {day(tip)})")
    known = {c.path for c in history.chunks}
    for f in facts:
        try:
            stated = statements(f, history)  # first, so that --show lists them even when a check fails
            stated, spans = check_fact(f, history, known, cp.git.glob)
            qs = fact_queries(f, history, stated, spans, tip, max_historical, fact_rng(seed, f.id))
        except BenchError as exc:
            failed += 1
            print(f"  FAIL {exc}")
            if f.id == show_id:
                _show(f, history, locals().get("stated") or [], None)
            continue
        n_home = sum(s.primary for s in stated)
        print(f"  ok   {f.id:40s} {f.kind:10s} periods {len(spans)}  statements {n_home}+{len(stated) - n_home}  "
              f"queries {sum(q.category == 'current' for q in qs)}c/{sum(q.category == 'historical' for q in qs)}h  "
              f"overlap {max((q.overlap for q in qs), default=0):.2f}")
        if f.id == show_id:
            _show(f, history, stated, qs)
    return failed


def _show(f, history: History, stated, queries) -> None:
    chunks = history.chunks
    if stated:
        spans = derive(f, history, stated) if any(s.primary for s in stated) else []
        print(f"\n  the history's timeline of {f.id} (paste after checking it):\n    timeline:")
        for p in as_periods(spans):
            print(f"      - {{from: {p.start}, value: {'null' if p.value is None else json.dumps(p.value)}}}")
    print(f"\n  paragraphs stating {f.id}:")
    for s in sorted(stated, key=lambda s: chunks[s.chunk].valid_from):
        c = chunks[s.chunk]
        end = "now" if c.valid_to is None else day(c.valid_to)
        print(f"    [{'home' if s.primary else 'else'}] {day(c.valid_from)} .. {end}  {s.value!r}  {c.path}: "
              f"{' '.join(c.text.split())[:160]}")
    for q in queries or []:
        print(f"\n  {q.category} as of {day(q.as_of)}: {q.text}  (value {q.value!r}, overlap {q.overlap:.2f})")
        by_id = {c.id: c for c in chunks}
        for cid, grade in q.relevant:
            print(f"    relevant g{grade}: {by_id[cid].path}: {' '.join(by_id[cid].text.split())[:140]}")
        for cid in q.stale:
            c = by_id[cid]
            print(f"    stale: {c.path} ({day(c.valid_from)}): {' '.join(c.text.split())[:120]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m data_gen.facts", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=Path(CONF_DIR) / "dataset" / "facts.yaml",
                    help="a dataset=facts config (default: conf/dataset/facts.yaml)")
    ap.add_argument("--corpus", action="append", help="only this corpus (repeatable)")
    ap.add_argument("--show", metavar="FACT_ID", help="print this fact's timeline, paragraphs and queries")
    ap.add_argument("--no-cache", action="store_true", help=f"walk the histories again (cache: {CACHE}/)")
    args = ap.parse_args(argv)
    try:
        cfg = OmegaConf.to_container(OmegaConf.load(args.config), resolve=True)
        params = facts_params_from_config(cfg)
        failed = 0
        for cp in params.corpora:
            if args.corpus and cp.name not in args.corpus:
                continue
            history = cached_history(cp, None if args.no_cache else CACHE)
            failed += check_facts(cp, history, args.show, params.seed, params.max_historical)
    except BenchError as exc:
        print(f"python -m data_gen.facts: error: {exc}", file=sys.stderr)
        return 2
    if failed:
        print(f"{failed} fact(s) fail", file=sys.stderr)
    return 1 if failed else 0

