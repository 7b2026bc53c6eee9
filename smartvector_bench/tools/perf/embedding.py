"""The cost of batch-independent embeddings: the old padded batch call, one text per forward pass, and
equal-length passes (the default), on the default dataset and on a sample of the 18F Handbook's chunks.

    python -m smartvector_bench.tools.perf.embedding --out results/perf/embedding.json [--repeats 5] [--n-texts N]
        [--handbook-texts 2000] [--handbook-repeats 3] [--handbook-repo ../shared/corpora/18f-handbook.bundle]

Embeds the default dataset's texts (corpus chunks then queries of ``conf/dataset/versioned_policies.yaml``,
generated in a temporary folder) with

* ``batched``: the old encoder, ``SentenceTransformer.encode(texts, batch_size=64)`` (length-sorted, padded
  batches; a vector then depends on its batch-mates),
* ``per_text``: ``MiniLMEmbedder.encode(texts, per_text=True)``, the specification (one text per forward pass,
  one math thread per pass, passes side by side in worker threads), and
* ``equal_length``: ``MiniLMEmbedder.encode(texts)``, the default (texts of one token length share a pass;
  see :mod:`smartvector_bench.core.embedding`), which must give the per-text vectors bit for bit,

alternately, ``--repeats`` times each after one untimed warm-up, odd repetitions in reversed text order. Then the
same under ``handbook`` on a seeded random sample of ``--handbook-texts`` corpus chunks of ``dataset=handbook``
(built from the git bundle in ~20 s; 19,432 chunks of ~90 tokens against the default's ~37: each method takes
minutes on them all, so the default is a 2,000-chunk sample and 3 repetitions; ``all`` takes every chunk, 0 skips
it; a missing bundle is recorded as skipped). A sample has fewer chunks of each length, hence smaller passes than
the whole corpus (``passes`` records their shapes). Writes (atomically) the wall seconds of every repetition with
their median, min, max and quartiles, texts/s, the process CPU seconds (steadier than wall time on shared cores),
the ratios of the medians, the max abs difference batched vs per-text, whether ``equal_length`` equals
``per_text`` bit for bit in every repetition and order, whether each method is bit-identical across the two
orders, the pass shapes, the thread settings, the load average and provenance. This is a measurement, not a
test: nothing is asserted about the times.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from data_gen.build import write_from_config
from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.dataset import load_dataset
from smartvector_bench.core.embedding import MAX_BATCH_TOKENS, MiniLMEmbedder, _normalise
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results.provenance import provenance

BATCH_SIZE = 64  # the old encoder's batch size (conf/embedder/minilm.yaml before per-text encoding)
DATASET = "versioned_policies"
HANDBOOK = "handbook"
# The bundle conf/experiment/handbook.yaml names (../shared/corpora, relative to the repository root).
HANDBOOK_REPO = Path(CONF_DIR).parent.parent / "shared" / "corpora" / "18f-handbook.bundle"
HANDBOOK_TEXTS, HANDBOOK_REPEATS, SAMPLE_SEED = 2000, 3, 0
METHODS = ("batched", "per_text", "equal_length")


def dataset_config(name: str) -> dict:
    """``conf/dataset/<name>.yaml`` merged over the files of its defaults list (as Hydra composes it)."""
    cfg = OmegaConf.load(Path(CONF_DIR) / "dataset" / f"{name}.yaml")
    bases = [d for d in cfg.pop("defaults", []) if d != "_self_"]
    return OmegaConf.to_container(OmegaConf.merge(*(dataset_config(b) for b in bases), cfg), resolve=True)


def _generate(cfg: dict) -> tuple[list[str], list[str]]:
    with tempfile.TemporaryDirectory(prefix="svb-emb-bench-") as tmp:
        write_from_config(cfg, Path(tmp) / "ds")
        ds = load_dataset(Path(tmp) / "ds")
        return list(ds.corpus.texts), list(ds.queries.texts)


def dataset_texts() -> tuple[list[str], dict]:
    """Corpus texts then query texts of the default dataset, generated in a temporary folder."""
    cfg = dataset_config(DATASET)
    corpus, queries = _generate(cfg)
    return corpus + queries, {"name": DATASET, "seed": cfg.get("seed"), "n_corpus": len(corpus),
                              "n_queries": len(queries)}


def handbook_texts(n: int | None, repo: Path = HANDBOOK_REPO) -> tuple[list[str], dict]:
    """A seeded random sample of ``n`` (None: all) corpus chunks of ``dataset=handbook``, in corpus order."""
    cfg = {**dataset_config(HANDBOOK), "repo": str(repo)}
    corpus, _ = _generate(cfg)
    keep = sorted(random.Random(SAMPLE_SEED).sample(range(len(corpus)), n)) if n and n < len(corpus) else None
    texts = [corpus[i] for i in keep] if keep is not None else corpus
    return texts, {"name": HANDBOOK, "repo": Path(repo).name, "n_corpus": len(corpus), "n_texts": len(texts),
                   "sample": {"seed": SAMPLE_SEED, "of": len(corpus)} if keep is not None else None}


def _stats(seconds: list[float], n_texts: int, cpu: list[float]) -> dict:
    s = np.asarray(seconds, dtype=float)
    median = float(np.median(s))
    return {"seconds": [round(float(x), 4) for x in s], "median_s": round(median, 4), "min_s": round(float(s.min()), 4),
            "max_s": round(float(s.max()), 4), "q25_s": round(float(np.quantile(s, 0.25)), 4),
            "q75_s": round(float(np.quantile(s, 0.75)), 4), "texts_per_s": round(n_texts / median, 1),
            # process CPU seconds (all threads): less noisy than wall time when other jobs share the cores
            "cpu_seconds": [round(float(x), 4) for x in cpu], "cpu_median_s": round(float(np.median(cpu)), 4)}


def _passes(embedder, texts: list[str]) -> dict:
    """The shapes of the default method's forward passes on ``texts``."""
    features = [embedder._tokenize([t]) for t in texts]
    jobs = embedder.passes(features)
    lengths = [int(f["input_ids"].shape[1]) for f in features]
    return {"min_batched_length": embedder.min_batched_length(), "max_batch_tokens": embedder.max_batch_tokens,
            "passes": len(jobs), "texts_alone": sum(len(j) == 1 for j in jobs),
            "tokens_mean": round(float(np.mean(lengths)), 1), "distinct_lengths": len(set(lengths))}


