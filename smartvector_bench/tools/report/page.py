"""The page model -> one HTML string: the jinja2 template with the CSS, the JS and the drill-down JSON inlined
(package data under ``assets/``), so the file opens anywhere without a server or a network."""

from __future__ import annotations

import json
from importlib import resources

import jinja2
from markupsafe import Markup

ASSETS = "assets"
TEMPLATE = "template.html.j2"


def asset(name: str) -> str:
    return resources.files(__package__).joinpath(ASSETS, name).read_text(encoding="utf-8")


def embedded_json(data: dict) -> str:
    """Compact JSON safe inside <script>: every "<" as \\u003c, so no "</script>" or "<!--" can end it early."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c")


def render(model: dict, data: dict) -> str:
    env = jinja2.Environment(loader=jinja2.FunctionLoader(asset), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template(TEMPLATE).render(
        **model, css=Markup(asset("report.css")), js=Markup(asset("report.js")),
        data_json=Markup(embedded_json(data)))
