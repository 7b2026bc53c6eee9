"""``queries.jsonl`` beside a run folder's ``metrics.json``: what the report's query drill-down needs that no
embedding changes, for run files of format 1.0 (no query text, no as_of, a label for hit 1 only).

Per query its ``text``, its ``as_of`` (the dataset's stored string) and the chunk ids that make a hit ``correct``
(graded >= 1), ``stale`` or ``rumor``: a hit's label is the first of those sets holding it, else ``other``, which
is how ``evaluator.hit_labels`` judges (its ``np.select`` order). The sets come from the run's dataset: the run
folder's ``dataset/`` when it has one, else the dataset regenerated from the recorded config
(``metrics.json`` ``provenance.config.dataset``) into a temp folder; either is refused unless its sha256 equals
``metrics.json``'s ``dataset.sha256``, so the sets are the judgments the run was scored with. Nothing is rerun:
generating a dataset embeds nothing, so the file is the same on every host.

Line 1 is ``{"_meta": {...}}`` (format, dataset sha256); then one compact JSON line per query, in dataset order.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

from data_gen.build import write_from_config
from smartvector_bench.core.atomic import atomic_write_json, atomic_write_text
from smartvector_bench.core.dataset import Dataset, load_dataset
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results.base import read_json
from smartvector_bench.core.run import as_of_text

FILE = "queries.jsonl"
FORMAT = "smartvector-bench drill-down queries"
VERSION = "1.0"
SETS = ("correct", "stale", "rumor")  # in the evaluator's order: a hit in two sets takes the first
PROVENANCE = "PROVENANCE.json"
REPO = Path(__file__).resolve().parents[3]


def label_of(chunk: str, rec: dict) -> str:
    """One hit's label from a stored query line (``other`` when no set holds it)."""
    return next((s for s in SETS if chunk in rec["_sets"][s]), "other")


def query_lines(ds: Dataset) -> list[dict]:
    """The stored line of every query of ``ds``: text, as_of and the three sets as chunk ids (padding skipped)."""
    q, ids = ds.queries, ds.corpus.ids
    out = []
    for i, qid in enumerate(q.ids):
        rec = {"query_id": str(qid), "text": q.texts[i], "as_of": as_of_text(q, i)}
        for key, rag in zip(SETS, (q.relevant, q.stale, q.rumor)):
            rec[key] = [ids[int(r)] for r in rag.row(i) if r >= 0]
        out.append(rec)
    return out


def render(ds: Dataset, source: str) -> str:
    """The file's text: the ``_meta`` line, then :func:`query_lines` (compact JSON, one per line)."""
    meta = {"format": FORMAT, "version": VERSION, "dataset_sha256": ds.sha256, "n_queries": len(ds.queries),
            "source": source, "labels": "a hit is correct if in 'correct', else stale if in 'stale', else rumor if "
                                        "in 'rumor', else other (evaluator.hit_labels)"}
    lines = [json.dumps({"_meta": meta}, ensure_ascii=False, sort_keys=True)]
    lines += [json.dumps(rec, ensure_ascii=False, separators=(",", ":")) for rec in query_lines(ds)]
    return "\n".join(lines) + "\n"


def _dataset_config(metrics: dict, where: str) -> dict:
    cfg = ((metrics.get("provenance") or {}).get("config") or {}).get("dataset")
    if not isinstance(cfg, dict) or not cfg:
        raise BenchError(f"{where}: no provenance.config.dataset to regenerate the dataset from")
    cfg = dict(cfg)
    repo = cfg.get("repo")  # git_history: a relative bundle path is the repository's (make results runs there)
    if isinstance(repo, str) and not os.path.isabs(repo) and not Path(repo).exists() and (REPO / repo).exists():
        cfg["repo"] = str(REPO / repo)
    return cfg


def _load(folder: Path, cfg: dict, work: Path, where: str) -> tuple[Dataset, str]:
    """The dataset and its source; any failure a BenchError naming ``where`` (metrics.json) and the config key."""
    try:
        if (folder / "dataset" / "queries.jsonl").is_file():
            return load_dataset(folder / "dataset"), "the run folder's dataset/"
        if cfg.get("path"):
            return load_dataset(cfg["path"]), f"dataset.path={cfg['path']}"
        write_from_config(cfg, work / "dataset", overwrite=True)
        return load_dataset(work / "dataset"), "the dataset regenerated from metrics.json's config"
    except BenchError as exc:  # names the dataset key or file already; say which run it was
        raise BenchError(f"{where}: provenance.config: {exc}") from None
    except KeyError as exc:  # a generator reading a key the recorded config lacks (an older config)
        key = exc.args[0] if exc.args else "?"
        raise BenchError(f"{where}: provenance.config.dataset: no key {key!r}; the dataset cannot be "
                         f"regenerated from this config") from None
    except (ValueError, TypeError) as exc:
        raise BenchError(f"{where}: provenance.config.dataset: the dataset cannot be regenerated from this "
                         f"config ({type(exc).__name__}: {exc})") from None


