"""A tiny DOM for the report tests (html.parser from the standard library): elements with attributes, children and
text, and a CSS-like ``find(tag, **attrs)`` over descendants."""

from __future__ import annotations

from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict, parent: "Node | None" = None):
        self.tag, self.attrs, self.parent, self.children, self.parts = tag, attrs, parent, [], []

    @property
    def text(self) -> str:
        return "".join(p if isinstance(p, str) else p.text for p in self.parts)

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def iter(self):
        for c in self.children:
            yield c
            yield from c.iter()

    def find(self, tag: str | None = None, cls: str | None = None, **attrs) -> list["Node"]:
        """Descendants with ``tag``, class ``cls`` and every ``attrs`` (``data_run`` means ``data-run``; a value
        of True only asks that the attribute be present)."""
        want = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [n for n in self.iter() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes())
                and all(k in n.attrs and (v is True or n.attrs[k] == v) for k, v in want.items())]

    def one(self, *args, **kwargs) -> "Node":
        found = self.find(*args, **kwargs)
        assert len(found) == 1, f"expected one {args} {kwargs}, found {len(found)}"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#root", {})

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        self.cur.parts.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.cur = self.cur.parent

    def handle_endtag(self, tag):
        node = self.cur
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:
            self.cur = node.parent

    def handle_data(self, data):
        self.cur.parts.append(data)


def parse(html: str) -> Node:
    b = _Builder()
    b.feed(html)
    b.close()
    return b.root
