"""``smartvector-gen``: write one dataset folder (thin Hydra entry point; the work is in build.py, writer.py and
git_history/)."""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.cli_errors import hydra_entry, reports_bad_input
from smartvector_bench.core.dataset.manifest import query_shortfall, shortfall_text

from .build import write_from_config


@reports_bad_input("smartvector-gen")
def generate(cfg: DictConfig) -> None:
    manifest = write_from_config(OmegaConf.to_container(cfg.dataset, resolve=True), cfg.out_dir,
                                 overwrite=bool(cfg.overwrite))
    c = manifest["counts"]
    history = ""
    if manifest.get("generator") == "git_history":
        history = (f"; {c['commits']} commits, {c['documents']} documents, {c['lineages_with_versions']} lineages "
                   f"with >= 2 versions; repo {manifest['repo']['head'][:12]}")
    if short := query_shortfall(manifest):
        print(f"smartvector-gen: warning: fewer queries than asked: {shortfall_text(short)} (too few qualifying "
              "lineages or documents; manifest.json counts)", file=sys.stderr)
    if manifest.get("generator") == "facts":
        history = (f"; {c['facts']} facts in {c['groups']} split groups; question overlap mean "
                   f"{c['question_overlap']['mean']:.2f}, max {c['question_overlap']['max']:.2f}")
    print(f"wrote {cfg.out_dir}: {c['vectors']} vectors, {c['queries']} queries "
          f"({', '.join(f'{k} {v}' for k, v in c['queries_by_category'].items())}){history}; "
          f"sha256 {manifest['dataset_sha256'][:16]}")


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="gen")
def hydra_main(cfg: DictConfig) -> None:
    generate(cfg)


main = hydra_entry("smartvector-gen", hydra_main)