def measure(texts: list[str], repeats: int, embedder) -> dict:
    """Time the three methods on ``texts`` (alternating, odd repetitions reversed) and compare their vectors."""
    import torch  # heavy: loaded only when a measurement runs, as core.embedding does

    model = embedder._model

    def batched(xs: list[str]) -> np.ndarray:  # exactly the old MiniLMEmbedder.encode
        out = model.encode(xs, batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True,
                           show_progress_bar=False)
        return _normalise(np.asarray(out, dtype=np.float32))

    methods = {"batched": batched, "per_text": partial(embedder.encode, per_text=True),
               "equal_length": embedder.encode}
    for fn in methods.values():  # warm-up: first-call allocations, lazy imports, the batching probe
        fn(texts[:8])
    seconds: dict[str, list[float]] = {m: [] for m in methods}
    cpu: dict[str, list[float]] = {m: [] for m in methods}
    vectors: dict[str, list[np.ndarray]] = {m: [] for m in methods}
    for rep in range(repeats):
        order = texts if rep % 2 == 0 else texts[::-1]
        for name, fn in methods.items():
            t, c = time.perf_counter(), time.process_time()
            v = fn(order)
            seconds[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)
            vectors[name].append(v if rep % 2 == 0 else v[::-1])
    if repeats == 1:  # still compare two orders, untimed
        for name, fn in methods.items():
            vectors[name].append(fn(texts[::-1])[::-1])
    n = len(texts)
    b, p = vectors["batched"][0], vectors["per_text"][0]
    diff = np.abs(b - p)
    threads = torch.get_num_threads()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    median = {m: float(np.median(seconds[m])) for m in methods}
    workers = f"up to {max(1, min(threads, cores, n))} worker threads"
    stats = {m: _stats(seconds[m], n, cpu[m]) for m in methods}
    return {
        "n_texts": n,
        "repeats": repeats,
        "batched": {"method": f"SentenceTransformer.encode(texts, batch_size={BATCH_SIZE}, "
                              "normalize_embeddings=True), torch default threads", **stats["batched"]},
        "per_text": {"method": f"MiniLMEmbedder.encode(per_text=True): one text per forward pass, 1 math thread "
                               f"per pass, {workers}", **stats["per_text"]},
        "equal_length": {"method": "MiniLMEmbedder.encode (default): texts of one token length share a pass, 1 math "
                                   f"thread per pass, {workers}", **stats["equal_length"]},
        "ratio_per_text_to_batched": round(median["per_text"] / median["batched"], 3),
        "ratio_equal_length_to_batched": round(median["equal_length"] / median["batched"], 3),
        "speedup_equal_length_over_per_text": round(median["per_text"] / median["equal_length"], 3),
        "cpu_speedup_equal_length_over_per_text": round(
            float(np.median(cpu["per_text"]) / np.median(cpu["equal_length"])), 3),
        "equal_length_bit_identical_to_per_text": all(np.array_equal(p, v) for v in vectors["equal_length"]),
        "texts_differing_equal_length_vs_per_text": max(int((v != p).any(axis=1).sum())
                                                        for v in vectors["equal_length"]),
        "max_abs_diff_batched_vs_per_text": float(diff.max()),
        "texts_differing_batched_vs_per_text": int((diff > 0).any(axis=1).sum()),
        **{f"{m}_bit_identical_across_orders": all(np.array_equal(vectors[m][0], v) for v in vectors[m])
           for m in ("per_text", "batched", "equal_length")},
        "passes": _passes(embedder, texts),
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


def _sample_size(text: str) -> int | None:
    """``all`` (None) or an integer >= 0 (0: no handbook)."""
    if text == "all":
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: must be all or an integer >= 0 (0: skip the handbook)")
    return int(text)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m smartvector_bench.tools.perf.embedding",
        description="Time the old batched MiniLM call (batch_size 64), one text per forward pass and equal-length "
                    "passes (the default) on the default dataset's texts and on handbook chunks, and check which "
                    "give order-independent vectors and whether the default equals per-text bit for bit.")
    p.add_argument("--out", required=True, type=Path, help="result JSON to write (atomically), e.g. "
                                                           "results/perf/embedding.json")
    p.add_argument("--repeats", type=_positive, default=5,
                   help="timed repetitions of each method, alternating, odd ones in reversed order (default 5)")
    p.add_argument("--n-texts", type=_positive, default=None,
                   help="embed only the first N texts (corpus then queries; default: all of them)")
    p.add_argument("--handbook-texts", type=_sample_size, default=HANDBOOK_TEXTS,
                   help=f"handbook chunks to sample (default {HANDBOOK_TEXTS}; all: every chunk; 0: skip)")
    p.add_argument("--handbook-repeats", type=_positive, default=HANDBOOK_REPEATS,
                   help=f"timed repetitions on the handbook sample (default {HANDBOOK_REPEATS})")
    p.add_argument("--handbook-repo", type=Path, default=HANDBOOK_REPO,
                   help="the 18F Handbook git bundle or clone (default ../shared/corpora/18f-handbook.bundle)")
    return p


