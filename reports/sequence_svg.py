"""A message sequence diagram of a short run: a lane per site, a row per operation
(v2.0: a sender's dispatchers labelled `d0`, `d1`, ... on its arrows and marks).

Data first (`sequence_diagram` computes every coordinate as dataclasses), then one Jinja2
template with autoescaping (`render_sequence_svg`). Batches (R15) and acks (R18) are
arrows between the lanes of a sender's site and its remote; lost ones (drop, drop_ack)
are dashed and red; writes, sends, timeouts (R20), forwards (R22), drops and dead letters
(R24) are marks on their site's lane; a site that is down is shaded from site_down to
site_up; the failing operation's row is highlighted. At most `MAX_ROWS` rows, those
just before the failure.

SPEC v2.0 part 2 (§16.4, §16.5), on the lane of the sender's site: a batch's members
conflated in the batch (R33, kept back: `sent` names only the shipped ones) follow its
send mark and its arrow greyed, with the whole batch in the tooltip; queue conflation
(R32) is a grey note; events lost from a queue (`queue_lost`, R36/R37) and events not
queued on a stopped sender (`not_queued`) are a red cross with the reason; lifecycle
actions (restart, stop, start, pause, resume) a purple square, and the time a sender is
stopped or paused a band beside the lane; alerts (R38) an orange triangle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2
from markupsafe import Markup

from conformance.running.narrative import lane as lane_name
from conformance.running.narrative import op_text
from reports.escape import finalize
from traces.config import Config
from traces.observations import Observation
from traces.ops import Deliver, DeliverAck, Drop, DropAck, Op, SiteDown, SiteUp
from traces.text import printable

MAX_ROWS = 40
ROW = 30
TOP = 40
LEFT = 300  # room for the operation labels
LANE = 190
LABEL_CHARS = 44  # an operation label longer than this ends with "…" (LEFT px at 11 px)
MARK_CHARS = 30  # a mark's text longer than this ends with "…" (a lane is LANE px)
MARK_OVERHANG = 6 + MARK_CHARS * 7 - LANE // 2
"""How far the marks of the last lane reach past its half lane (about 7 px a character at
11 px): the drawing is that much wider, so that they are not cut off."""


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
    kept: str = ""  # a batch's members conflated in it (R33), drawn greyed after the label
    title: str = ""  # the tooltip: what the batch ships and keeps back


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of a mark's text: `style` "" (plain), "bad", "kept" (greyed: conflated),
    "lost" (queue_lost, not_queued), "alert" (R38) or "lifecycle" (R36, R37)."""

    text: str
    style: str = ""


@dataclass(frozen=True, slots=True)
class Mark:
    x: int
    y: int
    parts: tuple[Part, ...]
    bad: bool  # a drop, dead letter, timeout or an event lost from a queue
    full: str = ""  # the tooltip: the whole text when it was cut, and what a batch kept back
    symbol: str = "dot"  # "dot", "lost" (a cross), "lifecycle" (a square), "alert" (a triangle)

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.parts)


@dataclass(frozen=True, slots=True)
class Shade:
    x: int
    y: int
    height: int
    kind: str = "down"  # a site down; or a sender "stopped" / "paused" (R37), beside its lane
    title: str = "site down"


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


_MARK: dict[str, Callable[[Observation], tuple[int | None, str, bool]]] = {
    "enqueued": lambda o: (o["site"], f"write {o['key']} ({o['event']})", False),
    "sent": lambda o: (None, f"send batch {o['batch_id']} ({len(o['events'])})", False),
    "timeout": lambda o: (None, f"timeout batch {o['batch_id']}", True),
    "dropped": lambda o: (None, f"dropped {o['event']}", True),
    "dlq": lambda o: (None, f"dead letter {o['event']}", True),
    "forwarded": lambda o: (o["site"], f"forward {o['event']}", False),
    "connection_failed": lambda o: (None, "cannot connect", True),
}

