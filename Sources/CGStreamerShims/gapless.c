// Two fixes that make GStreamer 1.22 play consecutive files without a gap or a loss: see include/gst_shims.h
// (lectern_gst_enable_gapless_fixes). Both rewrite a few bytes of the file's header as they flow into the demuxer
// or parser, so that GStreamer's own handling applies; neither touches audio data.
//
// MP3 written by FFmpeg. An MP3 encoder adds samples at both ends of the stream (the encoder delay, typically 576,
// and padding to a whole frame). LAME records both in the "LAME tag" inside the stream's first frame (the
// Xing/Info frame), and GStreamer's mpegaudioparse reads them and has the decoder clip them. FFmpeg (libmp3lame
// through libavcodec: ffmpeg, most converters) writes the same tag, at the same place, with its own version string
// ("Lavc…" or "Lavf…") where LAME writes "LAME…"; mpegaudioparse 1.22 only accepts "LAME", so those files keep
// ~25 ms of silence at the start and up to a frame at the end. The probe renames FFmpeg's version string to "LAME"
// in the bytes flowing into mpegaudioparse; GStreamer then clips, times and seeks as for a LAME-written file.
//
// AAC in MP4 (m4a, m4b). The encoder's priming samples (1,024 for AAC) are skipped by the track's edit list
// (media_time), and its duration ends the audio where the source ended. qtdemux 1.22 ends the stream when the next
// sample's *media* time reaches the edit's *presentation* duration, which the last packet's media time (priming
// included) always does: the last ~1,000 samples of every file are never decoded. The probe lengthens such an
// edit just past the last packet's media time, in the moov box flowing into qtdemux, so that the last packet is
// decoded too, and gives the audio pad's segment the edit's own end back, so that the decoder clips the last
// frame's padding where the edit said the audio ends.
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

// MARK: - MP4 edit lists

static uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static uint64_t be64(const uint8_t *p) {
    return ((uint64_t)be32(p) << 32) | (uint64_t)be32(p + 4);
}

static void put_be32(uint8_t *p, uint32_t value) {
    p[0] = (uint8_t)(value >> 24);
    p[1] = (uint8_t)(value >> 16);
    p[2] = (uint8_t)(value >> 8);
    p[3] = (uint8_t)value;
}

// The box starting at `at` within [at, end): its type, where its contents start and where it ends. False when the
// header doesn't fit or the box overruns `end`.
static bool box_at(const uint8_t *data, size_t at, size_t end, uint32_t *type, size_t *contents, size_t *box_end) {
    if (at + 8 > end) return false;
    uint64_t size = be32(data + at);
    size_t header = 8;
    if (size == 1) {
        if (at + 16 > end) return false;
        size = be64(data + at + 8);
        header = 16;
    } else if (size == 0) {
        size = end - at;
    }
    if (size < header || size > end - at) return false;
    *type = be32(data + at + 4);
    *contents = at + header;
    *box_end = at + (size_t)size;
    return true;
}

// The first child of type `wanted` among the boxes in [from, end); false if there is none.
static bool find_child(const uint8_t *data, size_t from, size_t end, uint32_t wanted, size_t *contents, size_t *box_end) {
    size_t at = from;
    uint32_t type;
    while (box_at(data, at, end, &type, contents, box_end)) {
        if (type == wanted) return true;
        at = *box_end;
    }
    return false;
}

#define FOURCC(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

// A full box's timescale (mvhd, mdhd): after version/flags and the two dates (32 or 64 bits each).
static uint32_t timescale(const uint8_t *data, size_t contents, size_t end) {
    size_t at = contents + (data[contents] == 1 ? 4 + 16 : 4 + 8);
    return at + 4 <= end ? be32(data + at) : 0;
}

