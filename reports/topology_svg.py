"""A standalone SVG picture of a topology and its R23 verdict (R22 paths highlighted).

Data first, then render (as the HTML reports do): `topology_drawing` computes every
coordinate and text line as plain dataclasses; `render_topology_svg` fills one Jinja2
template with autoescaping on, so a sender id such as `<a&b>` cannot break the markup.
Sites sit on a circle in sorted order, one curved arrow per sender labelled with its id;
the hops of duplicate paths (R23) are red and listed in a legend, with the unreachable
(origin, site) pairs. No external resources, no randomness, no clock: the same analysis
always gives the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jinja2

from conformance.topology import Path, TopologyAnalysis

WIDTH = 720
CIRCLE_TOP = 70  # room for the title and verdict above the circle
CIRCLE_RADIUS = 210
SITE_RADIUS = 24
CURVE_OFFSET = 28  # sideways bend of an arrow, so that a->b and b->a do not overlap
LABEL_OFFSET = 10  # sender id label, off the middle of its arrow
LINE_HEIGHT = 18
CENTER_X = WIDTH / 2
CENTER_Y = CIRCLE_TOP + SITE_RADIUS + CIRCLE_RADIUS + 10
LEGEND_TOP = CENTER_Y + CIRCLE_RADIUS + SITE_RADIUS + 40


@dataclass(frozen=True, slots=True)
class SiteMark:
    site: int
    x: str
    y: str


@dataclass(frozen=True, slots=True)
class SenderArrow:
    sender: str
    site: int
    remote: int
    path: str  # the SVG path data of the arrow
    label_x: str
    label_y: str
    on_duplicate_path: bool


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
    legend: tuple[TextLine, ...]


def _number(value: float) -> str:
    """Fixed-precision coordinates: identical text on every platform, no `-0.0`."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def _site_positions(sites: tuple[int, ...]) -> dict[int, tuple[float, float]]:
    if len(sites) == 1:
        return {sites[0]: (CENTER_X, CENTER_Y)}
    positions = {}
    for index, site in enumerate(sites):  # clockwise from the top
        angle = -math.pi / 2 + 2 * math.pi * index / len(sites)
        positions[site] = (
            CENTER_X + CIRCLE_RADIUS * math.cos(angle),
            CENTER_Y + CIRCLE_RADIUS * math.sin(angle),
        )
    return positions


def _arrow_geometry(
    start: tuple[float, float], end: tuple[float, float]
) -> tuple[str, float, float]:
    """A quadratic curve bent to the right of its direction, clipped at both circles."""
    (x1, y1), (x2, y2) = start, end
    length = math.hypot(x2 - x1, y2 - y1)
    normal_x, normal_y = -(y2 - y1) / length, (x2 - x1) / length
    control_x = (x1 + x2) / 2 + normal_x * CURVE_OFFSET
    control_y = (y1 + y2) / 2 + normal_y * CURVE_OFFSET

    def clipped(x: float, y: float) -> tuple[float, float]:
        dx, dy = control_x - x, control_y - y
        distance = math.hypot(dx, dy)
        return x + dx / distance * SITE_RADIUS, y + dy / distance * SITE_RADIUS

    sx, sy = clipped(x1, y1)
    ex, ey = clipped(x2, y2)
    gap = 6  # leave room for the arrow head
    dx, dy = control_x - ex, control_y - ey
    distance = math.hypot(dx, dy)
    ex, ey = ex + dx / distance * gap, ey + dy / distance * gap
    data = (
        f"M {_number(sx)} {_number(sy)} Q {_number(control_x)} {_number(control_y)} "
        f"{_number(ex)} {_number(ey)}"
    )
    middle_x = 0.25 * sx + 0.5 * control_x + 0.25 * ex + normal_x * LABEL_OFFSET
    middle_y = 0.25 * sy + 0.5 * control_y + 0.25 * ey + normal_y * LABEL_OFFSET
    return data, middle_x, middle_y


def _path_text(path: Path) -> str:
    return " → ".join(str(site) for site in path)


