#!/usr/bin/env bash
# Interruptions, measured: lecternd playing with pulsesink to a headless PulseAudio 16 of the test's own, with
# module-role-cork loaded; N calls (a paplay stream with media.role=phone on the same output, killed to hang up).
# Prints, over the calls, the time from the phone stream's start to lecternd's PlaybackStatus Paused signal and from
# its end to the Playing signal (min, median, p90, max; the figures in docs/benchmarks.md come from it). The test
# (RouteTests' InterruptionRouteTests/twentyCallsEachPausedAndResumed) asserts that each call paused and resumed,
# never a time.
#
#   scripts/interruptions.sh                      a release lecternd, 100 calls
#   LECTERN_INTERRUPTION_CALLS=20 LECTERN_INTERRUPTION_CONFIG=debug scripts/interruptions.sh
#
# LECTERN_SKIP_DEPS=1 skips the package installation. Exits non-zero if the build or the test fails.
set -euo pipefail

source "$(dirname "$0")/lib/common.sh"
lectern_deps --build --run --test
swift build --build-tests >&2
products=()
if [[ "${LECTERN_INTERRUPTION_CONFIG:-release}" == release ]]; then
    lectern_release lecternd
    products=("LECTERN_PRODUCTS_DIR=$bin")
fi
log="$(mktemp /tmp/lectern-interruptions.XXXXXX)"
trap 'rm -f "$log"' EXIT
status=0
env ${products[@]+"${products[@]}"} LECTERN_INTERRUPTION_CALLS="${LECTERN_INTERRUPTION_CALLS:-100}" \
    swift test --skip-build --filter "InterruptionRouteTests/twentyCallsEachPausedAndResumed" >"$log" 2>&1 || status=$?
if [[ ${#products[@]} -gt 0 ]]; then echo "lecternd: ${products[0]#*=}/lecternd (release)"; else echo "lecternd: debug build"; fi
pulseaudio --version || true
grep "route latency" "$log" | sed 's/^route latency, //' || true
if [[ $status != 0 ]]; then
    grep -E "✘|error" "$log" >&2 || tail -20 "$log" >&2
fi
exit $status
