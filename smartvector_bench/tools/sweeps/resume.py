"""Resumable jobs: skip a job whose output folder already holds a complete result of the same inputs.

An experiment writes its result file (``metrics.json`` for ``experiment=main``; ``experiments.KINDS``) last and
atomically, so a job killed halfway leaves none and is run again. A result is reused only when

- it parses and its ``provenance.resume_key`` equals the current one (``core/results/provenance.py`` ``resume_key``):
  the resolved config (without keys that only move outputs, such as ``embedder.cache_path``), the content of
  ``dataset.path`` (through symlinks), the code (every file of the project's packages, data files included), the
  code of each plug-in retriever (a ``_target_`` outside the project) and the package versions; and
- every file the job wrote (``job_status.json`` ``outputs``: the kind's files, e.g. run files, qrels, table.md
  and the result) is still there with the sha256 recorded when the job completed.

Anything else reruns the job with one line saying why: each changed part of the key, or each missing or changed
output, or that the status records no output hashes (a folder written by an older version, or a run that died
before recording them).

Every job records its status in ``job_status.json`` beside the result: ``running`` (written at start),
``complete`` (after the result, with the sha256 of every output), ``skipped`` (the result was already there)
or ``failed`` (with the error; the exception is re-raised). A ``running`` status whose run is gone (its pid is
dead on this host, or the folder's lock is free: ``core/scratch.py`` ``run_lock``) reads as ``interrupted``
(:func:`job_state`), and the next run there says so and records it (``previous_run``).

A rerun of ``experiment=main`` removes the run files (``run_<system>.jsonl`` / ``.trec``) of systems that are
not in its result, with one line naming them, so the folder holds what a fresh run would write.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments import KINDS
from smartvector_bench.core import scratch
from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.dataset import file_sha256
from smartvector_bench.core.results.provenance import config_sha256, resume_key
from smartvector_bench.tools.sweeps import STATUS_FILE

# The file each experiment writes last (its presence marks a complete run).
RESULT_FILES = {name: kind.result_file for name, kind in KINDS.items()}
PROG = "smartvector-bench"


def result_file(experiment: str) -> str:
    return RESULT_FILES.get(experiment, "metrics.json")


def load_result(path: str | Path) -> dict | None:
    """The parsed result file, or None if it is absent, unreadable or not a JSON object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def result_sha(result: dict | None) -> str | None:
    prov = (result or {}).get("provenance")
    return prov.get("config_sha256") if isinstance(prov, dict) else None


def result_key(result: dict | None) -> dict | None:
    prov = (result or {}).get("provenance")
    key = prov.get("resume_key") if isinstance(prov, dict) else None
    return key if isinstance(key, dict) else None


_PARTS = {"config_sha256": "the configuration", "dataset": "the dataset content",
          "code_sha256": "the code", "plugins_sha256": "the plug-in code", "packages_sha256": "the package versions"}


def key_changes(old: dict | None, new: dict) -> list[str]:
    """What differs between a stored resume key and the current one, in words ([] when equal)."""
    if old is None:
        return ["the result has no resume key (written by an older version)"]
    out = []
    for part, words in _PARTS.items():
        if part not in old:
            out.append(f"its resume key lacks {words} (written by an older version)")
        elif old.get(part) != new.get(part):
            out.append(f"{words} changed ({str(old.get(part))[:12]} -> {str(new.get(part))[:12]})")
    return out


# -- outputs ---------------------------------------------------------------------------------------------------

def output_hashes(out_dir: str | Path, experiment: str) -> dict[str, str]:
    """sha256 of every file of ``out_dir`` the experiment writes (``KINDS[experiment].files``, the result file
    included); the lock, the status and Hydra's files are no outputs."""
    folder = Path(out_dir)
    kind = KINDS.get(experiment)
    patterns = (*(kind.files if kind else ()), result_file(experiment))
    names = sorted({p.name for pattern in patterns for p in folder.glob(pattern) if p.is_file()})
    return {name: file_sha256(folder / name) for name in names}


def output_problems(out_dir: str | Path, record: dict | None, state: str | None) -> list[str]:
    """Why the outputs recorded in the status ``record`` cannot be trusted ([] when each is there, unchanged)."""
    outputs = (record or {}).get("outputs")
    if not isinstance(outputs, dict) or not outputs:
        if record is None:
            return [f"there is no {STATUS_FILE} recording the sha256 of its outputs"]
        why = ("the last run there failed" if state == "failed" else "the run that wrote the result did not finish"
               if state in ("running", "interrupted") else "written by an older version")
        return [f"{STATUS_FILE} records no sha256 of the outputs ({why})"]
    problems = []
    for name, want in sorted(outputs.items()):
        path = Path(out_dir) / str(name)
        if Path(str(name)).name != name:
            problems.append(f"{STATUS_FILE} names {name!r} as an output, which is not a file name")
        elif not path.is_file():
            problems.append(f"{name} is missing")
        elif (got := file_sha256(path)) != want:
            problems.append(f"{name} was changed after the run wrote it (sha256 {str(want)[:12]} -> {got[:12]})")
    return problems


