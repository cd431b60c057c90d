// GLib and GObject, for the C layers over GLib-based libraries that lecternd opens at run time (GUPnP): their headers'
// search paths and the two libraries GStreamer already brings.
#include <glib-object.h>
