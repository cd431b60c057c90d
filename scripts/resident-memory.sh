#!/usr/bin/env bash
# Where lecternd's resident memory is, and which modules' code a start and 5 s of playing leave resident. A
# measurement for docs/benchmarks.md ("Where the resident memory is"), not a test.
#
#   scripts/resident-memory.sh            LECTERND=PATH (default .build-bench/release/lecternd, made by scripts/bench.sh)
#                                    AUDIO=FILE.ogg (default the bench's long.ogg, made when missing)
#
# The kernel maps a binary's code around each page first executed, not page by page: a 64 KB window ("fault-around"),
# or the whole large folio the page cache read it into. So a module's code is resident wherever anything in it ran
# near it. lecternd runs on a private bus with `fakesink sync=true`, from a fresh database and out of the page cache,
# as the benchmark runs it: 2 s idle, OpenUri of the audio, 5 s of playing. Then /proc/PID/smaps is summed by kind of
# mapping, and the resident pages of its code (/proc/PID/pagemap) are attributed to modules by the symbols they hold.
# Needs python3, dbus-daemon, gdbus, gst-launch-1.0, readelf and nm; run as root (pagemap).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
lecternd=$(realpath "${LECTERND:-.build-bench/release/lecternd}")
audio=${AUDIO:-.build-bench/bench-audio/long.ogg}
for tool in python3 dbus-daemon gdbus gst-launch-1.0 readelf nm "$lecternd"; do
    command -v "$tool" >/dev/null || { echo "resident-memory: $tool not found" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/lectern-pages.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$work"; }
trap cleanup EXIT
# The user's GStreamer registry (warm, as on a desktop, and as the benchmark keeps it): a fresh one is built in the
# daemon's heap.
export GST_REGISTRY="${GST_REGISTRY:-${XDG_CACHE_HOME:-$HOME/.cache}/gstreamer-1.0/registry.$(uname -m).bin}"
lectern_home "$work"
lectern_bench_audio "$audio"
audio=$(realpath "$audio")

dbus-daemon --session --nofork --address="unix:path=$work/bus" >/dev/null 2>&1 &
pids+=($!)
export DBUS_SESSION_BUS_ADDRESS="unix:path=$work/bus"
for _ in $(seq 50); do [[ -S "$work/bus" ]] && break; sleep 0.1; done

sync
dd if="$lecternd" iflag=nocache count=0 status=none || true
"$lecternd" --audio-sink "fakesink sync=true" >"$work/lecternd.log" 2>&1 &
pids+=($!)
mpris=(--session -d org.mpris.MediaPlayer2.lectern -o /org/mpris/MediaPlayer2)
for _ in $(seq 100); do gdbus call "${mpris[@]}" -m org.freedesktop.DBus.Peer.Ping >/dev/null 2>&1 && break; sleep 0.1; done
pid=${pids[1]}
[[ -d "/proc/$pid" ]] || { echo "resident-memory: lecternd did not start" >&2; cat "$work/lecternd.log" >&2; exit 1; }
sleep 2
idle=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
gdbus call "${mpris[@]}" -m org.mpris.MediaPlayer2.Player.OpenUri "file://$audio" >/dev/null
sleep 5
playing=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
cp "/proc/$pid/maps" "$work/maps"
cp "/proc/$pid/smaps" "$work/smaps"
python3 - "$pid" "$work/maps" >"$work/resident" <<'EOF'
import struct, sys
pid, maps = sys.argv[1], sys.argv[2]
with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
    for line in open(maps):
        fields = line.split()
        if len(fields) < 6 or "x" not in fields[1] or not fields[5].endswith("lecternd"):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        pagemap.seek(start // 4096 * 8)
        entries = pagemap.read((end - start) // 4096 * 8)
        for i in range((end - start) // 4096):
            if struct.unpack_from("<Q", entries, i * 8)[0] >> 63:
                print(hex(start + i * 4096))
EOF
kill -INT "$pid"
wait "$pid" 2>/dev/null || true

echo "lecternd VmRSS: idle $((idle / 1024)) MB, playing 5 s $((playing / 1024)) MB ($lecternd)"
python3 - "$lecternd" "$work/maps" "$work/resident" "$work/smaps" <<'EOF'
import bisect, collections, re, subprocess, sys
binary, maps, resident, smaps = sys.argv[1:5]

def run(*args, stdin=None):
    return subprocess.run(args, capture_output=True, text=True, input=stdin).stdout

# The code mapping, and the addresses of the binary's functions.
# The code segment's file offset, virtual address and size.
file_offset, vaddr, size = next((int(f[1], 16), int(f[2], 16), int(f[4], 16))
                                for f in map(str.split, run("readelf", "-lW", binary).splitlines())
                                if f and f[0] == "LOAD" and "E" in f[6:])
mapping = next((int(f[0].split("-")[0], 16), int(f[0].split("-")[1], 16), int(f[2], 16))
               for f in (l.split() for l in open(maps)) if len(f) >= 6 and "x" in f[1] and f[5].endswith("lecternd"))
def to_vaddr(address):
    return address - mapping[0] + mapping[2] - file_offset + vaddr
symbols = sorted((int(a, 16), n) for a, t, n in (l.split(" ", 2) for l in run("nm", "-n", "--defined-only", binary).splitlines()
                                                   if l.count(" ") >= 2) if t in "tTwW")
starts = [a for a, _ in symbols]

def module(name):
    match = re.match(r"\$s(\d+)([A-Za-z_]\w*)", name)
    if match: return match.group(2)[:int(match.group(1))]
    if name.startswith("$s"): return "Swift"
    if name.startswith(("swift_", "_swift", "__swift", "_ZN5swift")): return "Swift runtime"
    if name.startswith(("CF", "_CF", "__CF")): return "CoreFoundation"
    if "icu" in name or re.match(r"u[a-z]*_", name): return "ICU"
    if name.startswith(("_ZNSt", "_ZNKSt", "_ZSt", "__cxa", "__gxx")): return "libstdc++"
    if name.startswith("lectern_"): return "CGStreamerShims"
    return "C (other)"

def bytes_by_module(pages):
    counts = collections.Counter()
    for page in pages:
        i = max(0, bisect.bisect_right(starts, page) - 1)
        while i < len(symbols) and symbols[i][0] < page + 4096:
            end = symbols[i + 1][0] if i + 1 < len(symbols) else page + 4096
            covered = min(page + 4096, end) - max(page, symbols[i][0])
            if covered > 0: counts[module(symbols[i][1])] += covered
            i += 1
    return counts

# Resident memory by kind of mapping.
kinds = collections.defaultdict(lambda: [0, 0])  # KB resident, of which private dirty
kind = None
for line in open(smaps):
    fields = line.split()
    if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
        path = fields[5] if len(fields) > 5 else "[anonymous]"
        if path.endswith("lecternd"): kind = "lecternd " + {"r-xp": "code"}.get(fields[1], "data (" + fields[1] + ")")
        elif "/gstreamer-1.0/" in path: kind = "GStreamer plugins"
        elif path.startswith("/"): kind = "shared libraries"
        else: kind = path
    elif fields[0] in ("Rss:", "Private_Dirty:"):
        kinds[kind][0 if fields[0] == "Rss:" else 1] += int(fields[1])
print("\n| mapping | resident, MB | private dirty, MB |\n|---|---:|---:|")
for name, (rss, dirty) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
    if rss >= 512: print(f"| {name} | {rss / 1024:.1f} | {dirty / 1024:.1f} |")

text = collections.Counter()
for (address, name), (following, _) in zip(symbols, symbols[1:]):
    if following - address < 1 << 20: text[module(name)] += following - address
pages = [to_vaddr(int(l, 16)) // 4096 * 4096 for l in open(resident)]
held = bytes_by_module(pages)
print(f"\nResident code: {len(pages) * 4 / 1024:.1f} MB of {sum(text.values()) / 1048576:.1f} MB")
print("| module | code, KB | resident, KB |\n|---|---:|---:|")
for name, size in sorted(text.items(), key=lambda kv: -held[kv[0]])[:25]:
    print(f"| {name} | {size / 1024:,.0f} | {held[name] / 1024:,.0f} |")

EOF
