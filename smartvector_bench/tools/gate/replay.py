"""The committed check's replay: today's code, given a committed folder of experiment=main (``main``,
``main_large``, ``handbook``, each stored sweep job) and the dataset rebuilt from its recorded config (sha256
checked), must give every figure and file the folder publishes: metrics.json's ``systems``, ``calibration``
(calibration maps and AUROC are checked here, never through reruns) and ``power`` from
``experiments.main.evaluate_runs``, its dataset counts, each run file line's fields, flags and hit labels, and the
bytes of ``run_<system>.trec``, ``qrels_<split>.trec``, ``table.md`` and ``queries.jsonl``. Run files keep full
precision, so on the publishing host this is exact; elsewhere a figure may cross one rounding boundary
(``tolerances.same_figure``). Anything else is a change of the evaluator, the metrics, the dataset or a file.
The error anatomy (``anatomy``, ``version_accuracy`` of each split) is recomputed from the run files and the
dataset's labels like experiment=main does; a file written before it is compared without it (and says so)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

from smartvector_bench.core.cli_errors import one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results import MainMetrics, ResultError
from smartvector_bench.tools.gate.common import REPO, Row
from smartvector_bench.tools.gate.tolerances import same_figure

REPLAYED = ("systems", "calibration", "power")
DATASET_COUNTS = ("sha256", "n_vectors", "n_queries", "n_families")


def leaves(x, path: str = "") -> dict[str, object]:
    """Every leaf of a JSON tree by dotted path (list items by position); an empty dict or list is a leaf."""
    if isinstance(x, dict) and x:
        return {k: v for key, val in x.items() for k, v in leaves(val, f"{path}.{key}" if path else key).items()}
    if isinstance(x, list) and x:
        return {k: v for i, val in enumerate(x) for k, v in leaves(val, f"{path}.{i}").items()}
    return {path: x}


def figure_misses(fresh: dict, stored: dict, exact: bool) -> list[str]:
    """``path: got, committed want`` for every leaf of either tree that the other lacks or that differs."""
    a, b = leaves(fresh), leaves(stored)
    return [f"{p}: {a.get(p, 'MISSING')!r}, committed {b.get(p, 'MISSING')!r}" for p in sorted(set(a) | set(b))
            if p not in a or p not in b or not same_figure(a[p], b[p], exact)]


def has_anatomy(doc: dict) -> bool:
    """Whether a metrics.json of experiment=main holds the error anatomy (any system, any split)."""
    from smartvector_bench.core.evaluation.metrics import names as M
    return any(isinstance(m, dict) and M.ANATOMY in m for per in (doc.get("systems") or {}).values()
               for m in (per or {}).values())


def _row(label: str, what: str, misses: list[str], n: int, how: str) -> Row:
    got = "equal" if not misses else f"{len(misses)} of {n} differ"
    return Row(f"{label}: {what}", "today's code on the committed run files", got, how, not misses,
               "; ".join(misses[:3]) + (" ..." if len(misses) > 3 else ""))


def _same_text(label: str, name: str, fresh: str, stored: Path, how: str) -> Row:
    """``stored`` (only ever compared when it exists) against the text today's code writes; names the first line."""
    a, b = fresh.splitlines(), stored.read_text(encoding="utf-8").splitlines()
    line = next((i for i, (x, y) in enumerate(zip(a, b), 1) if x != y), None if a == b else min(len(a), len(b)) + 1)
    return _row(label, name, [] if line is None else [f"{name}:{line} differs from what today's code writes"], 1, how)


def _source_missing(ds_cfg: dict) -> str | None:
    """Why the dataset cannot be rebuilt on this machine (a git history's repository, a facts corpus's, or a
    dataset.path absent)."""
    places = [("path", ds_cfg.get("path"))]
    if ds_cfg.get("name") == "git_history":
        places.append(("repo", ds_cfg.get("repo")))
    if ds_cfg.get("name") == "facts" and isinstance(ds_cfg.get("corpora"), dict):
        places += [(f"corpora.{n}.repo", c.get("repo")) for n, c in ds_cfg["corpora"].items() if isinstance(c, dict)]
    for key, where in places:
        if isinstance(where, str) and where and not Path(where).exists() and not (REPO / where).exists():
            return f"dataset.{key}={where} not found"
    return None


def replay_main(label: str, folder: Path, exact: bool, how: str) -> list[Row]:
    """The replay of one experiment=main folder (see the module docstring): one row per checked part."""
    with tempfile.TemporaryDirectory(prefix="svb-replay-") as tmp:
        return _replay_main(label, folder, exact, how, Path(tmp))