# The symbol of a mark: the first of these that one of its items has, else a dot.
_SYMBOLS = ("lost", "alert", "lifecycle")
# Observations that name several events with one reason become one item (R36: a restart
# loses a whole queue; R38: one ack may alert for every event it removes).
_GROUPED = ("queue_lost", "alert")


@dataclass(slots=True)
class _Item:
    """What one observation (or a group of them) puts on a lane, before it is joined."""

    parts: list[Part]
    symbol: str = "dot"
    detail: str = ""  # a line of the tooltip


@dataclass(slots=True)
class _Batch:
    """The batch a dispatcher sent last: its id, shipped and kept-back members (R33)."""

    batch_id: int
    shipped: list[str]
    kept: list[tuple[str, str]]  # (member conflated in the batch, the event it yields to)

    def kept_text(self) -> str:
        return f"{', '.join(event for event, _ in self.kept)} conflated" if self.kept else ""

    def title(self) -> str:
        if not self.kept:
            return ""
        kept = ", ".join(f"{event} (by {by})" for event, by in self.kept)
        shipped = ", ".join(self.shipped) or "none"
        return (
            f"batch {self.batch_id}: ships {shipped}; kept back, conflated in the batch "
            f"(R33): {kept}"
        )


def _grouped_item(obs: Observation, events: list[str], tag: str) -> _Item:
    """A `queue_lost` or `alert` group: the events of one sender, dispatcher and reason."""
    if obs["kind"] == "queue_lost":
        return _Item([Part(f"{tag}lost {', '.join(events)} ({obs['reason']})", "lost")], "lost")
    text = f"{tag}alert {', '.join(events)} (queued {obs['queued_ms']} ms)"
    return _Item([Part(text, "alert")], "alert")


def _v2_item(config: Config, obs: Observation, tag: str) -> _Item | None:
    """A mark's item for SPEC v2.0 part 2's kinds (queue conflation, not_queued,
    lifecycle); None for the others."""
    kind = obs["kind"]
    if kind == "conflated" and obs["where"] == "queue":
        return _Item([Part(f"{tag}{obs['event']} conflated by {obs['by']} (queue)", "kept")])
    if kind == "not_queued":
        text = f"not queued {obs['event']} ({obs['sender']} {obs['reason']})"
        return _Item([Part(text, "lost")], "lost")
    if kind == "lifecycle":
        kept = f" (kept {obs['kept']})" if obs["action"] == "restart" else ""
        return _Item([Part(f"{obs['action']} {obs['sender']}{kept}", "lifecycle")], "lifecycle")
    return None


def _items(
    config: Config, observations: Sequence[Observation], batches: dict[tuple[str, int], _Batch]
) -> dict[int, list[_Item]]:
    """The items of one operation's observations, per site lane, in observation order;
    remembers each dispatcher's last batch in `batches` (with its kept-back members)."""
    out: dict[int, list[_Item]] = {}
    kept: dict[tuple[str, int], list[tuple[str, str]]] = {}  # conflated in the coming batch
    group: tuple[tuple[Any, ...], list[str]] | None = None  # the open queue_lost/alert group
    for obs in observations:
        kind = obs["kind"]
        sender = obs.get("sender")
        lane: int = obs.get("site", -1) if sender is None else config.sender(sender).site
        tag = _dispatcher_tag(config, obs)
        if kind in _GROUPED:
            key = (kind, sender, obs.get("dispatcher"), obs.get("reason"), obs.get("queued_ms"))
            if group is not None and group[0] == key:
                group[1].append(obs["event"])
                out[lane][-1] = _grouped_item(obs, group[1], tag)
                continue
            group = (key, [obs["event"]])
            out.setdefault(lane, []).append(_grouped_item(obs, group[1], tag))
            continue
        group = None
        if kind == "applied":
            text = f"{obs['event']} {obs['status']}"
            out.setdefault(obs["site"], []).append(
                _Item([Part(text, "bad" if obs["status"] != "ok" else "")])
            )
        elif kind == "conflated" and obs["where"] == "batch":
            kept.setdefault((obs["sender"], obs["dispatcher"]), []).append(
                (obs["event"], obs["by"])
            )
        elif kind in _MARK:
            at, text, bad = _MARK[kind](obs)
            item = _Item([Part(tag + text, "bad" if bad else "")])
            if kind == "sent":
                lane_key = (obs["sender"], obs["dispatcher"])
                batch = _Batch(obs["batch_id"], list(obs["events"]), kept.pop(lane_key, []))
                batches[lane_key] = batch
                if batch.kept:
                    item.parts.append(Part(" " + batch.kept_text(), "kept"))
                    item.detail = batch.title()
            out.setdefault(lane if at is None else at, []).append(item)
        else:
            v2 = _v2_item(config, obs, tag)
            if v2 is not None:
                out.setdefault(lane, []).append(v2)
    return out


