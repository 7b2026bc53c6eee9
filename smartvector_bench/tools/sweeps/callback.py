"""A Hydra callback (registered in conf/config.yaml under ``hydra.callbacks``) that ends every multirun with the
collector: ``tidy.csv``, ``tidy.provenance.json`` and ``summary.json`` in the sweep folder, a readable summary
and "N of M jobs skipped as already complete".

Hydra skips ``on_multirun_end`` when a job failed (the sweeper re-raises the job's exception), so the callback
also collects at interpreter exit in that case: a sweep with failed jobs still gets its tidy CSV, listing them.
Before any job runs it refuses a plan in which two jobs would share one folder. Single runs are untouched.
"""

from __future__ import annotations

import atexit
import logging
import time
import traceback
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from smartvector_bench.tools.sweeps.plan import folder_collisions, plan_jobs

log = logging.getLogger(__name__)


class SweepFolderCollision(Exception):
    pass


class CollectSweep(Callback):
    def __init__(self, enabled: bool = True, check_folders: bool = True) -> None:
        self.enabled = enabled
        self.check_folders = check_folders
        self._sweep_dir: str | None = None
        self._started = 0.0
        self._collected = False

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not self.enabled:
            return
        self._sweep_dir = str(Path(str(config.hydra.sweep.dir)).absolute())
        self._started = time.time()
        self._collected = False
        if self.check_folders:
            self._refuse_shared_folders(config)
        atexit.register(self._collect_at_exit)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.enabled:
            self._collect()

    # -- internals --------------------------------------------------------------------------------------------

    def _refuse_shared_folders(self, config: DictConfig) -> None:
        try:
            plan = plan_jobs(config)
        except Exception as exc:  # noqa: BLE001 - the sweeper will report a bad override itself
            log.debug("sweep plan not checked: %s", exc)
            return
        clashes = folder_collisions(plan)
        if clashes:
            folder, nums = clashes[0]
            raise SweepFolderCollision(
                f"jobs {nums} of this multirun would share the folder {folder!r} (a swept key is in "
                f"hydra.job.config.override_dirname.exclude_keys?); {len(clashes)} folder(s) affected")

    def _collect_at_exit(self) -> None:
        # no sweep folder (hydra.sweep.dir could not be created): nothing to collect, and the entry point has
        # already printed its one line
        if self.enabled and not self._collected and self._sweep_dir is not None and Path(self._sweep_dir).is_dir():
            print("smartvector-bench: the multirun ended with an error; collecting what it produced")
            self._collect()

    def _collect(self) -> None:
        if self._collected or self._sweep_dir is None:
            return
        self._collected = True
        # Imported here, not at the top: Hydra builds this callback for single runs too, and the collector
        # loads pandas, which only a multirun needs. (No circle: collect never imports this module.)
        from smartvector_bench.tools.sweeps.collect import run

        try:
            c, _summary, _code = run(self._sweep_dir)
        except Exception:  # noqa: BLE001 - never lose the sweep's own outcome to a collector problem
            print(f"smartvector-bench: collecting {self._sweep_dir} failed:\n{traceback.format_exc()}")
            return
        skipped_now = sum(1 for r in c.results if r.status == "skipped"
                          and float((r.status_record or {}).get("time", 0.0)) >= self._started - 1.0)
        print(f"smartvector-bench: {skipped_now} of {len(c.results)} jobs skipped as already complete")
