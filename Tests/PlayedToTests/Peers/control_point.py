#!/usr/bin/python3
"""A UPnP control point (GUPnP 1.6 through PyGObject) on the test's network namespace's loopback. Finds the
MediaRenderer whose friendly name is argv[1] (within argv[2] seconds; exit status 1 when none comes), then makes the
actions of argv[3], a JSON list of {"service": "AVTransport", "action": "Play", "in": {...}, "out": [...]}, in order,
and prints each one's answer on a line: {"ok": true, "out": {...}} or {"ok": false, "code": N, "message": "..."}."""
import json, sys
import gi
gi.require_version("GUPnP", "1.6")
gi.require_version("GSSDP", "1.6")
from gi.repository import Gio, GLib, GObject, GSSDP, GUPnP

name, timeout, commands = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
# The namespace's loopback only: nothing else is ever a target.
context = GUPnP.Context.new_for_address(Gio.InetAddress.new_loopback(Gio.SocketFamily.IPV4), 0,
                                        GSSDP.UDAVersion.VERSION_1_0)
control = GUPnP.ControlPoint.new(context, "urn:schemas-upnp-org:device:MediaRenderer:1")
loop = GLib.MainLoop()
services = {}


def available(_, device):
    if device.get_friendly_name() != name:
        return
    for service in device.list_services():
        services[service.get_service_type().split(":")[3]] = service
    loop.quit()


control.connect("device-proxy-available", available)
control.set_active(True)
GLib.timeout_add_seconds(timeout, loop.quit)
loop.run()
if not services:
    print("no renderer named %s within %d s" % (name, timeout), file=sys.stderr)
    sys.exit(1)

for command in commands:
    names = list(command.get("in", {}).keys())
    values = [str(v) for v in command.get("in", {}).values()]
    outs = command.get("out", [])
    action = GUPnP.ServiceProxyAction.new_from_list(command["action"], names, values)
    try:
        services[command["service"]].call_action(action, None)
        ok, got = action.get_result_list(outs, [GObject.TYPE_STRING] * len(outs))
        print(json.dumps({"ok": True, "out": dict(zip(outs, got))}), flush=True)
    except GLib.Error as error:
        print(json.dumps({"ok": False, "code": error.code, "message": error.message}), flush=True)