def _cut(parts: Sequence[Part], limit: int) -> tuple[tuple[Part, ...], str]:
    """The parts cut to `limit` characters in all (the last shown ends with "…"), and
    the whole text when something was cut (else "")."""
    whole = "".join(part.text for part in parts)
    if len(whole) <= limit:
        kept = list(parts)
    else:
        kept, room = [], limit - 1
        for part in parts:
            if len(part.text) >= room:
                kept.append(Part(part.text[:room].rstrip() + "…", part.style))
                break
            kept.append(part)
            room -= len(part.text)
    merged: list[Part] = []  # neighbours of one style as one piece
    for part in kept:
        if merged and merged[-1].style == part.style:
            merged[-1] = Part(merged[-1].text + part.text, part.style)
        else:
            merged.append(part)
    return tuple(merged), whole if len(whole) > limit else ""


def _mark(x: int, y: int, items: Sequence[_Item]) -> Mark:
    """One lane's items of one operation as a mark: the first three, "+N" for the rest."""
    parts: list[Part] = []
    for i, item in enumerate(items[:3]):
        if i:
            parts.append(Part(", "))
        parts.extend(Part(printable(part.text), part.style) for part in item.parts)  # keys
    if len(items) > 3:
        parts.append(Part(f" +{len(items) - 3}"))
    shown, whole = _cut(parts, MARK_CHARS)
    title = "\n".join(line for line in (whole, *(i.detail for i in items)) if line)
    styles = {part.style for item in items for part in item.parts}
    symbol = next((s for s in _SYMBOLS if any(i.symbol == s for i in items)), "dot")
    return Mark(x, y, shown, bool(styles & {"bad", "lost"}), title, symbol)


class _Lifecycle:
    """Where each sender is stopped or paused (R37), as bands beside its site's lane."""

    def __init__(self, config: Config, x: dict[int, int], top: int) -> None:
        self.config = config
        self.x = x
        self.since: dict[tuple[str, str], int] = {}  # (sender, "stopped"/"paused") -> y
        for sender in config.senders:
            if sender.manual_start:  # R37: it begins stopped
                self.since[(sender.id, "stopped")] = top
        self.shades: list[Shade] = []

    def _end(self, sender: str, state: str, y: int) -> None:
        since = self.since.pop((sender, state), None)
        if since is not None and y > since:
            sender_config = self.config.sender(sender)
            offset = 8 + 8 * self.config.senders_at(sender_config.site).index(sender_config)
            title = f"{sender} {state}"
            self.shades.append(Shade(self.x[sender_config.site] + offset, since, y - since,
                                     state, title))  # fmt: skip

    def action(self, sender: str, action: str, y: int) -> None:
        """A `lifecycle` observation at row `y` (R36: a restart runs, unpaused)."""
        if action in ("stop", "restart", "start", "resume"):
            self._end(sender, "paused", y)
        if action in ("restart", "start"):
            self._end(sender, "stopped", y)
        if action in ("stop", "pause"):
            self.since.setdefault((sender, action + ("ped" if action == "stop" else "d")), y)

    def wiped(self, site: int, y: int) -> None:
        """R21: a wiped site's senders run, unpaused, unless they have manual_start."""
        for sender in self.config.senders_at(site):
            self._end(sender.id, "paused", y)
            if sender.manual_start:
                self.since.setdefault((sender.id, "stopped"), y)
            else:
                self._end(sender.id, "stopped", y)

    def close(self, y: int) -> list[Shade]:
        for sender, state in list(self.since):
            self._end(sender, state, y)
        return self.shades


