"""The flow of shared/DESIGN.md, held against the real import graph (every import statement, also those inside
functions), not a text search: spec -> planner -> Blueprint -> renderers, stacks, roles' variables, validators.

- Only the front half reads the raw spec: ``blueprints.spec``, ``blueprints.loader``, the planner, and the CLI
  commands that chain them. Nothing downstream reaches ``blueprints.spec``, directly or through another module.
- Loading a Blueprint imports no planner code, and nothing downstream imports the planner.
- No import circles between modules, and no package imports another that sits above it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("blueprints", "stacks", "validators")
SPEC = "blueprints.spec"
# The modules that read the spec: the model, its loader, the planner and the commands that plan a spec.
READS_SPEC = ("blueprints.spec", "blueprints.loader", "blueprints.planner", "blueprints.cli", "blueprints.__main__")
# The Blueprint side of the contract: what stacks, roles' variables, renderers and validators may build on.
DOWNSTREAM = ("blueprints.model", "blueprints.blueprint", "blueprints.hosts", "blueprints.lab_plan",
              "blueprints.fleet_plan", "blueprints.traced", "blueprints.render", "blueprints.commands",
              "blueprints.progress", "blueprints.rolevars", "blueprints.explain", "blueprints.summary",
              "blueprints.summary_ceph", "blueprints.summary_costs", "blueprints.wiring", "stacks", "validators")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "guest" not in path.parts:  # files copied into the lab's guests, not imported here
                found[_module_name(path)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module an import names (``from a.b import c`` may name module a.b.c or a name in a.b)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # `from pkg import mod` depends on pkg.mod (the package's __init__ runs for any import below it)
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        for name in names:
            target = _resolve(name)
            if target is not None and target != module:
                found.add(target)
    return found


GRAPH = {m: _imports(m) for m in MODULES}


def _reach(start: str) -> dict[str, list[str]]:
    """Every module ``start`` imports, directly or not, with one import chain to it."""
    chains = {start: [start]}
    todo = [start]
    while todo:
        here = todo.pop()
        for nxt in sorted(GRAPH[here]):
            if nxt not in chains:
                chains[nxt] = [*chains[here], nxt]
                todo.append(nxt)
    return chains


def _in(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_graph_is_read() -> None:
    assert GRAPH["blueprints.planner"] >= {"blueprints.planner.storage", "blueprints.blueprint"}
    assert "blueprints.spec" in GRAPH["blueprints.loader"]
    assert "stacks.model" in GRAPH["stacks.aws"]


# The Blueprint package: the root model in blueprints.blueprint, one module per noun below it (the layer of
# blueprints.blueprint covers them all, and every one is downstream-importable like the root), and two modules the
# nouns and the root build on: a check's typed arguments (read through the acceptance noun) and the file's format.
BLUEPRINT_NOUNS = tuple(f"blueprints.blueprint.{n}" for n in (
    "compute", "fabric", "wiring", "qos", "nccl", "storage", "ceph", "shared_fs", "monitoring", "acceptance", "target",
    "costs"))
BLUEPRINT_PARTS = ("blueprints.blueprint.check_args", "blueprints.blueprint.format")


def test_the_blueprint_is_a_root_over_one_module_per_noun() -> None:
    assert sorted(m for m in MODULES if m.startswith("blueprints.blueprint.")) == sorted(
        BLUEPRINT_NOUNS + BLUEPRINT_PARTS)
    assert GRAPH["blueprints.blueprint"] >= {*BLUEPRINT_NOUNS, "blueprints.blueprint.format"}
    assert "blueprints.blueprint.check_args" in GRAPH["blueprints.blueprint.acceptance"]
    assert [m for m in BLUEPRINT_PARTS if "blueprints.blueprint" in GRAPH[m]] == []
    assert [m for m in BLUEPRINT_NOUNS if "blueprints.blueprint" in GRAPH[m]] == []  # a noun never imports the root
    assert "blueprints.model" in GRAPH["blueprints.blueprint.compute"]


# `python -m stacks`: the whole CLI, by design; `python -m validators.catalogue` plans the example specs to write the
# check catalogue in validators/README.md (a developer's command, as the golden tests plan them)
ENTRY_POINTS = ("stacks.__main__", "validators.__main__", "validators.catalogue.__main__")


@pytest.mark.parametrize("module", [m for m in MODULES if _in(m, DOWNSTREAM) and m not in ENTRY_POINTS])
def test_downstream_never_reaches_the_raw_spec_or_the_planner(module: str) -> None:
    chains = _reach(module)
    bad = [" -> ".join(chain) for target, chain in chains.items()
           if target == SPEC or _in(target, ("blueprints.planner", "blueprints.loader", "blueprints.cli"))]
    assert not bad, f"{module} depends on the spec side: " + "; ".join(bad)


def test_only_the_front_half_imports_the_spec() -> None:
    importers = sorted(m for m, deps in GRAPH.items() if SPEC in deps and not _in(m, READS_SPEC))
    assert importers == [], f"modules outside {READS_SPEC} import {SPEC}: {importers}"


def _cycles() -> Iterator[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()

    def visit(v: str) -> Iterator[list[str]]:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                yield from visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                yield sorted(component)

    for v in sorted(GRAPH):
        if v not in index:
            yield from visit(v)


def test_no_import_circles() -> None:
    assert list(_cycles()) == []


# Layers from the bottom: a module may import its own layer and those below it, never one above.
LAYERS = (
    ("blueprints.model",  # the one base-model module: every model of blueprints, stacks and validators builds on it
     "blueprints.errors", "blueprints.units", "blueprints.hosts", "blueprints.lab_plan", "blueprints.catalog",
     "blueprints.fleet_plan",  # the clouds' fleets, a part of the Blueprint in its own module like the lab plan
     "blueprints.signals",  # SIGINT/SIGTERM exit codes: the standard library only, installed before anything
     "blueprints.atomic",  # writing a file whole or not at all (temporary file, rename), for every writer
     "blueprints.textsafe",  # escaping user text for the generated files' formats
     "blueprints.figures",  # numbers without an exponent and counts with their noun, for every printed figure
     "blueprints.yamltext",  # YAML text of large documents, libyaml's layout
     "blueprints.subnets",  # the subnets the cloud stacks carve from the management network, checked by the planner
     "blueprints.yaml11",  # where YAML 1.1 reads a spec value otherwise than YAML 1.2, and merges in YAML's order
     "blueprints.traced",  # a planned value with its derived_from, for the Blueprint and the lab plan alike
     "blueprints.blueprint.check_args",  # a check's tool arguments, typed per tool family, for the Blueprint's checks
     "blueprints.blueprint.format",  # blueprint.yaml's format version and the refusal of an older one
     "blueprints.commands",  # the command registry: it finds stacks' and validators' commands by entry point
     "blueprints.progress"),  # a slow command's spinner on a terminal's stderr: rich only
    ("blueprints.spec", "blueprints.blueprint"),
    ("blueprints.loader", "blueprints.planner", "blueprints.rolevars", "blueprints.explain", "blueprints.summary",
     "blueprints.summary_ceph",  # plan's Ceph tables, read from the Blueprint like summary
     "blueprints.summary_costs",  # plan's costs table and its stale-price warnings, read from the Blueprint
     "blueprints.wiring",  # the cabling table and port names, expanded from the Blueprint like its hosts
     "blueprints.secrets"),  # the cluster secrets store: reads the Blueprint for the names that need a secret
    ("blueprints.render",),
    ("stacks", "validators"),
    ("blueprints.cli", "blueprints.__main__", "stacks.__main__", "validators.__main__",
     "validators.catalogue.__main__"),
)


def _layer(module: str) -> int:
    best, depth = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if _in(module, (p,)) and len(p) > depth:
                best, depth = i, len(p)
    assert best >= 0, f"{module} is in no layer of this test: add it to LAYERS"
    return best


def test_no_import_runs_upward() -> None:
    upward = sorted(f"{m} (layer {_layer(m)}) imports {d} (layer {_layer(d)})"
                    for m, deps in GRAPH.items() for d in deps if _layer(d) > _layer(m))
    assert upward == []


def test_blueprints_imports_neither_stacks_nor_validators() -> None:
    """Their commands are registered (pyproject's clustersmith.commands entry points), not imported."""
    found = sorted(f"{m} -> {d}" for m, deps in GRAPH.items() if _in(m, ("blueprints",))
                   for d in deps if _in(d, ("stacks", "validators")))
    assert found == []
