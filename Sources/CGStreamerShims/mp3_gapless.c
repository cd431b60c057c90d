// Gapless MP3 for files written by FFmpeg: see include/gst_shims.h (lectern_gst_enable_mp3_gapless).
//
// An MP3 encoder adds samples at both ends of the stream (the encoder delay, typically 576, and padding to a
// whole frame). LAME records both in the "LAME tag" inside the stream's first frame (the Xing/Info frame), and
// GStreamer's mpegaudioparse reads them and has the decoder clip them, so that consecutive files follow sample
// for sample. FFmpeg (libmp3lame through libavcodec: ffmpeg, most converters) writes the same tag, at the same
// place, with its own version string ("Lavc…" or "Lavf…") where LAME writes "LAME…"; mpegaudioparse 1.22 only
// accepts "LAME", so those files keep ~25 ms of silence at the start and up to a frame at the end. The probe below
// renames FFmpeg's version string to "LAME" in the bytes flowing into mpegaudioparse; GStreamer does the rest
// (clipping, duration, position and seeks) exactly as for a LAME-written file.
#include "gst_shims.h"

#include <gst/gst.h>
#include <string.h>

// The Xing/Info header starts after the 4-byte frame header and the side information, whose size depends on
// the MPEG version and whether the frame is mono.
static long xing_header_offset(const uint8_t *frame) {
    unsigned version = (frame[1] >> 3) & 3;   // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5, 1: reserved
    unsigned layer = (frame[1] >> 1) & 3;     // 1: Layer III
    bool mono = ((frame[3] >> 6) & 3) == 3;
    if (version == 1 || layer != 1) {
        return -1;
    }
    if (version == 3) {
        return 4 + (mono ? 17 : 32);
    }
    return 4 + (mono ? 9 : 17);
}

long lectern_mp3_ffmpeg_gapless_tag(const uint8_t *data, size_t size) {
    // The Xing/Info frame is the stream's first frame: look for it near the start only.
    size_t limit = size < 4096 ? size : 4096;
    for (size_t at = 0; at + 4 <= limit; at++) {
        if (data[at] != 0xFF || (data[at + 1] & 0xE0) != 0xE0) {
            continue;
        }
        long xing = xing_header_offset(data + at);
        if (xing < 0) {
            continue;
        }
        size_t tag = at + (size_t)xing;
        if (tag + 8 > size || (memcmp(data + tag, "Xing", 4) != 0 && memcmp(data + tag, "Info", 4) != 0)) {
            continue;
        }
        uint32_t flags = ((uint32_t)data[tag + 4] << 24) | ((uint32_t)data[tag + 5] << 16)
            | ((uint32_t)data[tag + 6] << 8) | (uint32_t)data[tag + 7];
        size_t version = tag + 8;
        if (flags & 0x1) version += 4;     // frame count
        if (flags & 0x2) version += 4;     // byte count
        if (flags & 0x4) version += 100;   // seek table
        if (flags & 0x8) version += 4;     // quality
        // mpegaudioparse reads the delay and padding 21 bytes after the version string, and wants 36 bytes there.
        if (version + 36 > size) {
            return -1;
        }
        if (memcmp(data + version, "Lavc", 4) == 0 || memcmp(data + version, "Lavf", 4) == 0) {
            return (long)version;
        }
        return -1;
    }
    return -1;
}

// On mpegaudioparse's sink pad, push or pull mode: renames FFmpeg's version string in the first frame.
static GstPadProbeReturn rename_ffmpeg_tag(GstPad *pad, GstPadProbeInfo *info, gpointer user_data) {
    (void)pad;
    (void)user_data;
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    if (buffer == NULL) {
        return GST_PAD_PROBE_OK;
    }
    // The first frame is at the start of the stream (after any ID3v2 tag, which id3demux removed).
    guint64 offset = GST_BUFFER_OFFSET(buffer);
    if (offset != GST_BUFFER_OFFSET_NONE && offset > 65536) {
        return GST_PAD_PROBE_OK;
    }
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
        return GST_PAD_PROBE_OK;
    }
    long tag = lectern_mp3_ffmpeg_gapless_tag(map.data, map.size);
    gst_buffer_unmap(buffer, &map);
    if (tag < 0) {
        return GST_PAD_PROBE_OK;
    }
    buffer = gst_buffer_make_writable(buffer);
    gst_buffer_fill(buffer, (gsize)tag, "LAME", 4);
    GST_PAD_PROBE_INFO_DATA(info) = buffer;
    return GST_PAD_PROBE_OK;
}

// playbin's "deep-element-added": every element of every source group passes here, on the thread that adds it.
static void element_added(GstBin *bin, GstBin *sub_bin, GstElement *element, gpointer user_data) {
    (void)bin;
    (void)sub_bin;
    (void)user_data;
    GstElementFactory *factory = gst_element_get_factory(element);
    if (factory == NULL || strcmp(GST_OBJECT_NAME(factory), "mpegaudioparse") != 0) {
        return;
    }
    GstPad *sink = gst_element_get_static_pad(element, "sink");
    if (sink == NULL) {
        return;
    }
    gst_pad_add_probe(sink, GST_PAD_PROBE_TYPE_BUFFER, rename_ffmpeg_tag, NULL, NULL);
    gst_object_unref(sink);
}

void lectern_gst_enable_mp3_gapless(void *bin) {
    g_signal_connect(bin, "deep-element-added", G_CALLBACK(element_added), NULL);
}

// The discoverer's "source-setup": the source's parent is the discoverer's uridecodebin, which will hold the
// decoding elements (created once per discoverer; marked so it is connected once).
static void discoverer_source_setup(GstElement *discoverer, GstElement *source, gpointer user_data) {
    (void)discoverer;
    (void)user_data;
    GstObject *parent = gst_object_get_parent(GST_OBJECT(source));
    if (parent == NULL) {
        return;
    }
    if (GST_IS_BIN(parent) && g_object_get_data(G_OBJECT(parent), "lectern-mp3-gapless") == NULL) {
        g_object_set_data(G_OBJECT(parent), "lectern-mp3-gapless", GINT_TO_POINTER(1));
        lectern_gst_enable_mp3_gapless(parent);
    }
    gst_object_unref(parent);
}

void lectern_gst_enable_mp3_gapless_in_discoverer(void *discoverer) {
    g_signal_connect(discoverer, "source-setup", G_CALLBACK(discoverer_source_setup), NULL);
}
