# Stage wall times for .ci/run (sourced; bash). `ci_stage NAME` begins a stage and ends the one before it; each
# stage's time is printed as it ends ("ci: stage lab-tier 3216 s"), the last one also when the script exits, failed
# or not ("ci: stage lab-tier 812 s (failed, exit 2)"), then every stage again on one line with the total, so the
# end of the CI log says where the time went. The stages run at the script's top level, so `set -e` stops the run
# at a failing command exactly as before; the EXIT trap only reports, and the script's exit status is unchanged.
ci_stage_name=""
ci_stage_started=0
ci_stage_times=()

ci_stage_end() {  # ci_stage_end [WHY]: print the current stage's time (and WHY), if a stage is running
    [ -n "$ci_stage_name" ] || return 0
    local took=$((SECONDS - ci_stage_started))
    echo "ci: stage $ci_stage_name $took s${1:+ ($1)}"
    ci_stage_times+=("$ci_stage_name $took s${1:+ ($1)}")
    ci_stage_name=""
}

ci_stage() {  # ci_stage NAME: end the running stage, begin NAME
    ci_stage_end
    ci_stage_name=$1
    ci_stage_started=$SECONDS
    echo "ci: stage $1 begins at +$SECONDS s"
}

ci_report() {  # the EXIT trap: the last stage, then all of them and the total (SECONDS: since the script began)
    local rc=$?
    if [ "$rc" -eq 0 ]; then ci_stage_end; else ci_stage_end "failed, exit $rc"; fi
    local IFS=","
    echo "ci: stages: ${ci_stage_times[*]}"
    echo "ci: total $SECONDS s (exit $rc)"
    return "$rc"
}
trap ci_report EXIT
