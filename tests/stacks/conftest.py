"""Build Blueprints from the examples and construct their stacks under the checking mocks."""

from __future__ import annotations

import json
import runpy
import unittest.mock
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from blueprints.blueprint import Blueprint
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from stacks.config import StackConfig
from tests.stacks.mocks import CheckingMocks

REPO = Path(__file__).resolve().parents[2]
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBn0BfxSffF6Ok1XbVYVZVJZY8B3wNnvSlQDgJc3HQq1 clustersmith-test"


def blueprint_of(doc: dict[str, Any], spec_file: str = "examples/test.yaml") -> Blueprint:
    return plan(parse_requirements(yaml.safe_dump(doc, sort_keys=False)), spec_file=spec_file)


def example(name: str, **changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "examples" / name).read_text())
    for dotted, value in changes.items():
        node = doc
        *parents, last = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return doc


@dataclass
class Constructed:
    mocks: CheckingMocks
    outputs: dict[str, Any]


def construct(bp: Blueprint, cfg: StackConfig | None = None, config: dict[str, str] | None = None,
              secret_keys: list[str] | None = None, program_dir: Path | None = None) -> Constructed:
    """Run the stack program for ``bp`` under mocks; every resource's inputs are type-checked."""
    from stacks.program import build

    mocks = CheckingMocks()
    pulumi.runtime.set_mocks(mocks, project="clustersmith", stack=bp.name, preview=False)
    pulumi.runtime.set_all_config(config or {}, secret_keys or [])
    result: dict[str, Any] = {}

    @pulumi.runtime.test
    def go() -> pulumi.Output[Any]:
        cluster = build(bp, cfg or StackConfig(ssh_public_key=SSH_KEY), program_dir)
        return cluster.outputs.apply(lambda text: result.update(json.loads(text)))

    go()
    return Constructed(mocks, result)


def stack_config_file(pulumi_dir: Path) -> dict[str, str]:
    """The plain config the renderer wrote into Pulumi.<stack>.yaml."""
    (path,) = [p for p in pulumi_dir.glob("Pulumi.*.yaml") if p.name != "Pulumi.yaml"]
    data = yaml.safe_load(path.read_text()) or {}
    return {k: str(v) for k, v in (data.get("config") or {}).items()}


def run_program(pulumi_dir: Path, extra: dict[str, str] | None = None, secret_keys: list[str] | None = None,
                project: str = "clustersmith") -> Constructed:
    """Run the generated ``__main__.py`` under mocks with the stack's config file plus ``extra``; the value it
    exports as ``clustersmith`` is captured."""
    mocks = CheckingMocks()
    pulumi.runtime.set_mocks(mocks, project=project, stack=pulumi_dir.parent.name, preview=False)
    pulumi.runtime.set_all_config({**stack_config_file(pulumi_dir), **(extra or {})}, secret_keys or [])
    result: dict[str, Any] = {}
    exported: list[pulumi.Output[Any]] = []

    def capture(name: str, value: Any) -> None:
        assert name == "clustersmith"
        exported.append(pulumi.Output.from_input(value))

    @pulumi.runtime.test
    def go() -> pulumi.Output[Any]:
        with unittest.mock.patch.object(pulumi, "export", capture):
            runpy.run_path(str(pulumi_dir / "__main__.py"), run_name="__main__")
        assert len(exported) == 1, "the program must export the clustersmith output once"
        return exported[0].apply(lambda text: result.update(json.loads(text)))

    go()
    return Constructed(mocks, result)


@pytest.fixture(scope="session")
def built_examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`clustersmith build` of every example into one out folder."""
    from blueprints.cli import plan_file
    from blueprints.render import build

    out = tmp_path_factory.mktemp("out")
    for spec in sorted((REPO / "examples").glob("*.yaml")):
        build(plan_file(spec), out)
    return out


@pytest.fixture(scope="session")
def llm16k(built_examples: Path) -> Blueprint:
    from blueprints.blueprint import load_blueprint

    return load_blueprint(built_examples / "llm-training-16k")


@pytest.fixture(scope="session")
def llm16k_stack(built_examples: Path) -> Constructed:
    """The 16k-GPU example's generated program, constructed once for every AWS test."""
    return run_program(built_examples / "llm-training-16k" / "pulumi",
                       {"clustersmith:sshPublicKey": SSH_KEY, "clustersmith:adminCidr": "192.0.2.0/24"})
