"""The cost of batch-independent embeddings: the old padded batch call against one text per forward pass.

    python -m smartvector_bench.tools.perf.embedding --out results/perf/embedding.json [--repeats 5] [--n-texts N]

Embeds the default dataset's texts (corpus chunks then queries of ``conf/dataset/versioned_policies.yaml``,
generated in a temporary folder) with

* ``batched``: the old encoder, ``SentenceTransformer.encode(texts, batch_size=64)`` (length-sorted, padded
  batches; a vector then depends on its batch-mates), and
* ``per_text``: :meth:`smartvector_bench.core.embedding.MiniLMEmbedder.encode` (one text per forward pass, one math
  thread per pass, passes side by side in worker threads),

alternately, ``--repeats`` times each after one untimed warm-up, odd repetitions in reversed text order. Writes
(atomically) the wall seconds of every repetition with their median, min, max and quartiles, texts/s, the
ratio per_text / batched of the medians, the max abs difference between the two methods' vectors, whether each
method is bit-identical across the two orders, the thread settings, the load average and provenance.
This is a measurement, not a test: nothing is asserted about the times.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from data_gen.params import params_from_config
from data_gen.writer import write_dataset
from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import MiniLMEmbedder, _normalise
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.provenance import provenance

BATCH_SIZE = 64  # the old encoder's batch size (conf/embedder/minilm.yaml before per-text encoding)
DATASET = "versioned_policies"


def dataset_texts() -> tuple[list[str], dict]:
    """Corpus texts then query texts of the default dataset, generated in a temporary folder."""
    cfg = OmegaConf.to_container(OmegaConf.load(Path(CONF_DIR) / "dataset" / f"{DATASET}.yaml"), resolve=True)
    cfg.pop("defaults", None)
    with tempfile.TemporaryDirectory(prefix="svb-emb-bench-") as tmp:
        write_dataset(params_from_config(cfg), Path(tmp) / "ds")
        ds = load_dataset(Path(tmp) / "ds")
        corpus, queries = list(ds.corpus.texts), list(ds.queries.texts)
    return corpus + queries, {"name": DATASET, "seed": cfg.get("seed"), "n_corpus": len(corpus),
                              "n_queries": len(queries)}


def _stats(seconds: list[float], n_texts: int) -> dict:
    s = np.asarray(seconds, dtype=float)
    median = float(np.median(s))
    return {"seconds": [round(float(x), 4) for x in s], "median_s": round(median, 4), "min_s": round(float(s.min()), 4),
            "max_s": round(float(s.max()), 4), "q25_s": round(float(np.quantile(s, 0.25)), 4),
            "q75_s": round(float(np.quantile(s, 0.75)), 4), "texts_per_s": round(n_texts / median, 1)}


def measure(texts: list[str], repeats: int, embedder) -> dict:
    """Time both methods on ``texts`` (alternating, odd repetitions reversed) and compare their vectors."""
    import torch  # heavy: loaded only when a measurement runs, as core.embedding does

    model = embedder._model

    def batched(xs: list[str]) -> np.ndarray:  # exactly the old MiniLMEmbedder.encode
        out = model.encode(xs, batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True,
                           show_progress_bar=False)
        return _normalise(np.asarray(out, dtype=np.float32))

    methods = {"batched": batched, "per_text": embedder.encode}
    for fn in methods.values():  # warm-up: first-call allocations, lazy imports
        fn(texts[:8])
    seconds: dict[str, list[float]] = {m: [] for m in methods}
    vectors: dict[str, list[np.ndarray]] = {m: [] for m in methods}
    for rep in range(repeats):
        order = texts if rep % 2 == 0 else texts[::-1]
        for name, fn in methods.items():
            t = time.perf_counter()
            v = fn(order)
            seconds[name].append(time.perf_counter() - t)
            vectors[name].append(v if rep % 2 == 0 else v[::-1])
    if repeats == 1:  # still compare two orders, untimed
        for name, fn in methods.items():
            vectors[name].append(fn(texts[::-1])[::-1])
    n = len(texts)
    b, p = vectors["batched"][0], vectors["per_text"][0]
    diff = np.abs(b - p)
    threads = torch.get_num_threads()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return {
        "n_texts": n,
        "repeats": repeats,
        "batched": {"method": f"SentenceTransformer.encode(texts, batch_size={BATCH_SIZE}, "
                              "normalize_embeddings=True), torch default threads", **_stats(seconds["batched"], n)},
        "per_text": {"method": "MiniLMEmbedder.encode: one text per forward pass, 1 math thread per pass, "
                               f"{max(1, min(threads, cores, n))} worker threads",
                     **_stats(seconds["per_text"], n)},
        "ratio_per_text_to_batched": round(float(np.median(seconds["per_text"]) / np.median(seconds["batched"])), 3),
        "max_abs_diff_batched_vs_per_text": float(diff.max()),
        "texts_differing_batched_vs_per_text": int((diff > 0).any(axis=1).sum()),
        "per_text_bit_identical_across_orders": all(np.array_equal(p, v) for v in vectors["per_text"]),
        "batched_bit_identical_across_orders": all(np.array_equal(b, v) for v in vectors["batched"]),
        "threads": {"torch_num_threads": threads, "cores": cores,
                    "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
        "model_id": embedder.model_id,
        "dim": embedder.dim,
    }


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be an integer > 0") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value}: must be an integer > 0")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m smartvector_bench.tools.perf.embedding",
        description="Time the old batched MiniLM call (batch_size 64) against one text per forward pass on the "
                    "default dataset's texts, and check which of the two gives order-independent vectors.")
    p.add_argument("--out", required=True, type=Path, help="result JSON to write (atomically), e.g. "
                                                           "results/perf/embedding.json")
    p.add_argument("--repeats", type=_positive, default=5,
                   help="timed repetitions of each method, alternating, odd ones in reversed order (default 5)")
    p.add_argument("--n-texts", type=_positive, default=None,
                   help="embed only the first N texts (corpus then queries; default: all of them)")
    return p


def run(out: Path, repeats: int = 5, n_texts: int | None = None, embedder=None) -> dict:
    """Measure and write ``out``; ``embedder``: a loaded MiniLMEmbedder (default: load one)."""
    texts, dataset = dataset_texts()
    if n_texts is not None:
        if n_texts > len(texts):
            raise BenchError(f"--n-texts={n_texts}: the dataset has {len(texts)} texts; allowed: 1..{len(texts)}")
        texts = texts[:n_texts]
    if embedder is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        embedder = MiniLMEmbedder()
    load_start = list(os.getloadavg())
    t = time.perf_counter()
    result = measure(texts, repeats, embedder)
    result["wall_s"] = round(time.perf_counter() - t, 2)
    result["load_average_1_5_15"] = {"start": load_start, "end": list(os.getloadavg())}
    result["dataset"] = dataset
    config = {"bench": "embedding", "repeats": repeats, "n_texts": len(texts), "batch_size_baseline": BATCH_SIZE,
              "dataset": {"name": dataset["name"], "seed": dataset["seed"], "path": None},
              "model_id": embedder.model_id}
    result["provenance"] = provenance(config)
    atomic_write_json(out, result)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        r = run(args.out, args.repeats, args.n_texts)
    except BenchError as exc:
        print(f"smartvector_bench.tools.perf.embedding: error: {exc}", file=sys.stderr)
        return 2
    print(f"{r['n_texts']} texts, {r['repeats']} repeats: batched {r['batched']['median_s']} s, per-text "
          f"{r['per_text']['median_s']} s (x{r['ratio_per_text_to_batched']}); max abs diff "
          f"{r['max_abs_diff_batched_vs_per_text']:.3g} over {r['texts_differing_batched_vs_per_text']} texts; "
          f"per-text bit-identical across orders: {r['per_text_bit_identical_across_orders']}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
