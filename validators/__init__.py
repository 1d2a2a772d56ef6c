"""Acceptance validators: run the Blueprint's acceptance checks on a cluster and judge them.

- parsers turn tool output into typed results (``fio``, ``nccl``, ``rdma`` for perftest, ``nvmeof``,
  ``qos``, ``monitoring``); each is usable on its own (``clustersmith parse TOOL FILE``);
- ``evaluate`` reads a results folder (written by the runner, or by hand) and judges every check
  against its threshold from the Blueprint;
- ``runner`` fans the tools out over the inventory with ansible-runner;
- ``report`` writes JUnit XML, JSON and a self-contained HTML report.

This package is the repository's ``validators``, not the PyPI package of the same name; a test keeps it so.
"""
