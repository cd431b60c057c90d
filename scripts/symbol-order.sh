#!/usr/bin/env bash
# Writes Sources/lecternd/lecternd.order: the functions of the release lecternd that a typical session runs.
#
#   scripts/symbol-order.sh          (LECTERN_SKIP_DEPS=1: don't install valgrind; LECTERN_ORDER_KEEP=DIR: keep the
#                                     profile and the link map there; LECTERN_ORDER_SCRATCH=DIR:
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
for tool in valgrind busctl playerctl dbus-daemon pulseaudio gst-launch-1.0 objcopy nm; do
    command -v "$tool" >/dev/null || { echo "symbol-order: $tool is needed" >&2; exit 1; }
done

scratch="${LECTERN_ORDER_SCRATCH:-.build-order}"
work="$(mktemp -d /tmp/lectern-order.XXXXXX)"
cleanup() {
    [[ -n "${daemon:-}" ]] && kill "$daemon" 2>/dev/null || true
    [[ -n "${bus:-}" ]] && kill "$bus" 2>/dev/null || true
    [[ -n "${pulse:-}" ]] && kill "$pulse" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
# The linker's map says which functions share an input section (below: which names are safe to list).
build=(scripts/swift-release --scratch-path "$scratch")
"${build[@]}" --product lecternd -Xlinker -Map="$work/lecternd.map" >&2
"${build[@]}" --product lectern >&2
bin="$("${build[@]}" --show-bin-path)"
[[ -s "$work/lecternd.map" ]] || { echo "symbol-order: the link wrote no map (was lecternd linked again?)" >&2; exit 1; }

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
export XDG_DATA_HOME="$work/data" XDG_CACHE_HOME="$work/cache" XDG_CONFIG_HOME="$work/config" \
       XDG_RUNTIME_DIR="$work/runtime" HOME="$work"
mkdir -m 700 "$work/runtime"
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

# Until now there was no sound server (as in the benchmark); now one starts, as on a desktop: the daemon finds it
# and watches the output routes.
pulseaudio -n --daemonize=no --exit-idle-time=-1 --load="module-null-sink sink_name=null" \
    --load=module-native-protocol-unix --log-target=file:"$work/pulse.log" &
pulse=$!
sleep 5

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

python3 - "$work/callgrind.out" "$work/lecternd" "$work/lecternd.map" "$root/Sources/lecternd/lecternd.order" <<'EOF'
import re, subprocess, sys
profile, binary, link_map, order_file = sys.argv[1:]
# callgrind names each object and function once ("ob=(3) /path", "fn=(12) name"), then by number alone. A function
# ran if it has costs of its own ("fn=", under its object's "ob=") or was called ("cfn=", whose object is the
# "cob=" just before it, else the caller's): some functions that were called have no block of their own. (Taking
# a function's object from its first mention instead, as this did before, lost callbacks that libdbus or libpulse
# call, in some runs and not others.)
objects, functions, current_object, callee_object, executed = {}, {}, None, None, set()
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
            callee_object = objects.get(number)
        continue
    if name:
        functions[number] = name
    owner = current_object if kind == "fn" else (callee_object or current_object)
    if kind == "cfn":
        callee_object = None
    if owner == binary:
        executed.add(re.sub(r"'\d+$", "", functions[number]))  # "'2": callgrind's mark of a recursion level
addresses = {}
for line in subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    fields = line.split()
    if len(fields) == 3 and fields[1] in "tTwW":
        addresses.setdefault(fields[2], int(fields[0], 16))
# The input sections of .text (lld's map: "VMA LMA Size Align" then the section at 8 spaces, its symbols at 16).
sections_of, size_of, section, in_text = {}, [], None, False
for line in open(link_map, errors="replace"):
    match = re.match(r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ (\s*)(.*)$", line.rstrip("\n"))
    if not match:
        continue
    size, indent, name = int(match.group(1), 16), len(match.group(2)), match.group(3)
    if indent == 0:
        in_text = name == ".text"
    elif in_text and indent == 8:
        section = len(size_of)
        size_of.append(size)
    elif in_text and indent == 16 and section is not None:
        sections_of.setdefault(name, []).append(section)
# lld moves the whole input section of each listed name, and for a name several objects define locally (value
# witnesses, outlined copies, "objectdestroy") the section of every definition. Our modules are compiled one
# section per function, but the static Swift runtime and Foundation have objects whose one .text holds many
# functions (Swift.o: 1.6 MB). So: first the names defined once, in their present address order (neighbours in the
# source stay neighbours); then the names defined several times, those whose sections are all small or already
# moved first, and last those that move a big section (it lands after the code that runs, not among it).
unique = [name for name in executed if name in addresses and len(sections_of.get(name, [])) <= 1]
moved = {sections_of[name][0] for name in unique if name in sections_of}
def cost(name):
    return sum(size_of[s] for s in sections_of[name] if s not in moved)
shared = [name for name in executed if name in addresses and len(sections_of.get(name, [])) > 1]
names = [name for _, name in sorted((addresses[name], name) for name in unique)]
names += [name for _, _, name in sorted((cost(name) > 16384, addresses[name], name) for name in shared)]
# Last, what the previous list named that this session did not run but the binary still has: one session misses
# paths another takes (a lock's slow path, a retry), and a list made from one session alone measured 1.1-1.5 MB
# more VmRSS on the benchmark's path than the same list with these kept (docs/benchmarks.md, "Memory: function
# sections"). After the code that ran: whatever sections they move land after it, not among it.
listed = set(names)
try:
    previous = [line.strip() for line in open(order_file) if line.strip()]
except FileNotFoundError:
    previous = []
kept = [name for name in previous if name in addresses and name not in listed]
names += kept
with open(order_file, "w") as out:
    out.writelines(name + "\n" for name in names)
print(f"symbol-order: {len(names)} functions written to {order_file} ({len(shared)} of them defined more than once, "
      f"{len(kept)} kept from the previous list)", file=sys.stderr)
EOF
if [[ -n "${LECTERN_ORDER_KEEP:-}" ]]; then
    mkdir -p "$LECTERN_ORDER_KEEP" && cp "$work/callgrind.out" "$work/lecternd.map" "$LECTERN_ORDER_KEEP/"
fi
# SwiftPM doesn't know that the link reads the list; scripts/swift-release links lecternd again when it changed.
