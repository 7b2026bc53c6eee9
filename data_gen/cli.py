"""``smartvector-gen``: write one dataset folder (thin Hydra entry point; the work is in writer.py)."""

from __future__ import annotations

import hydra
from omegaconf import DictConfig, OmegaConf

from smartvector_bench import CONF_DIR
from smartvector_bench.cli_errors import hydra_entry, reports_bad_input

from .params import params_from_config
from .writer import write_dataset


@reports_bad_input("smartvector-gen")
def generate(cfg: DictConfig) -> None:
    params = params_from_config(OmegaConf.to_container(cfg.dataset, resolve=True))
    manifest = write_dataset(params, cfg.out_dir, overwrite=bool(cfg.overwrite))
    c = manifest["counts"]
    print(f"wrote {cfg.out_dir}: {c['vectors']} vectors, {c['queries']} queries "
          f"({', '.join(f'{k} {v}' for k, v in c['queries_by_category'].items())}); "
          f"sha256 {manifest['dataset_sha256'][:16]}")


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="gen")
def hydra_main(cfg: DictConfig) -> None:
    generate(cfg)


main = hydra_entry("smartvector-gen", hydra_main)
