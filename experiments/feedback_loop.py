"""experiment=feedback_loop: accuracy over simulated time while a simulated user corrects wrong answers.

Three systems replay the same timeline (documents arriving, versions taking effect, consolidation every
``consolidation_interval_days``, query rounds every ``step_days``): ``smartvector_live`` (user feedback and
access events change its store), ``smartvector_frozen`` (the same store and consolidation, no feedback) and
``plain_cosine`` (over the chunks that exist at the round). Feedback comes from the ``feedback_split``
queries; accuracy is measured on the ``eval_split`` (held out from feedback by default) and, for reference,
on the feedback split. Each round is measured before that round's feedback is applied.

Writes ``feedback_loop.csv`` (one row per round x system x split), ``feedback_loop_runs.jsonl`` (every round's
top two hits of each system for each query, with their scores and the confidence: what the regression gate
compares across machines), ``feedback_loop.json`` (summary, series, provenance), ``lineage.jsonl`` (every vector of the live store), ``explain_final.jsonl`` (why each top hit won
in the last round) and ``table.md``; the JSON is written last.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from experiments.main import prepare_dataset
from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.atomic import atomic_write_text
from smartvector_bench.core.run.contract import check_search, retriever_call
from smartvector_bench.systems.smartvector.audit import detection_quality, explain, lineage
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.evaluator import evaluate_split, judge
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.core.evaluation.metrics import mcnemar_exact, paired_cluster_permutation_test
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results.provenance import provenance
from smartvector_bench.core.results import FEEDBACK_SERIES_FIELDS, FeedbackLoop
from smartvector_bench.systems.smartvector.replay import (
    LiveSystem, ReplayParams, advance, apply_feedback, checkpoints, queries_at,
)
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.base import LiveStore, RanksByKey
from smartvector_bench.systems.plain_cosine import PlainCosine
from smartvector_bench.systems.cosine_baseline import cosine_confidence
from smartvector_bench.core.run import Run, rank_by_score
from experiments.config import (check_dataset, check_embedder, check_evaluation_bounds, check_systems_on,
                                experiment_settings, ExperimentSettings)
from smartvector_bench.core.settings import section
from smartvector_bench.systems.smartvector.store import VectorStore
from smartvector_bench.core.timeutil import format_iso, from_days

SYSTEMS = ("smartvector_live", "smartvector_frozen", "plain_cosine")
CSV_FIELDS = FEEDBACK_SERIES_FIELDS
OUTCOMES = "feedback_loop_runs.jsonl"
OUTCOME_HITS = 2  # every figure of a round reads the top hit; the runner-up shows how near a tie it was


def outcome_lines(n_round: int, runs: dict[str, Run], q_t, corpus) -> list[dict]:
    """One line per system and query of a round: its top :data:`OUTCOME_HITS` chunk ids and scores (full
    precision) and its confidence, keyed ``<round>/<system>/<query_id>``."""
    out = []
    for name in SYSTEMS:
        r = runs[name]
        for i, qid in enumerate(q_t.ids):
            keep = [j for j in range(min(OUTCOME_HITS, r.ranked.shape[1])) if r.ranked[i, j] >= 0]
            conf = float(r.confidence[i])
            out.append({"key": f"{n_round}/{name}/{qid}", "round": n_round, "system": name, "query_id": qid,
                        "split": str(q_t.split[i]), "ranked": [corpus.ids[int(r.ranked[i, j])] for j in keep],
                        "scores": [float(r.scores[i, j]) for j in keep],
                        "confidence": conf if np.isfinite(conf) else None})
    return out


def exists_at(run: Run, created_at: np.ndarray, t: float, k: int) -> Run:
    """``run``, a ranking of the whole corpus, cut to its first ``k`` chunks that exist at ``t`` (documents keep
    arriving during the replay; plain cosine has no notion of time). Ties keep the system's order, and the
    confidence is plain_cosine's own: the top-1 cosine, here of the first chunk that exists, clipped to [0, 1]."""
    exists = (run.ranked >= 0) & (created_at[np.maximum(run.ranked, 0)] <= t)
    ranked, top = rank_by_score(np.where(exists, run.scores, -np.inf), k, candidates=run.ranked)
    return Run(run.system, ranked, top, cosine_confidence(ranked, top))


