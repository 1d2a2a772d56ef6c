"""A promtool test document split in two: the tests over hours of history with only the rule files they read.

promtool evaluates every rule of every loaded file at every step of every test: the baseline cases' twelve hours at
one step a minute (cases.BASELINE_STEP_S) cost the lab's document 8.6 of its 13 s of CPU with all four files loaded
and 2 s with the two their alerts read (2026-12-07). Each long test loads the files that define its alert (any file
of that name, so a second rule of the same name still counts) and every recording rule the alert reads, transitively;
a recording left out would keep an alert quiet, which the firing case of the same alert catches.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.promtool.cases import BASELINE_STEP_S

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def needed(folder: Path, rule_files: list[str], alerts: set[str]) -> list[str]:
    """The rule files (of ``rule_files``, relative to ``folder``) that ``alerts`` need: their own and those of every
    recording rule they read, transitively, in ``rule_files``' order."""
    records: dict[str, list[tuple[str, str]]] = {}
    todo: list[tuple[str, str]] = []
    for f in rule_files:
        for group in yaml.safe_load((folder / f).read_text())["groups"]:
            for rule in group["rules"]:
                if "record" in rule:
                    records.setdefault(rule["record"], []).append((f, rule["expr"]))
                elif rule["alert"] in alerts:
                    todo.append((f, rule["expr"]))
    files: set[str] = set()
    seen: set[str] = set()
    while todo:
        f, expr = todo.pop()
        files.add(f)
        for name in set(NAME.findall(expr)) & set(records) - seen:
            seen.add(name)
            todo += records[name]
    return [f for f in rule_files if f in files]


def by_length(doc: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
    """``doc`` as promtool documents: the tests at every rule file's pace, then (if any) the long ones with only the
    rule files their alerts read."""
    step = f"{BASELINE_STEP_S}s"
    long = [t for t in doc["tests"] if t["interval"] == step]
    short = {**doc, "tests": [t for t in doc["tests"] if t["interval"] != step]}
    if not long:
        return [short]
    alerts = {r["alertname"] for t in long for r in t["alert_rule_test"]}
    return [short, {**doc, "rule_files": needed(folder, doc["rule_files"], alerts), "tests": long}]
