"""Message wording (slack, email, meeting notes), drawn independently of whether the message is right.

A message is assembled from parts, each drawn from a pool shared by every kind (rumor, confirmation,
announcement, note):

- a **certainty frame** (hedged, assertive or plain: "I heard ...", "Confirmed: ...", "FYI ...");
- the **claim**: for the value kinds a claim form ("the {topic} for {who} is {v}", "as of {date}, ..."), for
  notes a note body (on the policy, with numbers, no value and not the topic's phrase: notes do not restate
  what the questions ask); either maybe with an attribution ("per {other}");
- a **tail** with a number ("Logged under {ticket}.");
- the **form of the source**: emails have a subject and a sender (a person or a team) and may be forwarded; slack
  messages may open with the sender or an @-mention; meeting notes open in several ways; replies quote the
  parent's first words (only up to its first digit, so a quote never states another value).

Only an announcement's claim is always dated (it announces a change taking effect on ``{date}``); rumors and
confirmations draw dated and undated forms alike. Claim forms are tense-neutral ("as of {date}, ... is {v}"),
so tense, which the generator's timing ties to the kind, says nothing either. Every message draws every part
(:data:`N_DRAWS` uniforms in one call) whatever its kind, source, parent or timing, and uses the parts that
apply: a reviewer cannot tell rumors from confirmations by their words, and changing one scenario rate leaves
the other messages' wording as it was. A rendering stays within :data:`MESSAGE_MAX` (193) characters, so that it
stays one 200-character chunk even with the scale tool's team marker (" ~3875", up to 6 characters) appended:
optional parts (quote, forward line, tail, attribution, subject, opening, frame) are dropped in that fixed
order until it fits (a long subject is first shortened to "FYI").
"""

from __future__ import annotations

import re

import numpy as np

MESSAGE_MAX = 193  # the 200-character chunker less a scale team marker (" ~3875", up to 6 characters)
PEOPLE: tuple[str, ...] = ("Priya", "Marco", "Aisha", "Tom", "Keiko", "Lucas", "Fatima", "Daniel", "Sofia", "Ben")
KINDS: tuple[str, ...] = ("rumor", "confirmation", "announcement", "note")
VALUE_KINDS: tuple[str, ...] = ("rumor", "confirmation", "announcement")
SOURCES: tuple[str, ...] = ("slack", "email", "meeting_notes")  # any other source is rendered like slack

# -- certainty frames: {c} the clause as is, {C} capitalised, {other} a second person ---------------------------
HEDGED_FRAMES: tuple[str, ...] = (
    "I heard {c}.",
    "Pretty sure {c}.",
    "Not official, but {c}.",
    "I think {c}.",
    "Someone said {c}.",
    "{other} reckons {c}.",
    "If I remember right, {c}.",
    "{C}, I believe.",
    "Could be wrong, but {c}.",
    "Not sure, but I think {c}.",
)
ASSERTIVE_FRAMES: tuple[str, ...] = (
    "Confirmed: {c}.",
    "For the record, {c}.",
    "Definitely: {c}.",
    "To be clear, {c}.",
    "Just checked: {c}.",
    "Checked with the owners: {c}.",
    "{C}. No doubt about it.",
    "Can confirm {c}.",
)
PLAIN_FRAMES: tuple[str, ...] = (
    "{C}.",
    "FYI {c}.",
    "Quick note: {c}.",
    "Update: {c}.",
    "Heads up: {c}.",
    "For anyone asking, {c}.",
    "So {c}.",
    "Noting here: {c}.",
)
CERTAINTY: dict[str, tuple[str, ...]] = {"hedged": HEDGED_FRAMES, "assertive": ASSERTIVE_FRAMES,
                                         "plain": PLAIN_FRAMES}
LEVELS: tuple[str, ...] = ("hedged", "assertive", "plain")  # drawn with equal probability

