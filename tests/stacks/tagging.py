"""Assertions every target's stack test shares: labels on every labellable resource, no plaintext secret."""

from __future__ import annotations

import json
from typing import Any

from tests.stacks.mocks import CheckingMocks, _properties, plain, unwrap_secret

LABEL_INPUTS = ("tags", "labels")
GCP_LABEL_INPUTS = ("labels",)  # on GCP, `tags` are network tags; labels are the key/value metadata


def assert_every_resource_labelled(mocks: CheckingMocks, design: str, spec: str) -> None:
    """Each resource whose provider schema takes tags or labels carries the design and spec names."""
    checked = 0
    for r in mocks.resources:
        if r.args_cls is None:
            continue
        props = _properties(r.args_cls)
        keys = GCP_LABEL_INPUTS if r.typ.startswith("gcp:") else LABEL_INPUTS
        key = next((k for k in keys if k in props), None)
        if key is None:
            continue
        value = plain(r.inputs).get(key)
        assert value, f"{r.typ} {r.name}: no {key}"
        if isinstance(value, list) and all(isinstance(t, dict) and {"key", "value"} <= set(t) for t in value):
            value = {t["key"]: t["value"] for t in value}  # an Auto Scaling group's tags: key, value, propagate
        if isinstance(value, dict):
            got = set(value.values())
            assert design in got or design.replace("_", "-") in got, f"{r.typ} {r.name}: {key} {value}"
            assert any(spec.replace(".", "-") in v or spec in v for v in value.values()), \
                f"{r.typ} {r.name}: {key} {value} lacks the spec name"
        else:
            raise AssertionError(f"{r.typ} {r.name}: {key} is not a map: {value}")
        checked += 1
    maas_tags = [plain(r.inputs) for r in mocks.of_type("maas:index/tag:Tag")]
    if maas_tags:  # MAAS machines carry tags through Tag resources listing them
        machines = {f"{r.name}-id" for r in mocks.of_type("maas:index/instance:Instance")}
        names = [t["name"] for t in maas_tags]
        assert any(design in n for n in names) and any(spec.replace(".", "-") in n for n in names), names
        assert all(set(t["machines"]) == machines for t in maas_tags)
        checked += len(maas_tags)
    assert checked > 0


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def assert_no_plaintext_secret(mocks: CheckingMocks, outputs: dict[str, Any], secrets: list[str]) -> None:
    """Given secret values reach resources only wrapped as secrets; nothing looks like a private key or
    password; the stack outputs hold none of them."""
    for r in mocks.resources:
        for key, value in r.inputs.items():
            inner, secret = unwrap_secret(value)
            for s in _strings(inner):
                assert "PRIVATE KEY" not in s, f"{r.typ} {r.name}.{key} holds a private key"
                if s in secrets:
                    assert secret, f"{r.typ} {r.name}.{key} holds a secret in plain text"
        assert not any(k.lower() in ("adminpassword", "password") for k in r.inputs), f"{r.typ} sets a password"
    text = json.dumps(outputs)
    for s in secrets:
        assert s not in text, "a secret reached the stack outputs"
