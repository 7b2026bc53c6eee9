"""A rerun's ranked lists against the committed run files, and the metric misses that host float noise explains.

The embedder's float32 forward pass and FAISS's products sum in an order that depends on the CPU's kernels, so
on another CPU family a cosine can move in its last bits. Near-tied hits then swap, and a metric computed from
the ranked lists can move at its 3rd decimal although no line of code changed. The gate tells the two apart on
the evidence of the run files themselves:

* every query line of a rerun's ``run_<system>.jsonl`` is compared with the committed one (:func:`explain_query`):
  it must hold the same query, the same number of hits, scores and confidence within :data:`HOST_SCORE_TOL`
  of the committed ones, and any change of order or membership must be among hits whose committed scores lie
  within that tolerance of each other. One row per run file says so (:func:`run_file_rows`), and it fails on
  any other difference: it is a regression check on the rankings themselves, not only on the metrics;
* a metric miss of ``<experiment>.systems.<system>.*`` or ``<experiment>.calibration.<system>.*`` is then
  explained (:func:`reconcile`) only when no run file of the experiment differs beyond that noise, and the
  system's own run file does differ within it (for a paired test, McNemar's or the permutation test, any
  run file of the experiment, since the test also reads the baseline's). Every other miss stays a miss.

The committed metrics themselves are recomputed from the committed run files by the committed check, so an
explained miss leaves no number unchecked: the committed ranked lists give the committed metrics, and the
rerun reproduces those ranked lists up to ties the CPU is free to break either way."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from smartvector_bench.core.cli_errors import one_line
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import read_run_lines
from smartvector_bench.tools.gate.report import Row, invariant

# Scores are stored at 6 decimals; a float32 forward pass on another CPU's kernels moves a cosine by far less
# than 1e-6. 1e-5 leaves room for other CPUs and is orders of magnitude below a change of scoring or data.
HOST_SCORE_TOL = 1e-5
_SYSTEM_PATH = re.compile(r"^(?P<exp>[^.]+)\.(?:systems|calibration)\.(?P<system>[^.]+)\.(?P<rest>.+)$")
_PAIRED = re.compile(r"(^|\.)(mcnemar|permutation)(_p$|\.|$)")


@dataclass
class RunFileDiff:
    """One system's rerun run file against the committed one."""
    system: str
    n_queries: int = 0
    n_rescored: int = 0       # lines whose scores or confidence differ (within the tolerance or not)
    n_reordered: int = 0      # lines whose ranked ids differ
    max_gap: float = 0.0      # largest |score difference| of a hit in both lists, and of the confidence
    unexplained: list[str] = field(default_factory=list)
    error: str | None = None  # a run file that could not be read

    @property
    def explained(self) -> bool:
        return self.error is None and not self.unexplained

    @property
    def differs(self) -> bool:
        return self.n_rescored > 0 or self.n_reordered > 0 or not self.explained


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def explain_query(committed: dict, fresh: dict, tol: float = HOST_SCORE_TOL) -> str | None:
    """Why ``fresh`` (a rerun's query line) is not ``committed`` up to float noise of ``tol``, or None when it
    is. Noise may only: move a score or the confidence by at most ``tol``; swap two hits whose scores are within
    ``tol`` of each other; trade a hit for another across the list's cut-off, the two tied within ``tol`` and
    each scored within ``tol`` of its list's lowest score (for a re-ranking system such as recent_cosine, the cut-off of its candidates).
    The rules read the scores, not the positions, so they hold for a system that orders its hits by another key."""
    a_ids, b_ids = list(committed.get("ranked") or []), list(fresh.get("ranked") or [])
    if len(a_ids) != len(b_ids):
        return f"{len(b_ids)} hits, committed {len(a_ids)}"
    a_sc, b_sc = [_num(s) for s in committed.get("scores") or []], [_num(s) for s in fresh.get("scores") or []]
    if len(a_sc) != len(a_ids) or len(b_sc) != len(b_ids) or None in a_sc or None in b_sc:
        # without one score per hit there is no evidence of a tie: the lists must be identical
        same = a_ids == b_ids and committed.get("scores") == fresh.get("scores")
        return None if same else "a list without one number per hit differs"
    ca, cb = _num(committed.get("confidence")), _num(fresh.get("confidence"))
    if (ca is None) != (cb is None) or (ca is not None and abs(ca - cb) > tol):
        return f"confidence {cb}, committed {ca}"
    sa, sb = dict(zip(a_ids, a_sc)), dict(zip(b_ids, b_sc))
    if len(sa) != len(a_ids) or len(sb) != len(b_ids):
        return None if a_ids == b_ids and a_sc == b_sc else "a list holding one hit twice differs"
    for cid in sa.keys() & sb.keys():
        if abs(sa[cid] - sb[cid]) > tol:
            return f"{cid} scored {sb[cid]}, committed {sa[cid]}"
    shared_a = [c for c in a_ids if c in sb]
    pos_b = {c: i for i, c in enumerate(b_ids)}
    for i, x in enumerate(shared_a):
        for y in shared_a[i + 1:]:
            if pos_b[y] < pos_b[x] and abs(sa[x] - sa[y]) > tol:
                return f"{y} now ranks above {x}: scores {sa[y]} and {sa[x]} are not tied"
    if a_ids:
        for cid in sa.keys() - sb.keys():
            if sa[cid] - min(a_sc) > tol:
                return f"{cid} left the list at committed score {sa[cid]}, above its cut-off {min(a_sc)}"
        for cid in sb.keys() - sa.keys():
            if sb[cid] - min(b_sc) > tol:
                return f"{cid} entered the list at score {sb[cid]}, above the rerun's cut-off {min(b_sc)}"
        # and each hit that left is tied with one that entered
        left = sorted(sa[c] for c in sa.keys() - sb.keys())
        entered = sorted(sb[c] for c in sb.keys() - sa.keys())
        for x, y in zip(left, entered):
            if abs(x - y) > tol:
                return f"a hit scored {x} left the list for one scored {y}: not tied"
    return None