# -- claims of the value kinds: (undated, dated); {X} is "the {topic} for {who}" --------------------------------
# Every form reads right for a past and a future date, and a dated form only adds the date to its undated twin.
CLAIM_FORMS: tuple[tuple[str, str], ...] = (
    ("{X} is {v}", "from {date}, {X} is {v}"),
    ("{X} is now {v}", "as of {date}, {X} is now {v}"),
    ("the new {topic} for {who} is {v}", "the new {topic} for {who} is {v}, effective {date}"),
    ("{X} is set at {v}", "{X} is set at {v} from {date}"),
    ("for {who}, the {topic} is {v}", "for {who}, the {topic} is {v} as of {date}"),
    ("the {topic} that applies to {who} is {v}", "the {topic} that applies to {who} from {date} is {v}"),
    ("{X} stands at {v}", "{X} stands at {v}, starting {date}"),
    ("{X} is listed as {v}", "{X} is listed as {v} from {date}"),
    ("{X} has been updated to {v}", "{X} has been updated to {v}, effective {date}"),
)
DATED_PROB = 0.7  # rumors and confirmations; announcements always take the dated form
ATTRIBUTIONS: tuple[str, ...] = (
    ", per {other}",
    ", according to {other}",
    " ({other} mentioned it)",
    ", {other} says",
    ", as {other} told me",
    " (via {other})",
)
ATTRIBUTION_PROB = 0.35

# -- notes: on the policy, with numbers; no value, never the topic's phrase ({doc} is the policy's title) --------
NOTE_BODIES: tuple[str, ...] = (
    "the policy review for {who} moved to {date}, room {room}",
    "ticket {ticket} tracks the handbook translation for {who}, due in {days} working days",
    "the handbook page for {who} is now section {section}; old links break after {date}",
    "the owners are collecting feedback on the {doc} with form {form} until {date}",
    "training on the {doc} for {who} is on {date} in room {room}, {headcount} seats",
    "audit prep needs the change history of the {doc} by {date}, see {ticket}",
    "the slides on the {doc} from the {date} town hall are missing, and so is the room {room} recording",
    "ext. {ext} no longer takes questions from {who} on the {doc}",
    "about {headcount} of {who} still have to acknowledge the {doc} on form {form}",
    "the FAQ on the {doc} for {who} goes out in {days} working days, see {ticket}",
)

# -- a follow-up sentence with a number, any kind ----------------------------------------------------------------
TAILS: tuple[str, ...] = (
    "Ticket {ticket}.",
    "Logged under {ticket}.",
    "Questions to ext. {ext}.",
    "See section {section} of the handbook.",
    "I will update {ticket} later.",
    "Can someone double-check {ticket}?",
    "Drop-in in room {room} on Friday.",
    "Form {form} stays the same.",
    "That covers about {headcount} people.",
    "Will bring it up in room {room}.",
)
TAIL_PROB = 0.5

# -- forms of the sources ----------------------------------------------------------------------------------------
EMAIL_SUBJECTS: tuple[str, ...] = (
    "{Doc}",
    "Question about the {doc}",
    "Update for {who}",
    "Quick one re {ticket}",
    "FYI",
    "Handbook section {section}",
    "Following up",
)
SHORT_SUBJECT = "FYI"  # replaces a subject too long to fit
# The sender is a header line: the body stays the last line, where the generator's layout adds its furniture.
EMAIL_SENDERS: tuple[str, ...] = (
    "From: {person}",
    "From: {person} ({team})",
    "From: {team}",
    "From: {person}, {team}",
    "From: {person} on behalf of {team}",
)
TEAMS: tuple[str, ...] = ("People Operations", "IT Service Desk", "Finance Ops", "Workplace team", "Security team",
                          "HR Shared Services")
FORWARD_LINE = "---- Forwarded message ----"
FORWARD_PROB = 0.15
SLACK_OPENINGS: tuple[str, ...] = ("", "", "{person}: ", "@{other} ", "@here ", "[#{channel}] ")
CHANNELS: tuple[str, ...] = ("hr-questions", "ops", "general", "people-team", "it-help", "team-leads")
MEETING_OPENINGS: tuple[str, ...] = (
    "Meeting notes, room {room}:",
    "Minutes, {doc} sync:",
    "Standup notes ({person}):",
    "Action items from the weekly ops sync:",
    "Notes, room {room}, item {section}:",
    "Team meeting notes by {person}:",
)
MEETING_BULLETS: tuple[str, ...] = ("- ", "* ", "")
SPEAKER_PROB = 0.4  # meeting notes: "- {other}: ..."
QUOTE_PROB = 0.7  # a reply quotes its parent
QUOTE_MAX = 50
QUOTE_MIN_WORDS = 5

