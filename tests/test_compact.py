"""Exact compact columns (``systems/smartvector/compact.py``), the store built on them, the agent's CSR edges
and ``metadata_bytes``: every value reads back bit for bit, and the search's columns equal the float64 ones
derived from the corpus."""

from __future__ import annotations

import numpy as np
import pytest

from data_gen.params import params_from_config
from data_gen.writer import write_dataset
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.csr import Ragged
from smartvector_bench.systems.smartvector.compact import ExactColumn, PackedRagged, code_dtype
from smartvector_bench.systems.smartvector.consolidation import ConsolidationAgent, ConsolidationParams, edges_to_ragged
from smartvector_bench.systems.smartvector.retriever import SmartVector
from smartvector_bench.systems.smartvector.scoring import columns
from smartvector_bench.systems.smartvector.store import VectorStore
from smartvector_bench.tools.perf.summary import summary_rows
from smartvector_bench.tools.perf.systems import retriever_config
from smartvector_bench.tools.perf.targets import evaluate_targets
from smartvector_bench.tools.perf.timing import rows
from smartvector_bench.tools.scale import scale_dataset
from tests.conftest import compose_config

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1.0 / 3.0, 19_723.000011574074])


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


# -- ExactColumn ---------------------------------------------------------------------------------------------------

def test_round_trip_is_bit_exact_with_signed_zero_inf_and_nan():
    values = np.tile(SPECIAL, 40)
    col = ExactColumn(values)
    assert col.coded and col._codes.dtype == np.uint8 and col.nbytes == len(values) + 8 * len(SPECIAL)
    assert same_bits(col.values(), values) and same_bits(np.asarray(col), values)
    assert same_bits(col[3:9], values[3:9]) and same_bits(col[[5, 0, 5]], values[[5, 0, 5]])
    assert isinstance(col[1], np.float64) and np.signbit(col[1]) and col[1] == 0.0
    assert same_bits(col[None, :][0], values) and col.shape == (len(values),) and len(col) == len(values)


def test_writes_add_values_recode_and_keep_the_old_ones():
    rng = np.random.default_rng(0)
    base = rng.choice([0.0, 0.15, 0.5], 1000)
    col, ref = ExactColumn(base), base.copy()
    for i, v in [(3, 0.3), (7, 0.1 + 0.2), (3, -0.0), (999, np.inf)]:
        col[i] = v
        ref[i] = v
        assert same_bits(col.values(), ref)
    col[10] += 1.0  # read, add, write back
    ref[10] += 1.0
    rows = np.array([4, 4, 8])  # repeated rows: the last write wins, as for an ndarray
    col[rows] = [1.0, 2.0, 3.0]
    ref[rows] = [1.0, 2.0, 3.0]
    col[20:25] = 0.25
    ref[20:25] = 0.25
    assert same_bits(col.values(), ref) and col.coded


def test_codes_widen_past_256_values_and_fall_back_to_float64_when_smaller():
    n = 5000
    col = ExactColumn(np.zeros(n))
    col[:300] = np.arange(300) / 7.0
    assert col._codes.dtype == np.uint16 and same_bits(col[:300], np.arange(300) / 7.0)
    assert code_dtype(256) == np.uint8 and code_dtype(257) == np.uint16 and code_dtype(65537) == np.uint32
    distinct = np.random.default_rng(1).standard_normal(n)
    col[:] = distinct  # every value distinct: codes + table would outweigh float64
    assert not col.coded and col.nbytes == 8 * n and same_bits(col.values(), distinct)
    col[0] = np.nan
    assert np.isnan(col[0]) and same_bits(col[1:], distinct[1:])


def test_operators_and_ufuncs_read_the_values_and_out_is_refused():
    v = np.tile([1.0, 2.0, np.inf], 10)
    col = ExactColumn(v)
    assert np.array_equal(col <= 2.0, v <= 2.0) and np.array_equal(3.0 - col, 3.0 - v)
    assert np.array_equal(np.maximum(col, 1.5), np.maximum(v, 1.5)) and col.tolist() == v.tolist()
    with pytest.raises(TypeError, match="out="):
        np.add(v, 1.0, out=col)


# -- the store and the search's columns on the datasets ------------------------------------------------------------

def _generated(tmp_path, name: str | None):
    cfg = compose_config([f"dataset={name}"] if name else [])["dataset"]
    write_dataset(params_from_config(cfg), tmp_path / "ds")
    return load_dataset(tmp_path / "ds").corpus


@pytest.fixture(scope="module", params=["default", "versioned_policies_large", "scale_3000"])
def corpus(request, tmp_path_factory):
    if request.param.startswith("scale_"):
        return scale_dataset(int(request.param.split("_")[1]), seed=0, n_queries=50).corpus
    return _generated(tmp_path_factory.mktemp(request.param), None if request.param == "default" else request.param)


