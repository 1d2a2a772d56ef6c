# Step facts (validators/run/facts.py): the GPUs the NVIDIA driver exposes and the rdma role's record of each rail's
# device, into facts/<host>.json and facts/<host>.rdma.fact. Spec: host.
step() {
    mkdir -p "$out/facts"
    gpus=0
    for gpu in /proc/driver/nvidia/gpus/*; do
        [ -d "$gpu" ] && [ ! -L "$gpu" ] && gpus=$((gpus + 1))
    done
    printf '{"gpus": %d}\n' "$gpus" > "$out/facts/$host.json"
    record=/etc/ansible/facts.d/rdma.fact
    if [ -e "$record" ] && ! cp "$record" "$out/facts/$host.rdma.fact" 2> "$job_dir/cp.err"; then
        fail "Fetch the rails record of the rdma role" "$(exit_words 1 "$job_dir/cp.err")"
    fi
    return 0
}
