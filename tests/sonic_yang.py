"""Validate a SONiC config_db.json fragment against SONiC's own YANG models, the way SONiC checks a configuration.

    .venv/bin/python tests/sonic_yang.py OUT/<cluster>/switch/sonic-*-config_db.json ...

SONiC keeps its configuration in Redis tables (config_db.json) and describes them in YANG (sonic-buildimage
src/sonic-yang-models); its own tools (sonic-utilities' YANG validation, sonic_yang_ext) translate each table into
YANG instance data and let libyang judge it. This module does the same: the models are SONiC's, vendored under
tests/fixtures/sonic_yang/ (SOURCE.md says from which commit), the schema walk is pyang's (PyPI), and the judge is
libyang's own `yanglint` (Debian libyang2-tools), which evaluates every `must`, `when`, leafref, range and pattern.
yangson (PyPI) was tried first and cannot load sonic-port: it does not implement XPath's ``text()`` node test, which
the port's ``adv_speeds`` rule uses.

The translation follows sonic_yang_ext (sonic-buildimage src/sonic-yang-mgmt/sonic_yang_ext.py): table ``T`` is the
container ``T`` inside the top container of the module that defines it; a row's key, split at ``|``, fills the keys
of the table's list that has as many (a row whose key names a container of the table, as DEVICE_METADATA's
``localhost``, fills that container); a field is the list's leaf of that name, typed from the model (config_db holds
every value as a string), or, where the list holds a nested list (the maps, CABLE_LENGTH), one entry of it.
A table no vendored model defines is an error: nothing goes unchecked.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pyang import context, repository  # type: ignore[import-untyped]

from blueprints.render.switch_sonic import SONIC_PORT

MODELS = Path(__file__).resolve().parent / "fixtures" / "sonic_yang"
INTEGER = re.compile(r"u?int(8|16|32|64)")


@dataclass(frozen=True)
class Table:
    module: str  # the module whose top container holds the table's container
    lists: tuple[Any, ...]  # the table's list statements (pyang), e.g. QUEUE_LIST and VOQ_QUEUE_LIST
    containers: dict[str, Any]  # rows with a fixed key are containers (DEVICE_METADATA|localhost)


@cache
def schema() -> dict[str, Table]:
    """Every table the vendored models define, by its config_db name."""
    ctx = context.Context(repository.FileRepository(str(MODELS), use_env=False))
    modules = [ctx.add_module(str(path), path.read_text(encoding="utf-8")) for path in sorted(MODELS.glob("*.yang"))]
    ctx.validate()
    problems = [f"{pos}: {tag}" for pos, tag, _ in ctx.errors if tag not in ("UNUSED_IMPORT", "UNUSED_TYPEDEF")
                and not tag.startswith("LONG_")]
    if any(not m for m in modules) or problems:
        raise SystemExit(f"the vendored SONiC models do not load: {problems[:5]}")
    tables: dict[str, Table] = {}
    for module in modules:
        for top in module.i_children:
            for table in getattr(top, "i_children", []):
                if table.keyword == "container":
                    lists = tuple(c for c in table.i_children if c.keyword == "list")
                    containers = {c.arg: c for c in table.i_children if c.keyword == "container"}
                    tables[table.arg] = Table(module.arg, lists, containers)
    return tables


def base_type(leaf: Any) -> list[str]:
    """The built-in types a leaf's value may take (a union's members, typedefs followed)."""
    def walk(type_stmt: Any) -> list[str]:
        if type_stmt.arg == "union":
            return [t for member in type_stmt.search("type") for t in walk(member)]
        typedef = getattr(type_stmt, "i_typedef", None)
        if typedef is not None:
            return walk(typedef.search_one("type"))
        return [type_stmt.arg.split(":")[-1]]
    return walk(leaf.search_one("type"))


def value(leaf: Any, text: str) -> Any:
    """A config_db string as the leaf's YANG type writes it in JSON (RFC 7951: integers up to 32 bits as numbers,
    64-bit ones as strings, booleans as true/false)."""
    types = base_type(leaf)
    if types and all(INTEGER.fullmatch(t) and not t.endswith("64") for t in types) and re.fullmatch(r"-?\d+", text):
        return int(text)
    if types == ["boolean"] and text in ("true", "false"):
        return text == "true"
    return text


def children(stmt: Any) -> dict[str, Any]:
    return {c.arg: c for c in stmt.i_children}


def leaf(parent: Any, table: str, key: str, field: str) -> Any:
    found = children(parent).get(field)
    if found is None or found.keyword != "leaf":
        raise SystemExit(f"table {table}: row {key!r} field {field!r} is not in SONiC's model")
    return found


def rows(table: str, entries: dict[str, dict[str, str]]) -> tuple[str, dict[str, Any]]:
    """One config_db table as (module name, the table's container as YANG JSON)."""
    found = schema().get(table)
    if found is None:
        raise SystemExit(f"table {table}: no vendored SONiC model defines it (add its module to {MODELS})")
    out: dict[str, Any] = {}
    for key, fields in entries.items():
        if key in found.containers:
            out[key] = {f: value(leaf(found.containers[key], table, key, f), t) for f, t in fields.items()}
            continue
        parts = key.split("|")
        lst = next((x for x in found.lists if len(x.search_one("key").arg.split()) == len(parts)), None)
        if lst is None:
            raise SystemExit(f"table {table}: key {key!r} has {len(parts)} part(s); no list of its model has as many")
        names = lst.search_one("key").arg.split()
        kids = children(lst)
        row: dict[str, Any] = {n: value(kids[n], p) for n, p in zip(names, parts, strict=True)}
        nested = [c for c in lst.i_children if c.keyword == "list"]
        for field, text in fields.items():
            if field in kids and kids[field].keyword == "leaf":
                row[field] = value(kids[field], text)
            elif field in kids and kids[field].keyword == "leaf-list":
                row[field] = [value(kids[field], t) for t in text.split(",")]
            elif len(nested) == 1:  # a map: each field is one entry of the nested list, keyed by the field
                inner = nested[0]
                inner_key = inner.search_one("key").arg
                inner_leaf = next(c for c in inner.i_children if c.keyword == "leaf" and c.arg != inner_key)
                row.setdefault(inner.arg, []).append({inner_key: value(children(inner)[inner_key], field),
                                                      inner_leaf.arg: value(inner_leaf, text)})
            else:
                raise SystemExit(f"table {table}: row {key!r} field {field!r} is not in SONiC's model {found.module}")
        out.setdefault(lst.arg, []).append(row)
    return found.module, {table: out}


def instance(config_db: dict[str, dict[str, dict[str, str]]]) -> dict[str, Any]:
    """A config_db fragment as YANG instance data (RFC 7951 JSON), one top container per module."""
    data: dict[str, dict[str, Any]] = {}
    for table, entries in config_db.items():
        module, container = rows(table, entries)
        data.setdefault(f"{module}:{module}", {}).update(container)
    return data


def yanglint(data: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """libyang's verdict on the instance data, every vendored model loaded (leafrefs cross modules)."""
    tool = shutil.which("yanglint")
    if tool is None:
        raise FileNotFoundError("yanglint (Debian package libyang2-tools)")
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="sonic-instance-") as f:
        json.dump(data, f, indent=1)
        f.flush()
        models = sorted(str(p) for p in MODELS.glob("*.yang"))
        return subprocess.run([tool, "-i", "-p", str(MODELS), "-t", "config", *models, f.name],
                              capture_output=True, text=True, check=False)


def filled_in(config_db: dict[str, Any]) -> dict[str, Any]:
    """A fragment whose RoCE-facing port is the ``<ROCE_PORT>`` placeholder (no wiring plan names the switch's ports),
    as its user fills it in: the placeholder replaced by a port of the user's switch, here SONiC's Ethernet0, and that
    port's PORT row, as every config_db has one (lanes and speed of a 100G port of the SONiC sample port_config.ini)."""
    if SONIC_PORT not in json.dumps(config_db):
        return config_db
    filled = json.loads(json.dumps(config_db).replace(SONIC_PORT, "Ethernet0"))
    return {"PORT": {"Ethernet0": {"lanes": "0,1,2,3", "speed": "100000"}}} | filled


def problems(done: subprocess.CompletedProcess[str]) -> list[str]:
    """Every line yanglint printed but libyang 2.1's note at exit that a string outlived its dictionary (an internal
    reference count, printed after a successful validation too); a check it skipped is a problem, as a refusal is."""
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if line.strip() and "not freed from the dictionary" not in line]
    return lines or ([f"yanglint exited {done.returncode}"] if done.returncode else [])


def check(path: Path) -> list[str]:
    """What libyang refused in one config_db.json fragment; empty when it holds."""
    data = filled_in(json.loads(path.read_text(encoding="utf-8")))
    return [f"{path}: {line}" for line in problems(yanglint(instance(data)))]


def main(argv: list[str]) -> int:
    problems = [p for a in argv for p in check(Path(a))]
    print("\n".join(problems) or f"SONiC YANG (libyang): {len(argv)} config_db fragment(s): passed")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