def _search(system: str, retriever, qv: np.ndarray, q_t, k: int, n_corpus: int) -> Run:
    """One round's search, guarded and checked against the output contract (core/run/contract.py); ``system`` is the
    configured name (both replays of ``retrievers.smartvector`` are ``smartvector``). A RanksByKey system
    (smartvector: dormant vectors last) may report scores that rise down its ranking."""
    with retriever_call(system, "search"):
        out = retriever.search(qv, q_t.as_of, k)
    return check_search(system, out, q_t.ids, k, n_corpus, ordered=not isinstance(retriever, RanksByKey))


def _split_mask(split_arr: np.ndarray, split: str) -> np.ndarray:
    return np.ones(len(split_arr), dtype=bool) if split == "all" else split_arr == split


@dataclass(frozen=True)
class FeedbackSettings(ExperimentSettings):
    """``experiment.*`` of experiment=feedback_loop (conf/experiment/feedback_loop.yaml)."""

    POSITIVE = ("k", "n_boot", "ece_bins")

    name: str = "feedback_loop"
    n_boot: int = 200
    ece_bins: int = 10


def validate(cfg: dict) -> tuple[FeedbackSettings, ReplayParams]:
    """``experiment.*`` (the replay included), the smartvector config, the dataset and embedder keys."""
    exp = dict(cfg.get("experiment") or {})
    params = section(ReplayParams, exp.pop("replay", None), "experiment.replay")
    for key in ("p_correct", "p_accept"):
        if getattr(params, key) > 1:
            raise BenchError(f"experiment.replay.{key}={getattr(params, key)}: must be a probability in [0, 1]")
    s = experiment_settings(FeedbackSettings, exp)
    if "smartvector" not in (cfg.get("retrievers") or {}):
        raise BenchError("retrievers.smartvector: missing; experiment=feedback_loop replays SmartVector")
    live_system(cfg)
    check_dataset(cfg)
    check_embedder(cfg)
    return s, params


def live_system(cfg: dict) -> LiveStore:
    """``retrievers.smartvector`` built, and checked to serve from a live store (base.LiveStore)."""
    r = build_retriever("smartvector", dict(cfg["retrievers"]["smartvector"]))
    if not isinstance(r, LiveStore):
        raise BenchError(f"retrievers.smartvector: {type(r).__qualname__} does not serve from a live store (the "
                         "LiveStore protocol: bind_live, live_state, query_signals); experiment=feedback_loop "
                         "replays user feedback into one")
    return r


