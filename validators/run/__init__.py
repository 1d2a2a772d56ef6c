"""The acceptance runner, one module per tool: it fans the tools out over the inventory with ansible-runner and fills
a results folder that the parsers read.

- ``plumbing``: the :class:`Session` every step shares (its plays and host jobs over the step's own inventory group,
  in shards side by side, the hosts' outcomes, setup errors, notes, the files it writes);
- ``jobs``: host jobs, a step's work on every host in one or two raw calls (start, collect once), and what the runner
  takes from a host's archive;
- ``facts``: GPUs and the rdma role's record per host; ``ceph``: the cluster's own account on one monitor host;
  ``fio``: the workloads on every client at once;
  ``perftest``: ib_write_bw pairs on the compute and storage fabrics; ``probe``: NVMe-oF paths, QoS layers,
  Prometheus.

Each step's host job (``validators/playbooks/files/job_<step>.sh``) or playbook writes what the tool said to files
on the host, which come back into the results folder; no Python reads a task's result by its name. A step plugs in as
a module here with a function taking the :class:`Session` (and the checks it serves), which runs its job through
:meth:`Session.job` (or a playbook through :meth:`Session.play`), leaves its output where :mod:`validators.results`
reads it, and records a host where the tool could not run with :meth:`Session.record` or
:meth:`Session.setup_error`; ``validators.accept`` calls it.
"""
