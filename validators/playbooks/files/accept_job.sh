# The host side of one acceptance step (POSIX sh; validators/run/jobs.py builds the calls, playbooks/job.yml makes
# them). The step's own body follows this file in job.sh: a function `step` that writes what its tool said under
# $out, at the path the results folder gives it, and calls `fail`/`retried` where Ansible's task would have failed.
# The body comes first in job.sh (it only defines functions); this file's commands run at its end.
#
#   job.sh start DIR START_IN_MS   start the job in the background (its own session: it outlives the SSH call) and
#                                  return at once; the job waits START_IN_MS from now first (the common start the
#                                  controller set for every host, as a delay, so no host's clock is compared)
#   job.sh collect DIR             wait for the job (until its deadline, then end it), print its folder as a gzip'd
#                                  tar in base64 between two marker lines, and remove the folder
#   job.sh now DIR                 a short job: start it and collect it in one call
#
# DIR holds job.sh, spec (the controller's values for this host, each shell-quoted), out/ (the results) and meta/
# (pid, deadline, status, records: what failed, in Ansible's words: "<kind><TAB><key><TAB><task>: <words>").
set -u
job_cmd=$1
job_dir=$2
out=$job_dir/out
meta=$job_dir/meta
TAB=$(printf '\t')
# A tool past its time gets SIGTERM from timeout(1), then SIGKILL this many seconds later (timeout -k): a tool that
# ignores TERM or is stuck in the kernel (seen on the bench machine: a fio in futex_wait that outlived TERM) ends its
# step then, named by its exit status 137, instead of holding the step until the collector's deadline.
kill_after_s=10

now_ms() { date +%s%3N; }

# fail TASK WORDS [KEY]: a failure, as the task of that name would have failed (KEY: the pair or run it concerns)
fail() { printf 'failed\t%s\t%s: %s\n' "${3:--}" "$1" "$2" >> "$meta/records"; }
# retried KEY TASK WORDS: a try that failed and was tried again
retried() { printf 'retried\t%s\t%s: %s\n' "$1" "$2" "$3" >> "$meta/records"; }
# note WORDS: what the runner did that a reader should know (a late start)
note() { printf 'note\t-\t%s\n' "$1" >> "$meta/records"; }

# last_words FILE: the last non-empty line of a tool's output, as the runner quotes a tool
last_words() { sed -n 's/^[[:space:]]*//; s/[[:space:]]*$//; /./h; ${x;p;}' "$1" 2>/dev/null | tr -d '\r'; }

# exit_words RC FILE: "exit RC: <last line>", or Ansible's "non-zero return code" when the tool said nothing
exit_words() {
    said=$(last_words "$2")
    if [ -n "$said" ]; then printf 'exit %s: %s' "$1" "$said"; else printf 'non-zero return code'; fi
}

# checked TASK COMMAND...: run a check; when it fails, fail TASK in its words and return its status
checked() {
    checked_task=$1
    shift
    "$@" > "$job_dir/checked.out" 2>&1
    checked_rc=$?
    [ "$checked_rc" -eq 0 ] || fail "$checked_task" "$(exit_words "$checked_rc" "$job_dir/checked.out")"
    return "$checked_rc"
}

# sleep_ms MS: sleep that many milliseconds (nothing when MS <= 0)
sleep_ms() { [ "$1" -gt 0 ] && sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; return 0; }

# await_ms EPOCH_MS: sleep until then (host clock); how late we are, in ms, is left in $late_ms
await_ms() {
    late_ms=$(($(now_ms) - $1))
    [ "$late_ms" -lt 0 ] && sleep_ms $((-late_ms))
    return 0
}

# await_start: sleep until the common start; a late start is recorded (the runner notes it), and so is how long an
# early one waited (the runner's step timings: the start margin left unused)
await_start() {
    await_ms "$start_ms"
    if [ "$late_ms" -gt 0 ]; then
        printf 'note\tlate_ms\t%s\n' "$late_ms" >> "$meta/records"
    else
        printf 'note\twaited_ms\t%s\n' $((-late_ms)) >> "$meta/records"
    fi
    return 0
}

# json_str TEXT: TEXT as a JSON string
json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr -d '\r\n')"; }

# prepare START_IN_MS: the folders, the start and the deadline
prepare() {
    mkdir "$out" "$meta" || exit 1
    : > "$meta/records"
    start_ms=$(($(now_ms) + $1))
    echo "$start_ms" > "$meta/start_ms"
    . "$job_dir/spec"
    echo $((start_ms / 1000 + job_limit_s)) > "$meta/deadline"
}

# launch: the job in a session of its own, so it outlives this call; returns once it runs there. Ansible's SSH
# connection gives a raw call a terminal, whose hang-up at the call's end reaches what is still in this call's process
# group: the job ignores it until it is in its own session, and this call waits that long.
launch() {
    command -v setsid > /dev/null || { echo "setsid: command not found (util-linux)" >&2; exit 1; }
    (trap '' HUP; exec setsid sh "$job_dir/job.sh" run "$job_dir") < /dev/null > "$meta/log" 2>&1 &
    tries=0
    while [ ! -s "$meta/pid" ] && [ "$tries" -lt 200 ]; do
        sleep 0.05
        tries=$((tries + 1))
    done
}

case $job_cmd in
start)
    prepare "$3"
    launch
    echo "started $job_dir"
    ;;
now)
    prepare 0
    launch
    sh "$job_dir/job.sh" collect "$job_dir"
    ;;
run)
    echo $$ > "$meta/pid"
    . "$job_dir/spec"
    start_ms=$(cat "$meta/start_ms")
    cd "$job_dir" || exit 1
    (step)
    echo $? > "$meta/status"
    : > "$meta/done"
    ;;
collect)
    [ -d "$meta" ] || { echo "no job folder $job_dir on this host" >&2; exit 1; }
    deadline=$(cat "$meta/deadline")
    while [ ! -e "$meta/done" ] && [ "$(date +%s)" -lt "$deadline" ]; do
        sleep 0.1
    done
    if [ ! -e "$meta/done" ]; then  # past its deadline: end the job and everything it started
        pid=$(cat "$meta/pid" 2>/dev/null)
        if [ -n "$pid" ]; then
            # the job's whole session (setsid made it one): timeout(1) puts each tool in a process group of its own
            pkill -TERM -s "$pid" 2> /dev/null
            sleep 2
            pkill -KILL -s "$pid" 2> /dev/null
        fi
        . "$job_dir/spec"
        fail "Run the step" "did not end within its $job_limit_s s (ended by the collector)"
    fi
    echo "clustersmith-accept-results-begin"
    tar -C "$job_dir" -czf - out meta | base64
    echo "clustersmith-accept-results-end"
    rm -rf "$job_dir"
    ;;
*)
    echo "job.sh: unknown command $job_cmd" >&2
    exit 2
    ;;
esac
