// GStreamer core and pbutils (discoverer), imported whole; Sources/GStreamer wraps them.
#include <gst/gst.h>
#include <gst/pbutils/pbutils.h>
