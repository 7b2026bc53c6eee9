"""Every tolerance of the regression gate, each with the reason for its size. Nothing else in the gate compares
two numbers loosely.

Two machines agree bit for bit only when their float kernels do: the same CPU model and instruction sets, the
same kernels picked by torch, numpy and each BLAS, the same packages (``core.results.provenance.machine``). Then every
comparison is exact (:func:`exact_host`). Otherwise a float32 result may move by rounding, and only by rounding:

* **A score** (:func:`score_bound`). Every score the harness ranks by is a float32 cosine of two unit
  MiniLM vectors (d = 384), or a weighted mean of one with terms computed in float64 from the data (weights
  sum to at most 1), or a BM25 sum of float32 terms. Another CPU moves a cosine two ways:
  the model's forward pass moves each unit vector by at most ``EMBED_ULPS`` float32 epsilons in norm, which
  moves the cosine by at most twice that (Cauchy-Schwarz: |dq.d| + |q.dd| <= |dq| + |dd|); and the dot product
  sums its d products in another order, whose rounding error is at most ``LAMBDA * sqrt(d) * u`` (u = eps / 2)
  except with probability below 2 d exp(-LAMBDA^2 / 2) (Higham & Mary 2019, probabilistic rounding error
  analysis), twice over (once per machine). Hence ``SCORE_NOISE = (2 EMBED_ULPS + LAMBDA sqrt(d)) eps`` =
  2.25e-5, relative to max(1, |score|) so that a BM25 score of 6 gets six times as much.
  Measured here (docs/operations.md): emulating other CPUs on one host (torch at AVX2 and at its scalar level,
  MKL at SSE4.2 and AVX2, OpenBLAS at SkylakeX and Sandy Bridge) moved unit vectors by at most 9 eps (1.06e-6) and cosines by at most 3.2 eps (3.9e-7); in a whole `make
  regress` so emulated, the 14,444 committed lines of main and main_large moved by at most 1.07e-6, 21x below.
* **Two hits may swap** only when their scores are within ``2 SCORE_NOISE`` (each moved by at most the bound
  towards the other); exactly equal scores in both runs must keep their order (the documented tie rule: the
  lower corpus index first), so a change of the tie rule fails on every host.
* **A system whose scores jump with its inputs** (rank fusion, trees) bounds its own run under this noise
  (``Run.bounds``, ``core/run/rounding.py``); its lines are compared within those bounds (``rankings.bounded_diff``),
  up to ``BOUNDS_SLACK`` for the bounds' own float64 rounding.
* **A stored figure recomputed** by today's code from the committed run files (``REPLAY_UNITS``): float64
  arithmetic in another summation order moves a figure by ~1e-16, which can put it on the other side of a
  rounding boundary of its stored 6 decimals: one unit of the last decimal, never more.
"""

from __future__ import annotations

import math
import re

# The noise model, shared with the systems that bound their own runs (core/run/rounding.py).
from smartvector_bench.core.run.rounding import DIM, EMBED_ULPS, EPS32, LAMBDA, SCORE_NOISE  # noqa: F401

# A run that carries its own bounds (``Run.bounds``: rank fusion, trees) computed them in another summation order
# than its scores: a value on the edge may fall outside by float64 rounding (~1e-16), never by more than this.
BOUNDS_SLACK = 1e-12

STORED_DECIMALS = 6                      # every figure of a result file is stored at 6 decimals
REPLAY_UNITS = 1                         # ... and may cross one rounding boundary on another CPU (see above)


def exact_host(committed: dict | None, fresh: dict | None) -> tuple[bool, str]:
    """Whether two provenance records come from machines whose float kernels agree bit for bit: the same machine
    fingerprint and package versions (and Python). The second item says why not."""
    a, b = committed or {}, fresh or {}
    if not a.get("machine_fingerprint"):
        return False, "the committed results record no machine fingerprint"
    if a.get("machine_fingerprint") != b.get("machine_fingerprint"):
        return False, f"machine {b.get('machine_fingerprint')} is not the publishing machine {a['machine_fingerprint']}"
    # Packages: those both records name (an uninstalled one is named, as None). A record written before a package
    # joined provenance.PACKAGES does not name it, and cannot be held to it.
    pa_, pb_ = a.get("packages") or {}, b.get("packages") or {}
    moved = sorted(p for p in set(pa_) & set(pb_) if pa_[p] != pb_[p])
    if moved:
        return False, f"same machine, other packages: {', '.join(moved)}"
    if a.get("python") != b.get("python"):
        return False, "same machine, other python"
    return True, "same machine fingerprint and packages"


