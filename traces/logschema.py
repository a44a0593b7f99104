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
from traces.ops import EVENT_LOG_FIELD_KINDS, FIELD_KINDS

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


def _operation(name: str, fields: dict[str, str], events: bool = False) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "op": {"const": name},
        "observed": {"type": "array", "items": {"$ref": "#/$defs/observation"}},
        "state": {"$ref": "#/$defs/state"},
    }
    for field, kind in fields.items():
        properties[field] = {"$ref": f"#/$defs/{kind}"}
    required = ["op", "observed", *(f for f, k in fields.items() if not k.endswith("?"))]
    if events:  # an event log's step line (traces/eventlog.py)
        properties["t"] = {"$ref": "#/$defs/time"}
        properties["at"] = {"$ref": "#/$defs/time"}
        required.append("t")
        if name in NETWORK_OP_NAMES:
            properties["batch_id"] = {"$ref": "#/$defs/positive"}
            required.append("batch_id")
    schema = {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": properties,
    }
    if events:
        schema["patternProperties"] = {"^_": {}}  # the process's own fields
    return schema


NETWORK_OP_NAMES = ("deliver", "deliver_ack", "drop", "drop_ack")
"""The steps of an event log that name the batch whose message they took."""


def log_schema(events: bool = False) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one log line (`events`: of an event log's)."""
    table = EVENT_LOG_FIELD_KINDS if events else FIELD_KINDS
    kinds = sorted({kind for fields in table.values() for kind in fields.values()})
    if events:
        kinds = sorted({*kinds, "positive"})
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
    if events:
        return _event_log_schema(defs)
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


def _event_log_schema(defs: dict[str, Any]) -> dict[str, Any]:
    defs["time"] = {"type": "integer", "minimum": 0, "maximum": INT64_MAX}
    defs["header_line"] = {
        "type": "object",
        "required": ["log", "version", "process", "config"],
        "additionalProperties": False,
        "properties": {
            "log": {"const": "events"},
            "version": {"const": 1},
            "process": {"type": "string", "minLength": 1},
            "config": defs.pop("config_line")["properties"]["config"],
        },
    }
    defs["step_line"] = {
        "oneOf": [
            _operation(name, fields, events=True) for name, fields in EVENT_LOG_FIELD_KINDS.items()
        ]
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://wanconform.invalid/docs/eventlog.schema.json",
        "title": "wanconform event log line (docs/LOG.md, Event logs)",
        "description": "Each line of a process's event log is one JSON value: the first its "
        "header, every other a step the process took at time t (and at, when the log has "
        "it). Made by traces/logschema.py from traces/ops.py's EVENT_LOG_FIELD_KINDS and "
        "traces/observations.py's FIELDS; tests/test_event_logs.py checks that this file is "
        "what it makes.",
        "oneOf": [{"$ref": "#/$defs/header_line"}, {"$ref": "#/$defs/step_line"}],
        "$defs": defs,
    }


def schema_text(events: bool = False) -> str:
    """The schema as the file holds it (`events`: the event logs')."""
    return json.dumps(log_schema(events), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m traces.logschema docs/log.schema.json [--events]
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write(schema_text(events="--events" in sys.argv))