// One sound track: lengthens its single, priming-skipping edit when qtdemux would drop the last packet.
static bool extend_track_edit(uint8_t *data, size_t trak, size_t trak_end, uint32_t movie_timescale,
                              uint64_t *added_ns) {
    size_t edts, edts_end, elst, elst_end, mdia, mdia_end, mdhd, mdhd_end, hdlr, hdlr_end;
    size_t minf, minf_end, stbl, stbl_end, stts, stts_end;
    if (!find_child(data, trak, trak_end, FOURCC('e', 'd', 't', 's'), &edts, &edts_end)
        || !find_child(data, edts, edts_end, FOURCC('e', 'l', 's', 't'), &elst, &elst_end)
        || !find_child(data, trak, trak_end, FOURCC('m', 'd', 'i', 'a'), &mdia, &mdia_end)
        || !find_child(data, mdia, mdia_end, FOURCC('m', 'd', 'h', 'd'), &mdhd, &mdhd_end)
        || !find_child(data, mdia, mdia_end, FOURCC('h', 'd', 'l', 'r'), &hdlr, &hdlr_end)
        || !find_child(data, mdia, mdia_end, FOURCC('m', 'i', 'n', 'f'), &minf, &minf_end)
        || !find_child(data, minf, minf_end, FOURCC('s', 't', 'b', 'l'), &stbl, &stbl_end)
        || !find_child(data, stbl, stbl_end, FOURCC('s', 't', 't', 's'), &stts, &stts_end)) {
        return false;
    }
    if (hdlr + 12 > hdlr_end || be32(data + hdlr + 8) != FOURCC('s', 'o', 'u', 'n')) return false;
    uint32_t track_timescale = mdhd + 4 <= mdhd_end ? timescale(data, mdhd, mdhd_end) : 0;
    if (track_timescale == 0) return false;

    // The last sample's media time: the sum of the time-to-sample table, less the last sample's duration.
    if (stts + 8 > stts_end) return false;
    uint32_t entries = be32(data + stts + 4);
    if (entries == 0 || (stts_end - stts - 8) / 8 < entries) return false;
    uint64_t total = 0, last_delta = 0;
    for (uint32_t i = 0; i < entries; i++) {
        const uint8_t *entry = data + stts + 8 + 8 * (size_t)i;
        uint32_t count = be32(entry), delta = be32(entry + 4);
        total += (uint64_t)count * delta;
        if (count > 0) last_delta = delta;
    }
    uint64_t last_start = total - last_delta;

    // A single edit (version 0: 32-bit fields, only those are rewritten) that skips priming samples.
    if (elst + 8 > elst_end || data[elst] != 0 || be32(data + elst + 4) != 1 || elst + 8 + 12 > elst_end) return false;
    uint8_t *edit = data + elst + 8;
    uint32_t duration = be32(edit);
    int32_t media_time = (int32_t)be32(edit + 4);
    if (media_time <= 0) return false;
    // qtdemux needs the edit's duration past the last sample's media time, both in seconds.
    uint64_t needed = last_start * movie_timescale / track_timescale + 1;
    if (needed <= duration || needed > UINT32_MAX || needed - duration > movie_timescale) return false;
    put_be32(edit, (uint32_t)needed);
    *added_ns = (needed - duration) * 1000000000ull / movie_timescale;
    return true;
}

long lectern_mp4_extend_priming_edits(uint8_t *data, size_t size, uint64_t *added_ns) {
    uint32_t type;
    size_t moov, moov_end, mvhd, mvhd_end;
    if (!box_at(data, 0, size, &type, &moov, &moov_end) || type != FOURCC('m', 'o', 'o', 'v')) return -1;
    if (!find_child(data, moov, moov_end, FOURCC('m', 'v', 'h', 'd'), &mvhd, &mvhd_end) || mvhd + 4 > mvhd_end) return -1;
    uint32_t movie_timescale = timescale(data, mvhd, mvhd_end);
    if (movie_timescale == 0) return -1;
    long extended = 0;
    size_t at = moov, contents, box_end;
    while (box_at(data, at, moov_end, &type, &contents, &box_end)) {
        uint64_t added = 0;
        if (type == FOURCC('t', 'r', 'a', 'k') && extend_track_edit(data, contents, box_end, movie_timescale, &added)) {
            extended++;
            if (added_ns != NULL) *added_ns = added;
        }
        at = box_end;
    }
    return extended;
}

// MARK: - Probes

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

// On qtdemux's sink pad: a buffer that is a whole moov box (in pull mode qtdemux reads it in one piece) gets its
// sound tracks' priming edits lengthened. Anything else passes untouched.
static const char *const edit_extension_key = "lectern-edit-extension-ns";

static GstPadProbeReturn extend_priming_edits(GstPad *pad, GstPadProbeInfo *info, gpointer user_data) {
    (void)user_data;
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    if (buffer == NULL || gst_buffer_get_size(buffer) < 16) {
        return GST_PAD_PROBE_OK;
    }
    uint8_t head[8];
    if (gst_buffer_extract(buffer, 0, head, 8) != 8 || memcmp(head + 4, "moov", 4) != 0) {
        return GST_PAD_PROBE_OK;
    }
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
        return GST_PAD_PROBE_OK;
    }
    // Work on a copy: the buffer is only replaced when something changed.
    uint8_t *copy = g_memdup2(map.data, map.size);
    gsize size = map.size;
    gst_buffer_unmap(buffer, &map);
    uint64_t added_ns = 0;
    // One sound track only: its output pad's segment gets the end back (see end_segment_where_the_edit_did).
    if (lectern_mp4_extend_priming_edits(copy, size, &added_ns) == 1) {
        buffer = gst_buffer_make_writable(buffer);
        gst_buffer_fill(buffer, 0, copy, size);
        GST_PAD_PROBE_INFO_DATA(info) = buffer;
        GstElement *demuxer = gst_pad_get_parent_element(pad);
        if (demuxer != NULL) {
            guint64 *stored = g_new(guint64, 1);
            *stored = added_ns;
            g_object_set_data_full(G_OBJECT(demuxer), edit_extension_key, stored, g_free);
            gst_object_unref(demuxer);
        }
    }
    g_free(copy);
    return GST_PAD_PROBE_OK;
}

