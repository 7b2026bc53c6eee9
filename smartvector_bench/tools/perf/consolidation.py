"""Perf case ``consolidation``: the frozen consolidation (``consolidate``) of a scale dataset at serve time
(the latest query as_of), with candidate pairs from the vector index (``consolidation.candidates = k``) and,
at small N, with all pairs, plus what the candidate path misses against all pairs.

Rows (``case="consolidation"``; systems ``smartvector_distinct_k{k}`` (near-duplicates collapsed,
``consolidation.candidate_pairs=distinct``), ``smartvector_ann_k{k}`` (each vector's k nearest, ``knn``) and
``smartvector_all_pairs``; ``vectors`` is ``synthetic`` on the default dataset, ``synthetic:<dataset>`` on
another base dataset such as ``versioned_policies_large``):
``seconds`` (whole ``consolidate`` call, one row per repetition), ``candidates_s`` / ``contradictions_s`` /
``edges_s`` (phases of the agent's run, last repetition), ``pairs`` (candidate pairs), ``contradictions``,
``edges`` (dependency edges as they count at serve time), ``peak_rss_mb`` (peak RSS during each repetition,
the dataset in memory included; on Linux the kernel's peak is reset before each one), ``rss_before_mb``
(RSS when the repetition starts: the dataset and whatever else the process holds), on Linux
``phase_peak_rss_mb.<phase>`` (peak RSS during each phase of the call (ingest, setup, candidates,
contradictions, edges, ripple, statuses) above ``rss_before_mb``: what the run holds by then plus the phase's
temporaries; the largest is ``peak_rss_mb - rss_before_mb``); with
``all_pairs``: ``missed_contradictions``, ``extra_contradictions``, ``missed_edges``, ``extra_edges``
(unordered pairs; edges as detected, before transfer to the version in force) and ``recall_contradictions`` /
``recall_edges`` (found / all-pairs count, 1 when all pairs finds none) on the candidate system.

    python -m smartvector_bench.tools.perf.consolidation -n 10000 -k 20 --all-pairs [--pairs distinct knn]
        [--dataset versioned_policies_large]
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import time

from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.smartvector.candidates import recall
from smartvector_bench.systems.smartvector.consolidation import ConsolidationResult, consolidate
from smartvector_bench.systems.smartvector.retriever import SmartVector
from smartvector_bench.tools.perf.systems import retriever_config
from smartvector_bench.tools.perf.timing import Row, release_memory, rows
from smartvector_bench.tools.scale import scale_dataset
from smartvector_bench.tools.scale.cli import proc_status_mb

DEFAULT_K = 20
PHASE_PEAK = "phase_peak_rss_mb"  # metric prefix of the peak RSS per phase (above the RSS before the run)
_ALL_PAIRS: dict = {}


def default_smartvector_config() -> dict:
    return retriever_config("smartvector")


def _reset_peak_rss() -> bool:
    """Restart the kernel's peak-RSS count (Linux ``clear_refs`` 5), so that the peak read next is this run's
    and not an earlier case's; False where that is not available."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _peak_rss_mb() -> float:
    """Peak RSS since the last :func:`_reset_peak_rss` (``VmHWM``), else the process's peak so far."""
    peak = proc_status_mb("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if peak is None else peak


class PhasePeaks:
    """A ``consolidate`` probe: the kernel's peak RSS is reset as each phase starts and read as it ends (the last
    one by ``probe(None)`` after the call), so each phase's peak above ``start`` (the RSS before the run) is its
    own; the run's peak is the largest."""

    def __init__(self, start: float):
        self.start, self.phase, self.peaks = start, None, {}

    def __call__(self, phase: str | None) -> None:
        if self.phase is not None:
            self.peaks[self.phase] = max(self.peaks.get(self.phase, 0.0), _peak_rss_mb() - self.start)
        _reset_peak_rss()
        self.phase = phase

    @property
    def peak_mb(self) -> float:
        return self.start + max(self.peaks.values(), default=0.0)


def detected_edges(res: ConsolidationResult) -> tuple[np.ndarray, np.ndarray]:
    """Dependency edges the agent detected (before transfer), as unordered pairs."""
    ev = res.store.events
    where = {"kind": "dependency_detected"}
    return ev.column("vector", where).astype(np.int64), ev.column("cause", where).astype(np.int64)


def contradiction_pairs(res: ConsolidationResult) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray([(w, l) for w, l, _ in res.contradictions], dtype=np.int64).reshape(-1, 2)
    return c[:, 0], c[:, 1]


def _run(data, params, r, reps: int) -> tuple[list[float], list[tuple], ConsolidationResult]:
    """Seconds and (peak RSS, RSS before, peak per phase or None) in MB of each repetition, and the last
    result."""
    at = float(np.max(data.queries.as_of))
    seconds, peaks, res = [], [], None
    for _ in range(max(1, reps)):
        res = None  # free the previous repetition's store first
        release_memory()  # and hand its pages back: the RSS before is this run's
        resets = _reset_peak_rss()
        before = proc_status_mb("VmRSS")
        probe = PhasePeaks(before) if resets and before is not None else None
        t = time.perf_counter()
        res = consolidate(data.corpus, at, params, data.corpus_vectors, r.conf_params, r.store_params, probe=probe)
        seconds.append(time.perf_counter() - t)
        if probe:
            probe(None)
        peaks.append((probe.peak_mb if probe else _peak_rss_mb(), before, probe and probe.peaks))
    return seconds, peaks, res


def _measure(system: str, data, vectors: str, params, r, reps: int, note: str) -> tuple[list[Row], ConsolidationResult]:
    n = len(data.corpus)
    seconds, peaks, res = _run(data, params, r, reps)
    out = rows("consolidation", system, n, vectors, "seconds", seconds, "s", note)
    for phase, value in res.agent.timings.items():
        out += rows("consolidation", system, n, vectors, phase, value, "s", note)
    if params.candidates is not None:
        out += rows("consolidation", system, n, vectors, "pairs", len(res.agent.candidate_pairs()[0]), "pairs", note)
    out += rows("consolidation", system, n, vectors, "contradictions", len(res.contradictions), "pairs", note)
    out += rows("consolidation", system, n, vectors, "edges", int(res.depends_on.indices.size), "edges", note)
    out += rows("consolidation", system, n, vectors, "detected_edges", len(detected_edges(res)[0]), "edges", note)
    out += rows("consolidation", system, n, vectors, "peak_rss_mb", [p for p, _, _ in peaks], "MB", note)
    if all(b is not None for _, b, _ in peaks):  # what the process held before the run (the dataset, the model)
        out += rows("consolidation", system, n, vectors, "rss_before_mb", [b for _, b, _ in peaks], "MB", note)
    if all(ph for _, _, ph in peaks):
        for phase in peaks[-1][2]:
            out += rows("consolidation", system, n, vectors, f"{PHASE_PEAK}.{phase}",
                        [ph.get(phase, float("nan")) for _, _, ph in peaks], "MB", note)
    return out, res


SYSTEMS = {"distinct": "smartvector_distinct_k{k}", "knn": "smartvector_ann_k{k}"}


def dataset_config(name: str | None) -> dict | None:
    """The base dataset config ``conf/dataset/<name>.yaml`` for :func:`scale_dataset` (None: the default)."""
    if not name:
        return None
    path = Path(CONF_DIR) / "dataset" / f"{name}.yaml"
    if not path.is_file():
        raise BenchError(f"consolidation dataset {name!r}: no {path}")
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def bench_consolidation(data, reps: int, k: int = DEFAULT_K, all_pairs: bool = False,
                        index: str | None = None, pairs: str = "distinct", vectors: str | None = None) -> list[Row]:
    """Consolidation of ``data`` (a ScaleData) with the default smartvector config, candidates = ``k`` from the
    ``pairs`` generator (``consolidation.candidate_pairs``; ``index``: the candidate index, default the
    config's); ``all_pairs`` adds the all-pairs run and the recall rows (use at 10K or less: all pairs is
    quadratic). ``vectors``: the rows' label (default the vector kind, ``data.info["vectors"]``)."""
    if pairs not in SYSTEMS:
        raise BenchError(f"consolidation pairs {pairs!r}: unknown; allowed: {', '.join(SYSTEMS)}")
    r = SmartVector(**default_smartvector_config())
    vectors = vectors or data.vectors
    params = dataclasses.replace(r.cons_params, candidates=int(k), candidate_pairs=pairs,
                                 **({"candidate_index": index} if index else {}))
    system = SYSTEMS[pairs].format(k=k)
    note = f"detector={params.detector} index={params.candidate_index}"
    out, ann = _measure(system, data, vectors, params, r, reps, note)
    if all_pairs:
        key = (id(data), reps, params.detector)
        if key not in _ALL_PAIRS:  # one all-pairs run per dataset serves several k (its rows given once)
            _ALL_PAIRS.clear()
            _ALL_PAIRS[key] = _measure("smartvector_all_pairs", data, vectors,
                                       dataclasses.replace(params, candidates=None, all_pairs_max=None), r, reps,
                                       f"detector={params.detector}")
            out += _ALL_PAIRS[key][0]
        full = _ALL_PAIRS[key][1]
        n = len(data.corpus)
        for what, ref, got in (("contradictions", contradiction_pairs(full), contradiction_pairs(ann)),
                               ("edges", detected_edges(full), detected_edges(ann))):
            rc = recall(ref, got)
            out += rows("consolidation", system, n, vectors, f"missed_{what}", rc.missed, "pairs", note)
            out += rows("consolidation", system, n, vectors, f"extra_{what}", rc.extra, "pairs", note)
            out += rows("consolidation", system, n, vectors, f"found_{what}", rc.found, "pairs", note)
            out += rows("consolidation", system, n, vectors, f"recall_{what}", rc.recall, "share", note)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m smartvector_bench.tools.perf.consolidation", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10_000)
    ap.add_argument("-k", type=int, nargs="+", default=[DEFAULT_K])
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--index", default=None)
    ap.add_argument("--all-pairs", action="store_true")
    ap.add_argument("--pairs", nargs="+", default=["distinct"], choices=tuple(SYSTEMS))
    ap.add_argument("--dataset", default=None, help="base dataset (conf/dataset/NAME.yaml); default the default")
    args = ap.parse_args(argv)
    data = scale_dataset(args.n, seed=args.seed, dataset_cfg=dataset_config(args.dataset))
    for k in args.k:
        for pairs in args.pairs:
            label = f"synthetic:{args.dataset}" if args.dataset else None
            for row in bench_consolidation(data, args.reps, k, args.all_pairs, args.index, pairs, label):
                print(f"{row.system:24s} {row.metric:24s} {row.rep:3d} {row.value:14.3f} {row.unit}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