def run(cfg: dict, out_dir: str | Path) -> dict:
    out_dir = Path(out_dir)
    s_exp, params = validate(cfg)  # before any work or write
    k, n_boot, seed = s_exp.k, s_exp.n_boot, s_exp.bootstrap_seed
    embedder = build_embedder(dict(cfg["embedder"]))
    dataset = prepare_dataset(cfg, out_dir)
    corpus, queries = dataset.corpus, dataset.queries
    if dataset.labels is None:
        raise BenchError(f"experiment=feedback_loop: {dataset.path} has no labels/ folder; the replay re-judges every "
                         f"query at each round's time from the labels")
    lacking = sorted(set(dataset.labels.query_family.tolist()) - set(dataset.labels.timelines))
    if lacking or (dataset.labels.chunk_doc_type == "").any():
        what = (f"a timeline in labels/families.jsonl for query family {lacking[0]!r}" if lacking else
                "labels/chunks.jsonl 'doc_type' on every chunk")
        raise BenchError(f"experiment=feedback_loop: the replay re-judges every query at each round's time from its "
                         f"family's timeline and each chunk's doc_type and value; {dataset.path} lacks {what}")
    with retriever_call("smartvector", "check_dataset"):
        check_systems_on({"smartvector": live_system(cfg)}, dataset)  # before any text is embedded
    now = float(queries.query_time.min())
    marks = checkpoints(float(corpus.created_at.min()), now, params)
    # k and the resampling against this dataset, before any embedding: each round evaluates every system on the
    # eval split (and the feedback split when it differs), without paired tests
    splits = len(dict.fromkeys((params.eval_split, params.feedback_split)))
    check_evaluation_bounds(s_exp, dataset, systems=len(SYSTEMS),
                            passes=sum(kind == "round" for _, kind in marks) * splits, tests=False)
    vecs = embedder.encode(corpus.texts)
    qvecs = embedder.encode(queries.texts)

    live: dict[str, LiveSystem] = {}
    for name, learns in (("smartvector_live", True), ("smartvector_frozen", False)):
        r = live_system(cfg)
        store, agent = r.bind_live(corpus, vecs)
        live[name] = LiveSystem(name, r, store, agent, learns)
    plain = PlainCosine()
    plain.index(corpus, vecs, now)
    rng = np.random.default_rng(params.user_seed)

    rows: list[dict] = []
    outcomes: list[dict] = []
    feedback_totals = {"corrections": 0, "acceptances": 0, "revivals": 0}
    last_round: dict = {}
    since = -np.inf
    n_round = 0
    for t, kind in tqdm(marks, desc="replay", disable=not s_exp.progress, leave=False):
        for system in live.values():
            advance(system, since, t, consolidate=kind == "consolidate")
        since = t
        if kind != "round":
            continue
        q_t, idx = queries_at(queries, corpus, dataset.labels, t)
        if len(idx) == 0:
            continue
        qv = qvecs[idx]
        runs = {name: _search("smartvector", s.retriever, qv, q_t, k, len(corpus)) for name, s in live.items()}
        whole = _search("plain_cosine", plain, qv, q_t, len(corpus), len(corpus))
        runs["plain_cosine"] = exists_at(whole, corpus.created_at, t, k)
        for name in SYSTEMS:
            dormant = int((live[name].store.status == Status.DORMANT).sum()) if name in live else None
            for split in dict.fromkeys((params.eval_split, params.feedback_split)):
                sub = _split_mask(q_t.split, split)
                if not sub.any():
                    continue
                m = _evaluate(runs[name], q_t, sub, n_boot, seed, s_exp.ece_bins)
                rows.append({"round": n_round, "time": format_iso(from_days(t)), "days_from_now": round(t - now, 3),
                             "system": name, "split": split, M.N_QUERIES: m[M.N_QUERIES], M.TOP1: m[M.TOP1],
                             M.lo(M.TOP1): m[M.ci(M.TOP1)][0], M.hi(M.TOP1): m[M.ci(M.TOP1)][1],
                             **{key: m[key] for key in (M.STALE_RATE, M.RUMOR_RATE, M.ECE)},
                             # feedback so far: only the live system receives it
                             "corrections": feedback_totals["corrections"] if name == "smartvector_live" else 0,
                             "acceptances": feedback_totals["acceptances"] if name == "smartvector_live" else 0,
                             "dormant_in_force": dormant})
        outcomes += outcome_lines(n_round, runs, q_t, corpus)
        last_round = {"t": t, "queries": q_t, "idx": idx, "runs": runs}
        # The user reacts to the answers of the feedback split (measured above, before this feedback).
        draws = rng.random(len(q_t))  # one draw per asked query, whatever p is
        fb = _split_mask(q_t.split, params.feedback_split)
        counts = apply_feedback(live["smartvector_live"].store, runs["smartvector_live"].top1[fb],
                                q_t.relevant.take(np.nonzero(fb)[0]), draws[fb], t, params)
        for key, v in counts.items():
            feedback_totals[key] += v
        n_round += 1

    summary = _summary(rows, last_round, params, n_boot, seed, now)
    live_store = live["smartvector_live"].store
    all_rumors = queries.rumor
    result = FeedbackLoop(
        schema_version=SCHEMA_VERSION,
        dataset={"sha256": dataset.sha256, "n_vectors": len(corpus), "n_queries": len(queries),
                 "seed": dataset.seed, "now": format_iso(from_days(now))},
        experiment={"name": "feedback_loop", "replay": dict(params.__dict__), "rounds": n_round,
                    "consolidation_runs": sum(1 for _, kind in marks if kind == "consolidate")},
        feedback=feedback_totals,
        summary=summary,
        detection_quality={name: detection_quality(s.store, s.agent, all_rumors) for name, s in live.items()},
        series=rows,
        provenance=provenance(cfg),
    ).validate(out_dir / FeedbackLoop.FILE)  # before the first file is written
    meta = {"format": "feedback_loop outcomes", "k": OUTCOME_HITS, "dataset_sha256": dataset.sha256,
            "machine_fingerprint": result.provenance["machine_fingerprint"]}
    atomic_write_text(out_dir / OUTCOMES, "\n".join(json.dumps(x, sort_keys=True, allow_nan=False)
                                                    for x in [{"_meta": meta}, *outcomes]) + "\n")
    _write_outputs(out_dir, result, rows, live_store, live["smartvector_live"], last_round, qvecs, summary)
    return result.to_dict()


