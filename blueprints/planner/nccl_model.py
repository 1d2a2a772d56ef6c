"""What nccl-tests' all_reduce should report as busbw at its largest sizes: a bandwidth model per algorithm.

nccl-tests defines busbw so that it compares with the bottleneck link (field-numbers 1.1: for all_reduce
``busbw = algbw x 2(n-1)/n``, from a ring's ``t = 2(n-1)/n x S/B``). At the sizes acceptance reads (2 GiB and up,
``NcclArgs.minbytes``) a step's latency is small beside its transfer, so this model keeps only the bandwidth term:

- one node: the NVLink domain's own figure: with NVLink SHARP (NVLS, 8-GPU NVSwitch baseboards) ~480 GB/s on 8 x
  H100 (nccl-tests#212, sjeaugey); none is published for other GPUs, so nothing is predicted there;
- two nodes: NCCL's tree (NVLSTree on H100) sends each byte over the network once where a ring sends it
  2(n-1)/n times, so busbw reaches ``2(n-1)/n x`` the nodes' network bandwidth ("an ideal case for the TREE
  protocol", nccl-tests#309; "two nodes Tree BusBW figures that exceed the theoretical limit of the network
  cards", nccl#812), capped by the NVLink figure where one is published;
- three nodes and more, or a ring forced (NCCL_ALGO=Ring): the network bandwidth of a node, its NICs x what NCCL
  carries through one NIC (ring or tree alike at these sizes), capped the same way.

What NCCL carries through one NIC is calibrated on the maintainers' statements, never on the logs that judge the
model (tests/bench_nccl_prediction.py, tests/fixtures/nccl/published/): 47 GB/s per 400G NIC (the middle of
"46-48GB/s per NIC" for NDR, nccl-tests#290, AddyLaddy), 24 GB/s per 200G ("perfect setups", nccl-tests#160,
sjeaugey), 12.2 GB/s per 100G ("as good as you can get", nccl-tests#29). Another speed gets 400G's share of its
line rate (94 %, derived). Not modelled: the latency term, which at thousands of ranks is no longer small beside a
2 GiB transfer (no per-step latency is published), so at that scale the figure is an upper bound; SHARP in the
switches (CollNet); a fabric that is not rail-optimised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GB = 1e9
# The most ranks of a published log held against the model (8 x 8 H100, tests/bench_nccl_prediction.py): beyond
# them the figure is said to be an upper bound.
EVALUATED_RANKS = 64
# NCCL's bandwidth through one NIC, GB/s, by line rate in Gb/s: the calibration (module docstring).
PER_NIC_BUSBW = {
    100: (12.2, "12.2 GB/s per 100G NIC (nccl-tests#29)"),
    200: (24.0, "24 GB/s per 200G NIC (nccl-tests#160)"),
    400: (47.0, "47 GB/s per 400G NIC (46-48, nccl-tests#290)"),
}
SHARE_OF_LINE = 47.0 / 50.0  # 400G's: what another speed is taken to carry (derived)
# The NVLink domain's all_reduce busbw on one 8-GPU NVSwitch baseboard with NVLS: measured on H100 (nccl-tests#212,
# sjeaugey); H200 has the same NVLink 4 and NVSwitch (catalog gpus.yaml). None is published for B200's NVLink 5.
NVLS_8GPU_BUSBW = {
    "H100-SXM": (480.0, "~480 GB/s on 8 x H100 with NVLS (nccl-tests#212)"),
    "H200": (480.0, "~480 GB/s on 8 GPUs with NVLS, as on H100's same NVLink 4 (nccl-tests#212)"),
}


@dataclass(frozen=True)
class NcclFabric:
    """What the model needs of a cluster: its shape and its inter-node NICs."""

    nodes: int
    gpus_per_node: int
    nics: int  # inter-node NICs per node (rails, EFA devices)
    nic_gbit: float  # line rate of one, Gb/s
    gpu: str  # the catalog's name (H100-SXM, H200, B200, A100, ...)


@dataclass(frozen=True)
class Predicted:
    busbw: float  # GB/s
    formula: str


def nic_busbw(gbit: float) -> tuple[float, str]:
    """What NCCL carries through one NIC of ``gbit`` Gb/s, GB/s, and where that figure comes from."""
    known = PER_NIC_BUSBW.get(round(gbit))
    if known is not None:
        return known
    share = gbit / 8 * SHARE_OF_LINE
    return share, f"{share:.4g} GB/s per {gbit:g}G NIC (400G's {SHARE_OF_LINE:.0%} of line rate, derived)"


def nvlink_busbw(f: NcclFabric) -> tuple[float, str] | None:
    """The NVLink domain's published all_reduce busbw for this node, or None where none is published."""
    return NVLS_8GPU_BUSBW.get(f.gpu) if f.gpus_per_node == 8 else None


def allreduce_busbw(f: NcclFabric, algorithm: Literal["auto", "ring"] = "auto") -> Predicted | None:
    """The busbw nccl-tests' all_reduce_perf should report at its largest sizes on ``f``, with its arithmetic, as
    NCCL picks its algorithm (``auto``) or with NCCL_ALGO=Ring; None where the model has no figure (one node of
    GPUs with no published NVLink figure, no network)."""
    intra = nvlink_busbw(f)
    if f.nodes <= 1:
        return None if intra is None else Predicted(intra[0], f"one node: {intra[1]}")
    if f.nics <= 0:
        return None
    per_nic, source = nic_busbw(f.nic_gbit)
    net = f.nics * per_nic
    ranks = f.nodes * f.gpus_per_node
    if f.nodes == 2 and algorithm == "auto":
        factor = 2 * (ranks - 1) / ranks
        figure = factor * net
        formula = (f"two nodes, tree: 2(n-1)/n = {factor:.4g} x {f.nics} NICs x {source} = {figure:.4g} GB/s "
                   f"(each byte crosses the network once)")
    else:
        figure = net
        formula = f"{f.nodes} nodes: {f.nics} NICs x {source} = {figure:.4g} GB/s"
    if intra is not None and intra[0] < figure:
        figure, formula = intra[0], f"{formula}, capped by the NVLink domain: {intra[1]}"
    if ranks > EVALUATED_RANKS:
        formula += (f"; an upper bound at {ranks} ranks, past the {EVALUATED_RANKS} of the published logs that "
                    "judged the model: per-step latency is not modelled")
    return Predicted(figure, formula)
