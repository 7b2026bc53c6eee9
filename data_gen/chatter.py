"""A family's messages (slack, email, meeting notes): when each is written, what it states, and its text.

The family's scenario (:mod:`data_gen.scenarios`) says how many of each kind it has: an announcement of the
latest change before the policy is revised, injected rumors (a value wrong when written), confirmations of the
value then in force (which go out of date when it changes), and notes that state no value. Source, sender,
wording (:func:`data_gen.catalog.messages.render_message`) and layout (:mod:`data_gen.layout`) are drawn the
same way for every kind: only the time and the value differ.
"""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.errors import BenchError

from .catalog.base import draw_fillers
from .catalog.messages import LEVELS, MESSAGE_MAX, PEOPLE, render_message
from .common import seeded_rng, weighted_choice as _weighted

KINDS = ("announcement", "rumor", "confirmation", "note")


def slots(plan) -> list[str]:
    """The family's messages by kind, in a fixed order (their times are drawn per message)."""
    return (["announcement"] * int(plan.announced) + ["rumor"] * plan.n_rumors
            + ["confirmation"] * plan.n_confirmations + ["note"] * plan.n_notes)


def certainty_levels(seed: int, plans) -> dict[tuple[str, str, int], str]:
    """Each message's certainty level (hedged / assertive / plain), balanced within each kind over the dataset:
    the levels are dealt in turn and shuffled, so rumors and right messages are hedged equally often, not
    only in expectation (a small profile's i.i.d. draws could differ by chance)."""
    out: dict[tuple[str, str, int], str] = {}
    for kind in KINDS:
        keys = [(pl.spec.key, kind, n) for pl in plans for n in range(slots(pl).count(kind))]
        order = seeded_rng(seed, "certainty", kind).permutation(len(keys))
        offset = int(seeded_rng(seed, "certainty offset", kind).integers(len(LEVELS)))
        for rank, i in enumerate(order):
            out[keys[int(i)]] = LEVELS[(rank + offset) % len(LEVELS)]
    return out


def add_messages(gen, fam, dates: np.ndarray, values: list[int], levels: dict | None = None) -> None:
    """Append the family's message chunks to ``fam`` (``gen`` is the :class:`data_gen.generator.Generator`;
    ``levels``: :func:`certainty_levels`, else each message draws its own)."""
    p, plan, spec, topic = gen.p, fam.plan, fam.plan.spec, fam.plan.spec.topic
    rng = seeded_rng(p.seed, "chatter", spec.key)
    rng_furn = seeded_rng(p.seed, "chatter furniture", spec.key)
    latest = dates[-1]
    unused = [int(v) for v in topic.values if v not in values]
    made: list[tuple[float, str, str]] = []  # (created, chunk id, text) for replies
    seen: dict[str, int] = {}
    for kind in slots(plan):
        nth = seen[kind] = seen.get(kind, -1) + 1
        rng_text = seeded_rng(p.seed, "chatter wording", spec.key, kind, str(nth))  # its own: rates shift no wording
        # Draw everything for every message, so the rates only decide what each message becomes.
        source = _weighted(rng, p.chatter_sources)
        person, other = (PEOPLE[int(i)] for i in rng.permutation(len(PEOPLE))[:2])
        newer = rng.random() < p.rumor_newer_prob
        frac = rng.uniform(0.05, 0.95)
        repeat_old = rng.random() < p.rumor_repeats_old_value
        old_pick, new_pick = int(rng.integers(10 ** 6)), int(rng.integers(10 ** 6))
        lead = float(rng.integers(p.announcement_lead_days[0], p.announcement_lead_days[1] + 1))
        reply = rng.random() < p.reply_rate
        reply_pick = int(rng.integers(10 ** 6))
        hour = float(rng.integers(8, 19)) / 24
        msg_fill = draw_fillers(rng)
        furniture = gen.furniture(rng_furn, "message")
        if kind == "announcement":
            created = max(0.0, latest - lead) + hour
            value, date = values[-1], latest
        elif kind == "rumor":
            if newer or len(dates) == 1:  # after the latest change took effect
                lo, hi = latest, p.horizon_days - 1
            else:  # while the previous value was in force
                lo, hi = dates[-2], latest
            created = np.floor(lo + frac * (hi - lo)) + hour
            in_force = int(np.searchsorted(dates, created, side="right")) - 1
            old = [values[i] for i in range(max(0, in_force))]  # superseded when the message is written
            pool = old if (repeat_old and old) or not unused else unused
            value, date = pool[(old_pick if pool is old else new_pick) % len(pool)], created
        else:
            created = np.floor(dates[0] + frac * (p.horizon_days - 1 - dates[0])) + hour
            k = int(np.searchsorted(dates, created, side="right")) - 1
            value = int(values[k]) if kind == "confirmation" else None
            date = dates[max(k, 0)] if kind == "confirmation" else created
        fields = {**msg_fill, "who": spec.scope.who, "topic": topic.topic, "doc": topic.title, "person": person,
                  "other": other, "date": gen.human_date(date)}
        if value is not None:
            fields["v"] = topic.render(value)
        earlier = [(cid, text) for t, cid, text in made if t < created]
        parent = earlier[reply_pick % len(earlier)] if reply and earlier else None
        core = render_message(rng_text, kind=kind, source=source, fields=fields,
                              parent=None if parent is None else parent[1], future=bool(date > created),
                              certainty=(levels or {}).get((spec.key, kind, nth)))
        if len(core) > MESSAGE_MAX:
            raise BenchError(f"family {spec.key!r}: a {kind} message renders to {len(core)} characters "
                             f"(> {MESSAGE_MAX}); data_gen.catalog.messages must keep messages to one chunk")
        text = gen.fit(core, furniture)
        ids = gen._document(fam, doc_id=gen.new_id("d"), title=f"{source.replace('_', ' ')}: {topic.topic}",
                            sections=[("message", text, value)], doc_type="message", version=1, source=source,
                            created=created, valid_from=created, valid_to=np.inf, prev_ids=[],
                            depends={"message": [parent[0]]} if parent else None)
        fam.chunks[-1].kind = "statement" if value is not None else "note"
        fam.chunks[-1].message_type = kind
        made.append((created, ids["message"], text))
