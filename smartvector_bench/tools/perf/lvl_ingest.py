"""The ``lvl_ingest`` perf case: LiveVectorLake's ingest time per 1,000 document versions, one lake commit per
version (``ingest_batch: 1``) against batches of versions (``LiveVectorLake.ingest_batch``: one Delta MERGE and
one hot-tier update per batch), on the same scale dataset.

Each measurement is the benchmark's own ``index()`` of a new retriever, configured as ``conf/`` configures it with
only ``ingest_batch`` changed (:func:`~.peers.lvl_index`), at :func:`~.peers.serve_time_of`. Its ``ingest_s``
(every document version through the lake's CDC, the Delta commits and the hot-tier updates, in a new temporary
lake) is divided by the number of document versions it ingested (retirements included). A per-version commit
costs more as the table grows (a MERGE reads the files of the documents it touches), so the figure is for the
whole history of a dataset of that size, not for any 1,000 versions.

Rows (case ``lvl_ingest``, system ``livevectorlake_batch<N>``; nothing is asserted here):

- ``s_per_1000_versions``: one row per repetition;
- ``speedup``: the median of ``ingest_batch: 1`` over this batch size's median (batched systems only, when 1 is
  measured too);
- ``versions``, ``commits`` and ``cold_rows`` (rows in the Delta table: the same for every batch size, since the
  rows do not depend on batching; a difference would be a bug).

Section keys (``conf/bench_profile/*.yaml``, ``lvl_ingest:``): ``sizes``, ``reps`` (default 1), ``batches``
(default ``[1, <the configured ingest_batch>]``), ``retriever`` (other ``retrievers.livevectorlake`` settings for
this case, e.g. ``{hot_index: flat}``; default: none, the configured system).
"""

from __future__ import annotations

import numpy as np

from smartvector_bench.tools.perf.peers import lvl_index
from smartvector_bench.tools.perf.systems import retriever_config
from smartvector_bench.tools.perf.timing import Row, rows
from smartvector_bench.tools.scale import ScaleData

CASE = "lvl_ingest"


def batch_sizes(section: dict) -> list[int]:
    """``batches`` of the section, else per version (1) and the configured ``ingest_batch``."""
    sizes = section.get("batches") or [1, int(retriever_config("livevectorlake")["ingest_batch"])]
    return list(dict.fromkeys(int(b) for b in sizes))


def bench_lvl_ingest(data: ScaleData, section: dict, n: int, cfg: dict) -> list[Row]:
    out: list[Row] = []
    medians: dict[int, float] = {}
    for b in batch_sizes(section):
        system, per_1000 = f"livevectorlake_batch{b}", []
        for _ in range(int(section.get("reps", 1))):
            r = lvl_index(data, **{**(section.get("retriever") or {}), "ingest_batch": b})[0]
            try:
                info = r.describe()
            finally:
                r.close()  # the temporary lake folder goes now, not at exit
            ing = info["ingest"]
            versions = ing["versions"] + ing["retirements"]
            per_1000.append(1000 * info["ingest_s"] / versions)
        note = f"{versions} document versions, {ing['commits']} commits (ingest_batch={b})"
        out += rows(CASE, system, n, data.vectors, "s_per_1000_versions", per_1000, "s", note)
        out += rows(CASE, system, n, data.vectors, "versions", [versions], "count", note)
        out += rows(CASE, system, n, data.vectors, "commits", [ing["commits"]], "count", note)
        out += rows(CASE, system, n, data.vectors, "cold_rows", [info["lake"]["cold_rows"]], "rows", note)
        medians[b] = float(np.median(per_1000))
    if 1 in medians:
        for b, m in medians.items():
            if b != 1:
                out += rows(CASE, f"livevectorlake_batch{b}", n, data.vectors, "speedup", [medians[1] / m], "x",
                            "per-version ingest time over this batch size's (medians)")
    return out
