"""JUnit XML: one testcase per check. A miss is a <failure>, a setup error an <error>, a check that cannot apply
<skipped>; informational and warning results pass and carry their measure in <system-out>."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from blueprints.figures import plain
from validators.report.run import RunReport


def write_junit(report: RunReport, path: Path) -> Path:
    counts = report.counts
    suite = ET.Element("testsuite", {
        "name": f"clustersmith acceptance: {report.blueprint}", "tests": str(len(report.checks)),
        "failures": str(counts.get("fail", 0)), "errors": str(counts.get("setup_error", 0)),
        "skipped": str(counts.get("not_applicable", 0)), "time": f"{report.duration_s:.3f}",
        "timestamp": report.started,
    })
    props = ET.SubElement(suite, "properties")
    for name, value in (("spec_file", report.spec_file), ("results_dir", report.results_dir),
                        ("hosts", ",".join(report.hosts))):
        ET.SubElement(props, "property", {"name": name, "value": value})
    for c in report.checks:
        case = ET.SubElement(suite, "testcase", {"classname": f"{report.blueprint}.{c.tool}", "name": c.id,
                                                 "time": f"{c.duration_s:.3f}"})
        cprops = ET.SubElement(case, "properties")
        for name, value in (("measured", "" if c.measured is None else plain(c.measured)),
                            ("expected", f"{c.op} {plain(c.threshold)}"), ("unit", c.unit), ("severity", c.severity),
                            ("spec", ", ".join(report.spec_ref(s) for s in c.spec)), ("rule", c.rule),
                            ("coverage", c.coverage_shown), ("status", c.status)):
            ET.SubElement(cprops, "property", {"name": name, "value": value})
        lines = (f"{d.where}: {d.value} {d.unit} {d.note}".rstrip() for d in c.details)
        body = "\n".join([c.message, *c.notes, *lines])
        if c.status == "fail":
            ET.SubElement(case, "failure", {"message": c.message, "type": "threshold"}).text = body
        elif c.status == "setup_error":
            ET.SubElement(case, "error", {"message": c.message, "type": "setup"}).text = body
        elif c.status == "not_applicable":
            ET.SubElement(case, "skipped", {"message": c.message})
        else:
            ET.SubElement(case, "system-out").text = body
    ET.indent(suite)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    return path
