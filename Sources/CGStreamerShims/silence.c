// lecternsilence: skip silence, last in the playbin's audio filter (after scaletempo and lecterngain). Pauses longer
// than a threshold are shortened, not cut to nothing, so narration keeps its rhythm (docs/decisions/skip-silence.md).
// With "enabled" off (the default) the element is in passthrough: buffers and events go through untouched.
//
// The formats are scaletempo's own (F32LE, F64LE, S16LE, interleaved), as lecterngain's: adding the element changes
// no negotiation. Downstream of scaletempo the segment has rate 1 and applied_rate = the playback speed, and the
// timestamps are output (listening) time; a stretch of output lasts |applied_rate| times as long in the file.
//
// The sound is judged in windows of 10 ms of output: a window whose mean square (over its samples and channels) is
// below "level" (dBFS) is silent. A run of silent windows is counted in the file's time: its first "threshold" is
// kept; beyond it, of each 200 ms (file time) the first (1 - "amount") is kept and the rest dropped, so that the few
// splices fall in silence. A silent window followed within two windows (20 ms) by a sound is always kept, so a word's
// soft onset is never cut, and a window that is not silent is never dropped. Pending windows (the lookahead) wait in
// a GstAdapter; kept windows go out in as few buffers as the input came in.
//
// Kept buffers go out continuous: within an upstream segment, each goes out earlier by the time dropped before it in
// that segment, so elements that read timestamps only (an encoder, a muxer, wavenc, which drops TIME segments, and the
// file sink after it) see no hole. Positions stay in the file's time through segments: when output resumes after
// dropped windows, a new SEGMENT goes first, the upstream segment from the resumed buffer on with start and position
// at its new timestamp (where the first dropped frame was), time the file's stream time there, stop earlier as well,
// and base the running time the first dropped frame had. The sink plays the kept sound on without a gap while its
// stream time (what a position query answers) is the file's. Segments forwarded from upstream after drops (the
// gapless handover to the next file) have their base moved back by the running time removed since the last flush that
// reset time, since upstream counts it. Negative rates pass through.
//
// An audio sink that renders ahead into a ring buffer (a pulsesink holds 2 s, playsink's queue before it more) takes a
// segment and a stream's start when it receives them, not when their sound is heard: until then its position query
// answers the resumed point, up to the removed time ahead of what is heard (measured: 3.8 s, in the middle of a word),
// and at the gapless handover the next file's start, up to its buffer early. So the element keeps the segments it
// pushed, in passthrough too, each with the group id of its stream (they share one running-time line: the next file's
// bases follow the previous file's, moved back by the time removed), from a flush or a reset on, and
// lectern_gst_silence_heard tells from them, by the pipeline's running time, the file time and the stream heard.
#include <gst/gst.h>
#include <gst/audio/audio.h>
#include <gst/base/gstadapter.h>
#include <gst/base/gstbasesink.h>
#include <math.h>
#include <string.h>

#include "gst_shims.h"

#define LECTERN_SILENCE_WINDOW_SECONDS 0.01
#define LECTERN_SILENCE_LOOKAHEAD 2                       // windows after a silent one that must be silent to drop it
#define LECTERN_SILENCE_PERIOD (200 * GST_MSECOND)        // file time: a share of each is kept beyond the threshold
#define LECTERN_SILENCE_THRESHOLD_MIN 0.1
#define LECTERN_SILENCE_THRESHOLD_MAX 10.0
#define LECTERN_SILENCE_SEGMENTS 256                      // segments pushed ahead of what is heard, kept for positions

GST_DEBUG_CATEGORY_STATIC(lectern_silence_debug);
#define GST_CAT_DEFAULT lectern_silence_debug

// A segment pushed downstream, and the group id of its stream's start (GST_GROUP_ID_INVALID without one).
typedef struct {
    GstSegment segment;
    guint group;
} LecternSilenceKept;

