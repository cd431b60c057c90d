# The set-up every script in scripts/ starts with. Sourced, not run:
#
#   source "$(dirname "$0")/lib/common.sh"
#
# It goes to the repository's root (the scripts name every path from there), and puts Swift on the PATH when it
# is not already (/opt/swift/usr/bin, where the Swift 6 images install it). Then, for the scripts to call:
#   lectern_deps GROUP...        scripts/install-deps.sh GROUP... (--build, --run, --test; none: all), its output
#                                to stderr, unless LECTERN_SKIP_DEPS=1
#   lectern_release [--scratch-path DIR] PRODUCT...
#                                `swift build -c release --product PRODUCT` for each (into DIR if given), output to
#                                stderr (stdout is each script's result: a table, the daemon's output), then sets
#                                `bin` to the folder of the release binaries
#   lectern_home DIR             makes DIR a home of its own for a lecternd (runtime, cache, data, config and state
#                                folders under it) and exports HOME and the XDG variables to it
#   lectern_bench_audio FILE     makes FILE, when missing, the benchmarks' audio: 10 minutes of a sine, Ogg Vorbis
# Nothing here changes the shell's options: each script says its own (`set -euo pipefail` or less).

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

lectern_deps() {
    if [[ "${LECTERN_SKIP_DEPS:-0}" != 1 ]]; then
        scripts/install-deps.sh "$@" >&2
    fi
}

lectern_release() {
    local scratch=() product
    if [[ "${1:-}" == --scratch-path ]]; then scratch=(--scratch-path "$2"); shift 2; fi
    for product in "$@"; do
        swift build -c release ${scratch[@]+"${scratch[@]}"} --product "$product" >&2 || return
    done
    bin="$(swift build -c release ${scratch[@]+"${scratch[@]}"} --show-bin-path)" || return
}

lectern_home() {
    mkdir -p "$1"/{runtime,cache,data,config,state} || return
    chmod 700 "$1/runtime"
    export XDG_RUNTIME_DIR="$1/runtime" HOME="$1" XDG_CACHE_HOME="$1/cache" XDG_DATA_HOME="$1/data" \
           XDG_CONFIG_HOME="$1/config" XDG_STATE_HOME="$1/state"
}

lectern_bench_audio() {
    [[ -f "$1" ]] && return
    mkdir -p "$(dirname "$1")" || return
    gst-launch-1.0 -q audiotestsrc wave=sine num-buffers=26000 ! audio/x-raw,rate=44100,channels=1 ! audioconvert \
        ! vorbisenc ! oggmux ! filesink location="$1"
}