def dataset_of(folder: Path, metrics: dict, work: Path) -> tuple[Dataset, str]:
    """(the run's dataset, where it came from): ``folder/dataset`` if present, else ``dataset.path`` when the
    config names one, else regenerated from the config into ``work``. BenchError (naming metrics.json) when it
    cannot be had or its sha256 is not the recorded one."""
    where = f"{folder / 'metrics.json'}"
    want = (metrics.get("dataset") or {}).get("sha256")
    if not isinstance(want, str) or not want:
        raise BenchError(f"{where}: no dataset.sha256 to check a regenerated dataset against")
    ds, source = _load(folder, _dataset_config(metrics, where), work, where)
    if ds.sha256 != want:
        raise BenchError(f"{where}: {source} has dataset sha256 {ds.sha256[:12]}, the run recorded {want[:12]}; "
                         f"refusing to store {FILE} from a different dataset")
    return ds, source


def build(folder: Path, metrics: dict | None = None) -> tuple[str, Dataset, str]:
    """(the file's text, the dataset, its source) for run folder ``folder`` (``metrics``: its metrics.json)."""
    folder = Path(folder)
    metrics = read_json(folder / "metrics.json") if metrics is None else metrics
    with tempfile.TemporaryDirectory(prefix="svb-queries-") as tmp:
        ds, source = dataset_of(folder, metrics, Path(tmp))
        return render(ds, source), ds, source


def store(folder: Path, command: str) -> dict:
    """Write ``folder/queries.jsonl`` and its sha256 into ``folder/PROVENANCE.json`` ``files``, with
    ``stored_queries`` saying how; nothing else changes. Returns that ``stored_queries`` entry.

    Each file is written atomically, PROVENANCE.json first: a store cut off between the two leaves a provenance
    naming a queries.jsonl that is missing or has other bytes, which the gate's provenance check fails on (even
    after ``--write-expected``). The other order would leave an unvouched queries.jsonl that only the manifest
    catches, and a regenerated manifest would bless it. Storing again completes it."""
    folder = Path(folder)
    prov_path = folder / PROVENANCE
    prov = read_json(prov_path) if prov_path.is_file() else None
    if not isinstance(prov, dict) or not isinstance(prov.get("files"), dict):
        raise BenchError(f"{prov_path}: missing or without 'files'; publish the run first")
    text, ds, source = build(folder)
    data = text.encode("utf-8")
    prov["files"][FILE] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    entry = {"command_line": command, "stored_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "dataset_sha256": ds.sha256, "source": source, "n_queries": len(ds.queries)}
    prov["stored_queries"] = entry
    atomic_write_json(prov_path, prov)
    atomic_write_text(folder / FILE, text)
    return entry


def side_lines(path: Path, fmt: str, dataset_sha256: str | None, option: str):
    """Yields ``(lineno, record)`` of a stored side file (this module's, ``stored_signals``'): line 1 is its
    ``_meta`` (format ``fmt``; its ``dataset_sha256`` must be the run's when given), yielded as ``(1, meta)``;
    blank lines skipped. BenchError (file:line) on a line that is not JSON or a wrong first line; ``option``
    names the publish option that stores the file again."""
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise BenchError(f"{path}:{lineno}: not a JSON line ({exc})") from None
        if lineno == 1:
            meta = rec.get("_meta") if isinstance(rec, dict) else None
            if not isinstance(meta, dict) or meta.get("format") != fmt:
                raise BenchError(f"{path}:1: expected a {{\"_meta\": {{\"format\": \"{fmt}\", ...}}}} line")
            if dataset_sha256 and meta.get("dataset_sha256") != dataset_sha256:
                raise BenchError(f"{path}:1: dataset_sha256 {str(meta.get('dataset_sha256'))[:12]} is not the "
                                 f"run's {dataset_sha256[:12]}; store it again (publish {option})")
        yield lineno, (meta if lineno == 1 else rec)


def read(folder: Path, dataset_sha256: str | None = None) -> dict[str, dict] | None:
    """Query id -> stored line (with ``_sets``: the three sets as Python sets) of ``folder/queries.jsonl``; None
    without the file. BenchError (file:line) on a malformed line or a dataset sha256 other than the run's."""
    path = Path(folder) / FILE
    if not path.is_file():
        return None
    out: dict[str, dict] = {}
    for lineno, rec in side_lines(path, FORMAT, dataset_sha256, "--store-queries"):
        if lineno == 1:
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("query_id"), str) \
                or not all(isinstance(rec.get(s), list) for s in SETS):
            raise BenchError(f"{path}:{lineno}: expected an object with query_id and lists {', '.join(SETS)}")
        rec["_sets"] = {s: set(rec[s]) for s in SETS}
        out[rec["query_id"]] = rec
    return out
