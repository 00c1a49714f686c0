#!/usr/bin/env bash
# Runs every fuzz target (or those named after the duration) for SECONDS each, one after another, and prints
# each one's executions. Usage: fuzz/run-all.sh [SECONDS] [TARGET...]   (SECONDS defaults to 600)
#
# Environment: TOOLCHAIN (e.g. `nightly`: cargo +nightly; with it the default sanitizer is address),
# SANITIZER (`none` on stable, which has no sanitizer runtime flags; `address` etc. need nightly),
# NICE (default 10), FUZZ_ARGS (more libFuzzer flags).
# The fuzzer runs with a 2 MiB stack, what the server's tokio worker threads have, so a recursion that would
# overflow in the server overflows here too. Logs go to fuzz/logs/<target>.log, crashes to fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-600}
shift || true
toolchain=${TOOLCHAIN:-}
if [[ -n $toolchain ]]; then
    sanitizer=${SANITIZER:-address}
    cargo=(cargo "+$toolchain" fuzz)
else
    sanitizer=${SANITIZER:-none}
    cargo=(cargo fuzz)
fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    mapfile -t targets < <("${cargo[@]}" list)
fi

[[ -d corpus ]] || python3 seed.py
mkdir -p logs
nice -n "${NICE:-10}" "${cargo[@]}" build -s "$sanitizer"

failed=0
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
    log="logs/$target.log"
    start=$(date +%s)
    # -max_len: deep (10,000+ levels) and large inputs; -timeout: a unit slower than this is a finding.
    if (ulimit -s 2048 && exec nice -n "${NICE:-10}" "${cargo[@]}" run -s "$sanitizer" "$target" -- \
        -max_total_time="$seconds" -max_len=262144 -timeout=30 -rss_limit_mb=4096 \
        -print_final_stats=1 ${FUZZ_ARGS:-}) >"$log" 2>&1; then
        result=ok
    else
        result="FAILED (see $log, fuzz/artifacts/$target/)"
        failed=1
    fi
    stat() { awk -v key="stat::$1:" '$1 == key {print $2}' "$log" | tail -1; }
    echo "$target: $(stat number_of_executed_units) executions in $(($(date +%s) - start)) s" \
        "($(stat average_exec_per_sec)/s, slowest unit $(stat slowest_unit_time_sec) s," \
        "peak RSS $(stat peak_rss_mb) MB), $result"
done
exit "$failed"
