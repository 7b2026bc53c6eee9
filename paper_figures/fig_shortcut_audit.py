"""Shortcut audit: test top-1 of every cue rule (learned on dev, applied on test; ``experiment=shortcut_audit``),
one panel per dataset profile. Bars are the mean over dataset seeds, whiskers the min-max over seeds; the
rule's mean gain over valid_cosine is written beside it. Surface cues (which must not mark the answer) and
trust signals (source, authority: legitimate evidence) have their own colours and groups; valid_cosine, which
every rule starts from, is the dotted reference line with its min-max over seeds as a band.

Input: ``results/shortcut_audit/shortcut_audit.csv`` (one row per profile x seed x rule). Output:
``fig_shortcut_audit.png`` / ``.pdf``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

try:
    from . import common as c
except ImportError:
    import common as c

from smartvector_bench.shortcuts import SURFACE_CUES, TRUST_CUES  # the rules' order, as in the audit's table

NAME = "fig_shortcut_audit"
INPUT = Path("shortcut_audit") / "shortcut_audit.csv"
COLUMNS = ("profile", "seed", "rule", "kind", "test_top1", "n_test", "n_test_families")
BASELINE = "valid_cosine"
KINDS = ("surface", "trust")  # in this order, top to bottom; any other kind follows, sorted
KIND_COLOURS = {"surface": "#d95f02", "trust": "#1b9e77"}
KIND_LABELS = {"surface": "surface cue (must not mark the answer)", "trust": "trust signal (legitimate evidence)"}
PROFILE_ORDER = ("versioned_policies", "versioned_policies_large")


def _ordered(names, preferred) -> list[str]:
    names = set(names)
    head = [n for n in preferred if n in names]
    return head + sorted(names - set(head))


def _span(xs) -> str:
    """"574" or "574-576" (over seeds); "" if any is missing."""
    xs = list(xs)
    if not xs or any(math.isnan(x) for x in xs):
        return ""
    lo, hi = int(min(xs)), int(max(xs))
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def load(path: Path) -> tuple[list[str], dict, dict, dict]:
    """(profiles, {(profile, rule): [test top-1 per seed]}, {rule: kind}, {profile: "n test queries in f
    families" or ""})."""
    t = c.load_csv(path, COLUMNS)
    values: dict = {}
    kinds: dict = {}
    counts: dict = {}
    seen: set = set()
    for r in t.rows:
        for col in ("profile", "seed", "rule", "kind"):
            if not r[col]:
                raise c.FigureInputError(f"{path}:{r['_line']}: column {col}: missing value")
        key = (r["profile"], r["seed"], r["rule"])
        if key in seen:
            raise c.FigureInputError(f"{path}:{r['_line']}: duplicate row for profile {key[0]}, seed {key[1]}, "
                                     f"rule {key[2]}")
        seen.add(key)
        if kinds.setdefault(r["rule"], r["kind"]) != r["kind"]:
            raise c.FigureInputError(f"{path}:{r['_line']}: column kind: rule {r['rule']} is {kinds[r['rule']]!r} "
                                     f"in an earlier row, {r['kind']!r} here")
        c.group(values, (r["profile"], r["rule"]), t.num(r, "test_top1"))
        c.group(counts, r["profile"], (t.num(r, "n_test", allow_none=True),
                                       t.num(r, "n_test_families", allow_none=True)))
    profiles = _ordered({p for p, _ in values}, PROFILE_ORDER)
    n = {}
    for p in profiles:
        q, f = _span(x for x, _ in counts[p]), _span(y for _, y in counts[p])
        n[p] = f"{q} test queries in {f} families" if q and f else (f"{q} test queries" if q else "")
    return profiles, values, kinds, n


def rule_order(kinds: dict) -> list[str]:
    """Surface cues then trust signals (each in the audit's own order, unknown rules sorted), then other kinds."""
    preferred = {"surface": SURFACE_CUES, "trust": TRUST_CUES}
    out = []
    for kind in _ordered({k for r, k in kinds.items() if r != BASELINE}, KINDS):
        out += _ordered([r for r, k in kinds.items() if k == kind and r != BASELINE], preferred.get(kind, ()))
    return out


@c.styled
def make(results_dir: Path, out_dir: Path) -> c.Outcome:
    """Test top-1 of every shortcut-audit rule per profile, min-max over seeds, valid_cosine as reference."""
    path = Path(results_dir) / INPUT
    if (skipped := c.missing_input(NAME, path)) is not None:
        return skipped
    profiles, values, kinds, counts = load(path)
    rules = rule_order(kinds)
    if not profiles or not rules:
        return c.skip(NAME, f"no cue rules in {path}")
    extra = iter(c.EXTRA_COLOURS * 4)
    kind_col = {k: KIND_COLOURS.get(k) or next(extra) for k in dict.fromkeys(kinds[r] for r in rules)}
    fig = c.new_figure(max(5.2, 4.0 * len(profiles) + 1.4), 0.3 * len(rules) + 1.8)
    axes = fig.subplots(1, len(profiles), sharey=True, sharex=True, squeeze=False)[0]
    ys = list(range(len(rules)))[::-1]  # first rule at the top
    seeds_used = set()
    top = max([max(v) for v in values.values()] + [0.0])
    for ax, p in zip(axes, profiles):
        base = values.get((p, BASELINE))
        base_mean = c.mean_sd(base)[0] if base else math.nan
        if base:
            ax.axvspan(min(base), max(base), color=c.PALETTE[BASELINE], alpha=0.15, lw=0, zorder=0)
            ax.axvline(base_mean, color=c.PALETTE[BASELINE], ls=":", lw=1.6, zorder=3.5,
                       label=f"{BASELINE} (every rule's start): mean, band min-max over seeds")
        for y, rule in zip(ys, rules):
            v = values.get((p, rule))
            if not v:
                ax.text(0.01, y, "not run", va="center", ha="left", fontsize=6, color="#555555")
                continue
            seeds_used.add(len(v))
            m, lo, hi = c.mean_sd(v)[0], min(v), max(v)
            ax.barh([y], [m], height=0.65, color=kind_col[kinds[rule]], alpha=0.85, zorder=2)
            ax.errorbar([m], [y], xerr=[[m - lo], [hi - m]], fmt="none", ecolor="black", elinewidth=0.9,
                        capsize=2.5, zorder=3)
            gain = "" if math.isnan(base_mean) else f" ({100 * (m - base_mean):+.1f})"
            ax.annotate(f"{100 * m:.1f}%{gain}", (hi, y), xytext=(3, 0), textcoords="offset points", va="center",
                        ha="left", fontsize=6.5, zorder=4)
        for i in range(len(rules) - 1):  # a thin rule between the groups of different kinds
            if kinds[rules[i]] != kinds[rules[i + 1]]:
                ax.axhline((ys[i] + ys[i + 1]) / 2, color="#999999", lw=0.6, ls="-", zorder=1)
        ax.set_xlim(0, min(1.05, top * 1.3 + 0.05))
        c.percent_axis(ax.xaxis)
        ax.grid(axis="y", visible=False)
        ax.set_title(p + (f"\n{counts[p]}" if counts[p] else ""))
        ax.set_xlabel("test top-1 accuracy")
    axes[0].set_yticks(ys, rules)
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=kind_col[k], alpha=0.85, label=KIND_LABELS.get(k, k)) for k in kind_col]
    h, lab = axes[0].get_legend_handles_labels()
    fig.legend(handles + h, [x.get_label() for x in handles] + lab, loc="outside lower center", frameon=False,
               ncols=min(3, len(handles) + len(h)))
    k = sorted(seeds_used)
    seeds = f"{k[0]} seed{'s' if k[0] != 1 else ''}" if len(k) == 1 else f"{k[0]}-{k[-1]} seeds"
    fig.suptitle(f"Shortcut audit: cue rules learned on dev, applied on test (bars: mean over {seeds}; whiskers: "
                 f"min-max over seeds;\nin brackets: mean gain over {BASELINE} in points)")
    return c.save(fig, out_dir, NAME)


if __name__ == "__main__":
    sys.exit(c.cli(make))
