"""The lab's own error types: every failure a user can act on says what happened and what to do."""

from __future__ import annotations


class LabError(Exception):
    """Something in the lab failed (QEMU, image build, SSH); the message says what to do next."""

    exit_code = 1


class LabInputError(LabError):
    """The request itself is wrong (unknown host, rail out of range, lab already running)."""

    exit_code = 2
