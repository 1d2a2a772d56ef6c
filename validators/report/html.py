"""A self-contained HTML report: one card per check with measured, expected, unit, coverage, spec path and its
plots, each with the check's threshold drawn on it; failures first, then setup errors, warnings, the rest.

Everything is inline (CSS, SVG); nothing is fetched, so the file opens offline and can be attached to a ticket.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from blueprints.figures import plain
from validators.outcome import CheckResult, Reference, Series
from validators.report.run import RunReport
from validators.report.svg import chart

STATUS_ORDER = {"fail": 0, "setup_error": 1, "warn": 2, "info": 3, "not_applicable": 4, "pass": 5}
STATUS_COLOR = {"pass": "#2e7d32", "fail": "#c62828", "warn": "#ef6c00", "info": "#1565c0",
                "not_applicable": "#757575", "setup_error": "#6a1b9a"}
CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
h1{font-size:1.5em}.summary span{margin-right:1em}
.card{border:1px solid #ddd;border-radius:6px;padding:1em;margin:1em 0}
.badge{color:#fff;border-radius:4px;padding:2px 8px;font-weight:600;font-size:.85em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
.kv td:first-child{color:#555}.notes{color:#444}.plot{margin:.5em 1em .5em 0}
"""


def _scale(series: list[Series]) -> tuple[float, str]:
    top = max((y for s in series for _, y in s.points), default=0.0)
    for f, unit in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if top >= f:
            return f, unit
    return 1.0, "B/s"


def plots(c: CheckResult) -> list[str]:
    out = []
    by_kind: dict[str, list[Series]] = {}
    for s in c.series:
        by_kind.setdefault(s.kind, []).append(s)
    def refs(kind: str) -> tuple[Reference, ...]:
        return tuple(r for r in c.references if r.kind == kind)

    if "throughput" in by_kind:
        scale, unit = _scale(by_kind["throughput"])
        out.append(chart(by_kind["throughput"], f"{c.id}: throughput over time per client", "time (s)", unit,
                         scale, references=refs("throughput")))
    if "latency" in by_kind:
        out.append(chart(by_kind["latency"], f"{c.id}: completion latency percentiles", "percentile",
                         "latency (us, log scale)", log10_y=True, references=refs("latency")))
    if "busbw" in by_kind:
        out.append(chart(by_kind["busbw"], f"{c.id}: busbw versus message size", "message size", "busbw (GB/s)",
                         log2_x=True, references=refs("busbw")))
    return out


def _card(report: RunReport, c: CheckResult) -> str:
    measured = "—" if c.measured is None else plain(c.measured, 4)
    rows = [("measured", f"{measured} {escape(c.unit)}"), ("expected", f"{escape(c.op)} {plain(c.threshold)} "
                                                                      f"{escape(c.unit)}"),
            ("unit", escape(c.unit)), ("coverage", escape(c.coverage_shown)),
            ("spec", escape(", ".join(report.spec_ref(s) for s in c.spec))),
            ("rule", escape(c.rule)), ("derived", escape(c.formula)), ("severity", escape(c.severity)),
            ("scope", escape(c.scope))]
    kv = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    details = ""
    if c.details:
        body = "".join(f"<tr><td>{escape(d.where)}</td><td>{'—' if d.value is None else plain(d.value, 4)}</td>"
                       f"<td>{escape(d.unit)}</td><td>{escape(d.note)}</td></tr>" for d in c.details)
        head = "<tr><th>where</th><th>value</th><th>unit</th><th>note</th></tr>"
        details = f"<table class='details'>{head}{body}</table>"
    notes = "".join(f"<li>{escape(n)}</li>" for n in c.notes)
    color = STATUS_COLOR[c.status]
    return (f"<section class='card' id='{escape(c.id)}' data-status='{c.status}'>"
            f"<h2>{escape(c.id)} <span class='badge' style='background:{color}'>"
            f"{c.status.replace('_', ' ')}</span></h2>"
            f"<p>{escape(c.metric)} ({escape(c.tool)}): {escape(c.message)}</p>"
            f"<table class='kv'>{kv}</table>{details}"
            f"{f'<ul class=notes>{notes}</ul>' if notes else ''}{''.join(plots(c))}</section>")


def render_html(report: RunReport) -> str:
    counts = " ".join(f"<span><b>{n}</b> {escape(s.replace('_', ' '))}</span>"
                      for s, n in sorted(report.counts.items()))
    ordered = sorted(report.checks, key=lambda c: STATUS_ORDER[c.status])  # stable: plan order within a status
    cards = "\n".join(_card(report, c) for c in ordered)
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>Acceptance: {escape(report.blueprint)}</title><style>{CSS}</style></head><body>"
            f"<h1>Acceptance of {escape(report.blueprint)}</h1>"
            f"<p>Spec {escape(report.spec_file)}; started {escape(report.started)}; {report.duration_s:.0f} s; "
            f"hosts: {escape(', '.join(report.hosts) or 'from the results folder')}; results in "
            f"<code>{escape(report.results_dir)}</code>; exit code {report.exit_code}.</p>"
            f"<p class='summary'>{counts}</p>{cards}</body></html>\n")


def write_html(report: RunReport, path: Path) -> Path:
    path.write_text(render_html(report), encoding="utf-8")
    return path