# One uniform per slot, drawn for every message: the stream does not depend on the kind, source, parent or timing.
_SLOTS = ("level", "hedged", "assertive", "plain", "claim", "dated", "attr", "attr_form", "note", "tail",
          "tail_form", "subject", "sender", "team", "forward", "quote", "slack", "channel", "meeting", "bullet",
          "speaker")
N_DRAWS = len(_SLOTS)

_DIGIT = re.compile(r"\d")
_HEADER = re.compile(r"^(subject|from|to|cc):|^-{2,}|^>")
_SPEAKER = re.compile(r"^(?:\[#[\w-]+\]\s+)?(?:@\w+:?\s+|(?:%s):\s+)?" % "|".join(PEOPLE))
_TRAILING = re.compile(r"(?:\W+|\b(?:the|a|an|for|to|of|on|in|at|from|as|is|by|and|with|room|ticket|ext|"
                       r"section|form|item|under|about|since|until|effective|starting|per|via)\b)+$", re.I)


def render_message(rng: np.random.Generator, *, kind: str, source: str, fields: dict[str, str],
                   parent: str | None, future: bool, certainty: str | None = None) -> str:
    """One message's text (at most :data:`MESSAGE_MAX` characters).

    ``kind``: rumor | confirmation | announcement (state ``fields["v"]`` once) | note (no value, no topic).
    ``source``: slack | email | meeting_notes (others render like slack). ``fields``: who, topic, doc, person,
    other, date, v (value kinds) and the catalog's number fillers. ``parent``: the text replied to, if any.
    ``future``: whether ``date`` is after the message; accepted for the record, the wording is tense-neutral.
    ``certainty``: the frame's level (one of :data:`LEVELS`), when the caller balances levels over a dataset;
    else drawn. Draws :data:`N_DRAWS` uniforms from ``rng`` whatever the arguments."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: expected one of {KINDS}")
    u = dict(zip(_SLOTS, rng.random(N_DRAWS)))
    del future  # the claim forms read the same for a past and a future date

    def pick(pool, slot):
        return pool[min(int(u[slot] * len(pool)), len(pool) - 1)]

    valued = kind in VALUE_KINDS
    if valued and "v" not in fields:
        raise ValueError(f"a {kind} message needs fields['v']")
    topic = fields["topic"]
    doc = fields["doc"] if topic.lower() not in fields["doc"].lower() else "policy"
    kw = {**fields, "doc": doc, "Doc": doc[:1].upper() + doc[1:], "X": f"the {topic} for {fields['who']}",
          "team": pick(TEAMS, "team"), "channel": pick(CHANNELS, "channel")}

    level = pick(LEVELS, "level") if certainty is None else certainty
    if level not in CERTAINTY:
        raise ValueError(f"certainty={certainty!r}: expected one of {LEVELS}")
    frame = pick(CERTAINTY[level], level)
    # "other" is named once: by the frame, else the attribution, else the meeting speaker or slack @-mention.
    frame_names_other = "{other}" in frame
    attr = ""
    if u["attr"] < ATTRIBUTION_PROB and not frame_names_other and not re.search(r"\{[cC]\}, ", frame):
        attr = pick(ATTRIBUTIONS, "attr_form").format(**kw)
    if valued:
        undated, dated = pick(CLAIM_FORMS, "claim")
        claim = (dated if kind == "announcement" or u["dated"] < DATED_PROB else undated).format(**kw)
    else:
        claim = pick(NOTE_BODIES, "note").format(**kw)
    tail_form = pick(TAILS, "tail_form")
    tail = tail_form.format(**kw)
    # A tail repeating a number of the claim ("see REQ-1 ... Ticket REQ-1.") is left out.
    use_tail = u["tail"] < TAIL_PROB and not any(kw[name] in claim for name in re.findall(r"\{(\w+)\}", tail_form))
    quote = _quote(parent, topic if kind == "note" else None) if parent and u["quote"] < QUOTE_PROB else ""
    other_taken = frame_names_other or bool(attr)

    if source == "email":
        subject = pick(EMAIL_SUBJECTS, "subject").format(**kw)
        head = pick(EMAIL_SENDERS, "sender").format(**kw)
        forward = u["forward"] < FORWARD_PROB and not parent  # a reply is not forwarded
        prefix = "Re: " if parent else "Fwd: " if forward else ""
        if parent:
            subject = _parent_subject(parent) or subject
        parts = {"subject": f"Subject: {prefix}{subject}", "short_subject": f"Subject: {prefix}{SHORT_SUBJECT}",
                 "head": head, "forward": FORWARD_LINE if forward else "", "quote": f"> {quote}" if quote else ""}
        minimal = {"head": f"From: {fields['person']}"}
        layout = ("subject", "short_subject", "head", "forward", "quote", "BODY")
    elif source == "meeting_notes":
        speaker = "" if other_taken or u["speaker"] >= SPEAKER_PROB else f"{fields['other']}: "
        parts = {"opening": pick(MEETING_OPENINGS, "meeting").format(**kw), "quote": f"> {quote}" if quote else "",
                 "bullet": pick(MEETING_BULLETS, "bullet") + speaker}
        minimal = {"opening": "", "bullet": pick(MEETING_BULLETS, "bullet")}
        layout = ("opening", "quote", "bullet+BODY")
    else:
        opening = pick(SLACK_OPENINGS, "slack")
        if "{other}" in opening and other_taken:
            opening = ""
        parts = {"quote": f"> {quote}" if quote else "", "opening": opening.format(**kw)}
        minimal = {"opening": ""}
        layout = ("quote", "opening+BODY")

    # Optional parts, dropped in this order until the message fits (the tail stays if it is the only number).
    drops = ("quote", "forward", "tail", "attr", "subject", "short_subject", "opening", "frame")
    for n_dropped in range(len(drops) + 1):
        gone = set(drops[:n_dropped])
        body_frame = "{C}." if "frame" in gone else frame
        text_claim = claim + ("" if "attr" in gone else attr)
        body = body_frame.format(c=text_claim, C=_cap(text_claim), other=fields["other"])
        if (use_tail and "tail" not in gone) or not _DIGIT.search(body):
            body = f"{body} {tail}"  # drawn, or the message's only number (a value without digits, undated)
        text = _assemble(layout, parts, minimal, gone, body)
        if len(text) <= MESSAGE_MAX and _DIGIT.search(text):
            return text
    raise ValueError(f"fields too long for a {MESSAGE_MAX}-character message: {fields!r}")


def _assemble(layout, parts: dict[str, str], minimal: dict[str, str], gone: set[str], body: str) -> str:
    """The message's lines in ``layout`` order, the body last; a dropped opening (or sender) gives way to its
    minimal form."""
    lines = []
    for slot in layout:
        name, _, rest = slot.partition("+")
        if name == "BODY":
            value = ""
        elif name in ("opening", "head", "bullet") and "opening" in gone:
            value = minimal.get(name, parts.get(name, ""))
        elif name in gone or (name == "short_subject" and "subject" not in gone):
            value = ""
        else:
            value = parts.get(name, "")
        if name == "BODY" or rest == "BODY":
            lines.append(value + body)  # prefixes end with a space ("Priya: ", "- ", "@here ")
        elif value:
            lines.append(value)
    return "\n".join(lines)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _content_lines(parent: str) -> list[str]:
    out = []
    for line in parent.splitlines():
        s = line.strip()
        if not s or _HEADER.match(s.lower()) or s.endswith(":"):
            continue
        s = re.sub(r"^[-*]\s+", "", s)
        s = _SPEAKER.sub("", s)
        out.append(s)
    return out


def _quote(parent: str, banned: str | None) -> str:
    """The parent's first words: up to its first digit, its first sentence end (and ``banned``, a phrase the
    message must not contain), truncated to :data:`QUOTE_MAX` characters; "" if fewer than
    :data:`QUOTE_MIN_WORDS` words are left."""
    lines = _content_lines(parent)
    if not lines:
        return ""
    s = lines[0]
    cut = len(s)
    m = _DIGIT.search(s)
    if m:
        cut = m.start()
    m = re.search(r"[.!?;](\s|$)", s)
    if m:
        cut = min(cut, m.start())
    if banned:
        i = s.lower().find(banned.lower())
        if i >= 0:
            cut = min(cut, i)
    truncated = cut < len(s)
    s = s[:cut]
    if len(s) > QUOTE_MAX:
        s = s[:QUOTE_MAX].rsplit(" ", 1)[0]
        truncated = True
    s = _TRAILING.sub("", s).strip()
    if len(s.split()) < QUOTE_MIN_WORDS:
        return ""
    return s + ("..." if truncated else "")


def _parent_subject(parent: str) -> str:
    """The parent email's subject without "Re:"/"Fwd:", if it has one and it carries no digit."""
    m = re.search(r"^Subject: (?:(?:Re|Fwd): )*(.+)$", parent, re.M)
    if not m or _DIGIT.search(m.group(1)):
        return ""
    return m.group(1).strip()


