"""A message sequence diagram of a short run: a lane per site, a row per operation
(v2.0: a sender's dispatchers labelled `d0`, `d1`, ... on its arrows and marks).

Data first (`sequence_diagram` computes every coordinate as dataclasses), then one Jinja2
template with autoescaping (`render_sequence_svg`). Batches (R15) and acks (R18) are
arrows between the lanes of a sender's site and its remote; lost ones (drop, drop_ack)
are dashed and red; writes, sends, timeouts (R20), forwards (R22), drops and dead letters
(R24) are marks on their site's lane; a site that is down is shaded from site_down to
site_up; the failing operation's row is highlighted. At most `MAX_ROWS` rows, those
just before the failure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jinja2

from conformance.running.narrative import lane as lane_name
from conformance.running.narrative import op_text
from traces.config import Config
from traces.observations import Observation
from traces.ops import Deliver, DeliverAck, Drop, DropAck, Op, SiteDown, SiteUp

MAX_ROWS = 40
ROW = 30
TOP = 40
LEFT = 300  # room for the operation labels
LANE = 190
LABEL_CHARS = 44  # an operation label longer than this ends with "…" (LEFT px at 11 px)
MARK_CHARS = 30  # a mark's text longer than this ends with "…" (a lane is LANE px)


def shorten(text: str, limit: int) -> tuple[str, str]:
    """(what to draw, the full text when it was cut or "") for a label of `limit` chars;
    the full text goes into an SVG <title>, a tooltip."""
    if len(text) <= limit:
        return text, ""
    return text[: limit - 1].rstrip() + "…", text


@dataclass(frozen=True, slots=True)
class Lane:
    site: int
    x: int


@dataclass(frozen=True, slots=True)
class Row:
    y: int
    label: str
    focus: bool
    full: str = ""  # the whole label, when `label` is cut


@dataclass(frozen=True, slots=True)
class Arrow:
    x1: int
    x2: int
    y: int
    label: str
    lost: bool


@dataclass(frozen=True, slots=True)
class Mark:
    x: int
    y: int
    text: str
    bad: bool  # a drop, dead letter or timeout
    full: str = ""  # the whole text, when `text` is cut


@dataclass(frozen=True, slots=True)
class Shade:
    x: int
    y: int
    height: int


@dataclass(frozen=True, slots=True)
class SequenceDiagram:
    width: int
    height: int
    lanes: tuple[Lane, ...]
    rows: tuple[Row, ...]
    arrows: tuple[Arrow, ...]
    marks: tuple[Mark, ...]
    shades: tuple[Shade, ...]
    cut: int  # rows left out before the first shown


_MARK: dict[str, Callable[[Observation], tuple[int | None, str, bool]]] = {
    "enqueued": lambda o: (o["site"], f"write {o['key']} ({o['event']})", False),
    "sent": lambda o: (None, f"send batch {o['batch_id']} ({len(o['events'])})", False),
    "timeout": lambda o: (None, f"timeout batch {o['batch_id']}", True),
    "dropped": lambda o: (None, f"dropped {o['event']}", True),
    "dlq": lambda o: (None, f"dead letter {o['event']}", True),
    "forwarded": lambda o: (o["site"], f"forward {o['event']}", False),
    "connection_failed": lambda o: (None, "cannot connect", True),
}


def _dispatcher_tag(config: Config, obs: Observation) -> str:
    """`d1 ` before a mark of a sender with several dispatchers (R29), else nothing."""
    sender = obs.get("sender")
    if sender is None or "dispatcher" not in obs:
        return ""
    if config.sender(sender).dispatcher_threads == 1:
        return ""
    return f"d{obs['dispatcher']} "


def _on(config: Config, sender: str, dispatcher: int, text: str, lost: bool) -> str:
    """An arrow's label: the batch or ack, its dispatcher when the sender has several."""
    several = config.sender(sender).dispatcher_threads > 1
    return (
        (lane_name(sender, dispatcher, config) + " " if several else "")
        + text
        + (" lost" if lost else "")
    )


