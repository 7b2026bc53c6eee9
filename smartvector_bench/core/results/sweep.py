"""summary.json of a sweep (written by ``smartvector-collect``, smartvector_bench/tools/sweeps/collect.py):
:class:`SweepSummary`. Its schema is the collector's own (``SWEEP_SCHEMA_VERSION``), apart from metrics.json's."""

from __future__ import annotations

from dataclasses import dataclass

from smartvector_bench.core.results.base import ResultFile, check, check_type

SWEEP_SCHEMA_VERSION = "1.0"
TIDY = "tidy.csv"
# A job whose run was interrupted (job_status.json ``running``, its run gone: sweeps/resume.py ``job_state``)
# counts as missing, its note saying interrupted: the counts keep these keys, as every published summary.json.
STATUSES = ("complete", "skipped", "failed", "missing")
USABLE = ("complete", "skipped")
# what ``results`` holds per preset (anything else: ``by_key``, one summary per swept key)
PRESET_KEYS = {
    "seeds": ("metrics", "seeds", "systems"),
    "contradiction_sweep": ("key", "split", "metrics", "values", "by_value"),
    "ablation": ("key", "split", "metrics", "values", "by_value"),
    "tune": ("system", "selection", "n_candidates", "n_planned", "final", "winner", "dev_top5"),
    "half_life": ("split", "rows", "columns", "systems"),
}
JOB_LINE = ("job", "job_dir", "overrides", "note")


@dataclass
class SweepSummary(ResultFile):
    """A sweep's job counts, its failed and missing jobs, and what its preset reports (``results``)."""

    KIND = "sweep summary"
    FILE = "summary.json"
    SCHEMA_VERSIONS = (SWEEP_SCHEMA_VERSION,)

    schema_version: str
    sweep: str
    preset: str | None
    jobs: dict               # planned and one count per status
    all_complete: bool
    failed: list             # {job, job_dir, overrides, note} per failed job
    missing: list            # the same per missing job
    unplanned_folders: list
    results: dict

    def _check(self, where: str) -> None:
        for key in ("planned", *STATUSES):
            check_type(self.jobs.get(key), int, where, f"jobs.{key}")
        check(sum(self.jobs[s] for s in STATUSES) == self.jobs["planned"], where, "jobs",
              f"the counts per status do not add up to planned ({self.jobs})")
        check(self.all_complete == (self.jobs["failed"] + self.jobs["missing"] == 0), where, "all_complete",
              f"{self.all_complete} with {self.jobs['failed']} failed and {self.jobs['missing']} missing jobs")
        for status in ("failed", "missing"):
            items = getattr(self, status)
            check(len(items) == self.jobs[status], where, status,
                  f"{len(items)} listed, jobs.{status} says {self.jobs[status]}")
            for i, it in enumerate(items):
                lacking = [k for k in JOB_LINE if not isinstance(it, dict) or k not in it]
                check(not lacking, where, f"{status}[{i}].{lacking[0] if lacking else ''}", "missing")
        want = PRESET_KEYS.get(self.preset, ("by_key",))
        lacking = [k for k in want if k not in self.results]
        check(not lacking, where, f"results.{lacking[0] if lacking else ''}",
              f"missing (a {self.preset or 'generic'} sweep's summary has it)")
