#!/usr/bin/env bash
# Spoken prompts, measured: lecternd (prompts on) with a book paused, playing with pulsesink to a headless PulseAudio 16
# of the test's own; N times each, a Say call and a media key (MPRIS Previous) sent over D-Bus. Prints, over them, the
# time from the call sent to the first sound of its prompt received from the output's monitor by parec (10 ms chunks;
# parec's own latency, at most 10 ms, is included): min, median, p90, max (the figures in docs/benchmarks.md come from
# it). The test (RouteTests' PromptRouteTests/eventToFirstSoundOfItsPrompt) asserts that each prompt was heard, never
# a time.
#
#   scripts/prompts.sh                      a release lecternd, 20 of each
#   LECTERN_PROMPT_EVENTS=5 LECTERN_PROMPT_CONFIG=debug scripts/prompts.sh
#
# LECTERN_SKIP_DEPS=1 skips the package installation. Exits non-zero if the build or the test fails.
set -euo pipefail

source "$(dirname "$0")/lib/common.sh"
lectern_deps --build --run --test
swift build --build-tests >&2
products=()
if [[ "${LECTERN_PROMPT_CONFIG:-release}" == release ]]; then
    lectern_release lecternd
    products=("LECTERN_PRODUCTS_DIR=$bin")
fi
log="$(mktemp /tmp/lectern-prompts.XXXXXX)"
trap 'rm -f "$log"' EXIT
status=0
env ${products[@]+"${products[@]}"} LECTERN_PROMPT_EVENTS="${LECTERN_PROMPT_EVENTS:-20}" \
    swift test --skip-build --filter "PromptRouteTests/eventToFirstSoundOfItsPrompt" >"$log" 2>&1 || status=$?
if [[ ${#products[@]} -gt 0 ]]; then echo "lecternd: ${products[0]#*=}/lecternd (release)"; else echo "lecternd: debug build"; fi
pulseaudio --version || true
espeak-ng --version || true
grep "route latency" "$log" | sed 's/^route latency, //' || true
if [[ $status != 0 ]]; then
    grep -E "✘|error" "$log" >&2 || tail -20 "$log" >&2
fi
exit $status