def sequence_diagram(
    config: Config, steps: Sequence[tuple[str, Op, list[Observation]]], focus: int
) -> SequenceDiagram:
    """`steps`: (where, op, model observations) of the run; `focus`: the failing one."""
    first = max(0, min(len(steps), focus + 1) - MAX_ROWS)
    lanes = tuple(Lane(site, LEFT + LANE // 2 + i * LANE) for i, site in enumerate(config.sites))
    x = {lane.site: lane.x for lane in lanes}
    batch: dict[tuple[str, int], int] = {}  # (sender, dispatcher) -> its last batch
    rows, arrows, marks, shades = [], [], [], []
    down_since: dict[int, int] = {}
    y = TOP
    for index, (here, op, observations) in enumerate(steps):
        for obs in observations:
            if obs["kind"] == "sent":
                batch[(obs["sender"], obs["dispatcher"])] = obs["batch_id"]
        if index < first:
            continue
        y += ROW
        label, full = shorten(f"{here.rsplit(':', 1)[-1]}  {op_text(op, config)}", LABEL_CHARS)
        rows.append(Row(y, label, index == focus, full))
        skipped = len(observations) == 1 and observations[0]["kind"] == "skipped"
        texts: dict[int, list[tuple[str, bool]]] = {}
        match op:
            case Deliver(sender=s, dispatcher=d) | Drop(sender=s, dispatcher=d) if not skipped:
                sender = config.sender(s)
                lost = isinstance(op, Drop)
                label = _on(config, s, d, f"batch {batch.get((s, d), '?')}", lost)
                arrows.append(Arrow(x[sender.site], x[sender.remote], y, label, lost))
            case DeliverAck(sender=s, dispatcher=d) | DropAck(sender=s, dispatcher=d) if (
                not skipped
            ):
                sender = config.sender(s)
                lost = isinstance(op, DropAck)
                label = _on(config, s, d, f"ack {batch.get((s, d), '?')}", lost)
                arrows.append(Arrow(x[sender.remote], x[sender.site], y, label, lost))
            case SiteDown(site=site) if not skipped:
                down_since[site] = y
            case SiteUp(site=site) if not skipped and site in down_since:
                since = down_since.pop(site)
                shades.append(Shade(x[site], since, y - since))
        for obs in observations:
            kind = obs["kind"]
            if kind == "applied":
                texts.setdefault(obs["site"], []).append(
                    (f"{obs['event']} {obs['status']}", obs["status"] != "ok")
                )
            elif kind in _MARK:
                at, text, bad = _MARK[kind](obs)
                lane = config.sender(obs["sender"]).site if at is None else at
                texts.setdefault(lane, []).append((_dispatcher_tag(config, obs) + text, bad))
        for site, items in texts.items():
            shown = ", ".join(text for text, _ in items[:3])
            more = f" +{len(items) - 3}" if len(items) > 3 else ""
            text, full = shorten(shown + more, MARK_CHARS)
            marks.append(Mark(x[site], y, text, any(bad for _, bad in items), full))
    for site, since in down_since.items():
        shades.append(Shade(x[site], since, y + ROW // 2 - since))
    return SequenceDiagram(
        width=LEFT + LANE * len(lanes),
        height=y + ROW,
        lanes=lanes,
        rows=tuple(rows),
        arrows=tuple(arrows),
        marks=tuple(marks),
        shades=tuple(shades),
        cut=first,
    )


_TEMPLATE = """\
<svg xmlns="http://www.w3.org/2000/svg" class="sequence" width="{{ d.width }}" \
height="{{ d.height }}" viewBox="0 0 {{ d.width }} {{ d.height }}" font-family="sans-serif" \
font-size="11">
<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" \
markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" \
fill="context-stroke"/></marker></defs>
{% if d.cut %}<text x="8" y="20" fill="#666">{{ d.cut }} earlier operations not drawn</text>
{% endif %}
{% for s in d.shades %}<rect class="down" x="{{ s.x - 40 }}" y="{{ s.y }}" width="80" \
height="{{ s.height }}" fill="#f3c4c4" opacity="0.6"><title>site down</title></rect>
{% endfor %}
{% for r in d.rows %}{% if r.focus %}<rect class="focus" x="0" y="{{ r.y - 15 }}" \
width="{{ d.width }}" height="{{ 30 }}" fill="#fff3b0"/>{% endif %}
<text x="8" y="{{ r.y + 4 }}" fill="#333">{{ r.label }}{% if r.full %}<title>{{ r.full }}\
</title>{% endif %}</text>
{% endfor %}
{% for l in d.lanes %}<line x1="{{ l.x }}" y1="30" x2="{{ l.x }}" y2="{{ d.height - 10 }}" \
stroke="#999" stroke-width="1.5"/>
<text x="{{ l.x }}" y="20" text-anchor="middle" font-weight="bold">site {{ l.site }}</text>
{% endfor %}
{% for a in d.arrows %}<line class="arrow{{ ' lost' if a.lost }}" x1="{{ a.x1 }}" \
y1="{{ a.y - 6 }}" x2="{{ a.x2 }}" y2="{{ a.y + 6 }}" stroke="{{ '#c00' if a.lost else '#246' }}" \
stroke-width="1.5"{% if a.lost %} stroke-dasharray="5 4"{% endif %} marker-end="url(#head)"/>
<text x="{{ (a.x1 + a.x2) // 2 }}" y="{{ a.y - 8 }}" text-anchor="middle" \
fill="{{ '#c00' if a.lost else '#246' }}">{{ a.label }}</text>
{% endfor %}
{% for m in d.marks %}<circle cx="{{ m.x }}" cy="{{ m.y }}" r="3.5" \
fill="{{ '#c00' if m.bad else '#246' }}"/><text x="{{ m.x + 6 }}" y="{{ m.y + 12 }}" \
fill="{{ '#c00' if m.bad else '#222' }}">{{ m.text }}{% if m.full %}<title>{{ m.full }}</title>\
{% endif %}</text>
{% endfor %}
</svg>
"""

_ENVIRONMENT = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


def render_sequence_svg(diagram: SequenceDiagram) -> str:
    return _ENVIRONMENT.from_string(_TEMPLATE).render(d=diagram)
