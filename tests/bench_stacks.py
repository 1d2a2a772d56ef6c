"""Benchmark: construct the 16k-GPU example's AWS stack under the checking mocks and print figures.

    .venv/bin/python tests/bench_stacks.py [--gpus N]

Prints wall and CPU seconds for planning and for constructing (every resource's inputs type-checked),
the resources registered, resources per CPU second and the peak resident memory. Not run by pytest.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from stacks.config import StackConfig
from tests.stacks.conftest import SSH_KEY, blueprint_of, construct, example


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=16384, help="GPUs in the llm-training-16k example")
    args = parser.parse_args()
    doc = example("llm-training-16k.yaml", compute__gpus=args.gpus)
    t0, c0 = time.perf_counter(), time.process_time()
    bp = blueprint_of(doc, "examples/llm-training-16k.yaml")
    t1, c1 = time.perf_counter(), time.process_time()
    built = construct(bp, StackConfig(ssh_public_key=SSH_KEY))
    t2, c2 = time.perf_counter(), time.process_time()
    count = Counter(r.typ for r in built.mocks.resources)
    total = len(built.mocks.resources)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"gpus                     {args.gpus}")
    print(f"plan                     {t1 - t0:8.2f} s wall  {c1 - c0:8.2f} s cpu")
    print(f"construct under mocks    {t2 - t1:8.2f} s wall  {c2 - c1:8.2f} s cpu")
    print(f"resources registered     {total}  ({count['aws:ec2/instance:Instance']} instances)")
    print(f"resources per cpu second {total / max(c2 - c1, 1e-9):8.1f}")
    print(f"hosts in the output      {len(built.outputs['hosts'])}")
    print(f"peak RSS                 {peak_mib:8.0f} MiB")


if __name__ == "__main__":
    main()
