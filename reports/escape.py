"""What every drawing and the page do with a value before Jinja2 escapes it: a string of
the user's (a trace id, key, value, sender id, exception name, folder) shows its control
and bidirectional-formatting characters as `\\u202e` (`traces.text.visible`), so that no
U+202E turns the rest of a line around; our own markup (`Markup`) is left alone."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from traces.text import visible


def finalize(value: Any) -> Any:
    """Jinja2's `finalize`: applied to every `{{ ... }}` before autoescaping."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def visible_data(value: Any) -> Any:
    """`value` (JSON data the page's script shows as text) with every string visible."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible_data(k): visible_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [visible_data(item) for item in value]
    return value
