"""``smartvector_tuned``: SmartVector with its weights, half-lives and dormancy threshold fitted on the dev split of
the dataset it is judged on (a reviewer on the paper's side asks for this first: on real nine-year histories the
paper's 30-day constants make nearly every vector dormant).

The system never sees a label. It is :class:`~smartvector_bench.systems.base.FitsOnDev`: it offers stages of
candidate settings and builds each candidate; the harness (``experiments/tuning.py``) judges every candidate on
the dev queries, keeps the best of each stage (the tune preset's rule: highest dev top-1, ties by dev MRR@10,
then the earlier candidate) and hands the winner back with :meth:`adopt`. From then on it is that SmartVector;
its test figures are the result, as the tune sweep's winner's are (conf/experiment/tune.yaml).

Candidates that differ only in search-time settings (``weights.*``, ``temporal.*``: read at each search) share
one indexed store; the others (``confidence.*``: the store's decay and dormancy) are indexed anew.
"""

from __future__ import annotations

import copy
import itertools

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.smartvector.retriever import SmartVector

SEARCH_TIME = ("weights.", "temporal.")  # what one indexed store can be searched with, changed in place


def merged(base: dict, params: dict[str, object]) -> dict:
    """``base`` (a SmartVector config) with each dotted ``params`` key set."""
    out = copy.deepcopy(base)
    for key, value in params.items():
        node = out
        *path, leaf = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


class TunedSmartVector(SmartVector):
    name = "smartvector_tuned"

    def __init__(self, name: str = "smartvector_tuned", base: dict | None = None,
                 stages: list[dict[str, list]] | None = None):
        where = f"retrievers.{name}"
        if not isinstance(base, dict):
            raise BenchError(f"{where}.base: must be a SmartVector config (e.g. ${{retrievers.smartvector}})")
        if "_target_" in base:  # the base is a SmartVector config: its class must be SmartVector (or a subclass)
            from smartvector_bench.systems import locate

            cls = locate(base["_target_"], f"{where}.base")
            if not (isinstance(cls, type) and issubclass(cls, SmartVector)):
                raise BenchError(f"{where}.base._target_={base['_target_']}: must name SmartVector's class "
                                 f"(smartvector_bench.systems.smartvector.retriever.SmartVector)")
        self.base = {k: v for k, v in base.items() if k != "_target_"}
        super().__init__(name, **self.base)  # checks every key of the base
        if not isinstance(stages, list) or not stages:
            raise BenchError(f"{where}.stages: must be a list of {{dotted.key: [values]}} grids")
        self.stages_ = []
        for i, stage in enumerate(stages):
            if not isinstance(stage, dict) or not stage or not all(isinstance(v, list) and v for v in stage.values()):
                raise BenchError(f"{where}.stages[{i}]: must map dotted SmartVector keys to non-empty lists of values")
            for combo in itertools.product(*stage.values()):  # every candidate must be a valid SmartVector
                SmartVector(name, **merged(self.base, dict(zip(stage, combo))))
            self.stages_.append({str(k): list(v) for k, v in stage.items()})
        self.tuning: dict | None = None
        self._indexed: dict[str, SmartVector] = {}

    # -- FitsOnDev --------------------------------------------------------------------------------------------
    @classmethod
    def fusion_weights(cls, config, where):
        """``base.FusesSignals``: None, since its weights are fitted on dev and not fixed by its recorded config."""
        return None

    def stages(self) -> list[dict[str, list]]:
        """The grids, each with its index-time keys first: the harness walks a grid in product order (the last
        key fastest), so the search-time keys vary inside one indexed store."""
        return [dict(sorted(s.items(), key=lambda kv: kv[0].startswith(SEARCH_TIME))) for s in self.stages_]

    def candidate(self, params: dict[str, object]) -> tuple[SmartVector, bool]:
        """A SmartVector with ``params`` set over the base, and whether the harness must index it (False: it
        shares the store of an indexed candidate with the same index-time settings)."""
        cand = SmartVector(self.name, **merged(self.base, params))
        index_key = repr(sorted((k, v) for k, v in params.items() if not k.startswith(SEARCH_TIME)))
        shared = self._indexed.get(index_key)
        if shared is not None:
            view = copy.copy(shared)  # the same store and index; only the search-time settings differ
            view.weights, view.temporal = cand.weights, cand.temporal
            return view, False
        self._indexed = {index_key: cand}  # one store kept: stages walk index-time settings one at a time
        return cand, True

    def adopt(self, params: dict[str, object], report: dict) -> None:
        """Become the winner: the base with ``params`` (then indexed and searched as any SmartVector)."""
        SmartVector.__init__(self, self.name, **merged(self.base, params))
        self.tuning = {"fitted": dict(params), **report}
        self._indexed = {}

    def describe(self) -> dict:
        info = super().describe()
        return {**info, "tuning": self.tuning if self.tuning is not None else "not fitted (no dev split)"}
