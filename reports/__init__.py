"""Self-contained HTML reports: data computed from results (`report_data`), then
rendered (`render`, the SVG drawings, one Jinja2 template). Nothing here runs an engine."""
