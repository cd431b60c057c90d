#!/usr/bin/env bash
# Installs the Debian packages Lectern needs to build, run and test. Idempotent: a quick dpkg-query check,
# and apt-get (update + install) only when something is missing.
#
#   scripts/install-deps.sh                 # everything (build + run + test)
#   scripts/install-deps.sh --build --run   # only some groups (--runtime-only = --run)
#   scripts/install-deps.sh --check         # exit 1 and list what's missing, install nothing
#   scripts/install-deps.sh --bench         # the reference players of scripts/bench.sh (not in --all)
#
# Uses sudo when not root. Debian 12 (bookworm) package names.
set -euo pipefail

# libebur128-dev: the loudness meter (EBU R128) the media reader runs (libebur128-1, its library, is in run_pkgs).
# libgupnp-1.6-dev, libgssdp-1.6-dev, libsoup-3.0-dev: the home network's headers (GUPnP is opened at run time, when
# the network is on: libgupnp-1.6-0, in run_pkgs).
build_pkgs=(libdbus-1-dev libsqlite3-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libpulse-dev
            libebur128-dev pkg-config libgupnp-1.6-dev libgssdp-1.6-dev libsoup-3.0-dev)
# dbus-daemon (dbus-daemon, dbus-run-session) and dbus-bin (dbus-send) are separate packages since bookworm;
# on older releases they are part of `dbus` (see optional_pkgs).
# espeak-ng: spoken prompts (lecternd runs it per prompt; without it prompts are reported unheard, nothing else changes).
run_pkgs=(dbus dbus-daemon dbus-bin libebur128-1 gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-libav
          gstreamer1.0-tools gstreamer1.0-plugins-base-apps espeak-ng libgupnp-1.6-0)
# sqlite3: schema checks; python3: integrity_check from tests; systemd: busctl; e2fsprogs: chattr (read-only file tests);
# strace: the reliability suite checks which files the daemon opens; gdb: a daemon that does not come up in time has
# its threads' stacks in the failure's message. The route suite runs against PulseAudio and against PipeWire
# (pipewire, wireplumber, pipewire-pulse; pipewire-bin: pw-cli), each started headless by the test.
# desktop-file-utils: the installed desktop entry is validated; libglib2.0-bin: gapplication activates it.
# gnome-shell, gnome-settings-daemon: the desktop suite runs the real GNOME Shell headless (its media card) and
# gsd-media-keys (the media keys); without recommends (installed as all of these are) they need no X server and
# no display manager, about 20 s to install.
# The home network's suites run their UPnP peers in a network namespace they make (iproute2: `ip netns`): rygel (its
# MPRIS plugin renders to Lectern; rygel-playbin, its playbin renderer, is a renderer to cast to) and a GUPnP control
# point (python3-gi, gir1.2-gupnp-1.6, gir1.2-gssdp-1.6).
test_pkgs=(playerctl pulseaudio pulseaudio-utils ffmpeg sqlite3 python3 python3-mutagen systemd e2fsprogs strace gdb
           pipewire pipewire-pulse wireplumber pipewire-bin desktop-file-utils libglib2.0-bin
           gnome-shell gnome-settings-daemon rygel rygel-playbin python3-gi gir1.2-gupnp-1.6 gir1.2-gssdp-1.6 iproute2)
# scripts/bench.sh's reference players: mpv and its MPRIS plugin; VLC's launcher and its base plugins (the D-Bus
# control module, the Ogg demuxer, the Vorbis decoder, the afile output are all in vlc-plugin-base); PulseAudio for
# the CPU-into-a-sound-server row.
bench_pkgs=(mpv mpv-mpris vlc-bin vlc-plugin-base pulseaudio)
# Installed only if the release has them.
optional_pkgs=" dbus-daemon dbus-bin "

want_build=0 want_run=0 want_test=0 want_bench=0 check_only=0
for arg in "$@"; do
    case "$arg" in
        --build) want_build=1 ;;
        --run|--runtime|--runtime-only) want_run=1 ;;
        --test) want_test=1 ;;
        --bench) want_bench=1 ;;
        --all) want_build=1 want_run=1 want_test=1 ;;
        --check) check_only=1 ;;
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install-deps: unknown option $arg" >&2; exit 2 ;;
    esac
done
if (( want_build + want_run + want_test + want_bench == 0 )); then
    want_build=1 want_run=1 want_test=1
fi

wanted=()
(( want_build )) && wanted+=("${build_pkgs[@]}")
(( want_run )) && wanted+=("${run_pkgs[@]}")
(( want_test )) && wanted+=("${test_pkgs[@]}")
(( want_bench )) && wanted+=("${bench_pkgs[@]}")

# One dpkg-query for all of them: "name status" for the installed ones. dpkg-query exits 1 when it has never
# heard of one of them (a fresh machine), which pipefail and set -e must not take for a failure.
installed=" $( { dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${wanted[@]}" 2>/dev/null || true; } \
    | awk '$2 == "installed" { printf "%s ", $1 }') "
missing=()
for p in "${wanted[@]}"; do
    [[ "$installed" == *" $p "* ]] || missing+=("$p")
done

if (( ${#missing[@]} == 0 )); then
    exit 0
fi
if (( check_only )); then
    echo "missing: ${missing[*]}"
    exit 1
fi

if [[ $(id -u) -eq 0 ]]; then
    as_root=(env DEBIAN_FRONTEND=noninteractive)
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
else
    echo "install-deps: missing ${missing[*]}; not root and no sudo: install them and retry" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
apt_opts=(-q -o DPkg::Lock::Timeout=300)
"${as_root[@]}" apt-get "${apt_opts[@]}" update </dev/null >&2

# Drop optional packages this release doesn't have.
to_install=()
for p in "${missing[@]}"; do
    if [[ "$optional_pkgs" == *" $p "* ]]; then
        candidate=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ { print $2 }')
        if [[ -z "$candidate" || "$candidate" == "(none)" ]]; then
            echo "install-deps: $p not available here, skipped" >&2
            continue
        fi
    fi
    to_install+=("$p")
done
if (( ${#to_install[@]} > 0 )); then
    "${as_root[@]}" apt-get "${apt_opts[@]}" install -y --no-install-recommends "${to_install[@]}" </dev/null >&2
fi