def _evaluate(run: Run, q_t, mask: np.ndarray, n_boot: int, seed: int, n_bins: int) -> dict:
    """evaluate_split on a row subset (the split column decides; here we evaluate the masked rows)."""
    sub = q_t.subset(mask)
    sub_run = Run(run.system, run.ranked[mask], run.scores[mask], run.confidence[mask])
    sub.split = np.array(["all"] * len(sub), dtype=object)
    return evaluate_split(sub_run, sub, "all", n_boot=n_boot, seed=seed, n_bins=n_bins)


def _series_summary(rows: list[dict], split: str) -> dict:
    out: dict = {}
    for name in SYSTEMS:
        series = [r for r in rows if r["system"] == name and r["split"] == split]
        if not series:
            continue
        at_now = min(series, key=lambda r: abs(r["days_from_now"]))
        top1 = [r[M.TOP1] for r in series]
        after = [r[M.TOP1] for r in series if r["days_from_now"] >= 0]
        last = series[-1]
        out[name] = {"split": split, f"{M.TOP1}_first": top1[0], f"{M.TOP1}_at_now": at_now[M.TOP1],
                     f"{M.TOP1}_last": last[M.TOP1], f"{M.TOP1}_last_ci": [last[M.lo(M.TOP1)], last[M.hi(M.TOP1)]],
                     f"{M.TOP1}_mean": round(float(np.mean(top1)), 6),
                     f"{M.TOP1}_mean_after_now": round(float(np.mean(after)), 6) if after else None,
                     **{f"{key}_last": last[key] for key in (M.STALE_RATE, M.RUMOR_RATE, M.ECE)},
                     "n_rounds": len(series)}
    return out


def _p6(p: float) -> float:
    """A p-value to 6 significant digits (rounding to 6 decimals would turn p < 5e-7 into 0)."""
    return float(f"{float(p):.6g}")


def _summary(rows: list[dict], last_round: dict, p: ReplayParams, n_boot: int, seed: int, now: float) -> dict:
    """Per system on the evaluation split (families never given feedback), plus ``in_sample``: the same on the
    feedback split (the same questions asked again by the users who gave the feedback)."""
    out = _series_summary(rows, p.eval_split)
    if p.feedback_split != p.eval_split:
        out["in_sample"] = _series_summary(rows, p.feedback_split)
    # Paired test in the last round: does feedback change which answers are right?
    if last_round:
        q_t = last_round["queries"]
        mask = _split_mask(q_t.split, p.eval_split)
        correct = {name: judge(r, q_t)["correct"][mask] for name, r in last_round["runs"].items()}
        families = np.asarray(q_t.family, dtype=object)[mask]
        for name in ("smartvector_frozen", "plain_cosine"):
            test = mcnemar_exact(correct[name], correct["smartvector_live"])
            out.setdefault("last_round_mcnemar_live_vs", {})[name] = {
                k: (_p6(v) if k == "p_value" else round(v, 6) if isinstance(v, float) else v) for k, v in test.items()}
            # families as the unit: the queries of one family share their answers, so they are not independent
            perm = paired_cluster_permutation_test(correct[name], correct["smartvector_live"], families,
                                                   n_resamples=10000, seed=seed)
            out.setdefault("last_round_permutation_live_vs", {})[name] = {
                "p_value": _p6(perm["p_value"]), "statistic": round(float(perm["statistic"]), 6),
                "n_clusters": int(perm["n_clusters"]), "n": int(perm["n"]), "exact": bool(perm["exact"])}
    return out


