"""Prometheus HTTP API answers into typed results: ``/api/v1/targets`` and instant ``/api/v1/query`` vectors."""

from __future__ import annotations

import json

from pydantic import Field, ValidationError

from blueprints.model import Parsed
from validators.errors import parse_error
from validators.source import json_loads


class Target(Parsed):
    labels: dict[str, str] = Field(default_factory=dict)
    scrapeUrl: str = ""
    health: str = Field(description="up, down or unknown")
    lastError: str = ""


class Targets(Parsed):
    source: str
    active: tuple[Target, ...]

    @property
    def up_ratio(self) -> float | None:
        return sum(1 for t in self.active if t.health == "up") / len(self.active) if self.active else None


class Sample(Parsed):
    labels: dict[str, str]
    value: float


def _answer(text: str, source: str, what: str) -> dict[str, object]:
    try:
        doc = json_loads(text)
    except json.JSONDecodeError as exc:
        raise parse_error(source, what, f"(line {exc.lineno})", f"invalid JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or doc.get("status") != "success" or not isinstance(doc.get("data"), dict):
        shown = doc.get("error", doc.get("status")) if isinstance(doc, dict) else doc
        raise parse_error(source, what, "status", "expected a Prometheus API answer with status 'success' and data",
                          shown)
    data = doc["data"]
    assert isinstance(data, dict)
    return data


def parse_targets(text: str, source: str = "<targets.json>") -> Targets:
    data = _answer(text, source, "Prometheus /api/v1/targets")
    raw = data.get("activeTargets")
    if not isinstance(raw, list):
        raise parse_error(source, "Prometheus /api/v1/targets", "data.activeTargets", "expected a list", raw)
    try:
        return Targets(source=source, active=tuple(Target.model_validate(t) for t in raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise parse_error(source, "Prometheus /api/v1/targets", "data.activeTargets." +
                          ".".join(str(p) for p in first["loc"]), first["msg"].lower()) from None


def parse_vector(text: str, source: str = "<query.json>") -> tuple[Sample, ...]:
    data = _answer(text, source, "Prometheus /api/v1/query")
    if data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise parse_error(source, "Prometheus /api/v1/query", "data.resultType", "expected an instant vector",
                          data.get("resultType"))
    samples = []
    result: list[dict[str, object]] = data["result"]  # type: ignore[assignment]
    for i, item in enumerate(result):
        try:
            samples.append(Sample(labels=item["metric"], value=float(item["value"][1])))  # type: ignore[index]
        except (KeyError, IndexError, TypeError, ValueError):
            raise parse_error(source, "Prometheus /api/v1/query", f"data.result.{i}",
                              "expected {metric: {...}, value: [time, \"number\"]}", item) from None
    return tuple(samples)
