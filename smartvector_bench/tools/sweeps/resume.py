"""Resumable jobs: skip a job whose output folder already holds a complete result of the same inputs.

An experiment writes its result file (``metrics.json`` for ``experiment=main``) last and atomically, so a job
killed halfway leaves none and is run again. A result counts as complete only if it parses and its
``provenance.resume_key`` equals the current one (``provenance.resume_key``): the resolved config (without keys
that only move outputs, such as ``embedder.cache_path``), the content of ``dataset.path``, the code (a hash of
the package sources) and the package versions. Any difference reruns the job and says which part changed.

Every job also records its status in ``job_status.json`` beside the result:
``running`` (written at start; left behind by a killed job), ``complete`` (written after the result),
``skipped`` (the result was already there) or ``failed`` (with the error; the exception is re-raised).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.provenance import config_sha256, resume_key
from smartvector_bench.tools.sweeps import STATUS_FILE

# The file each experiment writes last (its presence marks a complete run).
RESULT_FILES = {"main": "metrics.json", "reembed_cost": "reembed_cost.json",
                "feedback_loop": "feedback_loop.json", "lvl_eval": "lvl_eval.json"}
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
          "code_sha256": "the code", "packages_sha256": "the package versions"}


def key_changes(old: dict | None, new: dict) -> list[str]:
    """What differs between a stored resume key and the current one, in words ([] when equal)."""
    if old is None:
        return ["the result has no resume key (written by an older version)"]
    out = []
    for part, words in _PARTS.items():
        if old.get(part) != new.get(part):
            out.append(f"{words} changed ({str(old.get(part))[:12]} -> {str(new.get(part))[:12]})")
    return out


def completed_result(out_dir: str | Path, config: dict, key: dict | None = None) -> tuple[dict | None, list[str]]:
    """(the result already in ``out_dir`` for exactly these inputs, else None; why it cannot be reused)."""
    name = (config.get("experiment") or {}).get("name", "main")
    result = load_result(Path(out_dir) / result_file(name))
    if result is None:
        return None, []
    changes = key_changes(result_key(result), key or resume_key(config))
    return (None, changes) if changes else (result, [])


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


def run_or_skip(out_dir: str | Path, config: dict, run: Callable[[], Any],
                say: Callable[[str], None] = print) -> tuple[Any, bool]:
    """Run the job unless ``out_dir`` already holds its complete result; returns (result, skipped).

    Skipping prints one line and refreshes ``job_status.json`` (status ``skipped``). Otherwise the status is
    ``running`` during the job, ``complete`` after it (the experiment has written its result by then), or
    ``failed`` with the error, and the exception propagates."""
    out_dir = Path(out_dir)
    sha = config_sha256(config)
    key = resume_key(config)
    experiment = (config.get("experiment") or {}).get("name", "main")
    fields = {"config_sha256": sha, "resume_key": key, "experiment": experiment,
              "result_file": result_file(experiment)}
    done, changes = completed_result(out_dir, config, key)
    if done is not None:
        write_status(out_dir, "skipped", **fields)
        say(f"{PROG}: skipped {out_dir}: {result_file(experiment)} is already complete for the same config, "
            f"dataset, code and packages (config sha256 {key['config_sha256'][:12]})")
        return done, True
    if changes:
        say(f"{PROG}: rerunning {out_dir}: {result_file(experiment)} is out of date: {'; '.join(changes)}")
    started = time.time()
    write_status(out_dir, "running", started_at=started, **fields)
    try:
        result = run()
    except BaseException as exc:
        record_failure(out_dir, exc, started_at=started, **fields)
        raise
    write_status(out_dir, "complete", started_at=started, finished_at=time.time(), **fields)
    return result, False