def test_store_columns_are_the_corpus_values_bit_for_bit_and_compact(corpus):
    store = VectorStore(corpus)
    n = len(corpus)
    for name in ("authority", "created_at", "valid_from", "valid_to"):
        assert same_bits(getattr(store, name).values(), getattr(corpus, name)), name
    sizes = store.nbytes_by_column()
    assert sizes["status"] == n and sizes["superseded_by"] == 4 * n
    assert np.array_equal(store.superseded_by, corpus.superseded_by())
    assert sizes["authority"] < 2 * n and sizes["ingested_at"] < 2 * n  # few distinct values
    assert sum(sizes.values()) < 8 * n * len(sizes) / 2


def _float64_columns(sv: SmartVector) -> dict[str, np.ndarray]:
    """The search's columns as derived from the corpus's float64 arrays and float64 state (the form before
    the store was compact)."""
    c, st, p = sv.corpus, sv.store, sv.conf_params
    last = np.asarray(st.last_validated, dtype=np.float64)
    sup = c.superseded_by()
    has = sup >= 0
    return {"created": c.created_at, "valid_from": c.valid_from, "valid_to": c.valid_to,
            "decay_from": np.maximum(c.created_at, last), "base": c.authority - np.asarray(st.penalty),
            "fb_pos": p.positive_boost * np.asarray(st.positive), "fb_neg": p.negative_penalty * np.asarray(st.negative),
            "access": p.access_reinforcement * np.log1p(np.maximum(np.asarray(st.access), 0)),
            "succ_from": np.where(has, c.valid_from[np.where(has, sup, 0)], np.inf)}


def test_search_columns_equal_the_float64_derivation_after_consolidation_and_feedback(corpus):
    cons = {"detector": "reference", "all_pairs_max": None} if len(corpus) < 5000 else {"enabled": False}
    sv = SmartVector(**retriever_config("smartvector", consolidation=cons))
    sv.check_dataset(corpus)
    serve = float(np.nanmax(np.where(np.isfinite(corpus.created_at), corpus.created_at, np.nan)))
    sv.index(corpus, np.zeros((len(corpus), 384), dtype=np.float32), serve)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(corpus), 20, replace=False).tolist():
        sv.store.feedback(i, bool(i % 2), serve + 1.5)
        sv.store.record_access(i, serve + 2.25)
        sv.store.validate(i, serve + 3.125)
    cols, want = columns(sv), _float64_columns(sv)
    for name, value in want.items():
        assert same_bits(getattr(cols, name), value), name


# -- the agent's edges: int32 CSR -----------------------------------------------------------------------------------

@pytest.mark.parametrize("n_rows,top", [(0, 0), (5, 200), (300, 2**16 - 1), (40, 2**24 + 3), (3, 2**40)])
def test_packed_ragged_round_trips_every_index_width(n_rows, top):
    rng = np.random.default_rng(n_rows)
    rows = [sorted(rng.integers(0, top + 1, rng.integers(0, 4)).tolist()) + ([top] if i == 1 else [])
            for i in range(n_rows)]
    r = Ragged.from_lists(rows)
    p = PackedRagged.pack(r)
    back = p.unpack()
    assert np.array_equal(back.indptr, r.indptr) and np.array_equal(back.indices, r.indices)
    assert back.indices.dtype == np.int64 and p.n_rows == n_rows and p.nnz == len(r.indices)
    width = max(1, (top.bit_length() + 7) // 8) if n_rows > 1 else 1
    assert p.packed.shape[1] == width and p.nbytes == p.counts.nbytes + width * len(r.indices)


def test_agent_edges_merge_batches_into_one_unique_packed_csr():
    corpus = scale_dataset(600, seed=0, n_queries=10).corpus
    agent = ConsolidationAgent(corpus, ConsolidationParams())
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 600, 3000), rng.integers(0, 600, 3000)
    for lo in range(0, 3000, 700):  # batches overlap in edges, and include self-loops
        agent.add_edges(src[lo:lo + 700], dst[lo:lo + 700])
    want = edges_to_ragged(src, dst, 600)
    assert agent.edges.packed.shape == (len(want.indices), 2) and agent.edges.counts.dtype == np.uint8
    raw = agent.raw_edges()
    assert np.array_equal(raw.indptr, want.indptr) and np.array_equal(raw.indices, want.indices)
    assert raw.indices.dtype == np.int64 and agent.edge_version == 5


def test_the_t2_target_names_where_the_metadata_bytes_go():
    out = rows("memory", "smartvector", 100_000, "synthetic", "metadata_share_of_index", 0.06, "share")
    for name, b in (("agent.edges", 48.9), ("store.superseded_by", 4.0), ("store.status", 1.0),
                    ("store.created_at", 2.4)):
        out += rows("memory", "smartvector", 100_000, "synthetic", f"bytes_per_vector.{name}", b, "B")
    t2 = {t["id"]: t for t in evaluate_targets(summary_rows(out))}["T2"]
    assert t2["verdict"] == "missed" and t2["measured"] == pytest.approx(0.06)
    assert t2["detail"].endswith("largest: agent.edges 48.9 B, store.superseded_by 4.0 B, store.created_at 2.4 B")
