#!/usr/bin/env bash
# Benchmarks a RELEASE lecternd against mpv + mpv-mpris and VLC on private D-Bus buses (method: docs/benchmarks.md).
#
#   scripts/bench.sh [lectern-bench options...]    e.g. scripts/bench.sh --no-mpv --no-vlc --round-trips 1000
#
# Installs the runtime packages, mpv + mpv-mpris and VLC (vlc-bin, vlc-plugin-base: no GUI) when missing
# (idempotent), builds `-c release` into .build-bench, runs .build-bench/release/lectern-bench with that lecternd,
# and prints the Markdown table. The JSON goes to .build-bench/bench-results/<UTC time>.json; the audio file the
# players play is kept in .build-bench/bench-audio/. Exits non-zero only if something could not be installed or
# built: the benchmark itself is a measurement and always exits 0.
# LECTERN_SKIP_DEPS=1 skips the package installation. LECTERN_BENCH_SCRATCH=DIR builds into DIR instead of
# .build-bench (e.g. one per worktree or per person, so that two benchmarks don't rebuild each other's binaries).
# LECTERN_BENCH_LIBRARY=1 adds the library benchmarks (import rate, a 10,000-book library; Lectern alone) after
# the player comparison; LECTERN_BENCH_LIBRARY=only runs them alone. (Same as passing --library / --library-only.)
set -euo pipefail

source "$(dirname "$0")/lib/common.sh"

lectern_deps --build --run
# The reference players (scripts/install-deps.sh --bench). Not fatal: the tool measures without what it cannot
# find or start.
lectern_deps --bench || echo "bench: could not install the reference players; measuring without them" >&2

scratch="${LECTERN_BENCH_SCRATCH:-.build-bench}"
lectern_release --scratch-path "$scratch" lecternd lectern-bench

# Measure lecternd as after an install (written back, then read from disk as it runs), not in the linker's fresh
# page cache: a just-linked binary measured up to ~2 MB more VmRSS than the same file read back from disk.
# Everything written first (the builds just wrote ~200 MB; their writeback probably slowed the start-ups measured next:
# a run right after a link measured 35 ms where the next ones measured 16-19).
sync
dd if="$bin/lecternd" iflag=nocache count=0 status=none || true

mkdir -p "$scratch/bench-results" "$scratch/bench-audio"
json="$scratch/bench-results/$(date -u +%Y%m%dT%H%M%SZ).json"
library_args=()
case "${LECTERN_BENCH_LIBRARY:-0}" in
    0 | "") ;;
    only) library_args=(--library-only) ;;
    *) library_args=(--library) ;;
esac
"$bin/lectern-bench" --lecternd "$bin/lecternd" --audio "$scratch/bench-audio/long.ogg" --json "$json" \
    ${library_args[@]+"${library_args[@]}"} "$@"
echo "JSON: $json" >&2
