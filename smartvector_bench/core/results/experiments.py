"""The JSON of the other experiments: reembed_cost.json (:class:`ReembedCost`), feedback_loop.json
(:class:`FeedbackLoop`) and lvl_eval.json (:class:`LvlEval`)."""

from __future__ import annotations

from dataclasses import dataclass

from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results.base import ResultFile, check, check_type, get_path


@dataclass
class ReembedCost(ResultFile):
    """experiment=reembed_cost: per update strategy, the chunks re-embedded per edit (by edit type and by the
    edited document's size) and whether its final store equals a from-scratch rebuild."""

    KIND = "reembed_cost"
    FILE = "reembed_cost.json"
    SCHEMA_VERSIONS = (SCHEMA_VERSION,)

    schema_version: str
    experiment: str
    dataset: dict
    embedder: str
    config: dict
    edits: dict
    strategies: dict        # strategy -> by_edit_type, single_word_by_document_chunks, equivalent_to_rebuild, ...
    paper_claim: dict
    provenance: dict

    def _check(self, where: str) -> None:
        check(self.experiment == "reembed_cost", where, "experiment", f"{self.experiment!r}, expected 'reembed_cost'")
        get_path(self.edits, ("by_type",), where, dict, field="edits")
        check(bool(self.strategies), where, "strategies", "no strategy")
        for name, st in self.strategies.items():
            at = f"strategies.{name}"
            check_type(st, dict, where, at)
            for key in ("by_edit_type", "single_word_by_document_chunks", "equivalent_to_rebuild",
                        "reduction_vs_full"):
                check_type(st.get(key), dict, where, f"{at}.{key}")
            check("all" in st["by_edit_type"], where, f"{at}.by_edit_type.all", "missing")
            check_type(st["equivalent_to_rebuild"].get("equivalent"), bool, where,
                       f"{at}.equivalent_to_rebuild.equivalent")


# feedback_loop.csv's columns: one row per round x system x split (also the items of feedback_loop.json's series)
FEEDBACK_SERIES_FIELDS = ("round", "time", "days_from_now", "system", "split", M.N_QUERIES, M.TOP1, M.lo(M.TOP1),
                          M.hi(M.TOP1), M.STALE_RATE, M.RUMOR_RATE, M.ECE, "corrections", "acceptances",
                          "dormant_in_force")


@dataclass
class FeedbackLoop(ResultFile):
    """experiment=feedback_loop: accuracy of the live, frozen and plain systems over simulated time while a
    simulated user gives feedback (``series``: one item per round x system x split)."""

    KIND = "feedback_loop"
    FILE = "feedback_loop.json"
    SCHEMA_VERSIONS = (SCHEMA_VERSION,)

    schema_version: str
    dataset: dict
    experiment: dict
    feedback: dict
    summary: dict
    detection_quality: dict
    series: list
    provenance: dict

    def _check(self, where: str) -> None:
        check(self.experiment.get("name") == "feedback_loop", where, "experiment.name",
              f"{self.experiment.get('name')!r}, expected 'feedback_loop'")
        get_path(self.experiment, ("rounds",), where, int, field="experiment")
        for key in ("corrections", "acceptances", "revivals"):
            get_path(self.feedback, (key,), where, int, field="feedback")
        for i, row in enumerate(self.series):
            check_type(row, dict, where, f"series[{i}]")
            missing = [k for k in FEEDBACK_SERIES_FIELDS if k not in row]
            check(not missing, where, f"series[{i}].{missing[0] if missing else ''}", "missing")


@dataclass
class LvlEval(ResultFile):
    """experiment=lvl_eval: LiveVectorLake's evaluation (re-embedding share, change detection, latency, temporal
    accuracy) with the verdict on each of its paper's claims."""

    KIND = "lvl_eval"
    FILE = "lvl_eval.json"
    SCHEMA_VERSIONS = (SCHEMA_VERSION,)

    schema_version: str
    experiment: str
    dataset: dict
    embedder: str
    query_embedder: dict
    config: dict
    host: dict
    lake: dict
    ingest: dict
    reembedding: dict
    change_detection: dict
    latency: dict
    temporal: dict
    rules: dict
    verdicts: dict
    claims: dict
    csv_files: list
    plots: dict
    timings_s: dict
    provenance: dict

    def _check(self, where: str) -> None:
        check(self.experiment == "lvl_eval", where, "experiment", f"{self.experiment!r}, expected 'lvl_eval'")
        for key in ("sha256", "n_queries"):
            get_path(self.dataset, (key,), where, field="dataset")
