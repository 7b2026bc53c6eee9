"""Sweeps: Hydra multiruns of the main evaluation (presets in ``conf/experiment/``), resumable job by job, with
a collector that turns a sweep folder into one tidy CSV and a per-preset summary.

- :mod:`.resume`: skip a job whose folder already holds a complete result for the same inputs (config, dataset,
  code, plug-in code, packages) with its recorded outputs unchanged, and record each job's status
  (``job_status.json``; a killed job's ``running`` reads as interrupted). Each job folder is one run's at a
  time (``core/scratch.py`` ``run_lock``).
- :mod:`.collect`: ``smartvector-collect SWEEP_DIR``: rebuilds the planned job list from ``multirun.yaml``,
  reads every job folder, writes ``tidy.csv``, ``tidy.provenance.json`` and ``summary.json``.
- :mod:`.callback`: a Hydra callback that runs the collector at the end of every multirun.

Job folders are named by :func:`job_dirname` (registered as the ``${svb_dirname:...}`` resolver used in
``hydra.sweep.subdir``): Hydra's ``override_dirname`` when it is a safe, short file name, otherwise a
sanitised prefix plus a hash of the full string, so every configuration gets its own folder.
"""

from __future__ import annotations

import hashlib
import re

from omegaconf import OmegaConf

STATUS_FILE = "job_status.json"
RESOLVER = "svb_dirname"
# A job folder name: only these characters (portable on POSIX and Windows file systems) ...
_SAFE = re.compile(r"[A-Za-z0-9._,=+\-\[\]@]")
# ... and at most this many characters (file names are limited to 255 bytes; leave room for temp suffixes).
MAX_DIRNAME = 200
EMPTY_DIRNAME = "_no_overrides"
_DOTTED_KEY = re.compile(r"(^|,)[+~]*(?:[A-Za-z0-9_-]+\.)+([A-Za-z0-9_-]+)=")


def job_dirname(override_dirname: str) -> str:
    """A file-system-safe folder name for a job, unique per override string.

    ``override_dirname`` is returned unchanged when it is made of safe characters only, is short enough and
    is not ``.``/``..``. Otherwise, for a readable name, dotted keys are shortened to their last part
    (``dataset.seed=3`` -> ``seed=3``), unsafe characters become ``_``, the result is cut to fit, and ``-h`` plus
    12 hex digits of the sha256 of the original string are appended: the hash, not the readable part, makes
    the name unique (two different override strings never share a folder)."""
    s = str(override_dirname)
    if not s:
        return EMPTY_DIRNAME
    safe = all(_SAFE.fullmatch(ch) for ch in s) and s not in (".", "..")
    if safe and len(s) <= MAX_DIRNAME:
        return s
    digest = hashlib.sha256(s.encode("utf-8")).hexdigest()[:12]
    short = _DOTTED_KEY.sub(r"\1\2=", s)
    cleaned = "".join(ch if _SAFE.fullmatch(ch) else "_" for ch in short)
    return f"{cleaned[: MAX_DIRNAME - 15]}-h{digest}"


def register_resolvers() -> None:
    """``${svb_dirname:${hydra.job.override_dirname}}`` (used by ``hydra.sweep.subdir`` in conf/config.yaml).
    Registered on import of :mod:`smartvector_bench.tools.cli`, which every launcher imports in its job process."""
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, lambda s="": job_dirname(str(s)))


register_resolvers()
