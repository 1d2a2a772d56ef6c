"""``Traced``: a planned value with its ``derived_from`` (spec paths, planner rule, arithmetic).

Its own module, below the Blueprint, so the parts of the Blueprint that live in their own modules (the lab plan)
can carry traced values too.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import Field

from blueprints.model import Frozen

T = TypeVar("T")


class Provenance(Frozen):
    spec: tuple[str, ...] = Field(description="Spec paths the value was derived from")
    rule: str = Field(description="Planner rule that derived it")
    formula: str = Field(default="", description="The arithmetic, with the numbers used")


class Traced(Frozen, Generic[T]):
    value: T
    derived_from: Provenance


def traced(value: T, spec: tuple[str, ...] | list[str], rule: str, formula: str = "") -> Traced[T]:
    return Traced[T](value=value, derived_from=Provenance(spec=tuple(spec), rule=rule, formula=formula))
