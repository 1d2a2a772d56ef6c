"""Benchmark: the NCCL busbw model (blueprints/planner/nccl_model.py) against published nccl-tests logs it was not
calibrated on; prints, per log, the predicted and the measured busbw and the error, then the error over all.

Run: `.venv/bin/python tests/bench_nccl_prediction.py`. The logs and the hardware behind each are
tests/fixtures/nccl/published/ (README.md: verbatim copies with their sources; hardware.yaml: nodes, GPUs, NICs).
The model's calibration is the maintainers' statements it cites (per-NIC figures, NVLS on 8 x H100), none of them
these logs. Measured: the out-of-place busbw of the log's largest size, read by clustersmith's own parser
(validators.nccl), which has to read every log here as published.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from blueprints.planner.nccl_model import NcclFabric, Predicted, allreduce_busbw  # noqa: E402
from validators.nccl import parse_nccl_file  # noqa: E402

PUBLISHED = REPO / "tests" / "fixtures" / "nccl" / "published"


@dataclass(frozen=True)
class Row:
    file: str
    fabric: str
    shape: str
    predicted: Predicted | None
    measured: float | None
    size: int | None
    why_not: str  # why the log is not held against the model ("" when it is)

    @property
    def error(self) -> float | None:
        if self.predicted is None or not self.measured:
            return None
        return (self.predicted.busbw - self.measured) / self.measured


def largest(path: Path) -> tuple[float, int]:
    """The out-of-place busbw at the log's largest size, and that size in bytes."""
    rows = [r for run in parse_nccl_file(path).runs for r in run.rows if r.out_of_place is not None]
    top = max(rows, key=lambda r: r.size)
    assert top.out_of_place is not None
    return top.out_of_place.busbw, top.size


def rows() -> list[Row]:
    out = []
    for entry in yaml.safe_load((PUBLISHED / "hardware.yaml").read_text(encoding="utf-8")):
        path = PUBLISHED / entry["file"]
        if not entry.get("evaluated", True):
            out.append(Row(entry["file"], "", "", None, None, None, entry["why"]))
            continue
        fabric = NcclFabric(nodes=entry["nodes"], gpus_per_node=entry["gpus_per_node"], nics=entry["nics"],
                            nic_gbit=entry["nic_gbit"], gpu=entry["gpu"])
        algorithm: Literal["auto", "ring"] = entry.get("algorithm", "auto")
        measured, size = largest(path)
        out.append(Row(entry["file"], entry["fabric"], f"{fabric.nodes} x {fabric.gpus_per_node} {fabric.gpu}",
                       allreduce_busbw(fabric, algorithm), measured, size, ""))
    return out


def main() -> int:
    table = rows()
    judged = [r for r in table if r.error is not None]
    print("| log | nodes x GPUs | fabric | largest size | measured busbw GB/s | predicted GB/s | error |")
    print("|---|---|---|---|---|---|---|")
    for r in judged:
        assert r.predicted is not None and r.measured is not None and r.size is not None and r.error is not None
        print(f"| `{r.file}` | {r.shape} | {r.fabric} | {r.size / 2**20:g} MiB | {r.measured:.2f} | "
              f"{r.predicted.busbw:.1f} | {r.error:+.1%} |")
    errors = [abs(r.error) for r in judged if r.error is not None]
    multi = [abs(r.error) for r in judged if r.error is not None and not r.shape.startswith(("1 ", "2 "))]
    print()
    print(f"{len(judged)} logs held against the model: mean absolute error {sum(errors) / len(errors):.1%}, "
          f"largest {max(errors):.1%}; on 3 nodes or more ({len(multi)} logs) {sum(multi) / len(multi):.1%}")
    for r in judged:
        assert r.predicted is not None
        print(f"  {r.file}: {r.predicted.formula}")
    print()
    for r in table:
        if r.why_not:
            print(f"not held against it: {r.file}: {r.why_not}")
        elif r.predicted is None:
            print(f"no prediction: {r.file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
