#!/usr/bin/env bash
# Runs one libFuzzer target of build-fuzz for SECONDS, and says whether it
# found anything.  The targets are built with recoverable UBSan
# (-fsanitize-recover=undefined) and run with halt_on_error=0, so a run
# does not stop at the first undefined behaviour: every UBSan site it
# reaches is reported (once), and listed here at the end.  The run fails
# when libFuzzer stopped on a crash, leak, timeout or out-of-memory
# (AddressSanitizer still halts), or when the log has any UBSan report.
#
# usage: scripts/run-fuzz.sh BUILD_DIR TARGET SECONDS [libFuzzer flags and seed dirs...]
# New inputs go to BUILD_DIR/corpus-TARGET; crashes to BUILD_DIR/TARGET-*;
# the whole log to BUILD_DIR/fuzz_TARGET.log.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 BUILD_DIR TARGET SECONDS [ARGS...]" >&2; exit 2; }
build=$1 target=$2 seconds=$3
shift 3
bin=$build/fuzz_$target corpus=$build/corpus-$target log=$build/fuzz_$target.log
mkdir -p "$corpus"
echo "fuzz_$target: ${seconds} s (log: $log)"
UBSAN_OPTIONS=halt_on_error=0:print_stacktrace=1:report_error_type=1 \
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    "$bin" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$build/$target-" \
    "$corpus" "$@" >"$log" 2>&1   # the first directory gets the new inputs
status=$?
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
echo "fuzz_$target: ${runs:-?} inputs run, corpus $(ls "$corpus" | wc -l) files"
sites=$(grep -o '[^ ]*:[0-9]*:[0-9]*: runtime error: .*' "$log" | sort -u)
if [ -n "$sites" ]; then
    echo "fuzz_$target: undefined behaviour at $(echo "$sites" | wc -l) site(s):" >&2
    echo "$sites" >&2
    status=1
fi
if [ $status -ne 0 ]; then
    grep -E '^==[0-9]+==|^SUMMARY|Test unit written|^artifact_prefix' "$log" | head -20 >&2
    echo "fuzz_$target: FAILED (exit $status); see $log" >&2
fi
exit $status
