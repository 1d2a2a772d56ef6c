# Step cleanup (validators/run/fio.py): remove the scratch files acceptance wrote, and only those:
# clustersmith-accept.<host>.* in each scratch directory the run wrote in. Spec: host, targets (one per line).
step() {
    printf '%s\n' "$targets" | while IFS= read -r target; do
        [ -n "$target" ] && [ -d "$target" ] || continue
        find "$target" -mindepth 1 -maxdepth 1 -type f -name "clustersmith-accept.$host.*" -exec rm -f -- {} +
    done
    return 0
}
