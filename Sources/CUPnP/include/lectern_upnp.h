// UPnP through GUPnP 1.6 (with GSSDP, libsoup 3 and GIO), on a thread of its own that runs a GLib main context.
// lecternd is not linked with GUPnP: lectern_upnp_load opens it (dlopen) when the network is first used, so that a
// daemon with the network off never loads it and the libraries it brings.
//
// Everything GUPnP does happens on the thread lectern_upnp_start makes; the callbacks are called there, and must
// return soon. The handle is the only thing that leaves it, and only to lectern_upnp_stop.
#ifndef LECTERN_UPNP_H
#define LECTERN_UPNP_H

#include <stdbool.h>

/// Opens GUPnP and finds the functions this layer calls: NULL when done (or done before), else why it could not.
const char *_Nullable lectern_upnp_load(void);

typedef struct lectern_upnp lectern_upnp;

/// A media renderer came (`available`) or went (said goodbye, or stopped answering, or its interface went away).
/// `udn` names it for good; `name` is its friendly name, `location` its description's URL, `interface` and `host`
/// the interface and this machine's address it was found on.
typedef void (*lectern_upnp_renderer_callback)(void *_Nullable user, bool available, const char *_Nonnull udn,
                                               const char *_Nonnull name, const char *_Nonnull location,
                                               const char *_Nonnull interface, const char *_Nonnull host);

/// Starts the thread and, on it, GUPnP on `interface` (NULL or "": every interface GUPnP's network monitor offers)
/// with a control point for media renderers, which calls `callback` as they come and go. NULL and `*error` (to free
/// with free()) when it could not start.
lectern_upnp *_Nullable lectern_upnp_start(const char *_Nullable interface, lectern_upnp_renderer_callback _Nonnull callback,
                                           void *_Nullable user, char *_Nullable *_Nonnull error);

/// Stops GUPnP and its thread; no callback comes after it returns.
void lectern_upnp_stop(lectern_upnp *_Nonnull upnp);

#endif
