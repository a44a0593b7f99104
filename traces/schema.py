"""JSON Schema checks of the documents wanconform writes and reads back (a checkpoint,
a results directory's examples.json): the first problem as one line.

`jsonschema` is imported only where such a document is read: start-up stays quick.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from traces.config import show


@functools.cache
def _validator(schema_file: Path) -> Any:
    import jsonschema  # type: ignore[import-untyped]

    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _path(parts: Iterable[Any]) -> str:
    return ".".join(str(part) for part in parts) or "(the document)"


def schema_problem(schema_file: Path, doc: Any) -> str | None:
    """The document's most relevant difference from the schema in `schema_file`, as
    "path: message" (a value shown as the file writes it: true, not True), or None."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(schema_file).iter_errors(doc))
    if error is None:
        return None
    message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
    if error.validator == "type":
        kinds = error.validator_value
        kinds = " or ".join(kinds) if isinstance(kinds, list) else kinds
        message = f"{show(error.instance)} is not of type {kinds}"
    return f"{_path(error.absolute_path)}: {message}"
