"""Horizontal bar charts as inline SVG: the failure policies compared, coverage counts,
bandwidth, events per site. The report's one bar chart.

Data first (`bar_chart` computes every coordinate as dataclasses), then one Jinja2
template with autoescaping (`render_chart_svg`), as `sequence_svg` and `topology_svg`.
A chart is sections of bars; each section has its own scale (its largest bar is
`BAR_PX` long), so measures of different sizes share one chart. Each bar's `<title>`
says its label and value (a tooltip, and what tests read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jinja2

from reports.escape import finalize

BAR_PX = 300  # the longest bar of a section
LABEL_PX = 200  # room for the bar labels
LABEL_CHARS = 30  # longer labels end with "…" (the full text in the bar's <title>)
BAR_ROW = 18
SECTION_HEAD = 28
WIDTH = LABEL_PX + BAR_PX + 90  # the numbers after the bars


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar: its label, value, length in px (0..BAR_PX) and top."""

    label: str
    value: int
    length: int
    y: int

    @property
    def short(self) -> str:
        cut = len(self.label) > LABEL_CHARS
        return self.label[: LABEL_CHARS - 1] + "…" if cut else self.label


@dataclass(frozen=True, slots=True)
class Section:
    title: str
    y: int  # its heading's baseline
    bars: tuple[Bar, ...]


@dataclass(frozen=True, slots=True)
class Chart:
    name: str  # its class in the page, e.g. "chart-policies"
    label: str  # what it shows (aria-label)
    width: int
    height: int
    sections: tuple[Section, ...]


def bar_chart(
    name: str, label: str, sections: Sequence[tuple[str, Sequence[tuple[str, int]]]]
) -> Chart:
    """A chart of (section title, [(bar label, value)...]) sections, each scaled alone;
    a section without a title has no heading."""
    drawn = []
    y = 0
    for title, values in sections:
        top = max((value for _, value in values), default=0) or 1
        head = SECTION_HEAD if title else 6
        bars = tuple(
            Bar(text, value, round(BAR_PX * value / top), y + head + i * BAR_ROW)
            for i, (text, value) in enumerate(values)
        )
        drawn.append(Section(title, y + 16, bars))
        y += head + len(values) * BAR_ROW
    return Chart(f"chart-{name}", label, WIDTH, y + 10, tuple(drawn))


_TEMPLATE = """\
<svg xmlns="http://www.w3.org/2000/svg" class="chart {{ c.name }}" width="{{ c.width }}" \
height="{{ c.height }}" viewBox="0 0 {{ c.width }} {{ c.height }}" role="img" \
aria-label="{{ c.label }}" font-family="sans-serif">
{% for s in c.sections %}{% if s.title %}<text x="0" y="{{ s.y }}" font-weight="bold" \
font-size="13">{{ s.title }}</text>
{% endif %}{% for b in s.bars %}<text x="0" y="{{ b.y + 12 }}" font-size="12">{{ b.short }}\
</text><rect x="{{ label_px }}" y="{{ b.y }}" width="{{ b.length }}" height="14" \
fill="#4a7bb7"><title>{{ s.title ~ ': ' if s.title }}{{ b.label }}: {{ b.value }}</title>\
</rect><text x="{{ label_px + 6 + b.length }}" y="{{ b.y + 12 }}" font-size="12">\
{{ "{:,}".format(b.value) }}</text>
{% endfor %}{% endfor %}</svg>
"""

_ENVIRONMENT = jinja2.Environment(
    autoescape=True, undefined=jinja2.StrictUndefined, finalize=finalize
)


def render_chart_svg(chart: Chart) -> str:
    return _ENVIRONMENT.from_string(_TEMPLATE).render(c=chart, label_px=LABEL_PX)
