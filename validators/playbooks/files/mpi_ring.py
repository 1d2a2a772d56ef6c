#!/usr/bin/python3
"""A real MPI program that needs no compiler: Open MPI's C library called through ctypes (Python's standard library).

Every rank calls MPI_Init, learns its rank and the world size, joins one MPI_Allreduce (the sum of rank + 1 over all
ranks) and one ring exchange (MPI_Sendrecv: rank r sends r to r + 1 and receives r - 1), then prints one line that
the runner checks (validators.nccl_run.judge_launch_proof). Acceptance runs it on the lab, whose GPUs are emulated,
through the same mpirun command line, hostfile and rank placement as nccl-tests; it proves the launch and MPI's
bootstrap across the nodes, not NCCL or a GPU.

The handles are Open MPI's: MPI_COMM_WORLD, MPI_INT and MPI_SUM are the addresses of its predefined objects
(``ompi_mpi_comm_world``, ``ompi_mpi_int``, ``ompi_mpi_op_sum`` in mpi.h); MPI_STATUS_IGNORE is NULL.
"""

import ctypes
import os
import socket
import sys


def main() -> int:
    mpi = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libmpi.so.40", mode=ctypes.RTLD_GLOBAL)

    def handle(name: str) -> ctypes.c_void_p:
        return ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(mpi, name)))

    world, mpi_int, mpi_sum = handle("ompi_mpi_comm_world"), handle("ompi_mpi_int"), handle("ompi_mpi_op_sum")
    if mpi.MPI_Init(None, None) != 0:
        print("MPI_Init failed", file=sys.stderr)
        return 1
    rank, size = ctypes.c_int(), ctypes.c_int()
    mpi.MPI_Comm_rank(world, ctypes.byref(rank))
    mpi.MPI_Comm_size(world, ctypes.byref(size))
    mine, total = ctypes.c_int(rank.value + 1), ctypes.c_int(-1)
    rc = mpi.MPI_Allreduce(ctypes.byref(mine), ctypes.byref(total), 1, mpi_int, mpi_sum, world)
    token, got = ctypes.c_int(rank.value), ctypes.c_int(-1)
    right, left = (rank.value + 1) % size.value, (rank.value - 1) % size.value
    rc |= mpi.MPI_Sendrecv(ctypes.byref(token), 1, mpi_int, right, 7, ctypes.byref(got), 1, mpi_int, left, 7,
                           world, None)
    line = f"rank {rank.value} of {size.value} on {socket.gethostname()}: allreduce {total.value} ring {got.value}\n"
    os.write(1, line.encode())  # one write: mpirun --tag-output tags each chunk it reads, so print's separate
    # newline could arrive as its own chunk and leave the line ending in a bare "[1,0]<stdout>:" tag
    mpi.MPI_Finalize()
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