def sequence_diagram(
    config: Config, steps: Sequence[tuple[str, Op, list[Observation]]], focus: int
) -> SequenceDiagram:
    """`steps`: (where, op, model observations) of the run; `focus`: the failing one."""
    first = max(0, min(len(steps), focus + 1) - MAX_ROWS)
    lanes = tuple(Lane(site, LEFT + LANE // 2 + i * LANE) for i, site in enumerate(config.sites))
    x = {lane.site: lane.x for lane in lanes}
    batches: dict[tuple[str, int], _Batch] = {}  # (sender, dispatcher) -> its last batch
    rows, arrows, marks, shades = [], [], [], []
    down_since: dict[int, int] = {}
    lifecycle = _Lifecycle(config, x, TOP)
    y = TOP
    for index, (here, op, observations) in enumerate(steps):
        shown = index >= first
        if shown:
            y += ROW
        texts = _items(config, observations, batches)
        skipped = len(observations) == 1 and observations[0]["kind"] == "skipped"
        for obs in observations:
            if obs["kind"] == "lifecycle":
                lifecycle.action(obs["sender"], obs["action"], y)
        if isinstance(op, SiteUp) and op.wipe and not skipped:
            lifecycle.wiped(op.site, y)
        if not shown:
            continue
        text = printable(f"{here.rsplit(':', 1)[-1]}  {op_text(op, config)}")  # as narrated
        label, full = shorten(text, LABEL_CHARS)
        rows.append(Row(y, label, index == focus, full))
        match op:
            case Deliver(sender=s, dispatcher=d) | Drop(sender=s, dispatcher=d) if not skipped:
                sender = config.sender(s)
                lost = isinstance(op, Drop)
                batch = batches.get((s, d))
                label = _on(config, s, d, f"batch {batch.batch_id if batch else '?'}", lost)
                kept, title = (batch.kept_text(), batch.title()) if batch else ("", "")
                arrows.append(Arrow(x[sender.site], x[sender.remote], y, label, lost, kept, title))
            case DeliverAck(sender=s, dispatcher=d) | DropAck(sender=s, dispatcher=d) if (
                not skipped
            ):
                sender = config.sender(s)
                lost = isinstance(op, DropAck)
                batch = batches.get((s, d))
                label = _on(config, s, d, f"ack {batch.batch_id if batch else '?'}", lost)
                arrows.append(Arrow(x[sender.remote], x[sender.site], y, label, lost))
            case SiteDown(site=site) if not skipped:
                down_since[site] = y
            case SiteUp(site=site) if not skipped and site in down_since:
                since = down_since.pop(site)
                shades.append(Shade(x[site], since, y - since))
        for site, items in texts.items():
            marks.append(_mark(x[site], y, items))
    for site, since in down_since.items():
        shades.append(Shade(x[site], since, y + ROW // 2 - since))
    shades.extend(lifecycle.close(y + ROW // 2))
    return SequenceDiagram(
        width=LEFT + LANE * len(lanes) + MARK_OVERHANG,
        height=y + ROW,
        lanes=lanes,
        rows=tuple(rows),
        arrows=tuple(arrows),
        marks=tuple(marks),
        shades=tuple(shades),
        cut=first,
    )


_STYLE = {  # a mark part's <tspan> attributes, by style ("" and "bad": the text's colour)
    "kept": 'class="kept" fill="#999" font-style="italic"',
    "lost": 'class="lost" font-weight="bold"',
    "alert": 'class="alert" fill="#b60"',
    "lifecycle": 'class="lifecycle" fill="#63a"',
}

_TEMPLATE = """\
<svg xmlns="http://www.w3.org/2000/svg" class="sequence" width="{{ d.width }}" \
height="{{ d.height }}" viewBox="0 0 {{ d.width }} {{ d.height }}" font-family="sans-serif" \
font-size="11">
<defs><marker id="{{ ident }}head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" \
markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" \
fill="context-stroke"/></marker></defs>
{% if d.cut %}<text x="8" y="20" fill="#666">{{ d.cut }} earlier operations not drawn</text>
{% endif %}
{% for s in d.shades %}{% if s.kind == "down" %}<rect class="down" x="{{ s.x - 40 }}" \
y="{{ s.y }}" width="80" height="{{ s.height }}" fill="#f3c4c4" opacity="0.6"><title>\
{{ s.title }}</title></rect>
{% else %}<rect class="{{ s.kind }}" x="{{ s.x - 3 }}" y="{{ s.y }}" width="6" \
height="{{ s.height }}" fill="{{ '#bbb' if s.kind == 'stopped' else '#c9b6e8' }}"><title>\
{{ s.title }}</title></rect>
{% endif %}{% endfor %}
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
stroke-width="1.5"{% if a.lost %} stroke-dasharray="5 4"{% endif %} \
marker-end="url(#{{ ident }}head)"/>
<text x="{{ (a.x1 + a.x2) // 2 }}" y="{{ a.y - 8 }}" text-anchor="middle" \
fill="{{ '#c00' if a.lost else '#246' }}">{{ a.label }}{% if a.kept %} <tspan \
{{ style.kept }}>{{ a.kept }}</tspan>{% endif %}{% if a.title %}<title>{{ a.title }}</title>\
{% endif %}</text>
{% endfor %}
{% for m in d.marks %}{% set colour = '#c00' if m.bad else '#246' %}\
{% if m.symbol == "lost" %}<path class="mark-lost" d="M{{ m.x - 4 }},{{ m.y - 4 }} \
L{{ m.x + 4 }},{{ m.y + 4 }} M{{ m.x - 4 }},{{ m.y + 4 }} L{{ m.x + 4 }},{{ m.y - 4 }}" \
stroke="#c00" stroke-width="2"/>{% elif m.symbol == "lifecycle" %}<rect class="mark-lifecycle" \
x="{{ m.x - 4 }}" y="{{ m.y - 4 }}" width="8" height="8" fill="#63a"/>\
{% elif m.symbol == "alert" %}<path class="mark-alert" d="M{{ m.x }},{{ m.y - 5 }} \
L{{ m.x + 5 }},{{ m.y + 4 }} L{{ m.x - 5 }},{{ m.y + 4 }} z" fill="#b60"/>\
{% else %}<circle cx="{{ m.x }}" cy="{{ m.y }}" r="3.5" fill="{{ colour }}"/>{% endif %}\
<text x="{{ m.x + 6 }}" y="{{ m.y + 12 }}" fill="{{ '#c00' if m.bad else '#222' }}">\
{% for p in m.parts %}{% if p.style in style %}<tspan {{ style[p.style] }}>{{ p.text }}</tspan>\
{% else %}{{ p.text }}{% endif %}{% endfor %}{% if m.full %}<title>{{ m.full }}</title>\
{% endif %}</text>
{% endfor %}
</svg>
"""

_ENVIRONMENT = jinja2.Environment(
    autoescape=True, undefined=jinja2.StrictUndefined, finalize=finalize
)


def render_sequence_svg(diagram: SequenceDiagram, ident: str = "") -> str:
    """The SVG (text); `ident` prefixes its element ids (several drawings in one page)."""
    style = {name: Markup(attributes) for name, attributes in _STYLE.items()}
    return _ENVIRONMENT.from_string(_TEMPLATE).render(d=diagram, style=style, ident=ident)
