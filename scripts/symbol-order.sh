#!/usr/bin/env bash
# Writes Sources/lecternd/lecternd.order: the functions of the release lecternd that a typical session runs.
#
#   scripts/symbol-order.sh          (LECTERN_SKIP_DEPS=1: don't install valgrind; LECTERN_ORDER_SCRATCH=DIR:
#                                     build into DIR instead of .build-order)
#
# Release builds link lecternd with `--symbol-ordering-file` (Package.swift, `lecterndOrder`), so these functions
# sit together at the start of .text. Why: the kernel maps a binary's code in 64 KB windows around each page
# first executed ("fault-around"), so functions scattered over 18 MB of Swift runtime, Foundation, GRDB,
# ArgumentParser and our code kept ~9 MB of it resident; packed together they need far fewer windows
# (docs/benchmarks.md, "2026-11-22: code layout"). A name that no longer exists is ignored by the linker, so a
# stale list costs memory, never correctness: run this again after large changes.
#
# How: lecternd runs under valgrind's callgrind (every function executed, by name) on a private bus through a
# session like the benchmark's and a user's: start-up, idle, OpenUri of an Ogg file, playing, Get/GetAll/
# Introspect, PlayPause, Seek, playerctl, then the `lectern` client on the library (import, lists, play a book,
# bookmarks, chapters, speed, skip, sleep, find, status) and SIGTERM. The executed functions of the lecternd binary
# are written in their present address order (neighbours in the source stay neighbours).
set -euo pipefail

cd "$(dirname "$0")/.."
root="$PWD"
if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
if [[ "${LECTERN_SKIP_DEPS:-0}" != 1 ]]; then
    scripts/install-deps.sh --build --run
    if ! command -v valgrind >/dev/null; then
        as_root=(env DEBIAN_FRONTEND=noninteractive)
        [[ $(id -u) -eq 0 ]] || as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
        "${as_root[@]}" apt-get install -y -qq --no-install-recommends valgrind >&2
    fi
fi
for tool in valgrind busctl playerctl dbus-daemon gst-launch-1.0 objcopy nm; do
    command -v "$tool" >/dev/null || { echo "symbol-order: $tool is needed" >&2; exit 1; }
done

scratch="${LECTERN_ORDER_SCRATCH:-.build-order}"
build=(swift build -c release --static-swift-stdlib --scratch-path "$scratch")
"${build[@]}" --product lecternd >&2
"${build[@]}" --product lectern >&2
bin="$("${build[@]}" --show-bin-path)"

