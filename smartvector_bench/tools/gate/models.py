"""Trained models across hosts. A trained system (``systems.base.SavesModel``: ltr) writes ``model_<name>.txt``
beside its run file. Training is not reproducible across CPUs: features that moved by float rounding put a
training value in another histogram bin, and every later tree differs (ltr's model trained on an AMD EPYC and on
an Intel Xeon from the same data differ). So on a host that is not the publishing one the gate reruns such a
system with the published model (``retrievers.<name>.model_file``) and compares its search within the run's
rounding bounds; on the publishing host it retrains, and the model must come out byte for byte."""

from __future__ import annotations

from pathlib import Path

from smartvector_bench.tools.gate.common import Row, rel

PREFIX, SUFFIX = "model_", ".txt"
KEY = "model_file"  # the retriever setting that loads a saved model instead of training


def saved_models(folder: Path) -> dict[str, Path]:
    """System name -> its saved model in a run folder."""
    return {p.name[len(PREFIX):-len(SUFFIX)]: p for p in sorted(Path(folder).glob(f"{PREFIX}*{SUFFIX}"))}


def model_overrides(folders: list[Path], exact: bool) -> list[str]:
    """The overrides that make a rerun search with the models published in ``folders`` (none on an exact host: it
    retrains). A system with different models in several folders (a multirun rerunning several stored jobs) is
    left to retrain: one command line cannot give each job its own."""
    if exact:
        return []
    found: dict[str, set[Path]] = {}
    for folder in folders:
        for name, path in saved_models(folder).items():
            found.setdefault(name, set()).add(path.resolve())
    return [f"retrievers.{name}.{KEY}={quoted(next(iter(paths)))}" for name, paths in sorted(found.items())
            if len(paths) == 1]


def quoted(path: Path) -> str:
    """``path`` as a quoted Hydra override value: a stored job's folder name holds '=' and ','."""
    return "'" + str(path).replace("'", "\\'") + "'"  # Hydra's grammar: a backslash escapes only a quote


def compare_models(label: str, committed: Path, fresh: Path, exact: bool, how: str) -> list[Row]:
    """One row per published model: on an exact host the retrained model byte for byte; elsewhere the rerun
    searched with the published one (its ranked lists are compared within bounds), so it is not compared."""
    rows = []
    mine = saved_models(fresh)
    for name, path in saved_models(committed).items():
        metric = f"{label} {path.name}: the trained model"
        if not exact:
            rows.append(Row(metric, "the published model", "searched with it", how, True,
                            "training is not reproducible across CPUs; the rerun loaded the published model"))
        elif name not in mine:
            rows.append(Row(metric, "the published model", "MISSING", how, False, f"the rerun wrote no {path.name}"))
        else:
            same = mine[name].read_bytes() == path.read_bytes()
            rows.append(Row(metric, "the published model", "equal" if same else "differs", how, same,
                            "" if same else f"retrained to another model than {rel(path)}"))
    return rows
