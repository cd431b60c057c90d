#!/usr/bin/env bash
# Gapless, measured: renders two-file books through a file sink with a RELEASE lecternd and, in the same run,
# with mpv (--gapless-audio=yes, --ao=pcm) as the reference, and counts the samples each inserted (or lost) at
# the boundary. Prints a Markdown table (the figures in docs/benchmarks.md come from it).
#
#   scripts/gapless.sh
#
# The source is one continuous 440 Hz sine cut mid-wave into 1.3 s + 0.9 s (57,330 + 39,690 = 97,020 samples
# at 44.1 kHz), encoded per format. Each player's figure is the samples it rendered for the two-file book minus
# the 97,020 of the source: 0 means the files follow sample for sample, more means silence (encoder delay and
# padding left in) at the ends and the boundary, less means sound lost. "Decoded alone" is plain GStreamer
# (decodebin on each file by itself, without Lectern's MP3 and MP4 fixes): Lectern − that = what Lectern changes.
# "mp3" is written by FFmpeg (libmp3lame, "Lavc" tag), "mp3-lame" by the lame tool (only if installed).
# LECTERN_SKIP_DEPS=1 skips the package installation. Exits non-zero only if something cannot be built or run.
set -euo pipefail

source "$(dirname "$0")/lib/common.sh"
lectern_deps --build --run
lectern_release --scratch-path .build-bench lecternd lectern

work="$(mktemp -d /tmp/lectern-gapless.XXXXXX)"
bus_pid=""
daemon_pid=""
cleanup() {
    [[ -n "$daemon_pid" ]] && kill "$daemon_pid" 2>/dev/null || true
    [[ -n "$bus_pid" ]] && kill "$bus_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The samples of a mono 16-bit WAV file's data chunk (to the end of the file if its size was never written).
count() {
    python3 - "$1" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
at = 12
while at + 8 <= len(data):
    ident, size = data[at:at + 4], struct.unpack("<I", data[at + 4:at + 8])[0]
    if ident == b"data":
        end = len(data) if size == 0 or at + 8 + size > len(data) else at + 8 + size
        print((end - at - 8) // 2)
        sys.exit(0)
    at += 8 + size + (size & 1)
sys.exit("no data chunk in " + sys.argv[1])
EOF
}

# The two pieces of the sine, as WAV.
python3 - "$work" <<'EOF'
import math, struct, sys, wave
rate, first, second = 44100, 57330, 39690
def piece(path, start, count):
    with wave.open(path, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate)
        w.writeframes(b"".join(struct.pack("<h", int(16383 * math.sin(2 * math.pi * 440 * n / rate)))
                               for n in range(start, start + count)))
piece(sys.argv[1] + "/1.wav", 0, first)
piece(sys.argv[1] + "/2.wav", first, second)
EOF

raw="audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! wavenc"
encode() {  # format source.wav target
    case "$1" in
        wav) cp "$2" "$3" ;;
        flac) gst-launch-1.0 -q filesrc location="$2" ! wavparse ! audioconvert ! flacenc ! filesink location="$3" ;;
        ogg) gst-launch-1.0 -q filesrc location="$2" ! wavparse ! audioconvert ! vorbisenc ! oggmux ! filesink location="$3" ;;
        opus) gst-launch-1.0 -q filesrc location="$2" ! wavparse ! audioconvert ! audioresample ! opusenc ! oggmux ! filesink location="$3" ;;
        mp3) ffmpeg -nostdin -loglevel error -y -i "$2" -c:a libmp3lame "$3" ;;
        mp3-lame) lame --quiet "$2" "$3" ;;
        m4a) ffmpeg -nostdin -loglevel error -y -i "$2" -c:a aac "$3" ;;
    esac
}

bus_address="unix:path=$work/bus"
dbus-daemon --session --address="$bus_address" --nofork --nopidfile --syslog-only &
bus_pid=$!
for _ in $(seq 100); do [[ -S "$work/bus" ]] && break; sleep 0.05; done

source=97020
echo "| format | decoded alone − source | Lectern − source | Lectern − decoded alone | mpv − source |"
echo "|---|---:|---:|---:|---:|"
formats="wav flac ogg opus mp3 m4a"
# MP3 from the LAME command-line tool (its own "LAME" tag) when it is installed (Debian package lame).
command -v lame >/dev/null 2>&1 && formats="wav flac ogg opus mp3 mp3-lame m4a"
for format in $formats; do
    book="$work/book-$format"
    ext="${format%%-*}"
    mkdir -p "$book"
    encode "$format" "$work/1.wav" "$book/1.$ext"
    encode "$format" "$work/2.wav" "$book/2.$ext"
    alone=0
    for n in 1 2; do
        gst-launch-1.0 -q filesrc location="$book/$n.$ext" ! decodebin ! $raw ! filesink location="$work/alone.wav"
        alone=$(( alone + $(count "$work/alone.wav") ))
    done

    out="$work/lectern-$format.wav"
    "$bin/lecternd" --bus-address "$bus_address" --database "$work/library-$format.sqlite" \
        --cache-directory "$work/cache" --audio-sink "$raw ! filesink location=$out" --log-level error &
    daemon_pid=$!
    for _ in $(seq 200); do "$bin/lectern" status --bus-address "$bus_address" >/dev/null 2>&1 && break; sleep 0.05; done
    "$bin/lectern" open --bus-address "$bus_address" "$book" >/dev/null
    for _ in $(seq 400); do
        "$bin/lectern" status --json --bus-address "$bus_address" 2>/dev/null | grep -q '"status":"Stopped"' && break
        sleep 0.05
    done
    kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
    daemon_pid=""
    lectern=$(count "$out")

    mpv_cell="–"
    if command -v mpv >/dev/null 2>&1; then
        mpv --no-config --really-quiet --no-video --gapless-audio=yes --ao=pcm --ao-pcm-file="$work/mpv.wav" \
            --audio-format=s16 --audio-channels=mono --audio-samplerate=44100 "$book/1.$ext" "$book/2.$ext" \
            >/dev/null 2>&1 || true
        if [[ -s "$work/mpv.wav" ]]; then
            mpv_cell=$(( $(count "$work/mpv.wav") - source ))
        fi
        rm -f "$work/mpv.wav"
    fi
    echo "| $format | $(( alone - source )) | $(( lectern - source )) | $(( lectern - alone )) | $mpv_cell |"
done