def _lines(path: Path) -> dict[str, dict]:
    _, lines = read_run_lines(path)
    return {str(rec.get("query_id")): rec for _, rec in lines if isinstance(rec, dict)}


def diff_run_file(system: str, committed: Path, fresh: Path, tol: float = HOST_SCORE_TOL) -> RunFileDiff:
    d = RunFileDiff(system)
    try:
        a, b = _lines(committed), _lines(fresh)
    except BenchError as exc:
        d.error = one_line(exc)
        return d
    d.n_queries = len(a)
    d.unexplained += [f"{q}: not in the rerun" for q in a.keys() - b.keys()]
    d.unexplained += [f"{q}: not in the committed file" for q in b.keys() - a.keys()]
    for q in sorted(a.keys() & b.keys()):
        ra, rb = a[q], b[q]
        if ra.get("ranked") != rb.get("ranked"):
            d.n_reordered += 1
        if ra.get("scores") != rb.get("scores") or ra.get("confidence") != rb.get("confidence"):
            d.n_rescored += 1
            pa = {c: _num(s) for c, s in zip(ra.get("ranked") or [], ra.get("scores") or [])}
            pb = {c: _num(s) for c, s in zip(rb.get("ranked") or [], rb.get("scores") or [])}
            gaps = [abs(pa[c] - pb[c]) for c in pa.keys() & pb.keys() if pa[c] is not None and pb[c] is not None]
            ca, cb = _num(ra.get("confidence")), _num(rb.get("confidence"))
            if ca is not None and cb is not None:
                gaps.append(abs(ca - cb))
            d.max_gap = max([d.max_gap, *gaps])
        why = explain_query(ra, rb, tol)
        if why:
            d.unexplained.append(f"{q}: {why}")
    return d


def diff_folders(systems: list[str], committed: Path, fresh: Path,
                 tol: float = HOST_SCORE_TOL) -> dict[str, RunFileDiff]:
    """Each system's ``run_<system>.jsonl`` of ``fresh`` against ``committed`` (both must exist)."""
    out = {}
    for s in systems:
        a, b = committed / f"run_{s}.jsonl", fresh / f"run_{s}.jsonl"
        if not a.is_file() or not b.is_file():
            out[s] = RunFileDiff(s, error=f"{(a if not a.is_file() else b)} not found")
        else:
            out[s] = diff_run_file(s, a, b, tol)
    return out


def run_file_rows(name: str, diffs: dict[str, RunFileDiff], tol: float = HOST_SCORE_TOL) -> list[Row]:
    """One row per system: its rerun ranked lists equal the committed ones up to float noise of ``tol``."""
    rows = []
    for s, d in diffs.items():
        if d.error:
            got, note = "ERROR", d.error
        elif d.unexplained:
            got, note = f"{len(d.unexplained)} differ", "e.g. " + "; ".join(d.unexplained[:3])
        else:
            got = "same" if not d.differs else "same up to ties"
            note = (f"{d.n_reordered} of {d.n_queries} lists reorder near-tied hits, {d.n_rescored} lines' "
                    f"scores move by <= {d.max_gap:.2g}") if d.differs else ""
        rows.append(invariant(f"{name} run_{s}.jsonl: ranked lists vs committed",
                              f"committed up to score noise <= {tol:g}", got, d.explained, note))
    return rows


