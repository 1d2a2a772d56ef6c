# Step nccl launches (validators/run/nccl.py; validators/nccl_run.py builds each command line): on each launcher, its
# launches one after another (mpirun or srun across the nodes), each one's output into a log and its exit status
# beside it, then the work folder (hostfile, the lab's key: playbooks/nccl.yml put them there) is removed. Spec: host,
# launcher_tool, workdir, timeout (s), runs (the number of launches), and for each launch n from 1: run_<n>_log,
# run_<n>_dest (its path in the results folder), run_<n>_argv (its words, quoted).
step() {
    if command -v "$launcher_tool" > /dev/null; then
        checked "Check that the launcher is installed" "$launcher_tool" --version
        ready=$?
    else
        fail "Check that the launcher is installed" "$launcher_tool: command not found"
        ready=1
    fi
    n=1
    while [ "$ready" -eq 0 ] && [ "$n" -le "$runs" ]; do
        eval "log=\$run_${n}_log dest=\$run_${n}_dest argv=\$run_${n}_argv"
        eval "set -- $argv"
        timeout -k "$kill_after_s" "$timeout" "$@" > "$workdir/$log" 2>&1 < /dev/null
        echo $? > "$workdir/$log.rc"
        mkdir -p "$out/$(dirname "$dest")"
        cp "$workdir/$log" "$out/$dest" && cp "$workdir/$log.rc" "$out/$dest.rc"
        n=$((n + 1))
    done
    rm -rf "$workdir"
    return 0
}
