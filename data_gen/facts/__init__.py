"""``dataset=facts``: real facts whose values changed, asked as people ask them, judged on real policy histories.

A fact file per corpus (``data_gen/facts/<corpus>.yaml``, format in docs/facts.md) lists facts: where each is
stated (repository paths), a pattern matching its value as written in every version, its timeline (checked
against the history: every period's value must be what the fact's paragraphs state then) and one to three
questions written by hand. The builder walks each corpus's git history into paragraph chunks
(data_gen/git_history, markup-only edits keep their chunk), finds every paragraph that states each fact, asks
the current wordings as of the tip and the ``{date}`` wordings as of a named date inside each past period, and
judges them: relevant = the fact's paragraphs in force then that state the value in force (grade 2 in its own
document, 1 elsewhere); stale = its paragraphs that exist then and state another value.

One stage per module: ``spec`` (the fact file), ``timeline`` (statements and the history's timeline),
``queries`` (questions, dates, judgments), ``render`` (the folder), ``params`` (the config), ``check`` (the
authoring tool, ``python -m data_gen.facts``).
"""

from __future__ import annotations

from .params import FactsParams, facts_params_from_config
from .render import render_facts, write_facts
from .spec import Fact, load_fact_file

__all__ = ["Fact", "FactsParams", "facts_params_from_config", "load_fact_file", "render_facts", "write_facts"]
