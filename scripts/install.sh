#!/usr/bin/env bash
# Installs Lectern for the current user (default prefix ~/.local) or for everyone (PREFIX=/usr/local, as root), and
# removes exactly what it installed:
#
#   scripts/install.sh                       # release build, into ~/.local     (= make install)
#   PREFIX=/usr/local scripts/install.sh     # or: scripts/install.sh --prefix /usr/local
#   scripts/install.sh --uninstall           # removes what the install into that prefix wrote (= make uninstall)
#   scripts/install.sh --binaries DIR        # installs lecternd and lectern (and their man pages, made by DIR/generate-manual) from DIR instead of building them
#
# What goes where (PREFIX/...): bin/lecternd and bin/lectern; the D-Bus activation files of the three bus names
# (share/dbus-1/services) and the systemd user unit (share/systemd/user), each with PREFIX/bin/lecternd written in;
# the desktop entry org.lectern.Lectern.desktop (share/applications) and its icon (share/icons/hicolor); shell
# completions for bash, zsh and fish; man pages lecternd(1) and lectern(1). The list of what was
# written, directories it created included, is share/lectern/installed-files: --uninstall removes those and nothing
# else. Installed into ~/.local with a systemd user instance running, the unit is also enabled (started at login:
# media keys and playerctl only see a running player), and --uninstall disables it; otherwise nothing outside PREFIX
# is touched, and the bus starts lecternd on its first use (`lectern`, the desktop's activation).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

prefix="${PREFIX:-$HOME/.local}"
binaries=""
uninstall=0
while (($#)); do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --binaries) binaries="$2"; shift 2 ;;
        --uninstall) uninstall=1; shift ;;
        -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$prefix" == /* ]] || prefix="$PWD/$prefix"
prefix="${prefix%/}"
manifest="$prefix/share/lectern/installed-files"

if ((uninstall)); then
    if [[ ! -f "$manifest" ]]; then
        echo "install.sh: nothing to uninstall: no $manifest" >&2
        exit 1
    fi
    # Files first, then the directories the install created, deepest first, and only when empty.
    list="$(cat "$manifest")"
    while IFS= read -r line; do
        if [[ "$line" == "file "* ]]; then rm -f -- "${line#file }"; fi
    done <<<"$list"
    if grep -qx 'enabled lecternd.service' <<<"$list"; then
        systemctl --user disable --now lecternd.service >/dev/null 2>&1 || true
        systemctl --user daemon-reload >/dev/null 2>&1 || true
    fi
    rm -f -- "$manifest"
    grep '^dir ' <<<"$list" | sed 's/^dir //' | sort -r | while IFS= read -r dir; do
        rmdir -- "$dir" 2>/dev/null || true
    done
    echo "Lectern removed from $prefix"
    exit 0
fi

if [[ -z "$binaries" ]]; then
    lectern_deps --build --run
    lectern_release lecternd lectern generate-manual
    binaries="$bin"
fi
for program in lecternd lectern; do
    [[ -x "$binaries/$program" ]] || { echo "install.sh: no $program in $binaries" >&2; exit 1; }
done

# The directories an install creates, to remove them again when empty.
created_dirs() {
    local dir="$1"
    while [[ ! -d "$dir" ]]; do echo "dir $dir"; dir="$(dirname "$dir")"; done
}
if [[ -f "$manifest" ]]; then
    echo "install.sh: Lectern is already installed in $prefix: run with --uninstall first" >&2
    exit 1
fi
record="$(created_dirs "$prefix/share/lectern")"
mkdir -p "$prefix/share/lectern"
[[ -z "$record" ]] || echo "$record" >"$manifest"
touch "$manifest"
# `place MODE DEST` copies stdin to DEST, creating (and recording) missing directories.
place() {
    local mode="$1" dest="$2" dirs
    dirs="$(created_dirs "$(dirname "$dest")")"
    [[ -z "$dirs" ]] || echo "$dirs" >>"$manifest"
    install -D -m "$mode" /dev/stdin "$dest"
    echo "file $dest" >>"$manifest"
}

bindir="$prefix/bin"
expand() { sed "s|@BINDIR@|$bindir|g" "$1"; }

place 755 "$bindir/lecternd" <"$binaries/lecternd"
place 755 "$bindir/lectern" <"$binaries/lectern"
for file in dbus/*.service.in; do
    name="$(basename "$file" .in)"
    expand "$file" | place 644 "$prefix/share/dbus-1/services/$name"
done
expand data/lecternd.service.in | place 644 "$prefix/share/systemd/user/lecternd.service"
expand data/org.lectern.Lectern.desktop.in | place 644 "$prefix/share/applications/org.lectern.Lectern.desktop"
place 644 "$prefix/share/icons/hicolor/scalable/apps/org.lectern.Lectern.svg" <data/icons/hicolor/scalable/apps/org.lectern.Lectern.svg
"$binaries/lectern" --generate-completion-script bash | place 644 "$prefix/share/bash-completion/completions/lectern"
"$binaries/lectern" --generate-completion-script zsh | place 644 "$prefix/share/zsh/site-functions/_lectern"
"$binaries/lectern" --generate-completion-script fish | place 644 "$prefix/share/fish/vendor_completions.d/lectern.fish"
# Man pages, each program's --help as a page: made by the argument parser's generator (generate-manual, built beside
# the binaries), from the binaries installed.
if [[ -x "$binaries/generate-manual" ]]; then
    pages="$(mktemp -d)"
    for program in lecternd lectern; do
        "$binaries/generate-manual" "$binaries/$program" --output-directory "$pages" >&2
        place 644 "$prefix/share/man/man1/$program.1" <"$pages/$program.1"
    done
    rm -rf "$pages"
else
    echo "install.sh: no generate-manual in $binaries: installing without man pages" >&2
fi

# Started at login too, where this user's systemd finds the unit (~/.local): media keys and playerctl see only a
# running player; the bus starts it on first use otherwise. Recorded, so that --uninstall disables it again.
if [[ "$prefix/share" == "${XDG_DATA_HOME:-$HOME/.local/share}" ]] \
    && systemctl --user show-environment >/dev/null 2>&1; then
    systemctl --user daemon-reload
    if systemctl --user enable lecternd.service; then echo "enabled lecternd.service" >>"$manifest"; fi
fi

echo "Lectern installed in $prefix ($(grep -c '^file ' "$manifest") files; the list: $manifest)"
case ":$PATH:" in *":$bindir:"*) ;; *) echo "Note: $bindir is not on PATH" ;; esac