def _write_outputs(out_dir: Path, result: FeedbackLoop, rows: list[dict], store: VectorStore, system: LiveSystem,
                   last_round: dict, qvecs: np.ndarray, summary: dict) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(out_dir / "feedback_loop.csv", buf.getvalue())
    lines = [json.dumps(lineage(store, i, system.agent), sort_keys=True)
             for i in np.nonzero(store.status >= 0)[0].tolist()]
    atomic_write_text(out_dir / "lineage.jsonl", "\n".join(lines) + "\n")
    if last_round:
        q_t, idx = last_round["queries"], last_round["idx"]
        exp_lines = []
        for row, qi in enumerate(idx.tolist()):
            rec = explain(system.retriever, qvecs[qi], float(q_t.as_of[row]), asked_at=last_round["t"])
            rec.update({"query_id": q_t.ids[row], "split": str(q_t.split[row]), "gold": store.corpus.ids[
                int(q_t.gold[row])]})
            exp_lines.append(json.dumps(rec, sort_keys=True))
        atomic_write_text(out_dir / "explain_final.jsonl", "\n".join(exp_lines) + "\n")
    atomic_write_text(out_dir / "table.md", _table(result.to_dict(), summary))
    result.save(out_dir / FeedbackLoop.FILE)


def _p(p: float) -> str:
    return "< 1e-6" if p < 1e-6 else f"{p:.3g}"


def _table(result: dict, summary: dict) -> str:
    rp = result["experiment"]["replay"]
    lines = [
        "# Feedback loop: top-1 accuracy over simulated time",
        "",
        f"{result['experiment']['rounds']} query rounds every {rp['step_days']:g} days from "
        f"{rp['start_days_before_now']:g} days before to {rp['end_days_after_now']:g} days after the dataset's first "
        f"query time ({result['dataset']['now']}); consolidation every {rp['consolidation_interval_days']:g} days. "
        f"Feedback from the {rp['feedback_split']} split (correct a wrong answer with p = {rp['p_correct']:g}, "
        f"accept a right one with p = {rp['p_accept']:g}); measured on the {rp['eval_split']} split.",
        "",
        "| system | first round | at now | last round [95% CI] | mean over rounds | stale (last) | rumor (last) "
        "| ECE (last) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups = [(name, s) for name, s in summary.items() if isinstance(s, dict) and "top1_first" in s]
    groups += [(f"{name} (in sample: {rp['feedback_split']} families)", s)
               for name, s in summary.get("in_sample", {}).items()]
    for name, s in groups:
        lo, hi = s["top1_last_ci"]
        lines.append(f"| {name} | {100 * s['top1_first']:.1f}% | {100 * s['top1_at_now']:.1f}% | "
                     f"{100 * s['top1_last']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] | {100 * s['top1_mean']:.1f}% | "
                     f"{100 * s['stale_rate_last']:.1f}% | {100 * s['rumor_rate_last']:.1f}% | {s['ece_last']:.3f} |")
    fb = result["feedback"]
    lines += ["", f"User feedback applied to smartvector_live: {fb['corrections']} corrections, "
              f"{fb['acceptances']} acceptances, {fb['revivals']} dormant chunks revived by a confirmation."]
    mc = summary.get("last_round_mcnemar_live_vs", {})
    if mc:
        lines.append("Last round, exact McNemar p of smartvector_live vs: " + ", ".join(
            f"{k} {_p(v['p_value'])} (live right / other wrong: {v['c']}, other right / live wrong: {v['b']})"
            for k, v in mc.items()) + ".")
    perm = summary.get("last_round_permutation_live_vs", {})
    if perm:
        lines.append("Paired cluster permutation p (families as the unit) of smartvector_live vs: " + ", ".join(
            f"{k} {_p(v['p_value'])} ({v['n_clusters']} families)" for k, v in perm.items()) + ".")
    lines += ["", "Per-round figures: feedback_loop.csv (plot top1 against days_from_now per system).", ""]
    return "\n".join(lines)