typedef struct {
    GstElement parent;
    GstPad *sinkpad, *srcpad;
    gboolean enabled;         // under the object lock
    double threshold;         // seconds of file time; under the object lock
    double amount;            // 0 to 1; under the object lock
    double level;             // dBFS; under the object lock
    guint64 removed;          // ns of output time dropped since the element was made; under the object lock
    LecternSilenceKept segments[LECTERN_SILENCE_SEGMENTS];  // pushed since the last flush, not yet all heard, oldest
                              // first; under the object lock
    guint segment_count;      // under the object lock
    // The rest: streaming thread only (and state changes, with the streaming thread stopped).
    GstAudioInfo info;        // from the CAPS event; its rate is 0 before one
    GstSegment upstream;      // the last segment from upstream
    GstSegment pushed;        // the last segment pushed downstream
    guint32 seqnum;           // the upstream segment's
    guint group;              // the group id of the last stream start, GST_GROUP_ID_INVALID without one
    GstClockTime shift;       // running time dropped since the last flush that reset time
    GstClockTime offset;      // timestamp time dropped in the upstream segment: kept buffers go out this much earlier
    GstAdapter *adapter;      // frames not pushed yet: `kept` bytes decided kept, then undecided windows
    gsize kept;
    gboolean silent[LECTERN_SILENCE_LOOKAHEAD + 1];  // the undecided complete windows, oldest first
    guint classified;         // how many of `silent` are set
    guint window;             // frames in a window
    guint filled;             // frames of the window being measured
    double energy;            // its sum of squares
    GstClockTime run;         // file time of the silent run before the window being decided
    gboolean dropping;        // windows were dropped since the last kept one
    GstClockTime drop_start;  // the timestamp of the first of them
    GstClockTime drop_end;    // and the one after the last
} LecternSilence;

typedef struct {
    GstElementClass parent_class;
} LecternSilenceClass;

G_DEFINE_TYPE(LecternSilence, lectern_silence, GST_TYPE_ELEMENT)

enum { PROP_0, PROP_ENABLED, PROP_THRESHOLD, PROP_AMOUNT, PROP_LEVEL, PROP_REMOVED };

#define LECTERN_SILENCE_CAPS \
    "audio/x-raw, format = (string) { F32LE, F64LE, S16LE }, layout = (string) interleaved, " \
    "rate = (int) [ 1, MAX ], channels = (int) [ 1, MAX ]"

static GstStaticPadTemplate lectern_silence_sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(LECTERN_SILENCE_CAPS));
static GstStaticPadTemplate lectern_silence_src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(LECTERN_SILENCE_CAPS));

static void lectern_silence_set_property(GObject *object, guint id, const GValue *value, GParamSpec *spec) {
    LecternSilence *self = (LecternSilence *)object;
    GST_OBJECT_LOCK(self);
    switch (id) {
    case PROP_ENABLED: self->enabled = g_value_get_boolean(value); break;
    case PROP_THRESHOLD: self->threshold = g_value_get_double(value); break;
    case PROP_AMOUNT: self->amount = g_value_get_double(value); break;
    case PROP_LEVEL: self->level = g_value_get_double(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec); break;
    }
    GST_OBJECT_UNLOCK(self);
}

static void lectern_silence_get_property(GObject *object, guint id, GValue *value, GParamSpec *spec) {
    LecternSilence *self = (LecternSilence *)object;
    GST_OBJECT_LOCK(self);
    switch (id) {
    case PROP_ENABLED: g_value_set_boolean(value, self->enabled); break;
    case PROP_THRESHOLD: g_value_set_double(value, self->threshold); break;
    case PROP_AMOUNT: g_value_set_double(value, self->amount); break;
    case PROP_LEVEL: g_value_set_double(value, self->level); break;
    case PROP_REMOVED: g_value_set_uint64(value, self->removed); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec); break;
    }
    GST_OBJECT_UNLOCK(self);
}

// Forgets the silent run and the pending windows' measures (the adapter is drained or flushed by the caller).
static void lectern_silence_reset_run(LecternSilence *self) {
    self->kept = 0;
    self->classified = 0;
    self->filled = 0;
    self->energy = 0.0;
    self->run = 0;
}

// The timestamp of the frame at the adapter's front, or GST_CLOCK_TIME_NONE.
static GstClockTime lectern_silence_front_time(LecternSilence *self) {
    guint64 distance = 0;
    GstClockTime pts = gst_adapter_prev_pts(self->adapter, &distance);
    gint frame_size = GST_AUDIO_INFO_BPF(&self->info);
    if (!GST_CLOCK_TIME_IS_VALID(pts) || frame_size <= 0) return GST_CLOCK_TIME_NONE;
    return pts + gst_util_uint64_scale_int(distance / frame_size, GST_SECOND, GST_AUDIO_INFO_RATE(&self->info));
}

