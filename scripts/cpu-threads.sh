#!/usr/bin/env bash
# Where lecternd's CPU goes while it plays a library book into a headless PulseAudio (module-null-sink), thread by
# thread: CPU % of one core and wake-ups per second of each thread over a window, from /proc/PID/task/*/schedstat
# and voluntary + nonvoluntary context switches. A measurement for docs/benchmarks.md ("CPU while playing"), not a
# test; scripts/bench.sh gives the comparison with other players.
#
#   scripts/cpu-threads.sh [SECONDS] [-- lecternd options...]       e.g. scripts/cpu-threads.sh 30
#
# LECTERND (default .build-bench/release/lecternd: build it with scripts/bench.sh, or `swift build -c release
# --scratch-path .build-bench --product lecternd`) and LECTERN (default: the debug client,
# `swift build --product lectern`) name the binaries; AUDIO the file to import (default the bench's long.ogg, made
# with gst-launch-1.0 when missing). Needs pulseaudio, dbus-daemon and bc.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
seconds=${1:-30}
shift || true
[[ "${1:-}" == "--" ]] && shift
lecternd=${LECTERND:-.build-bench/release/lecternd}
lectern=${LECTERN:-.build/debug/lectern}
audio=${AUDIO:-.build-bench/bench-audio/long.ogg}
for tool in pulseaudio dbus-daemon bc "$lecternd" "$lectern"; do
    command -v "$tool" >/dev/null || { echo "cpu-threads: $tool not found" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/lectern-cpu.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$work"; }
trap cleanup EXIT
lectern_home "$work"
mkdir -p "$work/book"
lectern_bench_audio "$audio"
cp "$audio" "$work/book/"

pulseaudio -n --daemonize=no --exit-idle-time=-1 --load="module-null-sink sink_name=null" \
    --load=module-native-protocol-unix --log-target=file:"$work/pulse.log" & pids+=($!)
pulse=$!
dbus-daemon --session --nofork --print-address=3 3>"$work/address" & pids+=($!)
for _ in $(seq 50); do [[ -s "$work/address" && -S "$work/runtime/pulse/native" ]] && break; sleep 0.1; done
export DBUS_SESSION_BUS_ADDRESS=$(head -1 "$work/address")
"$lecternd" "$@" 2>"$work/lecternd.log" & pids+=($!)
daemon=$!
for _ in $(seq 50); do "$lectern" status >/dev/null 2>&1 && break; sleep 0.1; done
"$lectern" import "$work/book" >/dev/null
"$lectern" play 1 >/dev/null
sleep 5  # past the start: the figures are for steady playing

cpu_ns() { local sum=0 run rest; for f in /proc/"$1"/task/*/schedstat; do read -r run rest <"$f" && sum=$((sum + run)); done; echo "$sum"; }
declare -A switches cpu name
for t in /proc/"$daemon"/task/*; do
    id=${t##*/}
    name[$id]=$(cat "$t/comm")
    switches[$id]=$(awk '/ctxt_switches/ { s += $2 } END { print s }' "$t/status")
    read -r run rest <"$t/schedstat"; cpu[$id]=$run
done
daemon0=$(cpu_ns "$daemon"); pulse0=$(cpu_ns "$pulse"); t0=$(date +%s%N)
sleep "$seconds"
daemon1=$(cpu_ns "$daemon"); pulse1=$(cpu_ns "$pulse"); t1=$(date +%s%N)
elapsed=$((t1 - t0))
pct() { echo "scale=3; 100 * $1 / $elapsed" | bc; }
echo "lecternd $(pct $((daemon1 - daemon0))) % of a core, pulseaudio $(pct $((pulse1 - pulse0))) %, over ${seconds} s;" \
     "VmRSS $(awk '/VmRSS/ { print $2 }' /proc/"$daemon"/status) kB; $("$lectern" status | head -1)"
echo "| thread | CPU % | wake-ups/s | µs per wake-up |"
echo "|---|---|---|---|"
for t in /proc/"$daemon"/task/*; do
    id=${t##*/}
    [[ -n "${name[$id]:-}" ]] || continue
    woke=$(( $(awk '/ctxt_switches/ { s += $2 } END { print s }' "$t/status") - ${switches[$id]} ))
    read -r run rest <"$t/schedstat"; used=$((run - ${cpu[$id]}))
    (( woke > 0 )) || continue
    printf "| %s | %s | %s | %s |\n" "${name[$id]}" "$(pct "$used")" "$(echo "scale=1; $woke * 1000000000 / $elapsed" | bc)" \
        "$(echo "scale=0; $used / 1000 / $woke" | bc)"
done