def drop_stale_runs(out_dir: str | Path, result: Any) -> list[str]:
    """Remove the ``run_<system>.jsonl`` / ``.trec`` files of ``out_dir`` whose system is not in ``result``'s
    ``systems`` (experiment=main; a rerun with fewer systems); returns their names. Removed rather than moved
    aside: the folder then holds what a fresh run would write."""
    systems = result.get("systems") if isinstance(result, dict) else None
    if not isinstance(systems, dict):
        return []
    removed = []
    for suffix in (".jsonl", ".trec"):
        for path in sorted(Path(out_dir).glob(f"run_*{suffix}")):
            if path.name[len("run_"):-len(suffix)] not in systems and path.is_file():
                path.unlink()
                removed.append(path.name)
    return sorted(removed)


# -- status ----------------------------------------------------------------------------------------------------

def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def job_state(out_dir: str | Path, record: dict | None) -> str | None:
    """The status a reader reports for the status ``record`` of ``out_dir``: as recorded, except ``running``
    whose run is gone, which is ``interrupted``: this process holds the folder's lock (so the recorded run is
    not running), or its pid is dead on this host, or no process holds the lock."""
    status = (record or {}).get("status")
    if status != "running":
        return status
    if scratch.holds_lock(out_dir):
        return "interrupted"
    if record.get("host") == socket.gethostname() and not _alive(record.get("pid")):
        return "interrupted"
    return "running" if scratch.folder_in_use(out_dir) else "interrupted"


def describe_run(record: dict) -> str:
    """``pid P on host H, started T`` of a status record."""
    return f"pid {record.get('pid', '?')} on host {record.get('host', '?')}, started {record.get('time_iso', '?')}"


def write_status(out_dir: str | Path, status: str, **fields: Any) -> dict:
    now = time.time()
    record = {"status": status, "time": now, "time_iso": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
              "pid": os.getpid(), "host": socket.gethostname(), **fields}
    atomic_write_json(Path(out_dir) / STATUS_FILE, record)
    return record


def _error(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def record_failure(out_dir: str | Path, exc: BaseException, **fields: Any) -> None:
    """Mark the job failed (used for errors before the job proper starts, e.g. resolving the config)."""
    try:
        write_status(out_dir, "failed", error=_error(exc), **fields)
    except OSError:  # never hide the original error behind a status-file problem
        pass


# -- the job ---------------------------------------------------------------------------------------------------

def completed_result(out_dir: str | Path, config: dict, key: dict | None = None,
                     record: dict | None = None) -> tuple[dict | None, list[str]]:
    """(the result already in ``out_dir`` for exactly these inputs with its outputs intact, else None; why it
    cannot be reused, each reason a phrase). ``record``: the folder's status record (read when not given)."""
    name = (config.get("experiment") or {}).get("name", "main")
    result = load_result(Path(out_dir) / result_file(name))
    if result is None:
        return None, []
    changes = key_changes(result_key(result), key or resume_key(config))
    if changes:
        return None, [f"{result_file(name)} is out of date: {'; '.join(changes)}"]
    if record is None:
        record = load_result(Path(out_dir) / STATUS_FILE)
    problems = output_problems(out_dir, record, job_state(out_dir, record))
    return (None, problems) if problems else (result, [])


def run_or_skip(out_dir: str | Path, config: dict, run: Callable[[], Any],
                say: Callable[[str], None] = print) -> tuple[Any, bool]:
    """Run the job unless ``out_dir`` already holds its complete result; returns (result, skipped).

    The CLI calls it holding the folder's lock (``scratch.run_lock``). Skipping prints one line and refreshes
    ``job_status.json`` (status ``skipped``, the recorded outputs kept). Otherwise the status is ``running``
    during the job, ``complete`` after it (with the sha256 of each output; for experiment=main the run files of
    systems not in the result are removed first), or ``failed`` with the error, and the exception propagates."""
    out_dir = Path(out_dir)
    sha = config_sha256(config)
    key = resume_key(config)
    experiment = (config.get("experiment") or {}).get("name", "main")
    fields: dict[str, Any] = {"config_sha256": sha, "resume_key": key, "experiment": experiment,
                              "result_file": result_file(experiment)}
    record = load_result(out_dir / STATUS_FILE)
    if job_state(out_dir, record) == "interrupted":
        say(f"{PROG}: {out_dir}: the previous run there was interrupted ({describe_run(record)})")
        fields["previous_run"] = {"status": "interrupted", **{k: record.get(k) for k in ("pid", "host", "time_iso")}}
    done, reasons = completed_result(out_dir, config, key, record)
    if done is not None:
        write_status(out_dir, "skipped", outputs=record["outputs"], **fields)
        say(f"{PROG}: skipped {out_dir}: {result_file(experiment)} is already complete for the same config, "
            f"dataset, code and packages, and its outputs are unchanged (config sha256 {key['config_sha256'][:12]})")
        return done, True
    if reasons:
        say(f"{PROG}: rerunning {out_dir}: {'; '.join(reasons)}")
    started = time.time()
    write_status(out_dir, "running", started_at=started, **fields)
    try:
        result = run()
        if experiment == "main":
            removed = drop_stale_runs(out_dir, result if isinstance(result, dict) else
                                      load_result(out_dir / result_file(experiment)))
            if removed:
                say(f"{PROG}: {out_dir}: removed the run files of systems not in this run: {', '.join(removed)}")
        outputs = output_hashes(out_dir, experiment)
    except BaseException as exc:
        record_failure(out_dir, exc, started_at=started, **fields)
        raise
    write_status(out_dir, "complete", started_at=started, finished_at=time.time(), outputs=outputs, **fields)
    return result, False