// Notes `segment` as pushed downstream (for lectern_gst_silence_heard), in the current stream; the oldest goes when
// there are too many (those heard go at each lectern_gst_silence_heard).
static void lectern_silence_note_segment(LecternSilence *self, const GstSegment *segment) {
    self->pushed = *segment;
    GST_OBJECT_LOCK(self);
    if (self->segment_count == LECTERN_SILENCE_SEGMENTS) {
        memmove(self->segments, self->segments + 1, sizeof self->segments[0] * (LECTERN_SILENCE_SEGMENTS - 1));
        self->segment_count--;
    }
    self->segments[self->segment_count].segment = *segment;
    self->segments[self->segment_count].group = self->group;
    self->segment_count++;
    GST_OBJECT_UNLOCK(self);
}

// Forgets the segments pushed: a flush, or a reset.
static void lectern_silence_forget_segments(LecternSilence *self) {
    GST_OBJECT_LOCK(self);
    self->segment_count = 0;
    GST_OBJECT_UNLOCK(self);
}

// Pushes a copy of `segment` downstream with the upstream segment's seqnum, and notes it as pushed.
static gboolean lectern_silence_push_segment(LecternSilence *self, const GstSegment *segment) {
    lectern_silence_note_segment(self, segment);
    GstEvent *event = gst_event_new_segment(segment);
    gst_event_set_seqnum(event, self->seqnum);
    return gst_pad_push_event(self->srcpad, event);
}

// The drops end where output resumes, at `resume` (an upstream timestamp): the running time removed since the last
// flush and the timestamps' offset are updated, and a segment from `resume` on is pushed if `splice` (else the caller
// pushes a new upstream segment).
static void lectern_silence_end_drop(LecternSilence *self, GstClockTime resume, gboolean splice) {
    self->dropping = FALSE;
    // Where the first dropped frame would have gone out, and its running time: the resumed sound goes on from there.
    GstClockTime start = self->drop_start - MIN(self->offset, self->drop_start);
    guint64 base = 0;
    if (resume < self->drop_start) return;
    if (gst_segment_to_running_time_full(&self->pushed, GST_FORMAT_TIME, start, &base) != 1) return;
    guint64 upstream = 0;
    if (gst_segment_to_running_time_full(&self->upstream, GST_FORMAT_TIME, resume, &upstream) == 1 && upstream > base) {
        self->shift = upstream - base;
    }
    self->offset += resume - self->drop_start;
    if (!splice) return;
    GstSegment segment = self->upstream;
    segment.start = start;
    segment.position = start;
    if (GST_CLOCK_TIME_IS_VALID(segment.stop)) segment.stop -= MIN(self->offset, segment.stop);
    segment.time = gst_segment_to_stream_time(&self->upstream, GST_FORMAT_TIME, resume);
    segment.base = base;
    GST_LOG_OBJECT(self, "resuming at %" GST_TIME_FORMAT ", out at %" GST_TIME_FORMAT " (stream %" GST_TIME_FORMAT
                   ") at running time %" GST_TIME_FORMAT, GST_TIME_ARGS(resume), GST_TIME_ARGS(start),
                   GST_TIME_ARGS(segment.time), GST_TIME_ARGS(base));
    lectern_silence_push_segment(self, &segment);
}

// `buffer` (writable from here on) with its timestamp moved earlier by the time dropped in this segment.
static GstBuffer *lectern_silence_retime(LecternSilence *self, GstBuffer *buffer) {
    if (self->offset == 0 || !GST_BUFFER_PTS_IS_VALID(buffer)) return buffer;
    buffer = gst_buffer_make_writable(buffer);
    GstClockTime pts = GST_BUFFER_PTS(buffer);
    GST_BUFFER_PTS(buffer) = pts - MIN(self->offset, pts);
    GST_BUFFER_DTS(buffer) = GST_CLOCK_TIME_NONE;
    return buffer;
}

