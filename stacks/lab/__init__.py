"""The ``lab`` target: a local QEMU lab booted from a Blueprint's ``LabPlan``.

>>> lab = Lab(plan, "demo", Path("out/demo"))   # doctest: +SKIP
>>> lab.up()                                     # doctest: +SKIP
"""

from stacks.lab.errors import LabError, LabInputError
from stacks.lab.lab import Lab
from stacks.lab.progress import Progress, ProgressEvent
from stacks.lab.state import LabStatus

__all__ = ["Lab", "LabError", "LabInputError", "LabStatus", "Progress", "ProgressEvent"]
