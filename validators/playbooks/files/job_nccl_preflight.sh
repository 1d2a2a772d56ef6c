# Step nccl-preflight (validators/run/nccl.py): what nvidia-smi -L prints on this node and its exit status, into
# nccl/preflight/<host>.txt and .txt.rc. Spec: host.
step() {
    mkdir -p "$out/nccl/preflight"
    nvidia-smi -L > "$out/nccl/preflight/$host.txt" 2>&1 < /dev/null
    echo $? > "$out/nccl/preflight/$host.txt.rc"
    return 0
}