def score_bound(score: float, exact: bool) -> float:
    """How far one score may move between the two runs (0 on an exact host)."""
    return 0.0 if exact else SCORE_NOISE * max(1.0, abs(float(score)))


def may_swap(committed: tuple[float, float], fresh: tuple[float, float], exact: bool) -> bool:
    """Whether two hits, scored ``committed`` in the committed run and ``fresh`` in the rerun, may change order:
    never on an exact host, nor when exactly tied in both runs (the tie rule orders them); otherwise when within
    twice the score bound in both."""
    if exact or (committed[0] == committed[1] and fresh[0] == fresh[1]):
        return False
    return all(abs(a - b) <= 2 * score_bound(max(abs(a), abs(b)), exact) for a, b in (committed, fresh))


def same_figure(got, stored, exact: bool) -> bool:
    """A recomputed figure against its stored value (both at :data:`STORED_DECIMALS`): equal on an exact host,
    else within :data:`REPLAY_UNITS` units of the last decimal. Non-numbers must be equal."""
    if isinstance(got, bool) or isinstance(stored, bool) or not all(isinstance(x, (int, float)) for x in (got, stored)):
        return type(got) is type(stored) and got == stored
    if not (math.isfinite(got) and math.isfinite(stored)):
        return got == stored or (math.isnan(got) and math.isnan(stored))
    unit = 10.0 ** -STORED_DECIMALS
    d = abs(round(float(got), STORED_DECIMALS) - round(float(stored), STORED_DECIMALS))
    return d == 0.0 if exact else d <= REPLAY_UNITS * unit * (1 + 1e-9)


# -- experiments without run files (reembed_cost, feedback_loop, lvl_eval): their result JSON, leaf by leaf ----

# Never compared: wall times, latencies and the host's load (they measure the machine, not the code: two
# identical lvl_eval runs here differ by ~30% in p95), temporary folders, and the config echo (the gate's
# rerun narrows lvl_eval to one latency repetition; the config itself is compared through its sha256).
NOT_COMPARED_KEY = re.compile(r"(^|_)s$|_ms$|latency|wall|timings|warmup|loadavg|^host$|^samples$|^plots$"
                              r"|path$|^temporary$|^config$|^provenance$")
# Float noise of a comparison made inside one run (incremental against rebuilt vectors): anything within the
# experiment's own vector_atol (1e-6) is the same vector, and the flags derived from them are compared exactly.
ABSOLUTE = {re.compile(r"\.equivalent_to_rebuild\.(max_abs_vector_diff|max_score_gap_at_differing_ranks)$"): 1e-6}
# Figures that follow from float32 rankings (a near-tied top-1 may flip on another CPU): compared on an exact
# host only; elsewhere the per-query outcomes they come from are compared instead (rankings.line_diff).
RANKING_DERIVED = {"lvl_eval": re.compile(r"^(temporal|claims\.temporal_\w+|verdicts\.temporal_\w+)(\.|$)"),
                   "feedback_loop": re.compile(r"^(series|summary|detection_quality|feedback)(\.|$)")}


def compared(path: str) -> bool:
    """Whether a result JSON leaf is compared at all (:data:`NOT_COMPARED_KEY` on any of its keys)."""
    return not any(NOT_COMPARED_KEY.search(k) for k in path.split(".") if not k.isdigit())


def same_value(path: str, got, committed) -> bool:
    """A rerun's result JSON leaf against the committed one: equal, or within its :data:`ABSOLUTE` bound."""
    for pattern, tol in ABSOLUTE.items():
        if pattern.search(path) and all(isinstance(x, (int, float)) for x in (got, committed)):
            return abs(got - committed) <= tol
    return got == committed
