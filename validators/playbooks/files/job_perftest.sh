# Step perftest (validators/run/perftest.py): this host's part of every wave of perftest pairs (ib_write_bw,
# ib_read_lat), read-only for storage (memory to memory). Wave w begins slot_ms x w after the common start on every
# host, so the pairs of a wave start together and waves follow one another; a host takes its entries in wave order
# (a client has one entry per wave at most; a storage target one server entry per NIC it serves in the wave, all
# started at the wave's start). Each server has a port of its own (the runner gives every wave its own ports), serves
# one client and lives until it has served it or its tool_timeout ends it: a client whose host runs late (an earlier
# wave of its own that took longer than its slot) still finds its server, which no later wave's server replaces. A
# client starts client_delay_ms into the slot and tries up to `tries` times, try_delay_s apart (a server serves one
# connection: a client that connected and failed is measured again by the runner, not here). Each client's output
# and exit status go to <path>.txt (a run that ended 0), .out (one that did not) and .rc; each server's, once it has
# ended, to <path>.server (stdout), .server.err and .server.rc (what the runner quotes beside a client that could not
# measure). Spec: host,
# tool, args (its argument words, quoted), tool_timeout (s), slot_ms, client_delay_ms, tries, try_delay_s, schedule
# (one line per entry, in wave order; the path is the results path without suffix, the pair's on both sides):
#   "<wave> server <device> <port> <gid index or -> - <path>" or
#   "<wave> client <device> <port> <gid index or -> <server's rail address> <path>".
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
            # shellcheck disable=SC2086 # gid_args is "" or "-x <index>"
            timeout -k "$kill_after_s" "$tool_timeout" "$tool" -d "$device" -p "$port" $gid_args "$@" \
                < /dev/null > "$job_dir/servers/$port.out" 2> "$job_dir/servers/$port.err" &
            echo "$! $path" > "$job_dir/servers/$port.pid"
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
    # every server ends once it has served its client (or at its timeout, when its client never came): wait for
    # each and keep what it said
    for pidfile in "$job_dir"/servers/*.pid; do
        [ -e "$pidfile" ] || continue
        read -r pid path < "$pidfile"
        wait "$pid"
        rc=$?
        mkdir -p "$out/$(dirname "$path")"
        cp "${pidfile%.pid}.out" "$out/$path.server"
        cp "${pidfile%.pid}.err" "$out/$path.server.err"
        echo "$rc" > "$out/$path.server.rc"
    done
    return 0
}

# said RC: the client's failure in its own last words (stderr's, else stdout's), as the runner quotes a failed task
said() {
    if [ -s "$job_dir/client.err" ]; then exit_words "$1" "$job_dir/client.err"; else exit_words "$1" "$job_dir/client.out"; fi
}
