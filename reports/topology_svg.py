"""A standalone SVG picture of a topology and its R23 verdict (R22 paths highlighted).

Data first, then render (as the HTML reports do): `topology_drawing` computes every
coordinate and text line as plain dataclasses; `render_topology_svg` fills one Jinja2
template with autoescaping on, so a sender id such as `<a&b>` cannot break the markup.

Layout, chosen to stay legible up to a dozen sites and more:

- sites sit on a circle in sorted order, clockwise from the top; the circle grows with
  the number of sites so that neighbours stay apart;
- a one-way sender is a straight arrow; the two senders of a bidirectional pair are
  arcs bent to either side, so both stay visible;
- each arrow's label is the sender id as the user wrote it (an id that the Geode import
  made unique, `1/sender3`, is labelled `sender3`: the arrow starts at site 1); labels
  are placed one by one at the first spot along their arrow that overlaps no site and no
  label placed before, and are drawn on a white halo;
- hops that lie on a duplicate path (R23) are red, and a site that receives an event
  twice has a red ring; the legend explains the marks and spells out, for every
  duplicate delivery, the paths that duplicate, then the unreachable (origin, site)
  pairs.

No external resources, no randomness, no clock: the same analysis always gives the same
bytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import pairwise

import jinja2

from conformance.properties.topology import Path, SenderEdge, TopologyAnalysis
from reports.escape import finalize
from traces.text import plural, printable

MARGIN = 30
HEADER = 70  # room for the title and verdict above the drawing
SITE_RADIUS = 22
MIN_CIRCLE_RADIUS = 150
SPACING = 30  # circle radius per site, so neighbours stay about 2*pi*30/... apart
BEND = 0.18  # sideways bend of a bidirectional pair's arcs, as a fraction of their length
MAX_BEND = 40.0  # ... and at most this much, so long pairs stay side by side
FONT_SIZE = 13
CHAR_WIDTH = 7.2  # an estimate of the average width of a character at FONT_SIZE
LINE_HEIGHT = 18
MAX_LISTED_DUPLICATES = 12
"""The legend spells out this many duplicate deliveries; the rest are counted."""
LABEL_SPOTS = (0.5, 0.38, 0.62, 0.28, 0.72, 0.2, 0.8)
"""Where along its arrow (0 = sender's site) a label may go, in order of preference."""


@dataclass(frozen=True, slots=True)
class SiteMark:
    site: int
    x: str
    y: str
    receives_duplicates: bool


@dataclass(frozen=True, slots=True)
class SenderArrow:
    sender: str  # the configuration's id
    label: str  # the id as the user wrote it
    site: int
    remote: int
    path: str  # the SVG path data of the arrow
    label_x: str
    label_y: str
    on_duplicate_path: bool
    title: str


@dataclass(frozen=True, slots=True)
class TextLine:
    text: str
    y: str
    css_class: str


@dataclass(frozen=True, slots=True)
class TopologyDrawing:
    width: int
    height: int
    title: str
    verdict: str
    supported: bool
    sites: tuple[SiteMark, ...]
    arrows: tuple[SenderArrow, ...]
    key_y: str
    legend: tuple[TextLine, ...]


def _number(value: float) -> str:
    """Fixed-precision coordinates: identical text on every platform, no `-0.0`."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


Point = tuple[float, float]
Box = tuple[float, float, float, float]  # left, top, right, bottom


def circle_radius(site_count: int) -> float:
    return max(MIN_CIRCLE_RADIUS, SPACING * site_count)


def _site_positions(sites: tuple[int, ...], center: Point) -> dict[int, Point]:
    if len(sites) == 1:
        return {sites[0]: center}
    radius = circle_radius(len(sites))
    positions = {}
    for index, site in enumerate(sites):  # clockwise from the top
        angle = -math.pi / 2 + 2 * math.pi * index / len(sites)
        positions[site] = (
            center[0] + radius * math.cos(angle),
            center[1] + radius * math.sin(angle),
        )
    return positions


@dataclass(frozen=True, slots=True)
class _Curve:
    """A quadratic Bézier from `start` to `end` through control point `control`."""

    start: Point
    control: Point
    end: Point

    def at(self, t: float) -> Point:
        (x0, y0), (x1, y1), (x2, y2) = self.start, self.control, self.end
        u = 1 - t
        return (u * u * x0 + 2 * u * t * x1 + t * t * x2, u * u * y0 + 2 * u * t * y1 + t * t * y2)

    def svg(self) -> str:
        (x0, y0), (x1, y1), (x2, y2) = self.start, self.control, self.end
        return (
            f"M {_number(x0)} {_number(y0)} Q {_number(x1)} {_number(y1)} "
            f"{_number(x2)} {_number(y2)}"
        )


def _arrow_curve(start: Point, end: Point, bent: bool) -> _Curve:
    """The arrow from site to site, clipped at both site circles (and the arrow head)."""
    (x1, y1), (x2, y2) = start, end
    length = math.hypot(x2 - x1, y2 - y1)
    normal = (-(y2 - y1) / length, (x2 - x1) / length)
    bend = min(BEND * length, MAX_BEND) if bent else 0.0
    control = ((x1 + x2) / 2 + normal[0] * bend, (y1 + y2) / 2 + normal[1] * bend)

    def clipped(point: Point, gap: float) -> Point:
        dx, dy = control[0] - point[0], control[1] - point[1]
        distance = math.hypot(dx, dy)
        return point[0] + dx / distance * gap, point[1] + dy / distance * gap

    return _Curve(clipped(start, SITE_RADIUS + 2), control, clipped(end, SITE_RADIUS + 6))


def _label_box(center: Point, text: str) -> Box:
    half_width = len(text) * CHAR_WIDTH / 2 + 3
    half_height = FONT_SIZE / 2 + 2
    return (center[0] - half_width, center[1] - half_height, center[0] + half_width,
            center[1] + half_height)  # fmt: skip


def _overlap(a: Box, b: Box) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return width * height if width > 0 and height > 0 else 0.0


class _Taken:
    """The boxes placed so far, indexed by the grid cells they cover: a new box is compared
    with those that share a cell only (the others cannot overlap it), in placing order, so
    the sums are the full scan's and the drawing's cost grows with the senders, not their
    square."""

    CELL = 64.0

    def __init__(self, boxes: list[Box]) -> None:
        self._boxes: list[Box] = []
        self._cells: dict[tuple[int, int], list[int]] = {}
        for box in boxes:
            self.add(box)

    def _cells_of(self, box: Box) -> Iterator[tuple[int, int]]:
        cell = self.CELL
        for x in range(math.floor(box[0] / cell), math.floor(box[2] / cell) + 1):
            for y in range(math.floor(box[1] / cell), math.floor(box[3] / cell) + 1):
                yield x, y

    def add(self, box: Box) -> None:
        index = len(self._boxes)
        self._boxes.append(box)
        for cell in self._cells_of(box):
            self._cells.setdefault(cell, []).append(index)

    def overlap(self, box: Box) -> float:
        """The summed area `box` shares with every box placed (in placing order)."""
        near = sorted({i for cell in self._cells_of(box) for i in self._cells.get(cell, ())})
        return sum(_overlap(box, self._boxes[i]) for i in near)


def _place_label(curve: _Curve, text: str, taken: _Taken) -> Point:
    """The first spot along the curve whose label box overlaps nothing placed (else least)."""
    best: tuple[float, Point] | None = None
    for t in LABEL_SPOTS:
        spot = curve.at(t)
        box = _label_box(spot, text)
        overlap = taken.overlap(box)
        if best is None or overlap < best[0]:
            best = (overlap, spot)
        if overlap == 0:
            break
    assert best is not None
    taken.add(_label_box(best[1], text))
    return best[1]


def _path_text(path: Path) -> str:
    return " → ".join(str(site) for site in path)


def _legend_lines(analysis: TopologyAnalysis, renamed: bool) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = []
    if renamed:
        lines.append(
            (
                "Sender ids used at several sites are SITE/ID in the configuration; "
                "arrows show the id as written.",
                "plain",
            )
        )
    if analysis.duplicates:
        lines.append(
            (
                f"Duplicate deliveries (R23): "
                f"{plural(len(analysis.duplicates), '(origin, site) pair')} "
                f"{'receives' if len(analysis.duplicates) == 1 else 'receive'} the same "
                "event along more than one path:",
                "head",
            )
        )
        for delivery in analysis.duplicates[:MAX_LISTED_DUPLICATES]:
            paths = "; ".join(_path_text(p) for p in delivery.paths)
            lines.append(
                (
                    f"site {delivery.site} gets each event of site {delivery.origin} "
                    f"{len(delivery.paths)} times: {paths}",
                    "duplicate",
                )
            )
        hidden = len(analysis.duplicates) - MAX_LISTED_DUPLICATES
        if hidden > 0:
            lines.append(
                (
                    f"... and {hidden} more (wanconform topology prints them all; "
                    "hover over a red arrow for the duplicate paths through it)",
                    "duplicate",
                )
            )
    else:
        lines.append(("No duplicate deliveries: every site receives each event once.", "head"))
    if analysis.unreachable:
        lines.append(("Unreachable (no path of senders from origin to site):", "head"))
        for origin in analysis.sites:
            missing = analysis.unreachable_from(origin)
            if missing:
                sites = ", ".join(str(site) for site in missing)
                noun = "site" if len(missing) == 1 else "sites"
                lines.append((f"from site {origin}: {noun} {sites}", "plain"))
    return lines


def _duplicate_hops(analysis: TopologyAnalysis) -> dict[tuple[int, int], tuple[list[str], int]]:
    """Each hop on a duplicate path -> the first `MAX_LISTED_DUPLICATES` duplicate paths
    through it (for hover titles) and how many there are: a big ring has millions of
    (hop, path) pairs, too many to spell out."""
    hops: dict[tuple[int, int], tuple[list[str], int]] = {}
    for delivery in analysis.duplicates:
        for path in delivery.paths:
            text = ""
            for hop in pairwise(path):
                listed, count = hops.get(hop, ([], 0))
                if len(listed) < MAX_LISTED_DUPLICATES:
                    text = text or _path_text(path)
                    listed.append(text)
                hops[hop] = (listed, count + 1)
    return hops


def _arrow(
    edge: SenderEdge,
    curve: _Curve,
    label: str,
    spot: Point,
    duplicate_paths: tuple[list[str], int],
) -> SenderArrow:
    title = f"sender {printable(edge.sender)}: site {edge.site} to site {edge.remote}"
    if label != printable(edge.sender):
        title += f" (Geode id {label!r} at site {edge.site})"
    listed, count = duplicate_paths
    if count:
        shown = "; ".join(listed)
        more = count - len(listed)
        title += f"; on duplicate paths {shown}" + (f"; and {more} more" if more > 0 else "")
    return SenderArrow(
        sender=edge.sender,
        label=label,
        site=edge.site,
        remote=edge.remote,
        path=curve.svg(),
        label_x=_number(spot[0]),
        label_y=_number(spot[1]),
        on_duplicate_path=count > 0,
        title=title,
    )


def topology_drawing(
    analysis: TopologyAnalysis, names: Mapping[str, str] | None = None
) -> TopologyDrawing:
    """Every coordinate and line of text of the picture, computed once.

    `names` maps a sender id to the id the user wrote (`wanconform import`'s renames).
    """
    names = names or {}
    radius = circle_radius(len(analysis.sites)) if len(analysis.sites) > 1 else 0.0
    legend_lines = _legend_lines(analysis, any(names.get(s, s) != s for s in names))
    widest = max(len(text) for text, _ in legend_lines) * CHAR_WIDTH
    width = int(max(2 * (radius + SITE_RADIUS + MARGIN) + 60, widest + 2 * MARGIN, 520))
    center = (width / 2, HEADER + SITE_RADIUS + radius + 20)
    positions = _site_positions(analysis.sites, center)
    pairs = {(edge.site, edge.remote) for edge in analysis.senders}
    hops = _duplicate_hops(analysis)
    # Sites first, so that no label is placed on top of one.
    taken = _Taken(
        [
            (x - SITE_RADIUS, y - SITE_RADIUS, x + SITE_RADIUS, y + SITE_RADIUS)
            for x, y in positions.values()
        ]
    )
    arrows = []
    for edge in sorted(analysis.senders, key=lambda e: (e.site, e.remote)):
        bidirectional = (edge.remote, edge.site) in pairs
        curve = _arrow_curve(positions[edge.site], positions[edge.remote], bidirectional)
        # a control character is not allowed in XML, even escaped: shown as `\x01`
        label = printable(names.get(edge.sender, edge.sender))
        spot = _place_label(curve, label, taken)
        arrows.append(_arrow(edge, curve, label, spot, hops.get((edge.site, edge.remote), ([], 0))))
    duplicated_sites = {delivery.site for delivery in analysis.duplicates}
    key_top = center[1] + radius + SITE_RADIUS + 40
    legend_top = key_top + 3 * LINE_HEIGHT
    legend = tuple(
        TextLine(text, _number(legend_top + index * LINE_HEIGHT), css_class)
        for index, (text, css_class) in enumerate(legend_lines)
    )
    height = int(legend_top + len(legend) * LINE_HEIGHT + MARGIN)
    sites = ", ".join(str(site) for site in analysis.sites)
    verdict = (
        "supported (R23): every site receives each event at most once"
        if analysis.supported
        else "UNSUPPORTED (R23): "
        + plural(len(analysis.duplicates), "duplicate delivery", "duplicate deliveries")
        + ", in red"
    )
    return TopologyDrawing(
        width=width,
        height=height,
        title=f"WAN topology: sites {sites}; {plural(len(analysis.senders), 'sender')}",
        verdict=verdict,
        supported=analysis.supported,
        sites=tuple(
            SiteMark(site, _number(x), _number(y), site in duplicated_sites)
            for site, (x, y) in positions.items()
        ),
        arrows=tuple(arrows),
        key_y=_number(key_top),
        legend=legend,
    )


_TEMPLATE = """\
<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{{ d.width }}" height="{{ d.height }}" \
viewBox="0 0 {{ d.width }} {{ d.height }}" font-family="sans-serif" font-size="{{ font_size }}">
  <title>{{ d.title }}</title>
  <style>
    .site { fill: #eef3fb; stroke: #34527a; stroke-width: 2; }
    .site.duplicate { stroke: #c62828; stroke-width: 4; }
    .site-label { font-weight: bold; text-anchor: middle; dominant-baseline: central; }
    .arrow { fill: none; stroke: #8a97a8; stroke-width: 1.5; }
    .arrow.duplicate { stroke: #c62828; stroke-width: 3; }
    .sender { fill: #34527a; text-anchor: middle; dominant-baseline: central;
              stroke: #ffffff; stroke-width: 4; stroke-linejoin: round; paint-order: stroke; }
    .sender.duplicate { fill: #c62828; font-weight: bold; }
    .verdict.ok { fill: #2e7d32; }
    .verdict.bad { fill: #c62828; font-weight: bold; }
    .head { font-weight: bold; }
    .duplicate-text { fill: #c62828; }
  </style>
  <defs>
    <marker id="{{ ident }}head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" \
markerHeight="7" orient="auto-start-reverse">
      <path d="M 0 0 L 10 5 L 0 10 z" fill="#8a97a8"/>
    </marker>
    <marker id="{{ ident }}head-duplicate" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="5" \
markerHeight="5" orient="auto-start-reverse">
      <path d="M 0 0 L 10 5 L 0 10 z" fill="#c62828"/>
    </marker>
  </defs>
  <text x="{{ margin }}" y="28" font-size="16" class="head">{{ d.title }}</text>
  <text x="{{ margin }}" y="50" class="verdict {{ 'ok' if d.supported else 'bad' }}">\
{{ d.verdict }}</text>
{%- for a in d.arrows %}
  <path class="arrow{{ ' duplicate' if a.on_duplicate_path }}" d="{{ a.path }}" \
marker-end="url(#{{ ident }}{{ 'head-duplicate' if a.on_duplicate_path else 'head' }})">\
<title>{{ a.title }}</title></path>
{%- endfor %}
{%- for s in d.sites %}
  <g class="site-node">
    <title>site {{ s.site }}{{ ': receives some event twice (R23)' \
if s.receives_duplicates }}</title>
    <circle class="site{{ ' duplicate' if s.receives_duplicates }}" cx="{{ s.x }}" \
cy="{{ s.y }}" r="{{ site_radius }}"/>
    <text class="site-label" x="{{ s.x }}" y="{{ s.y }}">{{ s.site }}</text>
  </g>
{%- endfor %}
{%- for a in d.arrows %}
  <g class="sender-label"><title>{{ a.title }}</title>\
<text class="sender{{ ' duplicate' if a.on_duplicate_path }}" x="{{ a.label_x }}" \
y="{{ a.label_y }}">{{ a.label }}</text></g>
{%- endfor %}
  <g class="key" transform="translate({{ margin }} {{ d.key_y }})">
    <rect x="0" y="-10" width="20" height="20" rx="10" class="site"/>
    <text x="28" y="0" dominant-baseline="central">site (its distributed-system-id)</text>
    <line x1="250" y1="0" x2="290" y2="0" class="arrow" marker-end="url(#{{ ident }}head)"/>
    <text x="298" y="0" dominant-baseline="central">sender, labelled with its id</text>
    <line x1="0" y1="{{ line_height * 1.4 }}" x2="40" y2="{{ line_height * 1.4 }}" \
class="arrow duplicate" marker-end="url(#{{ ident }}head-duplicate)"/>
    <text x="48" y="{{ line_height * 1.4 }}" dominant-baseline="central">hop on a duplicate \
path</text>
    <rect x="250" y="{{ line_height * 1.4 - 10 }}" width="20" height="20" rx="10" \
class="site duplicate"/>
    <text x="278" y="{{ line_height * 1.4 }}" dominant-baseline="central">site that receives \
an event twice</text>
  </g>
{%- for line in d.legend %}
  <text x="{{ margin }}" y="{{ line.y }}" class="{{ 'duplicate-text' \
if line.css_class == 'duplicate' else line.css_class }}">{{ line.text }}</text>
{%- endfor %}
</svg>
"""

_ENVIRONMENT = jinja2.Environment(
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    finalize=finalize,
)


def render_topology_svg(
    analysis: TopologyAnalysis, names: Mapping[str, str] | None = None, ident: str = ""
) -> str:
    """The SVG document (text); deterministic for a given analysis and names. `ident`
    prefixes its element ids (several drawings in one page)."""
    template = _ENVIRONMENT.from_string(_TEMPLATE)
    return template.render(
        ident=ident,
        d=topology_drawing(analysis, names),
        site_radius=SITE_RADIUS,
        font_size=FONT_SIZE,
        margin=MARGIN,
        line_height=LINE_HEIGHT,
    )
