// GStreamer core, pbutils (discoverer) and tag (ID3), imported whole; Sources/GStreamer wraps them.
#include <gst/gst.h>
#include <gst/pbutils/pbutils.h>
#include <gst/tag/tag.h>
