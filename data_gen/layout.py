"""Layout independent of role: every chunk's length and digit count are drawn from one distribution.

A reviewer of benchmark v2 found that the policy's value statement was the longest of its four sections in
51% of versions (25% by chance) and carried about 6 digits against 3 to 4.4 elsewhere, so "the longest,
most numeric chunk" found answers without reading them. Here every section and message, whatever its role,
draws a target length ``L`` from ``section_chars`` and a target digit count ``D`` from ``section_digits``,
and its core sentence is followed by *furniture* (the reference lines, owners and caveats real documents
carry) until it has ``D`` digits and ``L`` characters, never more than ``cap`` (one chunk). Furniture states
no value and never names the topic, so it adds no answer and restates no question.

The draws do not depend on the role: the targets and the furniture picks are drawn for every section the
same way, and only the core text differs.
"""

from __future__ import annotations

import numpy as np

from .catalog.base import draw_fillers

# Furniture of policy documents and runbooks: short reference lines carrying numbers ({ext}, {ticket},
# {section}, {headcount}, {days}, {room}, {form}: catalog FILLERS drawn afresh per sentence; {code}: 4 digits),
# and plain lines of several lengths, so that a text can be filled close to any length.
DOCUMENT_DIGITS: tuple[str, ...] = (
    "Ext. {ext}.", "Ref. {ticket}.", "See section {section}.", "Form {form}.", "Room {room}.",
    "Doc code DC-{code}.", "Reply within {days} days.", "Covers {headcount} people.", "Audit item {code}.",
    "Desk: ext. {ext}.", "Log: {ticket}.", "Annex {section}.",
)
DOCUMENT_PLAIN: tuple[str, ...] = (
    "Read with the rest of this document.",
    "Local agreements may add detail but do not override this text.",
    "The owning team answers questions in the usual channel.",
    "Terms in bold are in the glossary.",
    "Nothing here changes individual contracts.",
    "Translations are for convenience only.",
    "Feedback is welcome on the intranet page.",
    "Keep any confirmation you receive.",
    "Screenshots help the audit trail.",
    "Ask before going on if unsure.",
    "Internal use.",
    "Owner: the policy team.",
    "Applies company-wide.",
    "See the intranet for forms.",
    "Printed copies are not controlled.",
    "Do not share outside the company.",
    "Internal.",
    "Noted.",
    "See FAQ.",
    "Public.",
)
# Furniture of messages: sign-offs, references, asides.
MESSAGE_DIGITS: tuple[str, ...] = (
    "cc {ticket}.", "Ext. {ext}.", "Room {room}.", "Thread {ticket}.", "Sec. {section}.", "Form {form}.",
    "{headcount} on this list.", "Back in {days} days.", "Desk {room}.", "Call {ext}.", "Item {code}.",
    "Ref {ticket}.",
)
MESSAGE_PLAIN: tuple[str, ...] = (
    "Thanks all.",
    "Let me know if anything looks off.",
    "Cheers.",
    "Sent from my phone.",
    "Adding the team channel here.",
    "More in the weekly sync.",
    "Replying all so everyone sees it.",
    "Sorry for the long thread.",
    "Thanks.",
    "Catch you later.",
    "Have a good weekend, everyone.",
    "Out tomorrow, back Monday.",
    "Pinning this.",
    "Copying my manager.",
    "Apologies for the cross-post.",
    "Off to the next meeting.",
    "OK.",
    "FYI.",
    "Thx.",
    "Ta.",
)
POOLS = {"document": (DOCUMENT_DIGITS, DOCUMENT_PLAIN), "message": (MESSAGE_DIGITS, MESSAGE_PLAIN)}
MESSAGE_LENGTHS = 3
RISE = 12  # a section's goal is at least the version's longest section plus 0..RISE characters


def digits(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


def draw_furniture(rng: np.random.Generator, pool: str, chars: tuple[int, int],
                   n_digits: tuple[int, int]) -> dict:
    """One chunk's layout draws: target length and digits, and every furniture sentence of the pool in a random
    order (the numeric ones rendered with fresh numbers). The number of draws is fixed, so one chunk's layout
    never shifts another's."""
    with_digits, plain = POOLS[pool]
    # A document's sections are filled to the longest of them (fit_version); a message is a document of one
    # section, so it takes the longest of MESSAGE_LENGTHS draws, and messages and sections end alike.
    lengths = rng.integers(chars[0], chars[1] + 1, size=MESSAGE_LENGTHS)
    target_len = int(lengths.max() if pool == "message" else lengths[0])
    target_digits = int(rng.integers(n_digits[0], n_digits[1] + 1))
    rise = int(rng.integers(0, RISE + 1))
    d_order = rng.permutation(len(with_digits))
    p_order = rng.permutation(len(plain))
    fills = [draw_fillers(rng) for _ in with_digits]
    codes = rng.integers(1000, 10000, size=len(with_digits))
    rendered = [with_digits[int(i)].format(code=int(c), **f) for i, f, c in zip(d_order, fills, codes)]
    return {"chars": target_len, "digits": target_digits, "rise": rise, "with_digits": rendered,
            "plain": [plain[int(i)] for i in p_order]}


def add_digits(core: str, draws: dict, cap: int) -> str:
    """``core`` followed by numeric furniture, in its drawn order, while it has fewer digits than drawn."""
    text = core
    for item in draws["with_digits"]:
        if digits(text) >= draws["digits"]:
            break
        if len(text) + 1 + len(item) < cap:
            text = f"{text} {item}"
    return text


def fill(text: str, draws: dict, cap: int, floor: int = 0) -> str:
    """``text`` followed by plain furniture, each sentence in its drawn order that still fits (first fit: the
    pool has short sentences, so the text ends within a few characters of its goal). The goal is the drawn
    length, raised to ``floor`` (the longest section of the same document version) plus a drawn rise, so that
    no section's own length decides which section of a version is the longest. Nothing passes ``cap``."""
    goal = min(max(draws["chars"], floor + draws["rise"]), cap - 1)
    for item in draws["plain"]:
        if len(text) + 1 + len(item) <= goal:
            text = f"{text} {item}"
    return text


def fit_version(cores: list[str], draws: list[dict], cap: int) -> list[str]:
    """The sections of one document version (or one message): digits first, then each filled to its goal."""
    texts = [add_digits(c, d, cap) for c, d in zip(cores, draws)]
    floor = max(len(t) for t in texts)
    return [fill(t, d, cap, floor) for t, d in zip(texts, draws)]


def fit(core: str, draws: dict, cap: int) -> str:
    """A one-section document (a message): :func:`fit_version` of one."""
    return fit_version([core], [draws], cap)[0]
