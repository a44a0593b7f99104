"""The JSON Schema of a log line (docs/log.schema.json), made from the two tables the
log reader checks against: `traces.ops.FIELD_KINDS` (an operation's fields) and
`traces.observations.FIELDS` (an observation's fields). So the documented schema and the
reader cannot drift: `python -m traces.logschema docs/log.schema.json` writes it, and a
test checks that the file in the repository is what this module makes.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from traces.config import INT64_MAX, INT64_MIN
from traces.observations import FIELDS, OPTIONAL_FIELDS
from traces.ops import FIELD_KINDS

_OBSERVATION_TYPES: dict[str, Any] = {
    "integer": {"$ref": "#/$defs/int64"},
    "string": {"type": "string"},
    "array": {"type": "array"},
    "object": {"type": "object"},
    "object or null": {"type": ["object", "null"]},
}

_KIND_DEFS: dict[str, Any] = {
    "site": {
        "type": "integer",
        "minimum": 1,
        "maximum": 255,
        "description": "a site of the configuration (its dsid)",
    },
    "sender": {"type": "string", "description": "a sender id of the configuration"},
    "key": {"type": "string"},
    "name": {"type": "string", "minLength": 1},
    "positive": {"type": "integer", "minimum": 1, "maximum": INT64_MAX},
    "count?": {
        "type": "integer",
        "minimum": 0,
        "maximum": INT64_MAX,
        "description": "v2.0: a client thread or a dispatcher index (R29), 0 when absent",
    },
    "bool?": {"type": "boolean"},
    "value": {
        "type": "object",
        "additionalProperties": {"$ref": "#/$defs/scalar"},
        "description": "field -> scalar (SPEC §1)",
    },
    "entries": {
        "type": "object",
        "minProperties": 1,
        "additionalProperties": {"$ref": "#/$defs/value"},
    },
    "event_ids?": {
        "type": "array",
        "items": {"type": "string", "pattern": "^[0-9]+:[0-9]+$"},
        "description": 'event ids "origin:seq" (R3)',
    },
}


def _observation(kind: str) -> dict[str, Any]:
    fields = FIELDS[kind]
    optional = OPTIONAL_FIELDS.get(kind, {})
    properties: dict[str, Any] = {"kind": {"const": kind}}
    for name, json_type in {**fields, **optional}.items():
        properties[name] = _OBSERVATION_TYPES[json_type]
    return {
        "type": "object",
        "required": ["kind", *fields],
        "additionalProperties": False,
        "properties": properties,
    }


def _operation(name: str, fields: dict[str, str]) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "op": {"const": name},
        "observed": {"type": "array", "items": {"$ref": "#/$defs/observation"}},
        "state": {"$ref": "#/$defs/state"},
    }
    for field, kind in fields.items():
        properties[field] = {"$ref": f"#/$defs/{kind}"}
    return {
        "type": "object",
        "required": ["op", "observed", *(f for f, k in fields.items() if not k.endswith("?"))],
        "additionalProperties": False,
        "properties": properties,
    }


def log_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one log line."""
    kinds = sorted({kind for fields in FIELD_KINDS.values() for kind in fields.values()})
    defs: dict[str, Any] = {
        "int64": {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX},
        "scalar": {
            "anyOf": [
                {"$ref": "#/$defs/int64"},
                {"type": "string"},
                {"type": "boolean"},
                {"type": "null"},
            ]
        },
    }
    for kind in kinds:
        defs[kind] = _KIND_DEFS[kind]
    defs["value"] = _KIND_DEFS["value"]
    defs["observation"] = {
        "oneOf": [_observation(kind) for kind in FIELDS],
        "description": "one observation of SPEC §10 and §16.6: its kind's fields, each of "
        "its JSON type (traces/observations.py's FIELDS); compared field by field with the "
        "model's",
    }
    defs["state"] = {
        "type": "object",
        "required": ["senders", "sites", "time"],
        "additionalProperties": False,
        "properties": {
            "senders": {"type": "object"},
            "sites": {"type": "object"},
            "time": {"$ref": "#/$defs/int64"},
        },
        "description": "the observable state of SPEC §10 / §16.6 after the operation; "
        "compared whole with the model's",
    }
    defs["config_line"] = {
        "type": "object",
        "required": ["config"],
        "additionalProperties": False,
        "properties": {
            "config": {
                "type": "object",
                "required": ["sites"],
                "description": "the configuration of SPEC §2 and §16.1",
            }
        },
    }
    defs["operation_line"] = {
        "oneOf": [_operation(name, fields) for name, fields in FIELD_KINDS.items()]
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://wanconform.invalid/docs/log.schema.json",
        "title": "wanconform log line (docs/LOG.md)",
        "description": "Each line of a log is one JSON value: the first a configuration "
        "line, every other an operation line (an operation of SPEC §3 as in a trace, with "
        "what the system observed, and optionally its observable state). Made by "
        "traces/logschema.py from traces/ops.py's FIELD_KINDS and traces/observations.py's "
        "FIELDS; tests/test_validate.py checks that this file is what it makes.",
        "oneOf": [{"$ref": "#/$defs/config_line"}, {"$ref": "#/$defs/operation_line"}],
        "$defs": defs,
    }


def schema_text() -> str:
    """The schema as the file holds it."""
    return json.dumps(log_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m traces.logschema docs/log.schema.json
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write(schema_text())
