"""Typed variables each Ansible role receives, built from the Blueprint.

One module per role (``rdma``, ``nvmeof``, ...). Each defines a ``RoleVars`` subclass whose fields carry
the role prefix (``rdma_*``) and a description, and a function ``role_vars(bp) -> dict[group, vars]``
saying which inventory group gets which values. The ansible renderer writes them to
``group_vars/<group>/<role>.yml``; ``argument_spec()`` turns the same model into the role's
``meta/argument_specs.yml``, so the role's input validation and the Blueprint cannot drift.
"""

from __future__ import annotations

import importlib
import pkgutil
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo

from blueprints.blueprint import Blueprint

Group = typing.Literal["all", "storage_targets", "gpu_clients", "monitoring"]


class RoleVars(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ROLE: ClassVar[str]


RoleVarsBuilder = Callable[[Blueprint], dict[Group, RoleVars]]


def builders() -> dict[str, RoleVarsBuilder]:
    """Every role module in this package that exposes ``role_vars``, by role name."""
    found: dict[str, RoleVarsBuilder] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        fn = getattr(module, "role_vars", None)
        if callable(fn):
            found[info.name] = fn
    return found


_SCALARS: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool"}


def _option(annotation: Any, field: FieldInfo | None) -> dict[str, Any]:
    opt: dict[str, Any] = {}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _option(args[0], field)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        opt = _option(rest[0], field) if len(rest) == 1 else {"type": "raw"}
    elif origin is typing.Literal:
        opt = {"type": _SCALARS.get(type(args[0]), "raw"), "choices": list(args)}
    elif origin in (list, tuple):
        elem = args[0] if args else Any
        opt = {"type": "list"}
        inner = _option(elem, None)
        opt["elements"] = inner["type"]
        if "options" in inner:
            opt["options"] = inner["options"]
        if "choices" in inner:
            opt["choices"] = inner["choices"]
    elif origin is dict:
        opt = {"type": "dict"}
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        opt = {"type": "dict", "options": _options(annotation)}
    else:
        opt = {"type": _SCALARS.get(annotation, "raw")}
    if field is not None:
        if field.description:
            opt["description"] = field.description
        if field.is_required():
            opt["required"] = True
    return opt


def _options(model: type[BaseModel]) -> dict[str, Any]:
    return {name: _option(f.annotation, f) for name, f in model.model_fields.items()}


def argument_spec(model: type[RoleVars], short: str) -> dict[str, Any]:
    """``meta/argument_specs.yml`` content for the role's main entry point."""
    return {"argument_specs": {"main": {"short_description": short, "options": _options(model)}}}
