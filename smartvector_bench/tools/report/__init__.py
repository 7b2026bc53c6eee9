"""``smartvector-report PATH``: one self-contained HTML page (CSS, JS and figures inline; no server, no network)
of a run folder, a sweep folder or results/, from the stored results alone. ``model.py`` reads them into a plain
page model through the typed result classes, ``page.py`` renders it with jinja2 (``assets/``), ``cli.py`` is the
command."""