// On qtdemux's audio source pad: the lengthened edit let the last packet through; its segment's end goes back to
// where the edit ended, so that the decoder clips the last frame's padding (sample-accurately) as it would have.
static GstPadProbeReturn end_segment_where_the_edit_did(GstPad *pad, GstPadProbeInfo *info, gpointer user_data) {
    (void)user_data;
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    if (event == NULL || GST_EVENT_TYPE(event) != GST_EVENT_SEGMENT) {
        return GST_PAD_PROBE_OK;
    }
    GstElement *demuxer = gst_pad_get_parent_element(pad);
    if (demuxer == NULL) {
        return GST_PAD_PROBE_OK;
    }
    const guint64 *added = g_object_get_data(G_OBJECT(demuxer), edit_extension_key);
    guint64 added_ns = added != NULL ? *added : 0;
    gst_object_unref(demuxer);
    GstCaps *caps = gst_pad_get_current_caps(pad);
    bool audio = caps != NULL && gst_caps_get_size(caps) > 0
        && g_str_has_prefix(gst_structure_get_name(gst_caps_get_structure(caps, 0)), "audio/");
    if (caps != NULL) gst_caps_unref(caps);
    const GstSegment *segment = NULL;
    gst_event_parse_segment(event, &segment);
    if (added_ns == 0 || !audio || segment->format != GST_FORMAT_TIME || segment->stop == GST_CLOCK_TIME_NONE
        || segment->stop < segment->start + added_ns) {
        return GST_PAD_PROBE_OK;
    }
    GstSegment ended;
    gst_segment_copy_into(segment, &ended);
    ended.stop -= added_ns;
    GstEvent *replacement = gst_event_new_segment(&ended);
    gst_event_set_seqnum(replacement, gst_event_get_seqnum(event));
    gst_event_unref(event);
    GST_PAD_PROBE_INFO_DATA(info) = replacement;
    return GST_PAD_PROBE_OK;
}

static void demuxer_pad_added(GstElement *demuxer, GstPad *pad, gpointer user_data) {
    (void)demuxer;
    (void)user_data;
    if (GST_PAD_IS_SRC(pad)) {
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, end_segment_where_the_edit_did, NULL, NULL);
    }
}

static void add_sink_probe(GstElement *element, GstPadProbeCallback probe) {
    GstPad *sink = gst_element_get_static_pad(element, "sink");
    if (sink == NULL) {
        return;
    }
    gst_pad_add_probe(sink, GST_PAD_PROBE_TYPE_BUFFER, probe, NULL, NULL);
    gst_object_unref(sink);
}

// "deep-element-added": every element of every source group passes here, on the thread that adds it.
static void element_added(GstBin *bin, GstBin *sub_bin, GstElement *element, gpointer user_data) {
    (void)bin;
    (void)sub_bin;
    (void)user_data;
    GstElementFactory *factory = gst_element_get_factory(element);
    if (factory == NULL) {
        return;
    }
    const gchar *name = GST_OBJECT_NAME(factory);
    if (strcmp(name, "mpegaudioparse") == 0) {
        add_sink_probe(element, rename_ffmpeg_tag);
    } else if (strcmp(name, "qtdemux") == 0) {
        add_sink_probe(element, extend_priming_edits);
        g_signal_connect(element, "pad-added", G_CALLBACK(demuxer_pad_added), NULL);
    }
}

void lectern_gst_enable_gapless_fixes(void *bin) {
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
    if (GST_IS_BIN(parent) && g_object_get_data(G_OBJECT(parent), "lectern-gapless-fixes") == NULL) {
        g_object_set_data(G_OBJECT(parent), "lectern-gapless-fixes", GINT_TO_POINTER(1));
        lectern_gst_enable_gapless_fixes(parent);
    }
    gst_object_unref(parent);
}

void lectern_gst_enable_gapless_fixes_in_discoverer(void *discoverer) {
    g_signal_connect(discoverer, "source-setup", G_CALLBACK(discoverer_source_setup), NULL);
}
