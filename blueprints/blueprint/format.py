"""The format of blueprint.yaml, and the refusal of one an older clustersmith wrote.

Format 8: each storage tier carries the options weighed (``options``: server shape, protection, servers, raw, read
headroom, monthly cost, Pareto mark), whether cost or the rules chose (``decided_by``) and the price rows missing
(``unpriced``); a price row's unit may be ``each`` (a bought server at its list price).
Format 7: a check's ``predicted`` is a Prediction (the figure, and the spec's floor and gate: issue 41), where
format 6 held the figure alone.
Format 6: the Blueprint carries ``costs`` (each part's price from the price catalogue, or why it is unknown), and a
check its ``predicted`` figure.
Format 5: the FS-Cache check's counters are one set per kernel range (``args.counters``), where format 4 named one
set (``args.hits``, ``args.misses``) that only kernels 5.17-6.7 print.
Format 4: every size carries its unit (``65536B``): a bare number is no longer read as bytes (issue 43).
Format 3: each switch tier of the wiring plan carries its port speed (SONiC's PORT table is written from it).
Format 2: every check's ``args`` is typed, one model per tool family told apart by ``kind``
(blueprints.blueprint.check_args). Format 1 (no ``format`` field) held them as strings; nothing reads either any
more.
"""

from __future__ import annotations

from blueprints.errors import ClusterSmithError, Problem

BLUEPRINT_FORMAT = 8


def _old_args(data: dict[object, object]) -> bool:
    """Whether some check's arguments are in format 1's form: a dict of strings with no ``kind``."""
    acceptance = data.get("acceptance")
    checks = acceptance.get("checks") if isinstance(acceptance, dict) else None
    return isinstance(checks, list) and any(
        isinstance(c, dict) and isinstance(c.get("args"), dict) and "kind" not in c["args"] for c in checks)


def refuse_older(data: object, filename: str) -> None:
    """Raise the rebuild message where ``data`` (blueprint.yaml's document) was written by an older clustersmith:
    no ``format``, an older one, or check arguments in the old form."""
    if not isinstance(data, dict):
        return
    written = data.get("format")
    if isinstance(written, int) and not isinstance(written, bool) and written > BLUEPRINT_FORMAT:
        return  # a newer one: the model's own validation names what this version cannot read
    if written == BLUEPRINT_FORMAT and not _old_args(data):
        return
    seen = "no format field" if written is None else f"format {written!r}"
    if written == BLUEPRINT_FORMAT:
        seen += ", with check arguments in the old form (strings with no kind)"
    raise ClusterSmithError(
        [Problem("format", f"written by an older clustersmith ({seen}); this one reads format {BLUEPRINT_FORMAT}: "
                           "rebuild it with `clustersmith build`")], filename, "blueprint from an older clustersmith")
