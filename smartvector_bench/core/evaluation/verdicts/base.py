"""The verdict type, the formatting of figures, and multiple-testing correction shared by every rule."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


ALPHA = 0.05
MIN_SEEDS = 5
OUTCOMES = ("holds", "partly", "does not hold", "not measured")
SIGNALS = ("semantic", "temporal", "confidence", "relational")
QUERY_COLUMNS = ("job", "dataset_seed", "system", "query_id", "split", "family")


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict. ``verdict`` is one of :data:`OUTCOMES` ("not measured" with its reason in
    parentheses); ``test`` names the statistical test, ``threshold`` the threshold(s) applied to it,
    ``p_value`` the p the verdict rests on (None when the rule uses an interval or exact counts) and
    ``detail`` the rule text (which result gives which verdict)."""
    verdict: str
    figure: str
    test: str
    threshold: str
    p_value: float | None = None
    detail: str = ""

    @property
    def outcome(self) -> str:
        """The verdict without its reason: one of :data:`OUTCOMES`."""
        return self.verdict.split(" (", 1)[0]

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise ValueError(f"verdict must be one of {OUTCOMES}, got {self.verdict!r}")


class NotMeasured(Exception):
    """Raised inside the rules when a figure cannot be computed; its message is the reason."""


@dataclass(frozen=True)
class Paired:
    """Result of :func:`pooled_paired` (``reason`` set, everything else None/0, when not measurable).

    ``diff = mean_b - mean_a`` (the permutation statistic: positive = side B higher)."""
    mean_a: float | None = None
    mean_b: float | None = None
    diff: float | None = None
    p_value: float | None = None
    n_seeds: int = 0
    n_clusters: int = 0
    n: int = 0
    exact: bool = False
    reason: str | None = None


@dataclass(frozen=True)
class Boot:
    """Result of :func:`pooled_bootstrap`: the statistic of both sides on the pooled rows, ``diff = b - a``
    and its 95% paired cluster-bootstrap interval ``ci`` (``reason`` set when not measurable)."""
    value_a: float | None = None
    value_b: float | None = None
    diff: float | None = None
    ci: tuple[float, float] | None = None
    n_seeds: int = 0
    n_clusters: int = 0
    n: int = 0
    reason: str | None = None

    @property
    def lower(self) -> bool:
        """B lower than A with evidence: the interval of the difference lies below 0."""
        return self.ci is not None and bool(np.isfinite(self.ci[1])) and self.ci[1] < 0

    @property
    def higher(self) -> bool:
        """B higher than A with evidence: the interval of the difference lies above 0."""
        return self.ci is not None and bool(np.isfinite(self.ci[0])) and self.ci[0] > 0


# -- formatting ------------------------------------------------------------------------------------------------

def _pct(x, nd: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{100 * x:.{nd}f}%"


def _ci(ci) -> str:
    return "" if not ci or ci[0] is None else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def format_p(p) -> str:
    """A p-value for the table: "-" when the rule has none, "< 1e-4" below that, else 2 significant digits."""
    if p is None:
        return "-"
    return "< 1e-4" if p < 1e-4 else f"{p:.2g}"


def _f3(x) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"


def _dci(ci, scale: float = 1.0, nd: int = 3) -> str:
    if ci is None or not np.all(np.isfinite(ci)):
        return " [CI undefined]"
    return f" [{scale * ci[0]:+.{nd}f}, {scale * ci[1]:+.{nd}f}]"


def _ms(x) -> str:
    return f"{x:.0f} ms" if x >= 10 else f"{x:.2f} ms"


def not_measured(reason: str, figure: str, test: str, threshold: str, detail: str) -> Verdict:
    return Verdict(f"not measured ({reason})", figure, test, threshold, None, detail)


# -- multiple testing ------------------------------------------------------------------------------------------

def holm(pvalues) -> list[float]:
    """Holm (1979) step-down adjusted p-values (family-wise error control), in the input order."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return [float(x) for x in out]