// Pushes the first `bytes` of the adapter (kept frames), after a segment if windows were dropped before them.
static GstFlowReturn lectern_silence_push_front(LecternSilence *self, gsize bytes) {
    if (bytes == 0) return GST_FLOW_OK;
    GstClockTime pts = lectern_silence_front_time(self);
    if (self->dropping && GST_CLOCK_TIME_IS_VALID(pts)) lectern_silence_end_drop(self, pts, TRUE);
    self->dropping = FALSE;
    GstBuffer *buffer = gst_buffer_make_writable(gst_adapter_take_buffer(self->adapter, bytes));
    gint frame_size = GST_AUDIO_INFO_BPF(&self->info);
    GST_BUFFER_PTS(buffer) = GST_CLOCK_TIME_IS_VALID(pts) ? pts - MIN(self->offset, pts) : pts;
    GST_BUFFER_DTS(buffer) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION(buffer) = frame_size > 0
        ? gst_util_uint64_scale_int(bytes / frame_size, GST_SECOND, GST_AUDIO_INFO_RATE(&self->info))
        : GST_CLOCK_TIME_NONE;
    GST_BUFFER_OFFSET(buffer) = GST_BUFFER_OFFSET_NONE;
    GST_BUFFER_OFFSET_END(buffer) = GST_BUFFER_OFFSET_NONE;
    return gst_pad_push(self->srcpad, buffer);
}

// Everything pending goes out as it is (the undecided windows are kept); the silent run goes on.
static GstFlowReturn lectern_silence_drain(LecternSilence *self) {
    GstFlowReturn result = lectern_silence_push_front(self, gst_adapter_available(self->adapter));
    self->kept = 0;
    self->classified = 0;
    self->filled = 0;
    self->energy = 0.0;
    return result;
}

// Decides the oldest pending window: kept (added to the kept bytes) or dropped (the kept bytes before it pushed).
static GstFlowReturn lectern_silence_decide(LecternSilence *self, GstClockTime threshold, GstClockTime keep) {
    gboolean silent = self->silent[0];
    gboolean droppable = TRUE;
    for (guint i = 0; i <= LECTERN_SILENCE_LOOKAHEAD; i++) droppable = droppable && self->silent[i];
    memmove(self->silent, self->silent + 1, sizeof self->silent[0] * LECTERN_SILENCE_LOOKAHEAD);
    self->classified--;
    gsize bytes = (gsize)self->window * GST_AUDIO_INFO_BPF(&self->info);
    double window = (double)self->window / GST_AUDIO_INFO_RATE(&self->info);
    GstClockTime file = (GstClockTime)(window * fabs(self->upstream.applied_rate) * GST_SECOND + 0.5);
    gboolean drop = FALSE;
    if (!silent) {
        self->run = 0;
    } else {
        drop = droppable && self->run >= threshold && (self->run - threshold) % LECTERN_SILENCE_PERIOD >= keep;
        self->run += file;
    }
    if (drop) {
        GstFlowReturn result = lectern_silence_push_front(self, self->kept);
        self->kept = 0;
        GstClockTime start = lectern_silence_front_time(self);
        if (result != GST_FLOW_OK || !GST_CLOCK_TIME_IS_VALID(start)) drop = FALSE;
        if (drop) {
            if (!self->dropping) self->drop_start = start;
            self->dropping = TRUE;
            self->drop_end = start + gst_util_uint64_scale_int(self->window, GST_SECOND, GST_AUDIO_INFO_RATE(&self->info));
            gst_adapter_flush(self->adapter, bytes);
            GstClockTime removed = (GstClockTime)(window / fabs(self->upstream.rate) * GST_SECOND + 0.5);
            GST_OBJECT_LOCK(self);
            self->removed += removed;
            GST_OBJECT_UNLOCK(self);
            return GST_FLOW_OK;
        }
        if (result != GST_FLOW_OK) return result;
    }
    self->kept += bytes;
    return GST_FLOW_OK;
}

#define LECTERN_SILENCE_MEASURE(TYPE, SCALE)                                                          \
    do {                                                                                              \
        const TYPE *samples = (const TYPE *)map.data;                                                 \
        for (gsize frame = 0; frame < frames && result == GST_FLOW_OK; frame++, samples += channels) { \
            for (gint c = 0; c < channels; c++) {                                                     \
                double sample = samples[c] * (SCALE);                                                 \
                self->energy += sample * sample;                                                      \
            }                                                                                         \
            if (++self->filled < self->window) continue;                                              \
            self->silent[self->classified++] = self->energy < silent_energy * self->window * channels; \
            self->filled = 0;                                                                         \
            self->energy = 0.0;                                                                       \
            if (self->classified > LECTERN_SILENCE_LOOKAHEAD) result = lectern_silence_decide(self, threshold, keep); \
        }                                                                                             \
    } while (0)