def run(out: Path, repeats: int = 5, n_texts: int | None = None, embedder=None,
        handbook: int | None = HANDBOOK_TEXTS, handbook_repeats: int = HANDBOOK_REPEATS,
        handbook_repo: Path = HANDBOOK_REPO) -> dict:
    """Measure and write ``out``; ``embedder``: a loaded MiniLMEmbedder (default: load one); ``handbook``: chunks
    to sample (None: all, 0: skip)."""
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
    if handbook == 0:
        result[HANDBOOK] = {"skipped": "--handbook-texts 0"}
    elif not Path(handbook_repo).exists():
        result[HANDBOOK] = {"skipped": f"no handbook bundle at {handbook_repo} (--handbook-repo)"}
    else:
        hb_texts, hb = handbook_texts(handbook, handbook_repo)
        result[HANDBOOK] = {"dataset": hb, **measure(hb_texts, handbook_repeats, embedder)}
    result["wall_s"] = round(time.perf_counter() - t, 2)
    result["load_average_1_5_15"] = {"start": load_start, "end": list(os.getloadavg())}
    result["dataset"] = dataset
    config = {"bench": "embedding", "repeats": repeats, "n_texts": len(texts), "batch_size_baseline": BATCH_SIZE,
              "max_batch_tokens": MAX_BATCH_TOKENS,
              "dataset": {"name": dataset["name"], "seed": dataset["seed"], "path": None},
              "handbook": {"texts": "all" if handbook is None else handbook, "repeats": handbook_repeats,
                           "sample_seed": SAMPLE_SEED, "repo": Path(handbook_repo).name},
              "model_id": embedder.model_id}
    result["provenance"] = provenance(config)
    atomic_write_json(out, result)
    return result


def _summary(r: dict) -> str:
    rates = ", ".join(f"{m.replace('_', '-')} {r[m]['texts_per_s']}" for m in METHODS)
    return (f"{r['n_texts']} texts, {r['repeats']} repeats, texts/s: {rates} (equal-length x"
            f"{r['speedup_equal_length_over_per_text']} per-text, CPU time "
            f"x{r['cpu_speedup_equal_length_over_per_text']}); equal-length bit-identical to per-text: "
            f"{r['equal_length_bit_identical_to_per_text']}; batched max abs diff "
            f"{r['max_abs_diff_batched_vs_per_text']:.3g} over {r['texts_differing_batched_vs_per_text']} texts")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        r = run(args.out, args.repeats, args.n_texts, handbook=args.handbook_texts,
                handbook_repeats=args.handbook_repeats, handbook_repo=args.handbook_repo)
    except BenchError as exc:
        print(f"smartvector_bench.tools.perf.embedding: error: {exc}", file=sys.stderr)
        return 2
    hb = r[HANDBOOK]
    print(f"{DATASET}: {_summary(r)}\n{HANDBOOK}: {hb.get('skipped') or _summary(hb)}\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
