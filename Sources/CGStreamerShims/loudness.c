// A book's loudness: its files decoded one after another (uridecodebin ! audioconvert ! F32 ! fakesink, as fast as
// they decode) and fed to libebur128 as one programme: the integrated loudness (EBU R128 / ITU-R BS.1770, gated) of
// the whole book, and its sample peak. Run by the media reader's child (docs/decisions/loudness.md).
#include <gst/gst.h>
#include <ebur128.h>
#include <math.h>
#include <string.h>

#include "gst_shims.h"

typedef struct {
    GMutex lock;
    ebur128_state *state;
    unsigned int channels;
    unsigned long rate;
    double peak;
    guint64 frames;
    bool failed;  // libebur128 refused the frames (out of memory)
} LoudnessRun;

static void loudness_set_format(LoudnessRun *run, GstCaps *caps) {
    GstStructure *structure = gst_caps_get_structure(caps, 0);
    gint channels = 0, rate = 0;
    if (!gst_structure_get_int(structure, "channels", &channels) || !gst_structure_get_int(structure, "rate", &rate)
        || channels <= 0 || rate <= 0) {
        return;
    }
    if (run->state == NULL) {
        run->state = ebur128_init((unsigned)channels, (unsigned long)rate, EBUR128_MODE_I | EBUR128_MODE_HISTOGRAM);
        if (run->state == NULL) run->failed = true;
    } else if ((unsigned)channels != run->channels || (unsigned long)rate != run->rate) {
        // The blocks measured so far are kept; the one in progress is dropped (400 ms at most).
        if (ebur128_change_parameters(run->state, (unsigned)channels, (unsigned long)rate) != EBUR128_SUCCESS) {
            run->failed = true;
        }
    }
    run->channels = (unsigned)channels;
    run->rate = (unsigned long)rate;
}

static GstPadProbeReturn loudness_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    LoudnessRun *run = data;
    g_mutex_lock(&run->lock);
    if (info->type & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
        GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
        if (GST_EVENT_TYPE(event) == GST_EVENT_CAPS) {
            GstCaps *caps = NULL;
            gst_event_parse_caps(event, &caps);
            loudness_set_format(run, caps);
        }
    } else if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
        GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
        GstMapInfo map;
        if (run->state != NULL && !run->failed && gst_buffer_map(buffer, &map, GST_MAP_READ)) {
            const float *samples = (const float *)map.data;
            size_t frames = map.size / (sizeof(float) * run->channels);
            for (size_t i = 0; i < frames * run->channels; i++) {
                double level = fabs(samples[i]);
                if (level > run->peak) run->peak = level;
            }
            if (ebur128_add_frames_float(run->state, samples, frames) != EBUR128_SUCCESS) run->failed = true;
            run->frames += frames;
            gst_buffer_unmap(buffer, &map);
        }
    }
    g_mutex_unlock(&run->lock);
    return GST_PAD_PROBE_OK;
}

// Links the first decoded audio stream to the converter; other streams (cover art) stay unlinked.
static void loudness_pad_added(GstElement *decoder, GstPad *pad, gpointer data) {
    (void)decoder;
    GstElement *convert = data;
    GstCaps *caps = gst_pad_get_current_caps(pad);
    if (caps == NULL) caps = gst_pad_query_caps(pad, NULL);
    const char *name = gst_structure_get_name(gst_caps_get_structure(caps, 0));
    bool audio = g_str_has_prefix(name, "audio/");
    gst_caps_unref(caps);
    if (!audio) return;
    GstPad *sink = gst_element_get_static_pad(convert, "sink");
    if (!gst_pad_is_linked(sink)) gst_pad_link(pad, sink);
    gst_object_unref(sink);
}

// One file into `run`; 0 when it decoded to its end, else -1 (`error` set) or -2 (the deadline passed).
static int loudness_measure_file(LoudnessRun *run, const char *uri, gint64 deadline, char **error) {
    GstElement *pipeline = gst_pipeline_new("lectern-loudness");
    GstElement *decoder = gst_element_factory_make("uridecodebin", NULL);
    GstElement *convert = gst_element_factory_make("audioconvert", NULL);
    GstElement *filter = gst_element_factory_make("capsfilter", NULL);
    GstElement *sink = gst_element_factory_make("fakesink", NULL);
    if (pipeline == NULL || decoder == NULL || convert == NULL || filter == NULL || sink == NULL) {
        *error = g_strdup("a GStreamer element (uridecodebin, audioconvert, capsfilter, fakesink) is missing");
        if (pipeline) gst_object_unref(pipeline);
        return -1;
    }
    GstCaps *raw = gst_caps_from_string("audio/x-raw");
    GstCaps *f32 = gst_caps_from_string("audio/x-raw, format = (string) F32LE, layout = (string) interleaved");
    g_object_set(decoder, "uri", uri, "caps", raw, NULL);
    g_object_set(filter, "caps", f32, NULL);
    g_object_set(sink, "sync", FALSE, NULL);
    gst_caps_unref(raw);
    gst_caps_unref(f32);
    gst_bin_add_many(GST_BIN(pipeline), decoder, convert, filter, sink, NULL);
    gst_element_link_many(convert, filter, sink, NULL);
    lectern_gst_enable_gapless_fixes(pipeline);  // the same samples the playbin plays
    g_signal_connect(decoder, "pad-added", G_CALLBACK(loudness_pad_added), convert);
    GstPad *pad = gst_element_get_static_pad(sink, "sink");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, loudness_probe, run, NULL);
    gst_object_unref(pad);

    int result = -2;
    GstBus *bus = gst_element_get_bus(pipeline);
    if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        result = -1;
    }
    while (result == -2) {
        gint64 left = deadline - g_get_monotonic_time();
        if (left <= 0) break;
        GstMessage *message = gst_bus_timed_pop_filtered(bus, (GstClockTime)left * GST_USECOND,
                                                         GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
        if (message == NULL) break;
        if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS) {
            result = 0;
        } else {
            GError *failure = NULL;
            gst_message_parse_error(message, &failure, NULL);
            *error = g_strdup(failure != NULL ? failure->message : "a decoding error");
            g_clear_error(&failure);
            result = -1;
        }
        gst_message_unref(message);
    }
    if (result == -1 && *error == NULL) *error = g_strdup("cannot be decoded");
    gst_object_unref(bus);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
    return result;
}

int lectern_measure_loudness(const char *const *uris, size_t count, int64_t timeout_microseconds,
                             double *integrated, double *peak, char **error) {
    *error = NULL;
    LoudnessRun run = {0};
    g_mutex_init(&run.lock);
    gint64 deadline = g_get_monotonic_time() + timeout_microseconds;
    int result = 0;
    for (size_t i = 0; i < count && result == 0; i++) {
        char *why = NULL;
        result = loudness_measure_file(&run, uris[i], deadline, &why);
        if (result == -1) {
            *error = g_strdup_printf("%s: %s", uris[i], why);
        }
        g_free(why);
    }
    if (result == 0 && run.failed) {
        *error = g_strdup("the loudness meter ran out of memory");
        result = -1;
    } else if (result == 0 && (run.state == NULL || run.frames == 0)) {
        *error = g_strdup("no sound was decoded");
        result = -1;
    } else if (result == 0 && ebur128_loudness_global(run.state, integrated) != EBUR128_SUCCESS) {
        *error = g_strdup("the loudness meter gave no value");
        result = -1;
    }
    *peak = run.peak;
    if (run.state != NULL) ebur128_destroy(&run.state);
    g_mutex_clear(&run.lock);
    return result;
}