static GstFlowReturn lectern_silence_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer) {
    (void)pad;
    LecternSilence *self = (LecternSilence *)parent;
    GST_OBJECT_LOCK(self);
    gboolean enabled = self->enabled;
    GstClockTime threshold = (GstClockTime)(self->threshold * GST_SECOND + 0.5);
    GstClockTime keep = (GstClockTime)((1.0 - self->amount) * LECTERN_SILENCE_PERIOD + 0.5);
    double silent_energy = pow(10.0, self->level / 10.0);
    GST_OBJECT_UNLOCK(self);
    gint channels = GST_AUDIO_INFO_CHANNELS(&self->info);
    gint frame_size = GST_AUDIO_INFO_BPF(&self->info);
    gboolean active = enabled && channels > 0 && frame_size > 0 && self->upstream.format == GST_FORMAT_TIME
        && self->upstream.rate > 0 && self->upstream.applied_rate > 0 && GST_BUFFER_PTS_IS_VALID(buffer);
    if (!active) {
        // Passthrough: whatever was pending goes first, as it is.
        GstFlowReturn result = lectern_silence_drain(self);
        self->run = 0;
        if (result != GST_FLOW_OK) {
            gst_buffer_unref(buffer);
            return result;
        }
        // After drops (turned off meanwhile): the segment that resumes goes first.
        if (self->dropping && GST_BUFFER_PTS_IS_VALID(buffer)) lectern_silence_end_drop(self, GST_BUFFER_PTS(buffer), TRUE);
        return gst_pad_push(self->srcpad, lectern_silence_retime(self, buffer));
    }
    GstMapInfo map;
    gst_buffer_ref(buffer);
    gst_adapter_push(self->adapter, buffer);
    if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
        gst_buffer_unref(buffer);
        return GST_FLOW_ERROR;
    }
    gsize frames = map.size / frame_size;
    GstFlowReturn result = GST_FLOW_OK;
    switch (GST_AUDIO_INFO_FORMAT(&self->info)) {
    case GST_AUDIO_FORMAT_F32LE: LECTERN_SILENCE_MEASURE(gfloat, 1.0); break;
    case GST_AUDIO_FORMAT_F64LE: LECTERN_SILENCE_MEASURE(gdouble, 1.0); break;
    case GST_AUDIO_FORMAT_S16LE: LECTERN_SILENCE_MEASURE(gint16, 1.0 / 32768.0); break;
    default: break;
    }
    gst_buffer_unmap(buffer, &map);
    gst_buffer_unref(buffer);
    if (result != GST_FLOW_OK) return result;
    // The frames decided kept go out now, in one buffer.
    result = lectern_silence_push_front(self, self->kept);
    self->kept = 0;
    return result;
}

