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

import pandas as pd

try:
    from . import common as c
except ImportError:
    import common as c

from experiments.shortcut_audit_rules import SURFACE_CUES, TRUST_CUES  # the rules' order, as in the audit's table

NAME = "fig_shortcut_audit"
INPUT = Path("shortcut_audit") / "shortcut_audit.csv"
COLUMNS = ("profile", "seed", "rule", "kind", "test_top1", "n_test", "n_test_families")
BASELINE = "valid_cosine"
KINDS = ("surface", "metadata", "trust")  # in this order, top to bottom; any other kind follows, sorted
KIND_COLOURS = {"surface": "#d95f02", "metadata": "#7570b3", "trust": "#1b9e77"}
KIND_LABELS = {"surface": "surface cue (must not mark the answer)",
               "metadata": "time or source cue (reported; must not be a shortcut either)",
               "trust": "trust signal (legitimate evidence)"}
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


def load(path: Path) -> tuple[list[str], pd.DataFrame, dict, dict]:
    """(profiles, the rows: profile, rule, test top-1 (one per seed), {rule: kind}, {profile: "n test queries in
    f families" or ""})."""
    t = c.load_csv(path, COLUMNS)
    c.require(t, "profile", "seed", "rule", "kind")
    dup = t.index[t.duplicated(["profile", "seed", "rule"])]
    if len(dup):
        r = t.loc[dup[0]]
        raise c.FigureInputError(f"{path}:{dup[0]}: duplicate row for profile {r['profile']}, seed {r['seed']}, "
                                 f"rule {r['rule']}")
    first = t.groupby("rule")["kind"].transform("first")
    if (t["kind"] != first).any():
        line = t.index[t["kind"] != first][0]
        raise c.FigureInputError(f"{path}:{line}: column kind: rule {t.at[line, 'rule']} is {first[line]!r} "
                                 f"in an earlier row, {t.at[line, 'kind']!r} here")
    t = t.assign(test_top1=c.numbers(t, "test_top1"), n_test=c.numbers(t, "n_test", allow_none=True),
                 n_test_families=c.numbers(t, "n_test_families", allow_none=True))
    kinds = dict(zip(t["rule"], first))
    profiles = _ordered(set(t["profile"]), PROFILE_ORDER)
    n = {}
    for p, g in t.groupby("profile"):
        q, f = _span(g["n_test"]), _span(g["n_test_families"])
        n[p] = f"{q} test queries in {f} families" if q and f else (f"{q} test queries" if q else "")
    return profiles, t[["profile", "rule", "test_top1"]], kinds, n


def rule_order(kinds: dict) -> list[str]:
    """Surface cues then trust signals (each in the audit's own order, unknown rules sorted), then other kinds."""
    preferred = {"surface": SURFACE_CUES, "trust": TRUST_CUES}
    out = []
    for kind in _ordered({k for r, k in kinds.items() if r != BASELINE}, KINDS):
        out += _ordered([r for r, k in kinds.items() if k == kind and r != BASELINE], preferred.get(kind, ()))
    return out


@c.styled
@c.figure(NAME, INPUT, load)
def make(path: Path, loaded, out_dir: Path) -> c.Outcome:
    """Test top-1 of every shortcut-audit rule per profile, min-max over seeds, valid_cosine as reference."""
    profiles, rows, kinds, counts = loaded
    stats = rows.groupby(["profile", "rule"])["test_top1"].agg(["mean", "min", "max", "size"])
    rules = rule_order(kinds)
    if not profiles or not rules:
        return c.skip(NAME, f"no cue rules in {path}")
    extra = iter(c.EXTRA_COLOURS * 4)
    kind_col = {k: KIND_COLOURS.get(k) or next(extra) for k in dict.fromkeys(kinds[r] for r in rules)}
    fig = c.new_figure(max(5.2, 4.0 * len(profiles) + 1.4), 0.3 * len(rules) + 1.8)
    axes = fig.subplots(1, len(profiles), sharey=True, sharex=True, squeeze=False)[0]
    ys = list(range(len(rules)))[::-1]  # first rule at the top
    seeds_used = set()
    top = max(stats["max"].max(), 0.0)
    for ax, p in zip(axes, profiles):
        base = stats.loc[(p, BASELINE)] if (p, BASELINE) in stats.index else None
        base_mean = math.nan if base is None else base["mean"]
        if base is not None:
            ax.axvspan(base["min"], base["max"], color=c.PALETTE[BASELINE], alpha=0.15, lw=0, zorder=0)
            ax.axvline(base_mean, color=c.PALETTE[BASELINE], ls=":", lw=1.6, zorder=3.5,
                       label=f"{BASELINE} (every rule's start): mean, band min-max over seeds")
        for y, rule in zip(ys, rules):
            if (p, rule) not in stats.index:
                ax.text(0.01, y, "not run", va="center", ha="left", fontsize=6, color="#555555")
                continue
            m, lo, hi, k = stats.loc[(p, rule)]
            seeds_used.add(int(k))
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