def _replay_main(label: str, folder: Path, exact: bool, how: str, tmp: Path) -> list[Row]:
    from experiments.main import evaluate_runs, scenario_table, settings
    from smartvector_bench.core.evaluation import measured
    from smartvector_bench.core.dataset import SPLITS
    from smartvector_bench.core.evaluation.evaluator import hit_labels
    from smartvector_bench.core.report import render
    from smartvector_bench.core.run import as_of_text, read_run_jsonl, read_run_lines, write_qrels_trec, write_run_trec
    from smartvector_bench.tools.report import stored_queries
    try:
        doc = MainMetrics.load(folder / MainMetrics.FILE).to_dict()
        s = dataclasses.replace(settings(doc["provenance"]["config"]), progress=False)
        missing = _source_missing(doc["provenance"]["config"].get("dataset") or {})
        if missing:
            return [Row(f"{label}: replay", "the committed run files evaluated", "not replayed here", how, True,
                        f"{missing} (the bundles in ../shared/corpora/); its files' hashes are checked")]
        ds, source = stored_queries.dataset_of(folder, doc, tmp)
        q, corpus = ds.queries, ds.corpus
        runs, lines = {}, {}
        for system in doc["systems"]:
            path = folder / f"run_{system}.jsonl"
            meta, run = read_run_jsonl(path, q, corpus)
            if int(meta["k"]) != s.k:
                raise BenchError(f"{path}: keeps {meta['k']} hits, the run ranked {s.k}: not replayable")
            run.system, runs[system], lines[system] = system, run, [rec for _, rec in read_run_lines(path)[1]]
        unmeasured = measured.unmeasured(ds)
        judged, results, calibration, power = evaluate_runs(runs, q, corpus, s, unmeasured=unmeasured,
                                                            labels=ds.labels)  # the anatomy needs the labels
        scenarios = scenario_table(judged, q, ds, doc["experiment"]["baseline"], s)
    except (BenchError, ResultError, OSError, KeyError, TypeError, ValueError) as exc:
        why = one_line(exc) if isinstance(exc, (BenchError, ResultError)) else f"{type(exc).__name__}: {exc}"
        return [Row(f"{label}: replay", "the committed run files evaluated", "ERROR", how, False, why)]
    fresh = json.loads(json.dumps({"systems": results, "calibration": calibration, "power": power,
                                   "scenarios": scenarios}, default=float))
    rows = [_row(label, f"metrics.json {root}", figure_misses(fresh[root], doc[root], exact),
                 len(leaves(doc[root])), how) for root in REPLAYED]
    if doc.get("scenarios") is not None or fresh["scenarios"] is not None:  # files before v3 have none
        rows.append(_row(label, "metrics.json scenarios", figure_misses(fresh["scenarios"] or {}, doc.get("scenarios") or {}, exact),
                         len(leaves(doc.get("scenarios") or {})), how))
    if not has_anatomy(doc):  # every published main-kind file holds it since issue 31: a file without it fails
        rows.append(Row(f"{label}: metrics.json anatomy", "today's code on the committed run files",
                        "not in the committed file", how, False,
                        "the error anatomy (anatomy, version_accuracy) is missing: republish this result"))
    counts = {"sha256": ds.sha256, "n_vectors": len(corpus), "n_queries": len(q),
              "n_families": int(len(set(q.family.tolist())))}
    rows.append(_row(label, "metrics.json dataset", figure_misses(counts, {k: doc["dataset"].get(k) for k in
                                                                           DATASET_COUNTS}, True), 4, how))
    row_of = {qid: i for i, qid in enumerate(q.ids)}
    for system, recs in lines.items():
        labels, j, misses = hit_labels(runs[system], q, k=s.k), judged[system], []
        for rec in recs:
            i = row_of[rec["query_id"]]
            want = {"split": str(q.split[i]), "category": str(q.category[i]), "family": q.family[i],
                    "text": q.texts[i], "as_of": as_of_text(q, i), "labels": list(labels[i]),
                    **{f: None if f"{f}_rate" in unmeasured else bool(j[f][i]) for f in ("correct", "stale", "rumor")}}
            misses += [f"{rec['query_id']} {k}: {rec.get(k)!r}, today {v!r}" for k, v in want.items()
                       if k in rec and rec[k] != v]
        rows.append(_row(label, f"run_{system}.jsonl labels and fields", misses, len(recs), how))
    derived = {f"run_{system}.trec": lambda p, r=run: write_run_trec(p, r, q, corpus, k=10) for system, run in runs.items()}
    derived |= {f"qrels_{split}.trec": lambda p, sp=split: write_qrels_trec(p, q, corpus, split=sp) for split in SPLITS}
    for name, write in derived.items():  # the published ones (a sweep's stored job keeps only its run files)
        if (folder / name).is_file():
            write(tmp / name)
            rows.append(_same_text(label, name, (tmp / name).read_text("utf-8"), folder / name, how))
    if (folder / "table.md").is_file():
        rows.append(_same_text(label, "table.md", render(doc), folder / "table.md", how))
    if (folder / stored_queries.FILE).is_file():  # its header says where its dataset came from: not replayed
        with open(folder / stored_queries.FILE, encoding="utf-8") as fh:
            source = (json.loads(fh.readline() or "{}").get("_meta") or {}).get("source", source)
        rows.append(_same_text(label, stored_queries.FILE, stored_queries.render(ds, source),
                               folder / stored_queries.FILE, how))
    return rows
