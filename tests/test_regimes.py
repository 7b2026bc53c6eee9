"""dataset.metadata (core/dataset/regimes.py): what each regime serves the retrievers, its config checks, and that
experiment=main judges with the true dataset whatever the retrievers see."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace

import numpy as np
import pytest

from data_gen.build import write_from_config
from experiments.config import check_dataset, check_regime, check_systems_on
from experiments.main import run, served_corpus
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import CORPUS_META, Corpus, load_dataset
from smartvector_bench.core.dataset.regimes import (CREATED_ONLY_DROPS, NoiseSettings, REGIMES, apply_regime,
                                                     noise_settings, regime_record, regime_settings)
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever

from .conftest import TINY, compose_config

INF = np.inf
FIELDS = [f.name for f in dataclasses.fields(Corpus)]


def hand_corpus() -> Corpus:
    """Doc A in two versions (c1 supersedes c0), B depending on A, C open; created_at == valid_from on c2, c3."""
    return Corpus(
        ids=["c0", "c1", "c2", "c3"], titles=["", "", "t", ""], texts=["a one", "a two", "b", "c"],
        doc_id=np.array(["A", "A", "B", "C"], dtype=object), version=np.array([1, 2, 1, 1], dtype=np.int64),
        source=np.array(["wiki", "wiki", "slack", "email"], dtype=object),
        authority=np.array([0.9, 0.9, 0.3, 0.5]),
        created_at=np.array([0.0, 18.0, 3.0, 10.0]), valid_from=np.array([5.0, 20.0, 3.0, 10.0]),
        valid_to=np.array([20.0, INF, 40.0, INF]), depends_on=Ragged.from_lists([[], [], [0], []]),
        supersedes=np.array([-1, 0, -1, -1], dtype=np.int64), offset_start=np.array([0, 0, 0, 5], dtype=np.int64),
        offset_end=np.array([5, 5, 1, 6], dtype=np.int64), index_of={"c0": 0, "c1": 1, "c2": 2, "c3": 3})


def same(a, b) -> bool:
    if isinstance(a, Ragged):
        return np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


def changed(before: Corpus, after: Corpus) -> set[str]:
    return {f for f in FIELDS if not same(getattr(before, f), getattr(after, f))}


@pytest.mark.parametrize("regime", REGIMES)
def test_a_regime_never_changes_its_input_and_returns_a_new_corpus(regime):
    c = hand_corpus()
    before = {f: getattr(hand_corpus(), f) for f in FIELDS}
    out = apply_regime(c, regime, NoiseSettings(open_share=1.0, shift_share=1.0))
    assert out is not c and out.valid_to is not c.valid_to and out.created_at is not c.created_at
    assert not changed(Corpus(**before), c)


def test_full_returns_identical_arrays():
    c = hand_corpus()
    out = apply_regime(c, "full")
    assert changed(c, out) == set()
    assert out.present == frozenset(CORPUS_META)


def test_no_valid_to_opens_every_window_and_drops_supersedes_only():
    c = hand_corpus()
    out = apply_regime(c, "no_valid_to")
    assert changed(c, out) == {"valid_to", "supersedes", "present"}
    assert np.all(np.isinf(out.valid_to)) and np.all(out.supersedes == -1)
    assert out.present == frozenset(CORPUS_META) - {"supersedes"}
    assert np.all(out.superseded_by() == -1)


def test_created_only_keeps_created_at_source_authority_offsets_and_texts():
    c = hand_corpus()
    out = apply_regime(c, "created_only")
    assert changed(c, out) == {"valid_from", "valid_to", "supersedes", "depends_on", "version", "doc_id", "present"}
    np.testing.assert_array_equal(out.valid_from, c.created_at)  # CORPUS_DEFAULTS: valid_from = created_at
    assert np.all(np.isinf(out.valid_to)) and np.all(out.supersedes == -1)
    assert out.depends_on.indices.size == 0 and out.depends_on.n_rows == len(c)
    np.testing.assert_array_equal(out.version, np.ones(4, dtype=np.int64))
    assert out.doc_id.tolist() == c.ids and out.doc_id.dtype == object
    assert out.present == frozenset(CORPUS_META) - set(CREATED_ONLY_DROPS)
    assert out.present == {"created_at", "source", "authority", "offset_start", "offset_end"}


def test_noisy_opens_windows_and_shifts_created_at_only():
    c = hand_corpus()
    out = apply_regime(c, "noisy", NoiseSettings(open_share=1.0, shift_share=1.0, shift_days=1, seed=3))
    assert changed(c, out) <= {"valid_to", "created_at", "valid_from"}
    assert np.all(np.isinf(out.valid_to)) and out.present == c.present
    d = out.created_at - c.created_at
    assert np.all((np.abs(d) <= 1.0) & (d != 0))
    # valid_from follows created_at only where they were equal (c2, c3); c0 and c1 keep their declared start
    np.testing.assert_array_equal(out.valid_from[:2], c.valid_from[:2])
    np.testing.assert_array_equal(out.valid_from[2:], out.created_at[2:])
    nothing = apply_regime(c, "noisy", NoiseSettings(open_share=0.0, shift_share=0.0))
    assert changed(c, nothing) == set()


def _large(n: int = 4000) -> Corpus:
    rng = np.random.default_rng(1)
    created = rng.uniform(0, 365, n)
    valid_from = np.where(rng.random(n) < 0.5, created, created + 5)
    valid_to = np.where(rng.random(n) < 0.6, valid_from + 60, INF)
    ids = [f"c{i}" for i in range(n)]
    return Corpus(ids=ids, titles=[""] * n, texts=["x"] * n, doc_id=np.array(ids, dtype=object),
                  version=np.ones(n, dtype=np.int64), source=np.array(["wiki"] * n, dtype=object),
                  authority=np.full(n, 0.5), created_at=created, valid_from=valid_from, valid_to=valid_to,
                  depends_on=Ragged.from_lists([[] for _ in range(n)]), supersedes=np.full(n, -1, dtype=np.int64),
                  offset_start=np.zeros(n, dtype=np.int64), offset_end=np.ones(n, dtype=np.int64),
                  index_of={i: k for k, i in enumerate(ids)})


def test_noisy_is_seeded_and_respects_its_shares():
    c = _large()
    s = NoiseSettings(open_share=0.3, shift_share=0.2, shift_days=30, seed=0)
    a, b = apply_regime(c, "noisy", s), apply_regime(c, "noisy", s)
    assert changed(a, b) == set()
    other = apply_regime(c, "noisy", replace(s, seed=1))
    assert {"valid_to", "created_at"} <= changed(a, other)
    closed = np.isfinite(c.valid_to)
    assert abs(np.isinf(a.valid_to[closed]).mean() - 0.3) < 0.01
    moved = a.created_at != c.created_at
    assert abs(moved.mean() - 0.2) < 0.01
    assert np.abs(a.created_at - c.created_at).max() <= 30
    assert np.all(a.valid_to > a.valid_from)  # every window stays non-empty


@pytest.mark.parametrize("ds, message", [
    ({"metadata": "foo"}, "dataset.metadata=foo: unknown regime; allowed: full, no_valid_to, created_only, noisy"),
    ({"metadata_noise": {"open_share": 2}}, "dataset.metadata_noise.open_share=2: must be in [0, 1]"),
    ({"metadata_noise": {"shift_share": -0.1}}, "dataset.metadata_noise.shift_share=-0.1: must be in [0, 1]"),
    ({"metadata_noise": {"shift_days": -1}}, "dataset.metadata_noise.shift_days=-1: must be an integer >= 0 (days)"),
    ({"metadata_noise": {"shift_days": "x"}}, "dataset.metadata_noise.shift_days=x: must be an integer >= 0 (days)"),
    ({"metadata_noise": {"shift_days": 10.5}}, "dataset.metadata_noise.shift_days=10.5: must be an integer >= 0 (days)"),
    ({"metadata_noise": {"seed": 1.5}}, "dataset.metadata_noise.seed=1.5: must be an integer >= 0"),
    ({"metadata_noise": {"sede": 1}}, "dataset.metadata_noise.sede: unknown key; allowed: open_share, shift_share, "
                                      "shift_days, seed"),
    ({"metadata_noise": 3}, "dataset.metadata_noise=3: must be a mapping"),
])
def test_bad_settings_give_one_line_naming_the_key(ds, message):
    with pytest.raises(BenchError) as exc:
        regime_settings(ds)
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)
    cfg = compose_config(TINY)
    cfg["dataset"].update(ds)
    with pytest.raises(BenchError, match="^dataset.metadata"):
        check_dataset(cfg)


def test_defaults_and_the_record():
    assert regime_settings({}) == ("full", NoiseSettings())
    assert noise_settings({"shift_days": 7}) == NoiseSettings(shift_days=7)
    assert regime_record("full", NoiseSettings()) is None
    assert regime_record("created_only", NoiseSettings()) == {"regime": "created_only"}
    assert regime_record("noisy", NoiseSettings(seed=2)) == {"regime": "noisy", "open_share": 0.3, "shift_share": 0.3,
                                                             "shift_days": 30, "seed": 2}
    cfg = compose_config(["dataset.metadata=noisy"])
    assert regime_settings(cfg["dataset"]) == ("noisy", NoiseSettings())


@pytest.mark.parametrize("experiment", ["feedback_loop", "reembed_cost", "lvl_eval", "shortcut_audit"])
def test_other_experiments_refuse_a_regime(experiment):
    cfg = compose_config([f"experiment={experiment}", "dataset.metadata=no_valid_to"])
    with pytest.raises(BenchError, match=f"^dataset.metadata=no_valid_to: experiment={experiment} runs on the full "
                                         "metadata only"):
        check_regime(cfg)
    cfg["dataset"]["metadata"] = "full"
    check_regime(cfg)


def test_the_generator_ignores_the_regime_keys(tmp_path):
    cfg = compose_config(TINY)["dataset"]
    noisy = {**cfg, "metadata": "noisy", "metadata_noise": {"open_share": 1.0, "shift_share": 1.0, "shift_days": 9,
                                                            "seed": 4}}
    bare = {k: v for k, v in cfg.items() if k not in ("metadata", "metadata_noise")}
    shas = []
    for name, ds in (("bare", bare), ("full", cfg), ("noisy", noisy)):
        write_from_config(ds, tmp_path / name)
        shas.append(load_dataset(tmp_path / name).sha256)
        assert "metadata" not in json.loads((tmp_path / name / "manifest.json").read_text())["config"]
    assert len(set(shas)) == 1


def test_which_systems_a_regime_leaves_out(tiny_dataset):
    cfg = compose_config(TINY)
    ds = load_dataset(tiny_dataset)
    names = ["plain_cosine", "bm25", "bm25_valid", "valid_cosine", "recent_cosine", "smartvector", "kg_smartvector",
             "livevectorlake", "metadata_filter", "oracle"]
    retrievers = {n: build_retriever(n, dict(cfg["retrievers"][n])) for n in names}
    refused = {}
    for regime in REGIMES:
        store = replace(ds, corpus=apply_regime(ds.corpus, regime))
        refused[regime] = set()
        for n, r in retrievers.items():
            try:
                check_systems_on({n: r}, store)
            except BenchError as exc:
                refused[regime].add(n)
                assert "\n" not in str(exc)
    assert refused == {"full": set(), "no_valid_to": set(), "noisy": set(),
                       "created_only": {"livevectorlake", "oracle"}}


FAST = TINY + ["embedder=hashing", "experiment.n_boot=50", "experiment.n_permutations=200",
               "+experiment.progress=false", "systems=[plain_cosine,valid_cosine]"]


def test_main_serves_the_regime_and_judges_with_the_true_dataset(tmp_path):
    full = run(compose_config(FAST), tmp_path / "full")
    cfg = compose_config(FAST + ["dataset.metadata=no_valid_to"])
    opened = run(cfg, tmp_path / "open")
    assert "metadata" not in full["dataset"]
    assert opened["dataset"]["metadata"] == {"regime": "no_valid_to"}
    assert opened["dataset"]["sha256"] == full["dataset"]["sha256"]
    ds = load_dataset(tmp_path / "open" / "dataset")
    served = served_corpus(cfg, ds)
    assert np.isfinite(ds.corpus.valid_to).any() and np.all(np.isinf(served.valid_to))
    # leakage@10 is judged against the true windows: the window-filtered system leaks once its windows stay open
    assert full["systems"]["valid_cosine"]["test"]["leakage_at_10"] == 0
    assert opened["systems"]["valid_cosine"]["test"]["leakage_at_10"] > 0
    # the retriever-blind system is unchanged, and the run files carry the same judged queries
    assert opened["systems"]["plain_cosine"] == full["systems"]["plain_cosine"]
    a = (tmp_path / "full" / "qrels_test.trec").read_bytes()
    assert a == (tmp_path / "open" / "qrels_test.trec").read_bytes()


def test_a_named_system_is_left_out_only_when_the_regime_removed_what_it_needs(tiny_dataset):
    """systems=[...] under a regime: a system the true dataset serves but the regime's store does not is a finding
    (left out, with its reason); one the true dataset cannot serve either stops the run, as without a regime."""
    from experiments.main import usable_systems

    cfg = compose_config(TINY)
    ds = load_dataset(tiny_dataset)
    retrievers = {n: build_retriever(n, dict(cfg["retrievers"][n])) for n in ("plain_cosine", "oracle")}
    store = replace(ds, corpus=apply_regime(ds.corpus, "created_only"))
    named = {**cfg, "systems": ["plain_cosine", "oracle"]}
    kept, skipped = usable_systems(named, retrievers, store, ds)
    assert list(kept) == ["plain_cosine"] and list(skipped) == ["oracle"]
    assert "oracle needs metadata.valid_from, metadata.valid_to" in skipped["oracle"]
    assert "drop it" not in skipped["oracle"]
    # without the truth (or when the truth is what is served) a named system must run
    for truth in (None, store):
        with pytest.raises(BenchError, match="oracle needs metadata"):
            usable_systems(named, retrievers, store, truth)
    # systems: all leaves it out as before; nothing left to run is an error naming every reason
    assert list(usable_systems({**cfg, "systems": "all"}, retrievers, store)[1]) == ["oracle"]
    with pytest.raises(BenchError, match="no chosen system can run on .*oracle needs"):
        usable_systems(named, {"oracle": retrievers["oracle"]}, store, ds)