# -- legacy (benchmark v2) templates: no longer used by the generator. They stay until data_gen/generator.py and
# tests/test_catalog.py stop importing them; rumors and confirmations there are worded apart (issue 30).
RUMOR_TEMPLATES: tuple[str, ...] = (
    "Heads up: {person} says the {topic} for {who} is {v} now, per the ops sync on {date}.",
    "Pretty sure it's {v} for {who} these days, {person} mentioned it in standup. Anyone have {ticket} handy?",
    "FYI the {topic} for {who} went to {v}, at least that's what {person} told me after the {date} all-hands.",
    "Meeting notes, room {room}: {person} said the {topic} for {who} is {v}. Owners still to confirm.",
    "I heard the {topic} for {who} changed to {v}. Can someone confirm before I update {ticket}?",
    "My team has been working with {v} for {who} since {person} said it changed around {date}.",
    "Not official, but {person} reckons the {topic} for {who} is {v}. Call ext. {ext} if you know better.",
    "Re {ticket}: I believe it's {v} for {who} now, {person} said so on {date}.",
)
CONFIRMATION_TEMPLATES: tuple[str, ...] = (
    "Checked with the policy owners on {date}: the {topic} for {who} is {v}. Logged under {ticket}.",
    "For the record, the {topic} for {who} is {v} as of {date}, per {person} in the owning team.",
    "Answering {person}: it is {v} for {who} right now, the written policy says so. Closing {ticket}.",
    "Confirmed at the ops review in room {room} on {date}: the {topic} for {who} is {v}.",
    "Per section {section} of the handbook, the {topic} for {who} is currently {v}. Questions to ext. {ext}.",
    "Quick update from {person} after the {date} review: the {topic} for {who} is {v} at the moment.",
)
ANNOUNCEMENT_TEMPLATES: tuple[str, ...] = (
    "Announcement: from {date} the {topic} for {who} will be {v}. The policy text is being revised, {ticket}.",
    "Policy change for {who}: the {topic} becomes {v} on {date}. The handbook follows shortly, ext. {ext}.",
    "Effective {date}, the {topic} for {who} is {v}. We will publish the revised document soon, see {ticket}.",
    "Please note: starting {date}, the {topic} for {who} changes to {v}. Drop-in questions in room {room}.",
)
NOTE_TEMPLATES: tuple[str, ...] = (
    "Reminder: the policy review for {who} is on {date} in room {room}. About {headcount} people are invited.",
    "Ticket {ticket} tracks the translation of the handbook pages for {who}; {person} expects it within {days} working days.",
    "Who owns the handbook page for {who} now? {person} left the team on {date} and ext. {ext} goes to voicemail.",
    "The policy page for {who} moved to section {section} of the new handbook; old links break after {date}.",
    "{person} is collecting feedback on the handbook pages for {who} until {date} with form {form}.",
    "Training on the policy for {who}: {date}, room {room}, {headcount} seats. Sign up through {ticket}.",
    "Audit prep: {person} needs the change history of the {doc} by {date}, see {ticket} and section {section}.",
    "Does anyone have the slides on the {doc} from the {date} town hall? The room {room} recording is gone.",
)
