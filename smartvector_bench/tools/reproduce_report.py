"""What ``python -m smartvector_bench.tools.reproduce`` prints and renders: the plan (``--dry-run``), the summary
table at the end of a run, and the markdown table of a timings file (``--render``), which ``--write-docs`` puts
between the ``<!-- timings:start -->`` / ``<!-- timings:end -->`` markers of docs/operations.md ("Time to
reproduce"), the marker convention of ``paper_figures/claims.py``."""

from __future__ import annotations

import json
from pathlib import Path

from smartvector_bench.core.atomic import atomic_write_text
from smartvector_bench.tools.gate.common import REPO, rel

DOC = REPO / "docs" / "operations.md"
MARK = "timings"
START, END = f"<!-- {MARK}:start -->", f"<!-- {MARK}:end -->"
SCHEMAS = ("1.0",)


class TimingsError(Exception):
    """A timings file that cannot be rendered, or a document without the section: one line."""


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def mb(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f} MB"


def tail(log: Path, n: int = 15) -> str:
    text = Path(log).read_text(encoding="utf-8", errors="replace").replace("\r", "\n")
    lines = [ln for ln in text.splitlines() if ln.strip()][-n:]
    return "\n".join(f"    {ln}" for ln in lines)


def warm_lines(warm: dict) -> list[str]:
    """Why a run's times may be shorter than a clean clone's, one line each."""
    out = []
    if warm.get("embedding_cache_mb"):
        out.append(f".cache/embeddings.sqlite holds {warm['embedding_cache_mb']:,.0f} MB of embeddings: the sweeps "
                   "read them instead of embedding (a clean clone has none)")
    for name, n in (warm.get("sweep_jobs_done") or {}).items():
        out.append(f"the {name} sweep folder holds {n} finished job(s): the sweep resumes and skips them "
                   "(remove the folder for a clean measurement)")
    if warm.get("numba_cache_files"):
        out.append(f"numba's cache holds {warm['numba_cache_files']} compiled file(s) (a clean machine compiles them)")
    return out


