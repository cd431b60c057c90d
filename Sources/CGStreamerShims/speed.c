// The speed across a gapless handover: see include/gst_shims.h (lectern_gst_keep_speed_across_streams).
//
// A speed is a playback rate that a flushing seek puts in the SEGMENT events; scaletempo (the audio filter) stretches
// a segment of rate r to 1/r of its length, pitch kept, and hands on rate 1 with applied_rate r. The stream that
// about-to-finish starts after the current one comes with a segment of its decoder's own, at rate 1; a seek giving it
// the speed would flush, at the sink too, the previous stream's end still waiting to be heard (a sound server's
// buffer ahead: about 3 s on pulsesink). Instead the probe gives that stream's segments the speed as they enter
// playsink: everything after it (streamsynchronizer, which sets the segment's base from the previous streams' running
// time and takes the next stream's from this one's, scaletempo, the sink) sees the same segments as after a seek.
// Given after streamsynchronizer instead (in the audio filter), the next stream's base would come from this one's
// segment at rate 1: the sink would wait out the time the speed saved (measured: 1.3 s of silence after a 4 s file at
// 1.5x). The owner sets the speed back to 1 as it loads a stream, which keeps its own segment until the seek to its
// start position.
#include "gst_shims.h"

#include <gst/gst.h>

// The speed of a playbin, shared by its probes (each holds a reference: g_atomic_rc_box).
typedef struct {
    GMutex lock;
    gdouble rate;  // under the lock
} LecternSpeed;

static void speed_clear(gpointer data) {
    g_mutex_clear(&((LecternSpeed *)data)->lock);
}

static void speed_release(gpointer data) {
    g_atomic_rc_box_release_full(data, speed_clear);
}

static gdouble speed_get(LecternSpeed *speed) {
    g_mutex_lock(&speed->lock);
    gdouble rate = speed->rate;
    g_mutex_unlock(&speed->lock);
    return rate;
}

// One playsink input pad's probe: the rate given to the segments of the stream started last, 0 when none is.
typedef struct {
    LecternSpeed *speed;  // a reference
    gdouble rate;         // streaming thread only
} LecternSpeedProbe;

static void probe_free(gpointer data) {
    LecternSpeedProbe *probe = data;
    speed_release(probe->speed);
    g_free(probe);
}

// At a stream's start the speed is noted; until a flush (a seek, whose segments carry its own rate), the stream's
// TIME segments of rate 1 get it.
static GstPadProbeReturn speed_probe(GstPad *pad, GstPadProbeInfo *info, gpointer user_data) {
    (void)pad;
    LecternSpeedProbe *probe = user_data;
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_STREAM_START: {
        gdouble rate = speed_get(probe->speed);
        probe->rate = rate != 1.0 ? rate : 0;
        break;
    }
    case GST_EVENT_FLUSH_STOP:
        probe->rate = 0;
        break;
    case GST_EVENT_SEGMENT: {
        const GstSegment *segment;
        gst_event_parse_segment(event, &segment);
        if (probe->rate == 0 || segment->format != GST_FORMAT_TIME || segment->rate != 1.0) {
            break;
        }
        GstSegment sped;
        gst_segment_copy_into(segment, &sped);
        sped.rate = probe->rate;
        GstEvent *replaced = gst_event_new_segment(&sped);
        gst_event_set_seqnum(replaced, gst_event_get_seqnum(event));
        gst_event_unref(event);
        GST_PAD_PROBE_INFO_DATA(info) = replaced;
        break;
    }
    default:
        break;
    }
    return GST_PAD_PROBE_OK;
}

// playsink's "pad-added": its audio input pads (one a stream group, made as the group links) get the probe.
static void playsink_pad_added(GstElement *playsink, GstPad *pad, gpointer user_data) {
    (void)playsink;
    if (GST_PAD_DIRECTION(pad) != GST_PAD_SINK || !g_str_has_prefix(GST_PAD_NAME(pad), "audio")) {
        return;
    }
    LecternSpeedProbe *probe = g_new0(LecternSpeedProbe, 1);
    probe->speed = g_atomic_rc_box_acquire(user_data);
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, speed_probe, probe, probe_free);
}

static void signal_release(gpointer data, GClosure *closure) {
    (void)closure;
    speed_release(data);
}

bool lectern_gst_keep_speed_across_streams(void *playbin) {
    GstElement *playsink = gst_bin_get_by_name(GST_BIN(playbin), "playsink");
    if (playsink == NULL) {
        return false;
    }
    LecternSpeed *speed = g_atomic_rc_box_new0(LecternSpeed);
    g_mutex_init(&speed->lock);
    speed->rate = 1.0;
    g_signal_connect_data(playsink, "pad-added", G_CALLBACK(playsink_pad_added), g_atomic_rc_box_acquire(speed),
                          signal_release, 0);
    gst_object_unref(playsink);
    g_object_set_data_full(G_OBJECT(playbin), "lectern-speed", speed, speed_release);
    return true;
}

void lectern_gst_set_speed(void *playbin, double rate) {
    LecternSpeed *speed = g_object_get_data(G_OBJECT(playbin), "lectern-speed");
    if (speed == NULL) {
        return;
    }
    g_mutex_lock(&speed->lock);
    speed->rate = rate;
    g_mutex_unlock(&speed->lock);
}
