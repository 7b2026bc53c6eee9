"""Labels stay with the evaluator: no retriever (but the declared oracle) can see them.

The proof is behavioural: every system runs twice through the real experiment, once on a generated dataset and
once on a copy whose labels, qrels and query judgments are scrambled, and must return exactly the same
rankings, scores and confidences. A system that read a family, a kind, a value, a stale or rumor set or the
qrels (directly or through anything the harness hands it) would see different inputs the second time.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from pathlib import Path

import pytest

from experiments.main import run as run_main
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems import build_retriever, configured
from smartvector_bench.systems.base import FitsOnDev, ReadsLabels, TrainsOnDev

from .conftest import compose_config, write_tiny

LABEL_READERS = {"oracle"}
# FitsOnDev (settings chosen by the dev judgments) and TrainsOnDev (a model trained on the dev qrels): never the test ones
DEV_FITTED = {"smartvector_tuned", "valid_authority", "ltr"}
# valid_authority fits one weight: that its choice follows the dev judgments is checked by brute force in
# tests/test_practitioner_baselines.py
ONE_WEIGHT = {"valid_authority"}


def _scramble(src: Path, dst: Path, seed: int = 7) -> None:
    shutil.copytree(src, dst)
    rng = random.Random(seed)
    (dst / "manifest.json").unlink()  # its hashes would (rightly) reject the edited files
    chunks = [json.loads(x) for x in (dst / "labels" / "chunks.jsonl").read_text().splitlines()]
    fields = [{k: v for k, v in c.items() if k != "_id"} for c in chunks]
    rng.shuffle(fields)
    (dst / "labels" / "chunks.jsonl").write_text(
        "".join(json.dumps({"_id": c["_id"], **f}) + "\n" for c, f in zip(chunks, fields)))
    queries = [json.loads(x) for x in (dst / "labels" / "queries.jsonl").read_text().splitlines()]
    qfields = [{k: v for k, v in q.items() if k != "_id"} for q in queries]
    rng.shuffle(qfields)
    (dst / "labels" / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q["_id"], **f}) + "\n" for q, f in zip(queries, qfields)))
    ids = [c["_id"] for c in chunks]
    for split in ("dev", "test"):
        path = dst / "qrels" / f"{split}.tsv"
        lines = path.read_text().splitlines()
        qids = sorted({ln.split("\t")[0] for ln in lines[1:]})
        path.write_text("\n".join([lines[0]] + [f"{q}\t{rng.choice(ids)}\t1" for q in qids]) + "\n")


def _runs(folder: Path, out: Path, systems: list[str]) -> dict[str, list]:
    cfg = compose_config(["embedder=hashing", f"dataset.path={folder}", f"systems=[{','.join(systems)}]",
                          "experiment.n_boot=20", "experiment.n_permutations=20", "+experiment.progress=false"])
    run_main(cfg, out)
    result = {}
    for name in systems:
        rows = [json.loads(x) for x in (out / f"run_{name}.jsonl").read_text().splitlines()[1:]]
        result[name] = [(r["query_id"], r["ranked"], r["scores"], r["confidence"]) for r in rows]
    return result


def test_corpus_has_no_label_fields():
    names = {f.name for f in dataclasses.fields(Corpus)}
    assert not names & {"family", "kind", "value", "gold", "relevant", "stale", "rumor", "category", "split",
                        "doc_type", "chunk_index"}


@pytest.mark.slow
def test_rankings_do_not_depend_on_labels(tmp_path):
    original = write_tiny(tmp_path / "ds")
    scrambled = tmp_path / "scrambled"
    _scramble(original, scrambled)
    cfg = compose_config()["retrievers"]
    # one system per class (a variant such as smartvector_soft ranks with the same code on other settings)
    first = {}
    for name in configured(cfg):
        first.setdefault(cfg[name]["_target_"], name)
    systems = [s for s in first.values() if s not in LABEL_READERS | DEV_FITTED]
    a = _runs(original, tmp_path / "run_a", systems)
    b = _runs(scrambled, tmp_path / "run_b", systems)
    for name in systems:
        assert a[name] == b[name], f"{name}: its rankings changed when only the labels changed"


def _scramble_test_split(src: Path, dst: Path, seed: int = 7) -> None:
    """Only the test queries' judgments scrambled: their label rows shuffled among them, qrels/test.tsv random."""
    shutil.copytree(src, dst)
    rng = random.Random(seed)
    (dst / "manifest.json").unlink()
    split = {json.loads(x)["_id"]: json.loads(x)["metadata"]["split"]
             for x in (dst / "queries.jsonl").read_text().splitlines()}
    rows = [json.loads(x) for x in (dst / "labels" / "queries.jsonl").read_text().splitlines()]
    test = [i for i, r in enumerate(rows) if split[r["_id"]] == "test"]
    fields = [{k: v for k, v in rows[i].items() if k != "_id"} for i in test]
    rng.shuffle(fields)
    for i, f in zip(test, fields):
        rows[i] = {"_id": rows[i]["_id"], **f}
    (dst / "labels" / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = [json.loads(x)["_id"] for x in (dst / "corpus.jsonl").read_text().splitlines()]
    path = dst / "qrels" / "test.tsv"
    lines = path.read_text().splitlines()
    qids = sorted({ln.split("\t")[0] for ln in lines[1:]})
    path.write_text("\n".join([lines[0]] + [f"{q}\t{rng.choice(ids)}\t1" for q in qids]) + "\n")


@pytest.mark.slow
def test_a_dev_fitted_system_does_not_see_the_test_labels(tmp_path):
    """smartvector_tuned is fitted on the dev judgments (by the harness, experiments/tuning.py): scrambling the
    test split's labels and qrels leaves every one of its rankings as it was; scrambling them all does not (it
    is fitted on labels, so the test above leaves it out)."""
    original = write_tiny(tmp_path / "ds")
    _scramble_test_split(original, tmp_path / "test_scrambled")
    _scramble(original, tmp_path / "all_scrambled")
    cfg = compose_config()["retrievers"]
    assert {n for n in configured(cfg)
            if isinstance(build_retriever(n, dict(cfg[n])), (FitsOnDev, TrainsOnDev))} == DEV_FITTED
    systems = sorted(DEV_FITTED)
    a = _runs(original, tmp_path / "run_a", systems)
    b = _runs(tmp_path / "test_scrambled", tmp_path / "run_b", systems)
    c = _runs(tmp_path / "all_scrambled", tmp_path / "run_c", systems)
    for name in systems:
        assert a[name] == b[name], f"{name}: its rankings changed when only the test labels changed"
        if name in ONE_WEIGHT:  # a grid of 8 values may pick the same one on TINY's scrambled dev split
            continue
        assert a[name] != c[name], f"{name}: the dev labels changed and its fit did not: the test checks nothing"


@pytest.mark.slow
def test_the_scramble_changes_what_the_oracle_sees(tmp_path):
    """The test above can fail: the oracle, which reads labels, does change."""
    original = write_tiny(tmp_path / "ds")
    scrambled = tmp_path / "scrambled"
    _scramble(original, scrambled)
    a = _runs(original, tmp_path / "run_a", ["oracle"])
    b = _runs(scrambled, tmp_path / "run_b", ["oracle"])
    assert a["oracle"] != b["oracle"]


def test_only_declared_systems_read_labels():
    cfg = compose_config()["retrievers"]
    readers = {name for name in configured(cfg) if isinstance(build_retriever(name, dict(cfg[name])), ReadsLabels)}
    assert readers == LABEL_READERS
