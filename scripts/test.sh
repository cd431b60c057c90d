#!/usr/bin/env bash
# Installs the dependencies, builds everything including the tests, then runs `swift test`.
#
#   scripts/test.sh [swift test options...]     e.g. scripts/test.sh --filter TestSupportTests
#
# Build options among them (--scratch-path, -c/--configuration, -j/--jobs, --sanitize) also go to the build
# step. All output goes to stdout (CI reads swift test's closing lines); the exit code is swift test's.
# LECTERN_SKIP_DEPS=1 skips scripts/install-deps.sh.
set -euo pipefail

source "$(dirname "$0")/lib/common.sh"
exec 2>&1

lectern_deps

build_args=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
        --scratch-path|-c|--configuration|-j|--jobs|--sanitize)
            build_args+=("${args[i]}")
            if (( i + 1 < ${#args[@]} )); then build_args+=("${args[i + 1]}"); i=$((i + 1)); fi
            ;;
        --scratch-path=*|--configuration=*|--jobs=*|--sanitize=*)
            build_args+=("${args[i]}")
            ;;
    esac
done

swift build --build-tests ${build_args[@]+"${build_args[@]}"}
# The man pages' generator, beside the binaries: the install test installs the man pages it makes.
swift build --product generate-manual ${build_args[@]+"${build_args[@]}"}
# Suites run side by side, at Swift Testing's own width; those that share a resource (a daemon fixture, the sound
# server) are .serialized, and the integration suites run in four serialized groups. Nothing that answers a test waits
# for Swift's cooperative pool: D-Bus calls are handled on a thread of their own, blocking work runs on Lectern's own
# threads.
#
# CI shows only the last lines of the output, so a failure's lines are repeated at the end.
log=$(mktemp "${TMPDIR:-/tmp}/lectern-test.XXXXXX")
trap 'rm -f "$log"' EXIT
status=0
swift test "$@" | tee "$log" || status=$?
if (( status != 0 )); then
    echo
    echo "== what failed (repeated from above) =="
    grep -E '✘|recorded an issue|error:|Fatal error|Crash|signal code' "$log" | grep -v '^✘ Test run with' | head -60 || true
fi
exit "$status"