def _legend_lines(analysis: TopologyAnalysis) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = []
    if analysis.duplicates:
        lines.append(("Duplicate deliveries (R23: a site receives the same event twice):", "head"))
        for delivery in analysis.duplicates:
            paths = "; ".join(_path_text(p) for p in delivery.paths)
            lines.append(
                (
                    f"site {delivery.site} gets each event of site {delivery.origin} "
                    f"{len(delivery.paths)} times: {paths}",
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
                lines.append((f"from site {origin}: site(s) {sites}", "plain"))
    return lines


def topology_drawing(analysis: TopologyAnalysis) -> TopologyDrawing:
    """Every coordinate and line of text of the picture, computed once."""
    positions = _site_positions(analysis.sites)
    highlighted = analysis.duplicate_edges()
    arrows = []
    for edge in sorted(analysis.senders, key=lambda e: (e.site, e.remote)):
        data, label_x, label_y = _arrow_geometry(positions[edge.site], positions[edge.remote])
        arrows.append(
            SenderArrow(
                sender=edge.sender,
                site=edge.site,
                remote=edge.remote,
                path=data,
                label_x=_number(label_x),
                label_y=_number(label_y),
                on_duplicate_path=(edge.site, edge.remote) in highlighted,
            )
        )
    legend = tuple(
        TextLine(text, _number(LEGEND_TOP + index * LINE_HEIGHT), css_class)
        for index, (text, css_class) in enumerate(_legend_lines(analysis))
    )
    height = int(LEGEND_TOP + len(legend) * LINE_HEIGHT + 20)
    sites = ", ".join(str(site) for site in analysis.sites)
    verdict = (
        "supported (R23)"
        if analysis.supported
        else f"UNSUPPORTED (R23): {len(analysis.duplicates)} duplicate delivery(ies)"
    )
    return TopologyDrawing(
        width=WIDTH,
        height=height,
        title=f"WAN topology: sites {sites}; {len(analysis.senders)} sender(s)",
        verdict=verdict,
        supported=analysis.supported,
        sites=tuple(SiteMark(site, _number(x), _number(y)) for site, (x, y) in positions.items()),
        arrows=tuple(arrows),
        legend=legend,
    )


_TEMPLATE = """\
<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{{ d.width }}" height="{{ d.height }}" \
viewBox="0 0 {{ d.width }} {{ d.height }}" font-family="sans-serif" font-size="13">
  <title>{{ d.title }}</title>
  <style>
    .site { fill: #eef3fb; stroke: #34527a; stroke-width: 2; }
    .site-label { font-weight: bold; text-anchor: middle; dominant-baseline: central; }
    .arrow { fill: none; stroke: #5a6b80; stroke-width: 1.5; }
    .arrow.duplicate { stroke: #c62828; stroke-width: 3; }
    .sender { fill: #34527a; text-anchor: middle; dominant-baseline: central; }
    .sender.duplicate { fill: #c62828; font-weight: bold; }
    .verdict.ok { fill: #2e7d32; }
    .verdict.bad { fill: #c62828; }
    .head { font-weight: bold; }
    .duplicate-text { fill: #c62828; }
  </style>
  <defs>
    <marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" \
markerHeight="8" orient="auto-start-reverse">
      <path d="M 0 0 L 10 5 L 0 10 z" fill="#5a6b80"/>
    </marker>
    <marker id="head-duplicate" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" \
markerHeight="6" orient="auto-start-reverse">
      <path d="M 0 0 L 10 5 L 0 10 z" fill="#c62828"/>
    </marker>
  </defs>
  <text x="20" y="28" font-size="16" class="head">{{ d.title }}</text>
  <text x="20" y="50" class="verdict {{ 'ok' if d.supported else 'bad' }}">{{ d.verdict }}</text>
{%- for a in d.arrows %}
  <g class="sender-edge">
    <title>sender {{ a.sender }}: site {{ a.site }} to site {{ a.remote }}</title>
    <path class="arrow{{ ' duplicate' if a.on_duplicate_path }}" d="{{ a.path }}" \
marker-end="url(#{{ 'head-duplicate' if a.on_duplicate_path else 'head' }})"/>
    <text class="sender{{ ' duplicate' if a.on_duplicate_path }}" x="{{ a.label_x }}" \
y="{{ a.label_y }}">{{ a.sender }}</text>
  </g>
{%- endfor %}
{%- for s in d.sites %}
  <g class="site-node">
    <circle class="site" cx="{{ s.x }}" cy="{{ s.y }}" r="{{ site_radius }}"/>
    <text class="site-label" x="{{ s.x }}" y="{{ s.y }}">{{ s.site }}</text>
  </g>
{%- endfor %}
{%- for line in d.legend %}
  <text x="20" y="{{ line.y }}" class="{{ 'duplicate-text' if line.css_class == 'duplicate' \
else line.css_class }}">{{ line.text }}</text>
{%- endfor %}
</svg>
"""

_ENVIRONMENT = jinja2.Environment(
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


def render_topology_svg(analysis: TopologyAnalysis, names: object = None) -> str:
    """The SVG document (text); deterministic for a given analysis."""
    template = _ENVIRONMENT.from_string(_TEMPLATE)
    return template.render(d=topology_drawing(analysis), site_radius=SITE_RADIUS)
