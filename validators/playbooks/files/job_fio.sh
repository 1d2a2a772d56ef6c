# Step fio (validators/run/fio.py): one workload on every client, begun at the common start. Writes only where the
# Python side allowed (validators.safety): its own files in the plan's scratch directory (whose mount is checked
# first), a device the host confirms is a scratch namespace, or an explicit --destructive target. Its report,
# bandwidth logs and exit status (<host>.json, <host>_bw.<job>.log, <host>.exit) go to $dest (fio/<workload>/).
# Spec: host, kind (scratch_dir, directory, device), target, mount, nqns (one per line), job (the job file),
# fio_timeout (s), dest, passes (0, or 2 for the cache check: see cache_passes).
sys_block=/sys/dev/block

# check_device: the block device fio will open at $target (links followed, as fio's open does) must be a scratch
# namespace of the plan ($nqns), its subsystem NQN read through its major:minor, never through a name
check_device() {
    if ! found=$(stat --dereference --format '%F|%t|%T' "$target" 2> "$job_dir/check.out"); then
        fail "Find the block device fio will open at the target path" "$(exit_words 1 "$job_dir/check.out")"
        return 1
    fi
    type=${found%%|*}
    if [ "$type" != "block special file" ]; then
        fail "Refuse a target that is not a block device" "$target is a $type, not a block device; nothing was written"
        return 1
    fi
    numbers=${found#*|}
    device=$sys_block/$(printf '%d' "0x${numbers%|*}"):$(printf '%d' "0x${numbers#*|}")
    if ! nqn=$(tr -d '\n' < "$device/device/subsysnqn" 2> "$job_dir/check.out"); then
        fail "Read the subsystem NQN of that device" "$(exit_words 1 "$job_dir/check.out")"
        return 1
    fi
    if ! printf '%s\n' "$nqns" | grep -qxF -- "$nqn"; then
        fail "Refuse a device that is not a scratch namespace of the plan" \
            "$target belongs to $nqn, not to a scratch namespace of the plan ($(printf '%s' "$nqns" | tr '\n' ' ' | sed 's/ *$//; s/ /, /g')); nothing was written"
        return 1
    fi
}

# save_fscache N: the kernel's FS-Cache counters as <host>.fscache.N
save_fscache() {
    checked "Save the FS-Cache counters" cp /proc/fs/fscache/stats "$host.fscache.$1"
}

# cache_passes: the cache check's first, uncached pass. Lay the files out, evict every cached inode (a file written
# through NFS has its FS-Cache cookie disabled until its inode is evicted: FSCACHE_INVAL_DIO_WRITE), save the
# counters (.0), read every file once (it fills the cache; its report is <host>.pass1.fio-json), save the counters
# (.1) and drop the page cache, so that the second, measured pass (<host>.json) can only be served by FS-Cache or
# the file system. The counters after it are .2 (step).
cache_passes() {
    CLUSTERSMITH_HOST=$host timeout -k "$kill_after_s" "$fio_timeout" fio --create_only=1 --output-format=json \
        "--output=$host.layout.fio-json" "$job_file" > "$job_dir/layout.out" 2>&1 ||
        { fail "Lay out the cache check's files" "$(exit_words $? "$job_dir/layout.out")"; return 1; }
    checked "Evict the page, dentry and inode caches" sh -c 'sync && echo 3 > /proc/sys/vm/drop_caches' || return 1
    save_fscache 0 || return 1
    CLUSTERSMITH_HOST=$host timeout -k "$kill_after_s" "$fio_timeout" fio --output-format=json+ \
        "--output=$host.pass1.fio-json" "$job_file" > "$job_dir/pass1.out" 2>&1 ||
        { fail "Run the first read pass" "$(exit_words $? "$job_dir/pass1.out")"; return 1; }
    save_fscache 1 || return 1
    checked "Drop the page cache" sh -c 'sync && echo 1 > /proc/sys/vm/drop_caches'
}

step() {
    if ! command -v fio > /dev/null; then
        fail "Check that fio is installed" "fio: command not found"
        return 1
    fi
    checked "Check that fio is installed" fio --version || return 1
    if [ "$kind" = scratch_dir ]; then
        checked "Check that the scratch directory's file system is mounted where the plan says" \
            findmnt --noheadings --output TARGET --mountpoint "$mount" || return 1
        # the scratch directory is made in a directory its file system's role made (CephFS's /hot, laid out on the
        # hot pool; the tier's mount point), never with missing parents: a /hot made here would hold data on the
        # default pool
        parent=$(dirname "$target")
        if [ ! -d "$parent" ]; then
            fail "Check that the scratch directory's parent exists" "$parent is not a directory on this host"
            return 1
        fi
    fi
    if [ "$kind" = scratch_dir ] || [ "$kind" = directory ]; then
        if ! { mkdir -p "$target" && chmod 0700 "$target"; } > "$job_dir/check.out" 2>&1; then
            fail "Create the scratch directory" "$(exit_words 1 "$job_dir/check.out")"
            return 1
        fi
    fi
    if [ "$kind" = device ] && [ -n "$nqns" ]; then
        check_device || return 1
    fi
    # The job file's name is put together here, so that of all the processes of this step only fio's own command
    # line names it (the start call's shell has this text in its arguments): the lab's fault test finds the
    # workload's fio by that name (tests/lab/test_accept_lab.py, KILL_FIO_MID_RUN).
    job_file=job
    job_file="$job_file".fio
    mkdir "$job_dir/run" && printf '%s' "$job" > "$job_dir/run/$job_file" || return 1
    await_start
    cd "$job_dir/run" || return 1
    if [ "$passes" -gt 0 ] && ! cache_passes; then
        copy_out
        return 0
    fi
    CLUSTERSMITH_HOST=$host timeout -k "$kill_after_s" "$fio_timeout" fio --output-format=json+ "--output=$host.json" \
        "$job_file" 2> "$job_dir/fio.err"
    rc=$?
    # fio's exit status beside its report: a fio killed or cut short can still write a report whose jobs say error 0;
    # the runner reads <host>.exit (status, then fio's last words) to tell that from a finished run. timeout(1) ends a
    # fio that outlives its time with 124: no status of fio's own, as when Ansible's task timeout ended it (a fio that
    # ignored the TERM too is killed kill_after_s later: 137, which the runner judges a run cut short)
    if [ "$rc" -eq 124 ]; then
        printf 'none\nfio did not end within %s s: timeout(1) ended it\n' "$fio_timeout" > "$host.exit"
    else
        { printf '%s\n' "$rc"; cat "$job_dir/fio.err"; } > "$host.exit"
    fi
    [ "$passes" -gt 0 ] && save_fscache 2
    copy_out
    return 0
}

# copy_out: what this run wrote, to the results
copy_out() {
    mkdir -p "$out/$dest"
    for file in ./*.json ./*_bw.*.log ./*.exit ./*.fscache.* ./*.fio-json; do
        [ -f "$file" ] && cp "$file" "$out/$dest/"
    done
    return 0
}