def _last_seconds(results_dir: Path, step) -> float | None:
    """The wall time the last publication of this step's folder recorded, when it did."""
    if not step.produces or "/" in step.produces[0]:
        return None
    try:
        prov = json.loads((results_dir / step.produces[0] / "PROVENANCE.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return prov.get("run_wall_time_s") or prov.get("wall_seconds") if isinstance(prov, dict) else None


def plan_text(steps: list, results_dir: Path, out: Path, warm: dict) -> str:
    lines = [f"{len(steps)} step(s), started in this order from {REPO} (timings into {rel(out)}):"]
    for i, s in enumerate(steps, 1):
        where = [f"{rel(Path(results_dir) / p)}" for p in s.produces] + list(s.writes)
        last = _last_seconds(Path(results_dir), s)
        lines.append(f"{i:3d}. {s.name} [{s.group}] {s.what} -> {', '.join(where) or '-'}"
                     + (f" (last published run: {duration(last)})" if last else ""))
        lines += [f"       {c.line()}" for c in s.commands]
        lines += [f"       needs {n}: {'MISSING' if n in s.missing() else 'present'}" for n in s.needs]
    lines += [f"note: {ln}" for ln in warm_lines(warm)]
    return "\n".join(lines)


def _rows(doc: dict) -> list[tuple]:
    return [(r["name"], r["seconds"], r.get("peak_rss_mb"), r.get("peak_tree_rss_mb"), r.get("cpu_seconds"),
             r.get("status"), r.get("group"), r.get("what", "")) for r in doc["steps"]]


def summary_text(doc: dict) -> str:
    """The plain table printed at the end of a run."""
    head = f"{'step':<22}{'seconds':>10}{'peak RSS MB':>13}{'tree RSS MB':>13}{'CPU s':>9}  status"
    lines = [head, "-" * len(head)]

    def num(x, fmt):
        return "-" if x is None else format(x, fmt)

    for name, sec, rss, tree, cpu, status, _, _ in _rows(doc):
        lines.append(f"{name:<22}{num(sec, '.1f'):>10}{num(rss, ',.0f'):>13}{num(tree, ',.0f'):>13}"
                     f"{num(cpu, '.0f'):>9}  {status}")
    lines.append("-" * len(head))
    lines.append(f"{'total':<22}{doc['total_seconds']:>10.1f}  ({duration(doc['total_seconds'])}; "
                 f"bench excluded: {duration(doc['total_seconds_without_bench'])}); {doc['status']}")
    if doc.get("step_seconds_sum") is not None and doc["step_seconds_sum"] > doc["total_seconds"] + 1:
        lines.append(f"{'(steps side by side; their sum':<22} {duration(doc['step_seconds_sum'])})")
    return "\n".join(lines)


def load(path: Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise TimingsError(f"{rel(path)}: cannot be read ({exc.strerror or exc}); run `make reproduce-all` first")
    except ValueError as exc:
        raise TimingsError(f"{rel(path)}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "timings":
        raise TimingsError(f"{rel(path)}: kind: not a timings file")
    if doc.get("schema_version") not in SCHEMAS:
        raise TimingsError(f"{rel(path)}: schema_version: {doc.get('schema_version')!r}; allowed: {', '.join(SCHEMAS)}")
    steps = doc.get("steps")
    if not isinstance(steps, list) or not all(isinstance(s, dict) and isinstance(s.get("name"), str)
                                              and isinstance(s.get("seconds"), (int, float)) for s in steps):
        raise TimingsError(f"{rel(path)}: steps: a list of steps with name and seconds")
    for key in ("total_seconds", "total_seconds_without_bench"):
        if not isinstance(doc.get(key), (int, float)):
            raise TimingsError(f"{rel(path)}: {key}: not a number")
    return doc


def render(doc: dict) -> str:
    """The markdown table of a timings document (what ``--write-docs`` puts in docs/operations.md)."""
    m, git, warm = doc.get("machine") or {}, doc.get("git") or {}, doc.get("warm_start") or {}
    mem = f", {m['memory_mb'] / 1024:.0f} GiB" if m.get("memory_mb") else ""
    state = "a warm start: " + "; ".join(warm_lines(warm)) if warm_lines(warm) else "a clean start (no caches)"
    jobs = (doc.get("config") or {}).get("jobs") or 1
    state += (f"; up to {jobs} experiments and sweeps at a time (a step's wall time then includes sharing the "
              "cores; the totals are the wall time the steps covered)" if jobs > 1 else "; one step at a time")
    lines = [f"`python -m smartvector_bench.tools.reproduce` ({doc['status']}), {doc.get('started_at', '?')} on "
             f"{m.get('cpu_model') or 'an unknown CPU'} ({m.get('cores', '?')} cores{mem}), git "
             f"{str(git.get('sha'))[:12]}{' (dirty)' if git.get('dirty') else ''}; {state}.", "",
             "| step | what | wall | peak RSS, largest process | peak RSS, process tree | CPU |",
             "|---|---|---:|---:|---:|---:|"]
    for name, sec, rss, tree, cpu, status, _, what in _rows(doc):
        flag = "" if status == "ok" else f" ({status})"
        lines.append(f"| {name}{flag} | {what} | {duration(sec)} | {mb(rss)} | {mb(tree)} | "
                     f"{duration(cpu) if cpu is not None else '-'} |")
    peak = max((r for r in (s.get("peak_rss_mb") for s in doc["steps"]) if r is not None), default=None)
    lines.append(f"| **total** | | **{duration(doc['total_seconds'])}** | {mb(peak)} | | |")
    lines.append(f"| **total, bench excluded** | | **{duration(doc['total_seconds_without_bench'])}** | | | |")
    if doc.get("step_seconds_sum") is not None and jobs > 1:
        lines.append(f"| sum of the steps' wall times | | {duration(doc['step_seconds_sum'])} | | | |")
    skipped = (doc.get("config") or {}).get("skipped") or []
    if skipped:
        lines += ["", f"Not run: {', '.join(skipped)}."]
    return "\n".join(lines) + "\n"


def load_before(folder: Path) -> list[dict]:
    """The timings files of an earlier reproduction in ``folder`` (``*.json``, by name): one run, or several runs
    of different steps one after the other (``--steps``)."""
    files = sorted(Path(folder).glob("*.json"))
    if not files:
        raise TimingsError(f"{rel(folder)}: no timings file (*.json) to compare with")
    docs = [load(f) for f in files]
    seen: dict[str, str] = {}
    for f, doc in zip(files, docs):
        if doc.get("status") != "complete":
            raise TimingsError(f"{rel(f)}: status: {doc.get('status')!r}; only a complete run can be compared")
        for step in doc["steps"]:
            if step["name"] in seen:
                raise TimingsError(f"{rel(f)}: step {step['name']} is also in {seen[step['name']]}")
            seen[step["name"]] = rel(f)
    return docs


def render_before(after: dict, before: list[dict]) -> str:
    """Per step, the wall time of an earlier reproduction (``before``: its timings files, whose steps ran one after
    the other) beside ``after``'s, and the totals, bench excluded."""
    old = {s["name"]: s["seconds"] for doc in before for s in doc["steps"]}
    new = {s["name"]: s["seconds"] for s in after["steps"]}
    shas = ", ".join(dict.fromkeys(str((d.get("git") or {}).get("sha"))[:12] for d in before))
    jobs = [(d.get("config") or {}).get("jobs") or 1 for d in before]
    cpus = list(dict.fromkeys(str((d.get("machine") or {}).get("cpu_model")) for d in before))
    after_cpu = str((after.get("machine") or {}).get("cpu_model"))
    host = (f"on {', '.join(cpus)}" + ("" if cpus == [after_cpu] else
                                       f"; the after run was on {after_cpu}: the two differ by host as well"))
    lines = [f"Before (git {shas}: {len(before)} run(s) of `make reproduce-all-nobench STEPS=...`, "
             f"{'one step at a time' if max(jobs) == 1 else f'up to {max(jobs)} steps at a time'}, started "
             f"{', '.join(str(d.get('started_at')) for d in before)}, {host}) and after (the table above):", "",
             "| step | before | after |", "|---|---:|---:|"]
    for name in [*new, *(n for n in old if n not in new)]:
        lines.append(f"| {name} | {duration(old.get(name))} | {duration(new.get(name))} |")
    total = sum(d["total_seconds_without_bench"] for d in before)
    lines.append(f"| **total, bench excluded** | **{duration(total)}** | "
                 f"**{duration(after['total_seconds_without_bench'])}** |")
    return "\n".join(lines) + "\n"


def write_docs(text: str, doc_path: Path = DOC) -> None:
    """Replace the text between the timings markers of ``doc_path`` (atomically)."""
    body = Path(doc_path).read_text(encoding="utf-8")
    if START not in body or END not in body:
        raise TimingsError(f"{rel(doc_path)}: no {START} ... {END} section to replace")
    head, rest = body.split(START, 1)
    _, after = rest.split(END, 1)
    atomic_write_text(doc_path, f"{head}{START}\n{text}{END}{after}")