static gboolean lectern_silence_sink_event(GstPad *pad, GstObject *parent, GstEvent *event) {
    LecternSilence *self = (LecternSilence *)parent;
    switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_STOP: {
        gboolean reset_time = TRUE;
        gst_event_parse_flush_stop(event, &reset_time);
        gst_adapter_clear(self->adapter);
        lectern_silence_reset_run(self);
        self->dropping = FALSE;
        if (reset_time) self->shift = 0;
        self->offset = 0;
        lectern_silence_forget_segments(self);
        break;
    }
    case GST_EVENT_SEGMENT: {
        lectern_silence_drain(self);
        if (self->dropping) {
            // Dropped up to the end of the previous segment: counted in the shift, the new segment follows.
            lectern_silence_end_drop(self, self->drop_end, FALSE);
        }
        lectern_silence_reset_run(self);
        self->offset = 0;
        gst_event_copy_segment(event, &self->upstream);
        self->seqnum = gst_event_get_seqnum(event);
        if (self->shift == 0 || self->upstream.format != GST_FORMAT_TIME) {
            lectern_silence_note_segment(self, &self->upstream);
            return gst_pad_event_default(pad, parent, event);
        }
        GstSegment segment = self->upstream;
        segment.base = segment.base > self->shift ? segment.base - self->shift : 0;
        GST_DEBUG_OBJECT(self, "segment base %" GST_TIME_FORMAT " moved back by %" GST_TIME_FORMAT,
                         GST_TIME_ARGS(self->upstream.base), GST_TIME_ARGS(self->shift));
        gst_event_unref(event);
        return lectern_silence_push_segment(self, &segment);
    }
    case GST_EVENT_CAPS: {
        lectern_silence_drain(self);
        GstCaps *caps = NULL;
        gst_event_parse_caps(event, &caps);
        GstAudioInfo info;
        if (!gst_audio_info_from_caps(&info, caps)) {
            gst_event_unref(event);
            return FALSE;
        }
        GST_DEBUG_OBJECT(self, "caps %" GST_PTR_FORMAT, (void *)caps);
        self->info = info;
        self->window = MAX(1, (guint)(GST_AUDIO_INFO_RATE(&info) * LECTERN_SILENCE_WINDOW_SECONDS + 0.5));
        break;
    }
    case GST_EVENT_STREAM_START:
        // The segments pushed before stay: the previous stream's sound may still be ahead of what is heard.
        lectern_silence_drain(self);
        lectern_silence_reset_run(self);
        if (!gst_event_parse_group_id(event, &self->group)) self->group = GST_GROUP_ID_INVALID;
        break;
    case GST_EVENT_EOS:
        lectern_silence_drain(self);
        lectern_silence_reset_run(self);
        break;
    case GST_EVENT_GAP: {
        // A gap is timed like a buffer: after drops, the segment that resumes goes first.
        lectern_silence_drain(self);
        GstClockTime timestamp = GST_CLOCK_TIME_NONE;
        gst_event_parse_gap(event, &timestamp, NULL);
        if (self->dropping && GST_CLOCK_TIME_IS_VALID(timestamp)) lectern_silence_end_drop(self, timestamp, TRUE);
        if (self->offset == 0 || !GST_CLOCK_TIME_IS_VALID(timestamp)) break;
        GstClockTime duration = GST_CLOCK_TIME_NONE;
        gst_event_parse_gap(event, NULL, &duration);
        GstEvent *gap = gst_event_new_gap(timestamp - MIN(self->offset, timestamp), duration);
        GstGapFlags flags = 0;
        gst_event_parse_gap_flags(event, &flags);
        gst_event_set_gap_flags(gap, flags);
        gst_event_set_seqnum(gap, gst_event_get_seqnum(event));
        gst_event_unref(event);
        return gst_pad_push_event(self->srcpad, gap);
    }
    default:
        // Other serialized events keep their place among the buffers: what is pending goes first.
        if (GST_EVENT_IS_SERIALIZED(event)) lectern_silence_drain(self);
        break;
    }
    return gst_pad_event_default(pad, parent, event);
}

static void lectern_silence_reset(LecternSilence *self) {
    gst_adapter_clear(self->adapter);
    lectern_silence_reset_run(self);
    gst_audio_info_init(&self->info);
    gst_segment_init(&self->upstream, GST_FORMAT_UNDEFINED);
    gst_segment_init(&self->pushed, GST_FORMAT_UNDEFINED);
    self->seqnum = GST_SEQNUM_INVALID;
    self->group = GST_GROUP_ID_INVALID;
    self->shift = 0;
    self->offset = 0;
    self->window = 1;
    self->dropping = FALSE;
    self->drop_start = self->drop_end = GST_CLOCK_TIME_NONE;
    lectern_silence_forget_segments(self);
}

static GstStateChangeReturn lectern_silence_change_state(GstElement *element, GstStateChange transition) {
    LecternSilence *self = (LecternSilence *)element;
    if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) lectern_silence_reset(self);
    GstStateChangeReturn result = GST_ELEMENT_CLASS(lectern_silence_parent_class)->change_state(element, transition);
    if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) lectern_silence_reset(self);
    return result;
}

static void lectern_silence_finalize(GObject *object) {
    LecternSilence *self = (LecternSilence *)object;
    g_object_unref(self->adapter);
    G_OBJECT_CLASS(lectern_silence_parent_class)->finalize(object);
}

