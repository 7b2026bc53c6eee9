"""Message templates (slack, email, meeting notes), shared by every topic.

Placeholders: ``{who}``, ``{topic}``, ``{doc}`` (the policy's title), ``{v}`` (a value), ``{person}``,
``{date}`` (announcements: the date the change takes effect; others: a date near the message), and the
number fillers of :data:`data_gen.catalog.base.FILLERS`. Rumours and confirmations are worded alike: only
when they were written, and whether the authoritative documents agree, tell them apart. Every message
contains a number; notes state no value. Rendered with the catalog's longest audience, topic and title,
every message stays at most 199 characters (one chunk). Notes never name the topic's key phrase
(``{topic}``): like the policies' other sections, they do not restate what the questions ask.
"""

from __future__ import annotations

# A wrong value, stated with the confidence of hearsay.
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

# The value in force when the message was written (it may be outdated later).
CONFIRMATION_TEMPLATES: tuple[str, ...] = (
    "Checked with the policy owners on {date}: the {topic} for {who} is {v}. Logged under {ticket}.",
    "For the record, the {topic} for {who} is {v} as of {date}, per {person} in the owning team.",
    "Answering {person}: it is {v} for {who} right now, the written policy says so. Closing {ticket}.",
    "Confirmed at the ops review in room {room} on {date}: the {topic} for {who} is {v}.",
    "Per section {section} of the handbook, the {topic} for {who} is currently {v}. Questions to ext. {ext}.",
    "Quick update from {person} after the {date} review: the {topic} for {who} is {v} at the moment.",
)

# An announcement (email) of a change that takes effect on {date}, before the policy document is revised.
ANNOUNCEMENT_TEMPLATES: tuple[str, ...] = (
    "Announcement: from {date} the {topic} for {who} will be {v}. The policy text is being revised, {ticket}.",
    "Policy change for {who}: the {topic} becomes {v} on {date}. The handbook follows shortly, ext. {ext}.",
    "Effective {date}, the {topic} for {who} is {v}. We will publish the revised document soon, see {ticket}.",
    "Please note: starting {date}, the {topic} for {who} changes to {v}. Drop-in questions in room {room}.",
)

# On the topic, with numbers, but no value.
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

PEOPLE: tuple[str, ...] = ("Priya", "Marco", "Aisha", "Tom", "Keiko", "Lucas", "Fatima", "Daniel", "Sofia", "Ben")
MESSAGE_MAX = 199
