#!/usr/bin/env bash
# Builds Lectern (release) and runs lecternd on the session bus, in the foreground.
#
#   scripts/run.sh [lecternd options...]      e.g. scripts/run.sh --audio-sink "fakesink sync=true"
#
# The bus: $DBUS_SESSION_BUS_ADDRESS if set, else $XDG_RUNTIME_DIR/bus if that socket exists, else a new one
# made with dbus-run-session (it lives as long as lecternd). Its address is printed and written to
# $XDG_RUNTIME_DIR/lectern-bus-address (when XDG_RUNTIME_DIR is set) and /tmp/lectern-bus-address, so another
# shell can:  export DBUS_SESSION_BUS_ADDRESS=$(cat /tmp/lectern-bus-address); playerctl -p lectern status
#
# LECTERN_SKIP_DEPS=1 skips scripts/install-deps.sh.
set -euo pipefail

source "$(dirname "$0")/lib/common.sh"

lectern_deps --build --run
lectern_release lecternd lectern
echo "lectern: binaries in $bin (the client: $bin/lectern)" >&2

address_files=(/tmp/lectern-bus-address)
if [[ -n "${XDG_RUNTIME_DIR:-}" ]]; then
    address_files=("$XDG_RUNTIME_DIR/lectern-bus-address" "${address_files[@]}")
fi

if [[ -z "${DBUS_SESSION_BUS_ADDRESS:-}" && -n "${XDG_RUNTIME_DIR:-}" && -S "$XDG_RUNTIME_DIR/bus" ]]; then
    export DBUS_SESSION_BUS_ADDRESS="unix:path=$XDG_RUNTIME_DIR/bus"
fi

if [[ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ]]; then
    for f in "${address_files[@]}"; do printf '%s\n' "$DBUS_SESSION_BUS_ADDRESS" >"$f" || true; done
    echo "lectern: session bus $DBUS_SESSION_BUS_ADDRESS" >&2
    exec "$bin/lecternd" "$@"
fi

# No session bus: start one around lecternd. The inner shell sees the new address, publishes it, then
# becomes lecternd (so Ctrl-C and SIGTERM reach it; dbus-run-session then stops the bus).
export LECTERN_ADDRESS_FILES="${address_files[*]}"
# shellcheck disable=SC2016 # expanded by the inner shell
exec dbus-run-session -- bash -c '
    for f in $LECTERN_ADDRESS_FILES; do printf "%s\n" "$DBUS_SESSION_BUS_ADDRESS" >"$f" || true; done
    unset LECTERN_ADDRESS_FILES
    echo "lectern: started a session bus; in another shell:" >&2
    echo "  export DBUS_SESSION_BUS_ADDRESS=\"$DBUS_SESSION_BUS_ADDRESS\"" >&2
    echo "  (or: export DBUS_SESSION_BUS_ADDRESS=\$(cat /tmp/lectern-bus-address))" >&2
    exec "$0" "$@"
' "$bin/lecternd" "$@"
