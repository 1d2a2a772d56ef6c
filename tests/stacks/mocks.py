"""Pulumi engine mocks (``pulumi.runtime.set_mocks``) that check every resource's inputs against the
provider SDK's own type annotations, and record what the program registered.

The Pulumi Python SDK does not check argument types at run time, so a mistyped argument (an int where
the provider takes a string, a string where it takes a list, a misspelt nested key) would only fail at
``pulumi up``. ``check_inputs`` resolves the resource's ``<Name>Args`` class from the type token through
the SDK's resource-module registry and checks each input value, recursively, against the annotation.
Values arrive as JSON: numbers are floats, so an integer field accepts a float with no fraction.
"""

from __future__ import annotations

import collections.abc
import enum
import importlib
import typing
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi import _types as ptypes
from pulumi.runtime import rpc

SECRET_SIG = rpc._special_secret_sig  # the wire marker of a secret value
SIG_KEY = rpc._special_sig_key


class InputTypeError(TypeError):
    """A resource input does not match the provider's declared type."""


@dataclass
class Registered:
    typ: str
    name: str
    inputs: dict[str, Any]
    provider: str
    args_cls: type | None


def unwrap_secret(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dict) and value.get(SIG_KEY) == SECRET_SIG:
        return value.get("value"), True
    return value, False


