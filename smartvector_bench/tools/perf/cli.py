"""``smartvector-perf``: the performance benchmark (thin Hydra entry point; the work is in runner.py).

``make bench`` runs the ``full`` profile into ``results/perf/``; ``make bench-quick`` the ``quick`` one into a
temp folder. Example: ``smartvector-perf bench_profile=quick out_dir=/tmp/perf search.reps=5``.
``only=[filtered_ann]`` runs those profile sections alone and merges their rows into the run stored in
``out_dir`` (``runner.merge_results``).
"""

from __future__ import annotations

import time
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.cli_errors import hydra_entry, reports_bad_input
from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.perf.runner import merge_results, require_stored, run_profile, write_results


@reports_bad_input("smartvector-perf")
def bench(cfg: DictConfig) -> None:
    container = OmegaConf.to_container(cfg, resolve=True)
    for key in ("search", "out_dir"):
        if key not in container:
            raise BenchError(f"{key}: missing from the bench config (conf/bench.yaml, conf/bench_profile/)")
    t = time.perf_counter()
    datasets: list = []
    only = container.get("only") or []
    only = [only] if isinstance(only, str) else list(only)
    if only:
        require_stored(container["out_dir"], only)
    runs = run_profile(container, datasets=datasets, only=only)
    res = (merge_results(container["out_dir"], container, runs, time.perf_counter() - t, datasets, only) if only
           else write_results(container["out_dir"], container, runs, time.perf_counter() - t, datasets))
    print((Path(container["out_dir"]) / "perf.md").read_text(encoding="utf-8"))
    missed = [x["id"] for x in res["targets"] if x["verdict"] == "missed"]
    print(f"wrote {container['out_dir']} ({len(runs)} measurements, {time.perf_counter() - t:.0f} s); "
          f"targets missed: {', '.join(missed) or 'none'}")


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="bench")
def hydra_main(cfg: DictConfig) -> None:
    bench(cfg)


main = hydra_entry("smartvector-perf", hydra_main)

if __name__ == "__main__":
    main()
