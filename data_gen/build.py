"""One entry point for writing any configured dataset: ``write_from_config(cfg["dataset"], out_dir)``."""

from __future__ import annotations

from pathlib import Path

from .facts import write_facts
from .git_history import write_git_history
from .params import params_from_config
from .writer import write_dataset


def write_from_config(ds_cfg: dict, out_dir: str | Path, overwrite: bool = False) -> dict:
    """Validate the ``dataset`` config (a plain dict) and write its folder; returns the manifest. ``name`` picks
    the generator: the synthetic ones (``data_gen.writer.write_dataset``) or ``git_history``
    (``data_gen.git_history.write_git_history``) or ``facts`` (``data_gen.facts.write_facts``). Bad input raises BenchError naming ``dataset.<key>``."""
    params = params_from_config(dict(ds_cfg))
    if ds_cfg.get("name") == "git_history":
        return write_git_history(params, out_dir, overwrite=overwrite)
    if ds_cfg.get("name") == "facts":
        return write_facts(params, out_dir, overwrite=overwrite)
    return write_dataset(params, out_dir, overwrite=overwrite)
