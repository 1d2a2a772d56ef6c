"""How the kernel's NVMe-oF sysfs attributes read (drivers/nvme/host/sysfs.c), shared by the role's modules."""

from __future__ import annotations

from pathlib import Path


def read_attribute(path: Path) -> str:
    """A sysfs attribute's text, stripped; empty when it cannot be read (absent, or its controller just went)."""
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def parse_address(text: str) -> dict[str, str]:
    """``address`` of a controller or ``Address`` of nvme list-subsys: ``traddr=...,trsvcid=...[,src_addr=...]``."""
    out = {}
    for part in text.strip().replace(" ", ",").split(","):
        key, _, value = part.partition("=")
        if key:
            out[key.strip()] = value.strip()
    return out


def parse_timer(text: str) -> int | None:
    """``ctrl_loss_tmo``/``fast_io_fail_tmo`` read ``off`` for -1; unreadable or absent: None."""
    text = text.strip()
    if text == "off":
        return -1
    try:
        return int(text)
    except ValueError:
        return None
