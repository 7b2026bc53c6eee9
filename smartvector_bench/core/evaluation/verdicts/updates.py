"""Claims 7-8: the re-embedding cost of a one-word edit, and the feedback loop."""

from __future__ import annotations

from smartvector_bench.core.evaluation.verdicts.base import ALPHA, Verdict, _pct, format_p, not_measured


REEMBED_RULE = ("holds: <= 1.1 chunks re-embedded per single-word edit and >= 70% fewer than a full re-embed at "
                "the paper's document size (4+ chunks), the index equal to a rebuild; partly: otherwise")


def reembed_single_word(rc: dict | None) -> Verdict:
    """Claim 7: a single-word edit re-embeds 1.0 chunk instead of 4.35 (deterministic counts)."""
    test = "exact counts over every edit of the edit set (no sampling)"
    threshold = "<= 1.1 chunks, >= 70% less at 4+ chunk documents, equivalent to a rebuild"
    if rc is None:
        return not_measured("missing reembed_cost/reembed_cost.json", "-", test, threshold, REEMBED_RULE)
    s = rc["strategies"]
    sw_full = s["full"]["by_edit_type"]["single_word"]
    sw_surg = s["surgical"]["by_edit_type"]["single_word"]
    n_edits = sw_surg.get("n_edits")
    if n_edits:
        test = f"exact counts over every edit of the edit set ({n_edits} single-word edits; no sampling)"
    full_m, surg_m = sw_full["chunks_reembedded_mean"], sw_surg["chunks_reembedded_mean"]
    big = s["surgical"].get("single_word_by_document_chunks", {}).get("4+")
    big_full = s["full"].get("single_word_by_document_chunks", {}).get("4+")
    equivalent = all(s[n]["equivalent_to_rebuild"]["equivalent"] for n in s)
    figure = f"all documents: {full_m:.2f} -> {surg_m:.2f} ({100 * (1 - surg_m / full_m):.0f}% less)"
    verdict = "partly"
    if big and big_full:
        red = 1 - big["chunks_reembedded_mean"] / big_full["chunks_reembedded_mean"]
        figure += (f"; documents of 4+ chunks: {big_full['chunks_reembedded_mean']:.2f} -> "
                   f"{big['chunks_reembedded_mean']:.2f} ({100 * red:.0f}% less)")
        verdict = "holds" if big["chunks_reembedded_mean"] <= 1.1 and red >= 0.7 and equivalent else "partly"
    figure += f"; equivalent to a rebuild: {'yes' if equivalent else 'NO'}"
    return Verdict(verdict, figure, test, threshold, None, REEMBED_RULE)


FEEDBACK_RULE = ("on families that gave no feedback: holds if higher than the frozen system in the last round "
                 "with p < 0.05; partly if higher; does not hold otherwise")


def feedback_improves(fl: dict | None) -> Verdict:
    """Claim 8: user feedback improves answers over time (feedback_loop.json, last round, held-out families).

    The JSON holds per-round aggregates and the last round's McNemar counts, no per-query outcomes, so the
    test is McNemar (queries treated as independent); a ``last_round_permutation_live_vs`` entry (a
    family-cluster permutation), if a later version writes one, is used instead."""
    threshold = "higher and p < 0.05 (holds); higher (partly)"
    test = "exact McNemar on the last round's discordant held-out queries (queries independent)"
    if fl is None:
        return not_measured("missing feedback_loop/feedback_loop.json", "-", test, threshold, FEEDBACK_RULE)
    summ = fl["summary"]
    live, frozen = summ["smartvector_live"], summ["smartvector_frozen"]
    p = summ.get("last_round_mcnemar_live_vs", {}).get("smartvector_frozen", {}).get("p_value")
    perm = summ.get("last_round_permutation_live_vs", {}).get("smartvector_frozen", {}).get("p_value")
    if perm is not None:
        test = ("paired family-cluster sign-flip permutation on the last round's held-out queries "
                f"(McNemar p {format_p(p)} beside it)")
        p = perm
    higher = live["top1_last"] > frozen["top1_last"]
    verdict = "holds" if higher and p is not None and p < ALPHA else "partly" if higher else "does not hold"
    figure = (f"held-out families: top-1 {_pct(live['top1_first'])} -> {_pct(live['top1_last'])} with feedback, "
              f"{_pct(frozen['top1_last'])} without ({'permutation' if perm is not None else 'McNemar'} p "
              f"{format_p(p)})")
    ins = summ.get("in_sample", {})
    if "smartvector_live" in ins and "smartvector_frozen" in ins:
        figure += (f"; in sample (the dev families that gave the feedback): "
                   f"{_pct(ins['smartvector_live']['top1_last'])} vs {_pct(ins['smartvector_frozen']['top1_last'])}")
    return Verdict(verdict, figure, test, threshold, p, FEEDBACK_RULE)