def reconcile(rows: list[Row], diffs: dict[str, RunFileDiff], replayed: Replay,
              tol: float = HOST_SCORE_TOL) -> int:
    """Mark as passing (with a note) the missed rows that host noise explains (see the module's docstring);
    returns how many. A miss is explained only if every run file of the experiment is explained and today's
    evaluator, given the committed run files, reproduces the committed value (``replayed``)."""
    if not diffs or not all(d.explained for d in diffs.values()) or replayed.error:
        return 0
    moved = [s for s, d in diffs.items() if d.differs]
    if not moved:
        return 0
    n = 0
    for r in rows:
        m = _SYSTEM_PATH.match(r.metric)
        if r.ok or r.tolerance == "invariant" or m is None or r.metric not in replayed.matched:
            continue
        d = diffs.get(m["system"])
        own = d is not None and d.differs
        if own or (_PAIRED.search(m["rest"]) and moved):
            which = [m["system"]] if own else moved
            r.ok = True
            r.note = (f"host float noise: {r.note}; run_{', run_'.join(which)}.jsonl equal the committed up to "
                      f"near-tied hits (scores within {tol:g}), and today's evaluator gives the committed value "
                      "from the committed run files")
            n += 1
    return n


# -- replaying the committed run files through today's evaluator ----------------------------------------------

REPLAYED_ROOTS = ("systems", "calibration", "power")  # what metrics.json derives from the ranked lists alone


@dataclass
class Replay:
    """The committed run files of a main-kind experiment evaluated by today's code, against the expected values
    of :data:`REPLAYED_ROOTS`."""
    n_values: int = 0
    matched: set[str] = field(default_factory=set)   # the expected paths the replay reproduces
    misses: list[str] = field(default_factory=list)  # the others, with why
    error: str | None = None


def replay(name: str, committed: Path, dataset_dir: Path, metrics: dict[str, dict]) -> Replay:
    """Evaluate ``committed``'s run files with today's ``experiments.main.evaluate_runs``, on the dataset in
    ``dataset_dir`` (the rerun's, refused unless its sha256 is the committed one), with the committed config's
    settings, and compare every expected entry under :data:`REPLAYED_ROOTS` with ``paths.compare``. When it
    agrees, a metric that moves in a rerun moved because its ranked lists did, not because the evaluator did."""
    import json

    from experiments.main import evaluate_runs, settings
    from smartvector_bench.core.dataset import load_dataset
    from smartvector_bench.core.run import read_run_jsonl
    from smartvector_bench.tools.gate.common import read_result
    from smartvector_bench.tools.gate.paths import Missing, Outputs, compare, resolve
    out = Replay()
    try:
        doc = read_result(name, committed / "metrics.json")
        cfg = dict((doc.get("provenance") or {}).get("config") or {})
        s = settings(cfg)
        ds = load_dataset(dataset_dir)
        if ds.sha256 != doc["dataset"]["sha256"]:
            out.error = (f"{dataset_dir}: dataset sha256 {ds.sha256[:12]} is not the committed "
                         f"{doc['dataset']['sha256'][:12]}")
            return out
        runs = {}
        for system in doc["systems"]:
            meta, r = read_run_jsonl(committed / f"run_{system}.jsonl", ds.queries, ds.corpus)
            if int(meta["k"]) != s.k:
                out.error = f"run_{system}.jsonl keeps {meta['k']} hits, the run ranked {s.k}: not replayable"
                return out
            r.system = system
            runs[system] = r
        s = dataclasses.replace(s, progress=False)
        _, results, calibration, power = evaluate_runs(runs, ds.queries, ds.corpus, s)
    except (BenchError, OSError, KeyError, TypeError, ValueError) as exc:
        out.error = one_line(exc) if isinstance(exc, BenchError) else f"{type(exc).__name__}: {exc}"
        return out
    fresh = json.loads(json.dumps({"systems": results, "calibration": calibration, "power": power}, default=float))
    replayed = Outputs(name, committed, doc=fresh)
    for path, spec in metrics.items():
        if path.split(".", 2)[1] not in REPLAYED_ROOTS:
            continue
        out.n_values += 1
        try:
            ok, why = compare(spec, resolve(replayed, path), path)
        except Missing as exc:
            ok, why = False, str(exc)
        if ok:
            out.matched.add(path)
        else:
            out.misses.append(f"{path}: {why}")
    return out
