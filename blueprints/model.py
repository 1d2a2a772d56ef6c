"""The project's one base-model module: every pydantic model of blueprints, stacks and validators derives from one of
these, so a model's strictness is chosen by name here, never declared again module by module.

- ``Frozen``: what the project makes and passes on: the Blueprint and its parts, the roles' variables, the stacks'
  models, the validators' results. Frozen, so no layer changes what another planned or measured; extra fields are
  refused, so a hand-edited ``blueprint.yaml`` (or a typo in code) with a field the model lacks fails loudly.
- ``Strict``: what a person writes: the spec and the secrets store. The same configuration as ``Frozen`` today, kept
  as its own name because input and output models are different promises: input is checked against what a person
  may write and reported field by field (exit 2), output is the contract downstream reads. A rule meant for input
  only (say ``strict=True`` on types) goes here without touching the Blueprint.
- ``Parsed``: a document another program writes (Prometheus' API, ``ceph ... --format json``, fio's JSON): keys we do
  not read are ignored, so a newer tool version that adds fields still parses.
- ``Finite`` and ``ParsedFinite``: measurements read from a tool's text or JSON, where ``nan`` or ``inf`` (which
  Python's ``float()`` and ``json`` accept) is a broken run, not a number: refused when the model is built.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """What the project makes and passes on: immutable, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Strict(BaseModel):
    """What a person writes (the spec, the secrets store): immutable, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Parsed(Frozen):
    """A document another program writes: the fields it has and we do not read are ignored."""

    model_config = ConfigDict(extra="ignore")


class Finite(Frozen):
    """A measurement our code builds from a tool's text: ``nan`` and ``inf`` are refused."""

    model_config = ConfigDict(allow_inf_nan=False)


class ParsedFinite(Parsed):
    """Measurements in a document another program writes: unread fields ignored, ``nan`` and ``inf`` refused."""

    model_config = ConfigDict(allow_inf_nan=False)