static void lectern_silence_class_init(LecternSilenceClass *klass) {
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    object_class->set_property = lectern_silence_set_property;
    object_class->get_property = lectern_silence_get_property;
    object_class->finalize = lectern_silence_finalize;
    GParamFlags flags = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
    g_object_class_install_property(object_class, PROP_ENABLED,
        g_param_spec_boolean("enabled", "Enabled", "Shorten long pauses (off: passthrough)", FALSE, flags));
    g_object_class_install_property(object_class, PROP_THRESHOLD,
        g_param_spec_double("threshold", "Threshold", "Seconds of the file's time a pause keeps whole",
                            LECTERN_SILENCE_THRESHOLD_MIN, LECTERN_SILENCE_THRESHOLD_MAX, 0.5, flags));
    g_object_class_install_property(object_class, PROP_AMOUNT,
        g_param_spec_double("amount", "Amount", "The share of a pause beyond the threshold that is removed", 0.0, 1.0,
                            0.75, flags));
    g_object_class_install_property(object_class, PROP_LEVEL,
        g_param_spec_double("level", "Level", "dBFS: a 10 ms window whose RMS is below is silent", -120.0, 0.0, -45.0,
                            flags));
    g_object_class_install_property(object_class, PROP_REMOVED,
        g_param_spec_uint64("removed", "Removed", "Nanoseconds of listening time removed since the element was made",
                            0, G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    gst_element_class_set_static_metadata(element_class, "Lectern silence", "Filter/Effect/Audio",
        "Shortens pauses longer than a threshold; positions stay in the file's time; passthrough when off", "Lectern");
    gst_element_class_add_static_pad_template(element_class, &lectern_silence_sink_template);
    gst_element_class_add_static_pad_template(element_class, &lectern_silence_src_template);
    element_class->change_state = lectern_silence_change_state;
    GST_DEBUG_CATEGORY_INIT(lectern_silence_debug, "lecternsilence", 0, "Lectern skip silence");
}

static void lectern_silence_init(LecternSilence *self) {
    self->sinkpad = gst_pad_new_from_static_template(&lectern_silence_sink_template, "sink");
    gst_pad_set_chain_function(self->sinkpad, lectern_silence_chain);
    gst_pad_set_event_function(self->sinkpad, lectern_silence_sink_event);
    GST_PAD_SET_PROXY_CAPS(self->sinkpad);
    GST_PAD_SET_PROXY_ALLOCATION(self->sinkpad);
    GST_PAD_SET_PROXY_SCHEDULING(self->sinkpad);
    gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);
    self->srcpad = gst_pad_new_from_static_template(&lectern_silence_src_template, "src");
    GST_PAD_SET_PROXY_CAPS(self->srcpad);
    GST_PAD_SET_PROXY_ALLOCATION(self->srcpad);
    GST_PAD_SET_PROXY_SCHEDULING(self->srcpad);
    gst_element_add_pad(GST_ELEMENT(self), self->srcpad);
    self->enabled = FALSE;
    self->threshold = 0.5;
    self->amount = 0.75;
    self->level = -45.0;
    self->removed = 0;
    self->adapter = gst_adapter_new();
    lectern_silence_reset(self);
}

// The running time of what `pipeline` plays now: its clock against its base time while playing, else where it
// stopped; less the latency the sinks add. GST_CLOCK_TIME_NONE without a clock.
static GstClockTime lectern_silence_running_time(GstElement *pipeline) {
    GstClockTime running = GST_CLOCK_TIME_NONE;
    GST_OBJECT_LOCK(pipeline);
    gboolean playing = GST_STATE(pipeline) == GST_STATE_PLAYING;
    GST_OBJECT_UNLOCK(pipeline);
    if (playing) {
        GstClock *clock = gst_element_get_clock(pipeline);
        if (clock == NULL) return GST_CLOCK_TIME_NONE;
        GstClockTime now = gst_clock_get_time(clock);
        GstClockTime base = gst_element_get_base_time(pipeline);
        gst_object_unref(clock);
        if (!GST_CLOCK_TIME_IS_VALID(now) || now < base) return GST_CLOCK_TIME_NONE;
        running = now - base;
    } else {
        running = gst_element_get_start_time(pipeline);
    }
    if (!GST_CLOCK_TIME_IS_VALID(running)) return GST_CLOCK_TIME_NONE;
    GstQuery *query = gst_query_new_latency();
    if (gst_element_query(pipeline, query)) {
        gboolean live = FALSE;
        GstClockTime latency = 0;
        gst_query_parse_latency(query, &live, &latency, NULL);
        if (GST_CLOCK_TIME_IS_VALID(latency)) running = running > latency ? running - latency : 0;
    }
    gst_query_unref(query);
    return running;
}

// Whether every sink in `bin` (and the bins in it) renders by its segments' running time: synced to the clock, with a
// TIME segment (or none yet). A sink that is not (sync=false, a file sink behind an encoder's BYTES segment) renders
// what it gets when it gets it, and its own position is the one to believe.
static gboolean lectern_silence_sinks_follow_segments(GstBin *bin) {
    gboolean follow = TRUE;
    gboolean done = FALSE;
    GstIterator *sinks = gst_bin_iterate_sinks(bin);
    GValue item = G_VALUE_INIT;
    while (!done) {
        switch (gst_iterator_next(sinks, &item)) {
        case GST_ITERATOR_OK: {
            GstElement *element = g_value_get_object(&item);
            if (GST_IS_BIN(element)) {
                follow = follow && lectern_silence_sinks_follow_segments(GST_BIN(element));
            } else if (GST_IS_BASE_SINK(element)) {
                GstBaseSink *sink = GST_BASE_SINK(element);
                if (!gst_base_sink_get_sync(sink)) follow = FALSE;
                GstEvent *event = gst_pad_get_sticky_event(GST_BASE_SINK_PAD(sink), GST_EVENT_SEGMENT, 0);
                if (event != NULL) {
                    const GstSegment *segment = NULL;
                    gst_event_parse_segment(event, &segment);
                    if (segment->format != GST_FORMAT_TIME) follow = FALSE;
                    gst_event_unref(event);
                }
            }
            g_value_reset(&item);
            done = !follow;
            break;
        }
        case GST_ITERATOR_RESYNC:
            gst_iterator_resync(sinks);
            follow = TRUE;
            break;
        default:
            done = TRUE;
            break;
        }
    }
    g_value_unset(&item);
    gst_iterator_free(sinks);
    return follow;
}

// The running time at which `kept` starts, or GST_CLOCK_TIME_NONE.
static GstClockTime lectern_silence_kept_start(const LecternSilenceKept *kept) {
    guint64 start = 0;
    if (kept->segment.format != GST_FORMAT_TIME
        || gst_segment_to_running_time_full(&kept->segment, GST_FORMAT_TIME, kept->segment.start, &start) != 1) {
        return GST_CLOCK_TIME_NONE;
    }
    return start;
}

void lectern_gst_silence_heard(void *silence, void *pipeline, LecternHeard *heard) {
    LecternSilence *self = (LecternSilence *)silence;
    heard->position = -1;
    heard->group = GST_GROUP_ID_INVALID;
    heard->next_stream = -1;
    GST_OBJECT_LOCK(self);
    gboolean kept = self->segment_count > 0;
    GST_OBJECT_UNLOCK(self);
    if (!kept || !lectern_silence_sinks_follow_segments(GST_BIN(pipeline))) return;
    GstClockTime running = lectern_silence_running_time(GST_ELEMENT(pipeline));
    if (!GST_CLOCK_TIME_IS_VALID(running)) return;
    GST_OBJECT_LOCK(self);
    // The segment that holds what is heard now: the last one that starts at or before it.
    guint count = self->segment_count;
    gint held = -1;
    for (gint i = (gint)count - 1; i >= 0 && held < 0; i--) {
        GstClockTime start = lectern_silence_kept_start(&self->segments[i]);
        if (GST_CLOCK_TIME_IS_VALID(start) && start <= running) held = i;
    }
    if (held >= 0) {
        const LecternSilenceKept *kept_held = &self->segments[held];
        heard->group = kept_held->group;
        // With a later segment pushed already, the sink answers from that one: the position is this one's, where it
        // ends at most (the last sound of a file, heard until the next file's start).
        if ((guint)held < count - 1) {
            const GstSegment *segment = &kept_held->segment;
            guint64 at = 0;
            if (gst_segment_position_from_running_time_full(segment, GST_FORMAT_TIME, running, &at) == 1) {
                if (GST_CLOCK_TIME_IS_VALID(segment->stop) && at > segment->stop) at = segment->stop;
                if (at < segment->start) at = segment->start;
                heard->position = (gint64)gst_segment_to_stream_time(segment, GST_FORMAT_TIME, at);
            }
        }
        for (guint i = (guint)held + 1; i < count; i++) {
            if (self->segments[i].group == kept_held->group) continue;
            GstClockTime start = lectern_silence_kept_start(&self->segments[i]);
            if (GST_CLOCK_TIME_IS_VALID(start)) heard->next_stream = (gint64)(start - running);
            break;
        }
        // Those before it are heard: gone.
        memmove(self->segments, self->segments + held, sizeof self->segments[0] * (count - (guint)held));
        self->segment_count = count - (guint)held;
    }
    GST_OBJECT_UNLOCK(self);
}

bool lectern_gst_register_silence(void) {
    return gst_element_register(NULL, "lecternsilence", GST_RANK_NONE, lectern_silence_get_type());
}
