"""The dataset layout as a versioned JSON Schema (``dataset.schema.json``), read by the validator
(:mod:`smartvector_bench.core.schema.check`, ``smartvector-validate``) and by the field table of
docs/datasets.md (generated, checked by tests/test_claims_readme.py)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

SCHEMA_PATH = Path(__file__).resolve().parent / "dataset.schema.json"


@lru_cache(maxsize=1)
def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def schema_version() -> str:
    return load_schema()["x-schema-version"]


def _default(spec: dict) -> str:
    if "default" not in spec:
        return "required" if spec.get("_required") else "unknown"
    d = spec["default"]
    if d == "":
        return '`""`'
    return "null" if d is None else f"`{json.dumps(d)}`" if not isinstance(d, str) else d


def field_table() -> str:
    """The field table of docs/datasets.md ("Bring your own dataset"): every file and field, whether it is
    required, its default."""
    defs = load_schema()["$defs"]
    rows = ["| file | field | required / default | what it is |", "|---|---|---|---|"]

    def emit(file: str, definition: str, nested: str | None = None) -> None:
        node = defs[definition]
        for key, spec in node["properties"].items():
            if key == nested:
                continue
            req = "required" if key in node.get("required", ()) else _default(spec)
            rows.append(f"| `{file}` | `{key}` | {req} | {spec.get('description', '')} |")
        if nested:
            for key, spec in node["properties"][nested]["properties"].items():
                rows.append(f"| `{file}` | `{nested}.{key}` | {_default(spec)} | {spec.get('description', '')} |")

    emit("corpus.jsonl", "corpus_row", "metadata")
    emit("queries.jsonl", "query_row", "metadata")
    rows.append(f"| `qrels/{{dev,test}}.tsv` | `query-id`, `corpus-id`, `score` | at least one file | "
                f"{defs['qrels_row']['description']} |")
    for file, definition in (("labels/chunks.jsonl", "label_chunk_row"), ("labels/queries.jsonl", "label_query_row")):
        emit(file, definition)
    rows.append("| `labels/families.jsonl` | `family`, `timeline` | optional file | "
                f"{defs['label_family_row']['properties']['timeline']['description']} |")
    rows.append(f"| `manifest.json` | `schema_version`, `files`, `dataset_sha256` | optional file | "
                f"{defs['manifest']['description']} |")
    return "\n".join(rows)
