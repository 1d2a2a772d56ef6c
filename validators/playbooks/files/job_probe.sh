# Step probe (validators/run/probe.py), read-only: a host's NVMe-oF paths and each subsystem's I/O policy, read once
# per subsystem, and what each QoS layer is set to. Nothing is changed. What the host said goes to nvme/<host>.json,
# nvme/<host>.iopolicy.json and qos/<host>/ (rdma_cm_tos.json, nccl.conf, discovery.conf), only when every read
# worked, as Ansible's play stopped at a host's first failed task. Spec: host, probes ("nvme", "qos"), settle_s,
# reset_extra_s.
nvme_admin_timeout=/sys/module/nvme_core/parameters/admin_timeout
nvme_subsystems=/sys/class/nvme-subsystem
rdma_cm_configfs=/sys/kernel/config/rdma_cm

# A path "connecting" retries every reconnect delay (a keep-alive hiccup heals within one or two); one "resetting" is
# in the kernel's error recovery, which can wait out the admin command timeout before it ends live or connecting
# (Soft-RoCE under TCG: 68 s after "rxe_reg_fast_mr: mr->lkey ... not free"). The connecting window starts when the
# last recovery ends: a path reconnects only after it has reset. Ends with status 0 whether or not the paths settled.
settle_paths() {
    admin=$(cat "$nvme_admin_timeout" 2> /dev/null || echo 0)
    began=$(date +%s)
    recovered=$began
    while :; do
        listed=$(nvme list-subsys --output-format=json) || return 0  # no nvme: the listing reports it
        states=$(printf '%s\n' "$listed" | grep -oE '"(connecting|resetting|deleting)"' | sort -u)
        [ -z "$states" ] && return 0
        now=$(date +%s)
        if printf '%s\n' "$states" | grep -qE 'resetting|deleting'; then
            recovered=$now
            [ $((now - began)) -ge $((admin + reset_extra_s)) ] && return 0
        else
            [ $((now - recovered)) -ge "$settle_s" ] && return 0
        fi
        sleep 2
    done
}

# trim: stdin without leading and trailing white space (Jinja's trim, which the playbook this replaced applied)
trim() {
    awk '{ text = text $0 "\n" } END { sub(/^[ \t\r\n\f\v]+/, "", text); sub(/[ \t\r\n\f\v]+$/, "", text); printf "%s", text }'
}

# read_each TASK FILE...: {"<name>": "<trimmed content>", ...} of each file, named by name_of; fails TASK at the first
# file that cannot be read
read_each() {
    read_task=$1
    shift
    printf '{'
    sep=
    for file in "$@"; do
        if ! value=$(cat "$file" 2> "$job_dir/read.err"); then
            fail "$read_task" "$(exit_words 1 "$job_dir/read.err")"
            return 1
        fi
        printf '%s%s: %s' "$sep" "$(json_str "$(name_of "$file")")" "$(json_str "$(printf '%s' "$value" | trim)")"
        sep=', '
    done
    printf '}\n'
}

step() {
    said=$job_dir/said
    mkdir -p "$said/nvme" "$said/qos/$host"
    case " $probes " in
    *" nvme "*)
        settle_paths
        nvme list-subsys --output-format=json > "$said/nvme/$host.json" 2> "$job_dir/nvme.err"
        rc=$?
        if [ "$rc" -ne 0 ]; then
            cat "$said/nvme/$host.json" >> "$job_dir/nvme.err"
            [ "$rc" -eq 127 ] && echo "nvme: command not found" >> "$job_dir/nvme.err"
            fail "List the NVMe subsystems and their paths" "$(exit_words "$rc" "$job_dir/nvme.err")"
            return 1
        fi
        set --
        for subsystem in "$nvme_subsystems"/*; do
            [ -e "$subsystem" ] && set -- "$@" "$subsystem/iopolicy"
        done
        name_of() { basename "$(dirname "$1")"; }
        read_each "Read each subsystem's I/O policy" "$@" > "$said/nvme/$host.iopolicy.json" || return 1
        ;;
    esac
    case " $probes " in
    *" qos "*)
        set --
        if [ -d "$rdma_cm_configfs" ]; then
            for file in $(find "$rdma_cm_configfs" -type f -name default_roce_tos 2> /dev/null | sort); do
                set -- "$@" "$file"
            done
        fi
        name_of() { printf '%s' "$1"; }
        read_each "Read the RDMA CM default ToS of each device" "$@" > "$said/qos/$host/rdma_cm_tos.json" || return 1
        for conf in /etc/nvme/discovery.conf /etc/nccl.conf; do
            if [ -e "$conf" ]; then
                if ! { trim < "$conf" && echo; } > "$said/qos/$host/$(basename "$conf")" 2> "$job_dir/read.err"; then
                    fail "Read $conf" "$(exit_words 1 "$job_dir/read.err")"
                    return 1
                fi
            fi
        done
        ;;
    esac
    cp -R "$said/." "$out/"
    return 0
}