def plain(value: Any) -> Any:
    """The value with every secret marker removed (for assertions)."""
    value, _ = unwrap_secret(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def args_class(typ: str) -> type | None:
    """The SDK's ``<Name>Args`` class for a type token such as ``aws:ec2/instance:Instance``."""
    if typ.startswith("pulumi:providers:"):
        pkg = typ.removeprefix("pulumi:providers:")
        module = importlib.import_module(f"pulumi_{pkg.replace('-', '_')}")
        return typing.cast(type, module.ProviderArgs)
    pkg, mod, _ = typ.split(":")
    registered = rpc.get_resource_module(pkg, mod, "")
    if registered is None:
        raise InputTypeError(f"{typ}: no SDK module registered for it (is the provider package imported?)")
    info = registered.mod_info  # type: ignore[attr-defined]
    cls_name = info["classes"][typ]
    try:
        module = importlib.import_module(info["fqn"])
    except SyntaxError:  # pulumi-maas 1.0.3 registers its modules as "pulumi-maas", not an importable name
        module = importlib.import_module(f"pulumi_{pkg.replace('-', '_')}")
    resource = getattr(module, cls_name)
    return typing.cast(type, getattr(importlib.import_module(resource.__module__), f"{cls_name}Args"))


_HINTS: dict[type, dict[str, Any]] = {}
_PULUMI_NAMES = {**vars(pulumi.output), "Output": pulumi.Output}  # what Input[T] forward-refers to


def _properties(cls: type) -> dict[str, Any]:
    """Pulumi name -> annotation of an input type's properties."""
    if cls not in _HINTS:
        names = ptypes.input_type_py_to_pulumi_names(cls)
        hints: dict[str, Any] = {}
        for py_name, pulumi_name in names.items():
            getter = getattr(cls, py_name).fget
            module = vars(importlib.import_module(cls.__module__))
            hints[pulumi_name] = typing.get_type_hints(getter, globalns=module, localns=_PULUMI_NAMES)["return"]
        _HINTS[cls] = hints
    return _HINTS[cls]


def _matches(value: Any, hint: Any, path: str, errors: list[str]) -> bool:
    """Whether ``value`` fits ``hint``; on a definite mismatch inside a structure, record why."""
    value, _ = unwrap_secret(value)
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        members = [a for a in typing.get_args(hint)
                   if typing.get_origin(a) not in (collections.abc.Awaitable, pulumi.Output) and a is not pulumi.Output]
        trial: list[list[str]] = []
        for a in members:
            errs: list[str] = []
            if _matches(value, a, path, errs):
                return True
            trial.append(errs)
        deepest = max(trial, key=len) if trial else []
        errors.extend(deepest)
        return False
    if hint is type(None):
        return value is None
    if hint is str:
        return isinstance(value, str)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer()
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if origin in (list, collections.abc.Sequence, typing.Sequence):
        if not isinstance(value, list):
            return False
        (elem,) = typing.get_args(hint) or (Any,)
        ok = True
        for i, v in enumerate(value):
            if not _matches(v, elem, f"{path}[{i}]", errors):
                errors.append(f"{path}[{i}]: {v!r} is not {_show(elem)}")
                ok = False
        return ok
    if origin in (dict, collections.abc.Mapping, typing.Mapping):
        if not isinstance(value, dict):
            return False
        _, val = typing.get_args(hint) or (str, Any)
        return all(_matches(v, val, f"{path}.{k}", errors) for k, v in value.items())
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return isinstance(value, str) and value in {e.value for e in hint}
    if isinstance(hint, type) and ptypes.is_input_type(hint):
        if not isinstance(value, dict):
            return False
        return _check_object(value, hint, path, errors)
    if isinstance(hint, typing.ForwardRef | str):
        return True  # an unresolvable forward reference: nothing to check against
    return True


def _check_object(value: dict[str, Any], cls: type, path: str, errors: list[str]) -> bool:
    props = _properties(cls)
    ok = True
    for key, v in value.items():
        where = f"{path}.{key}" if path else key
        if key not in props:
            errors.append(f"{where}: not an input of {cls.__name__} (known: {', '.join(sorted(props))})")
            ok = False
            continue
        if v is None:
            continue
        if not _matches(v, props[key], where, errors):
            errors.append(f"{where}: {v!r} is not {_show(props[key])}")
            ok = False
    return ok


def _show(hint: Any) -> str:
    return str(hint).replace("typing.", "").replace("pulumi.output.", "")


def check_inputs(typ: str, inputs: dict[str, Any]) -> type | None:
    """Raise InputTypeError listing every input of the resource that does not fit its declared type."""
    cls = args_class(typ)
    if cls is None:
        return None
    errors: list[str] = []
    _check_object(inputs, cls, "", errors)
    if errors:
        raise InputTypeError(f"{typ}: " + "; ".join(dict.fromkeys(errors)))
    return cls


# outputs the providers compute, filled in deterministically so exported values resolve
def _fake_outputs(typ: str, name: str, n: int, inputs: dict[str, Any]) -> dict[str, Any]:
    out = dict(inputs)
    ip = f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"
    if typ.startswith("gcp:compute/"):
        out.setdefault("selfLink", f"https://www.googleapis.com/compute/v1/projects/p/{name}")
    if typ == "aws:ec2/instance:Instance":
        out["privateIp"] = ip
    elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
        out["latestVersion"] = 1
    elif typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
        out.update(dnsName=f"fs-{n}.fsx.example", mountName="abcdef")
    elif typ == "gcp:compute/instance:Instance":
        out["networkInterfaces"] = [dict(ni, networkIp=f"10.{100 + i}.{(n >> 8) & 255}.{n & 255}")
                                    for i, ni in enumerate(inputs.get("networkInterfaces", []))]
    elif typ == "gcp:lustre/instance:Instance":
        out["mountPoint"] = f"10.250.0.2@tcp:/{inputs.get('filesystem')}"
    elif typ == "azure-native:network:NetworkInterface":
        out["ipConfigurations"] = [dict(c, privateIPAddress=ip) for c in inputs.get("ipConfigurations", [])]
    elif typ == "azure-native:storagecache:AmlFilesystem":
        out["clientInfo"] = {"mgsAddress": "10.1.0.4", "mountCommand": "mount -t lustre 10.1.0.4@tcp:/lustrefs /x"}
    elif typ == "maas:index/instance:Instance":
        out.update(ipAddresses=[ip], hostname=name, fqdn=f"{name}.maas")
    return out


@dataclass
class CheckingMocks(pulumi.runtime.Mocks):
    resources: list[Registered] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        cls = check_inputs(args.typ, args.inputs) if args.custom else None  # components have no provider schema
        self.resources.append(Registered(args.typ, args.name, args.inputs, args.provider, cls))
        n = len(self.resources)
        outputs = _fake_outputs(args.typ, args.name, n, args.inputs)
        if cls is not None and "name" in _properties(cls) and "name" not in outputs:
            outputs["name"] = f"{args.name}-0000001"  # the engine's auto-naming: logical name plus a suffix
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        self.calls.append((args.token, args.args))
        if args.token == "aws:ec2/getAmi:getAmi":
            return {"id": "ami-0123456789abcdef0", "name": "Deep Learning Base"}
        return {}

    def of_type(self, typ: str) -> list[Registered]:
        return [r for r in self.resources if r.typ == typ]
