# Step perftest (validators/run/perftest.py): this host's part of every wave of perftest pairs (ib_write_bw,
# ib_read_lat), read-only for storage (memory to memory). Wave w begins slot_ms x w after the common start on every
# host, so the pairs of a wave start together and waves follow one another; a host takes its entries in wave order
# (a client has one entry per wave at most; a storage target one server entry per NIC it serves in the wave, each
# on its rail's port, all started at the wave's start). A server serves one client on its rail's
# RDMA device and port and lives until its wave's client has had its slot (the next server on its port replaces it,
# the last ones end after their slot); a client starts client_delay_ms into the slot and tries up to `tries` times,
# try_delay_s apart (a server serves one connection: a client that connected and failed is measured again by the
# runner, not here). Each client's output and exit status go to <path>.txt (a run that ended 0), .out (one that did
# not) and .rc. Spec: host, tool, args (its argument words, quoted), tool_timeout (s), slot_ms, client_delay_ms,
# tries, try_delay_s, schedule (one line per entry, in wave order:
#   "<wave> server <device> <port> <gid index or -> - -" or
#   "<wave> client <device> <port> <gid index or -> <server's rail address> <results path without suffix>").
MEASURE="Run the client against the server's rail address"

step() {
    if ! command -v "$tool" > /dev/null; then
        fail "Check that the perftest tool is installed" "$tool: command not found"
        return 1
    fi
    "$tool" --version > "$job_dir/version.out" 2>&1
    if ! grep -q Version "$job_dir/version.out"; then
        fail "Check that the perftest tool is installed" "$(last_words "$job_dir/version.out")"
        return 1
    fi
    mkdir -p "$job_dir/servers"
    last_wave=-1
    while read -r wave role device port gid address path; do
        [ -n "$wave" ] || continue
        if [ "$wave" -ne "$last_wave" ]; then  # this host's first entry of the wave: its start, on time or late
            await_ms $((start_ms + wave * slot_ms))
            if [ "$late_ms" -gt 0 ]; then
                printf 'note\tlate_ms\t%s\n' "$late_ms" >> "$meta/records"
            elif [ "$last_wave" -eq -1 ]; then
                printf 'note\twaited_ms\t%s\n' $((-late_ms)) >> "$meta/records"
            fi
        fi
        last_wave=$wave
        gid_args=
        [ "$gid" = - ] || gid_args="-x $gid"
        eval "set -- $args"
        case $role in
        server)
            pidfile=$job_dir/servers/$port
            [ -e "$pidfile" ] && kill "$(cat "$pidfile")" 2> /dev/null  # this port's server of an earlier wave
            # shellcheck disable=SC2086 # gid_args is "" or "-x <index>"
            timeout -k "$kill_after_s" "$tool_timeout" "$tool" -d "$device" -p "$port" $gid_args "$@" \
                < /dev/null > /dev/null 2>&1 &
            echo $! > "$pidfile"
            ;;
        client)
            sleep_ms "$client_delay_ms"
            try=1
            while :; do
                # shellcheck disable=SC2086
                timeout -k "$kill_after_s" "$tool_timeout" "$tool" -d "$device" -p "$port" $gid_args "$@" "$address" \
                    < /dev/null > "$job_dir/client.out" 2> "$job_dir/client.err"
                rc=$?
                { [ "$rc" -eq 0 ] || [ "$try" -ge "$tries" ]; } && break
                retried "$path" "$MEASURE" "$(said "$rc")"
                try=$((try + 1))
                sleep "$try_delay_s"
            done
            [ "$rc" -eq 0 ] || fail "$MEASURE" "$(said "$rc")" "$path"
            # how much of its slot this client used, from the wave's start to its end (the runner's step timings)
            printf 'note\tslot_used_ms\t%s\n' $(($(now_ms) - start_ms - wave * slot_ms)) >> "$meta/records"
            mkdir -p "$out/$(dirname "$path")"
            if [ "$rc" -eq 0 ]; then suffix=.txt; else suffix=.out; fi
            cp "$job_dir/client.out" "$out/$path$suffix"
            echo "$rc" > "$out/$path.rc"
            ;;
        esac
    done << EOF
$schedule
EOF
    # the last servers end once their wave's slot is over (a server whose client never came would wait its timeout)
    await_ms $((start_ms + (last_wave + 1) * slot_ms))
    for pidfile in "$job_dir"/servers/*; do
        [ -e "$pidfile" ] && kill "$(cat "$pidfile")" 2> /dev/null
    done
    wait
    return 0
}

# said RC: the client's failure in its own last words (stderr's, else stdout's), as the runner quotes a failed task
said() {
    if [ -s "$job_dir/client.err" ]; then exit_words "$1" "$job_dir/client.err"; else exit_words "$1" "$job_dir/client.out"; fi
}