work="$(mktemp -d /tmp/lectern-order.XXXXXX)"
cleanup() {
    [[ -n "${daemon:-}" ]] && kill "$daemon" 2>/dev/null || true
    [[ -n "${bus:-}" ]] && kill "$bus" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# valgrind 3.19 can't read the DWARF 5 that clang writes: it reads the symbol table of a copy without it (the
# same addresses, the same names).
objcopy --strip-debug "$bin/lecternd" "$work/lecternd"

# Audio: one long Ogg file to play, and a small book of three files to import.
gst-launch-1.0 -q audiotestsrc num-buffers=2600 ! audioconvert ! vorbisenc ! oggmux ! filesink location="$work/long.ogg"
mkdir -p "$work/Book"
for n in 1 2 3; do
    gst-launch-1.0 -q audiotestsrc num-buffers=200 ! audioconvert ! vorbisenc ! oggmux ! filesink location="$work/Book/$n.ogg"
done

dbus-daemon --session --nofork --address="unix:path=$work/bus" >/dev/null 2>&1 &
bus=$!
export DBUS_SESSION_BUS_ADDRESS="unix:path=$work/bus"
export XDG_DATA_HOME="$work/data" XDG_CACHE_HOME="$work/cache" XDG_CONFIG_HOME="$work/config"
for _ in $(seq 50); do [[ -S "$work/bus" ]] && break; sleep 0.1; done

valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
    "$work/lecternd" --audio-sink "fakesink sync=true" >"$work/lecternd.log" 2>&1 &
daemon=$!
mpris=(org.mpris.MediaPlayer2.lectern /org/mpris/MediaPlayer2)
player=org.mpris.MediaPlayer2.Player
for _ in $(seq 600); do busctl --user status "${mpris[0]}" >/dev/null 2>&1 && break; sleep 0.2; done
busctl --user status "${mpris[0]}" >/dev/null || { echo "symbol-order: lecternd did not start" >&2; cat "$work/lecternd.log" >&2; exit 1; }
sleep 3  # idle

busctl --user call "${mpris[@]}" $player OpenUri s "file://$work/long.ogg"
for _ in $(seq 100); do
    [[ "$(busctl --user get-property "${mpris[@]}" $player PlaybackStatus)" == 's "Playing"' ]] && break
    sleep 0.3
done
sleep 8  # playing: position saves, ticks
for _ in $(seq 20); do
    busctl --user get-property "${mpris[@]}" $player PlaybackStatus >/dev/null
    busctl --user call "${mpris[@]}" org.freedesktop.DBus.Properties GetAll s $player >/dev/null
done
busctl --user call "${mpris[@]}" org.freedesktop.DBus.Properties GetAll s org.mpris.MediaPlayer2 >/dev/null
busctl --user introspect "${mpris[@]}" >/dev/null
for _ in 1 2 3 4; do busctl --user call "${mpris[@]}" $player PlayPause; sleep 1; done
busctl --user call "${mpris[@]}" $player Seek x 5000000; sleep 1
busctl --user call -- "${mpris[@]}" $player Seek x -3000000; sleep 1
playerctl -p lectern metadata >/dev/null 2>&1 || true
playerctl -p lectern position >/dev/null 2>&1 || true
playerctl -p lectern volume 0.5 >/dev/null 2>&1 || true

# The library, through the client (each command's failure is fine: this only has to run the daemon's code).
lectern=("$bin/lectern")
{
    "${lectern[@]}" import "$work/Book"
    sleep 8  # the import runs in the background
    "${lectern[@]}" shelf list
    "${lectern[@]}" book list
    "${lectern[@]}" play 1; sleep 4
    "${lectern[@]}" status --json
    "${lectern[@]}" bookmark add "here" --note "a note"
    "${lectern[@]}" bookmark list
    "${lectern[@]}" chapter
    "${lectern[@]}" speed 1.5; sleep 2
    "${lectern[@]}" skip +15; sleep 1
    "${lectern[@]}" sleep 20m
    "${lectern[@]}" sleep off
    "${lectern[@]}" find --title ogg
    "${lectern[@]}" status
    "${lectern[@]}" pause; sleep 1
    "${lectern[@]}" toggle; sleep 4
} >/dev/null 2>&1 || true

kill -TERM "$daemon"
wait "$daemon" || { echo "symbol-order: lecternd did not stop cleanly" >&2; cat "$work/lecternd.log" >&2; exit 1; }
daemon=

python3 - "$work/callgrind.out" "$work/lecternd" "$root/Sources/lecternd/lecternd.order" <<'EOF'
import re, subprocess, sys
profile, binary, order_file = sys.argv[1:]
# callgrind names each object and function once ("ob=(3) /path", "fn=(12) name"), then by number alone.
objects, functions, current_object, executed = {}, {}, None, set()
for line in open(profile, errors="replace"):
    match = re.match(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
    if not match:
        continue
    kind, number, name = match.groups()
    if kind.endswith("ob"):
        if name:
            objects[number] = name
        if kind == "ob":
            current_object = objects.get(number)
    else:
        if name:
            functions[number] = (name, current_object)
        name, owner = functions[number]
        if kind == "fn" and owner == binary:
            executed.add(re.sub(r"'\d+$", "", name))  # "'2": callgrind's mark of a recursion level
addresses, definitions = {}, {}
for line in subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    fields = line.split()
    if len(fields) == 3 and fields[1] in "tTwW":
        addresses.setdefault(fields[2], int(fields[0], 16))
        definitions[fields[2]] = definitions.get(fields[2], 0) + 1
# A name that several objects define locally ("objectdestroy.2Tm", "__swift_memcpy1_1", value witnesses) would
# order all of them: lld moves every local symbol of that name, and with it the whole .text of each object compiled
# without function sections (much of the static Swift runtime and Foundation): 1.3 MB more code, put
# among the hot functions. Leaving these ~90 small functions where they are costs nothing like that.
ambiguous = {name for name in executed if definitions.get(name, 0) > 1}
names = sorted((addresses[name], name) for name in executed if name in addresses and name not in ambiguous)
with open(order_file, "w") as out:
    out.writelines(name + "\n" for _, name in names)
print(f"symbol-order: {len(names)} functions written to {order_file} ({len(ambiguous)} names defined more than once left out)",
      file=sys.stderr)
EOF
# SwiftPM doesn't know that the link reads the list: make the next release build link lecternd again.
touch "$root/Sources/lecternd/Lecternd.swift"
