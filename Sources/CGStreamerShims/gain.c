// lecterngain: the gain stage after scaletempo in the playbin's audio filter (a book's volume above 100 % and its
// loudness normalisation), with a peak limiter behind the gain. At a gain of 1 the element is in passthrough: buffers
// go through untouched, in whatever format they came (docs/decisions/loudness.md).
//
// The formats are scaletempo's own (F32LE, F64LE, S16LE, interleaved), so adding the element changes no
// negotiation: an integer stream stays integer at 100 %, where a float-only limiter (rglimiter) would convert it to
// float and back, with the dither that changes its samples.
//
// The limiter: each frame's gained peak (the loudest channel) above the ceiling (-1 dBFS) sets a gain reduction at
// once (no overshoot: no sample leaves above the ceiling); the reduction then recovers towards none with a 200 ms
// time constant. Channels share the reduction, so the stereo image holds.
#include <gst/gst.h>
#include <gst/audio/gstaudiofilter.h>
#include <math.h>

#include "gst_shims.h"

#define LECTERN_GAIN_CEILING 0.8912509381337456  // -1 dBFS
#define LECTERN_GAIN_RELEASE_SECONDS 0.2
#define LECTERN_GAIN_MAXIMUM 100.0

typedef struct {
    GstAudioFilter parent;
    double gain;              // linear; under the object lock
    double reduction;         // the limiter's gain, 0 < reduction <= 1; streaming thread only
    double release;           // per-frame recovery coefficient; streaming thread only
} LecternGain;

typedef struct {
    GstAudioFilterClass parent_class;
} LecternGainClass;

G_DEFINE_TYPE(LecternGain, lectern_gain, GST_TYPE_AUDIO_FILTER)

enum { PROP_0, PROP_GAIN };

#define LECTERN_GAIN_CAPS \
    "audio/x-raw, format = (string) { F32LE, F64LE, S16LE }, layout = (string) interleaved, " \
    "rate = (int) [ 1, MAX ], channels = (int) [ 1, MAX ]"

static void lectern_gain_set_property(GObject *object, guint id, const GValue *value, GParamSpec *spec) {
    LecternGain *self = (LecternGain *)object;
    if (id != PROP_GAIN) {
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
        return;
    }
    double gain = g_value_get_double(value);
    GST_OBJECT_LOCK(self);
    self->gain = gain;
    GST_OBJECT_UNLOCK(self);
    // Passthrough at unity: the buffers are not even mapped.
    gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), gain == 1.0);
}

static void lectern_gain_get_property(GObject *object, guint id, GValue *value, GParamSpec *spec) {
    LecternGain *self = (LecternGain *)object;
    if (id != PROP_GAIN) {
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
        return;
    }
    GST_OBJECT_LOCK(self);
    g_value_set_double(value, self->gain);
    GST_OBJECT_UNLOCK(self);
}

static gboolean lectern_gain_setup(GstAudioFilter *filter, const GstAudioInfo *info) {
    LecternGain *self = (LecternGain *)filter;
    self->release = exp(-1.0 / (LECTERN_GAIN_RELEASE_SECONDS * GST_AUDIO_INFO_RATE(info)));
    self->reduction = 1.0;
    return TRUE;
}

// The limiter's gain for a frame whose loudest gained sample is `peak`.
static inline double lectern_gain_limit(LecternGain *self, double peak) {
    double target = peak > LECTERN_GAIN_CEILING ? LECTERN_GAIN_CEILING / peak : 1.0;
    if (target < self->reduction) {
        self->reduction = target;
    } else {
        self->reduction = target + (self->reduction - target) * self->release;
    }
    return self->reduction;
}

#define LECTERN_GAIN_PROCESS(TYPE, TO_DOUBLE, FROM_DOUBLE)                            \
    do {                                                                              \
        TYPE *samples = (TYPE *)map.data;                                             \
        for (gsize frame = 0; frame < frames; frame++, samples += channels) {        \
            double peak = 0;                                                          \
            for (gint c = 0; c < channels; c++) {                                     \
                double level = fabs(TO_DOUBLE(samples[c]) * gain);                    \
                if (level > peak) peak = level;                                       \
            }                                                                         \
            double scale = gain * lectern_gain_limit(self, peak);                     \
            for (gint c = 0; c < channels; c++) {                                     \
                samples[c] = FROM_DOUBLE(TO_DOUBLE(samples[c]) * scale);              \
            }                                                                         \
        }                                                                             \
    } while (0)

#define LECTERN_AS_IS(x) (x)
#define LECTERN_S16_TO_DOUBLE(x) ((double)(x) / 32768.0)
static inline gint16 lectern_double_to_s16(double x) {
    double scaled = nearbyint(x * 32768.0);
    return (gint16)(scaled > 32767.0 ? 32767.0 : scaled < -32768.0 ? -32768.0 : scaled);
}

static GstFlowReturn lectern_gain_transform_ip(GstBaseTransform *transform, GstBuffer *buffer) {
    LecternGain *self = (LecternGain *)transform;
    GstAudioFilter *filter = GST_AUDIO_FILTER(transform);
    GST_OBJECT_LOCK(self);
    double gain = self->gain;
    GST_OBJECT_UNLOCK(self);
    if (gain == 1.0) return GST_FLOW_OK;  // between the property's change and passthrough taking effect
    gint channels = GST_AUDIO_INFO_CHANNELS(&filter->info);
    gint frame_size = GST_AUDIO_INFO_BPF(&filter->info);
    if (channels <= 0 || frame_size <= 0) return GST_FLOW_NOT_NEGOTIATED;
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_READWRITE)) return GST_FLOW_ERROR;
    gsize frames = map.size / frame_size;
    switch (GST_AUDIO_INFO_FORMAT(&filter->info)) {
    case GST_AUDIO_FORMAT_F32LE: LECTERN_GAIN_PROCESS(gfloat, LECTERN_AS_IS, (gfloat)); break;
    case GST_AUDIO_FORMAT_F64LE: LECTERN_GAIN_PROCESS(gdouble, LECTERN_AS_IS, LECTERN_AS_IS); break;
    case GST_AUDIO_FORMAT_S16LE: LECTERN_GAIN_PROCESS(gint16, LECTERN_S16_TO_DOUBLE, lectern_double_to_s16); break;
    default: break;
    }
    gst_buffer_unmap(buffer, &map);
    return GST_FLOW_OK;
}

static void lectern_gain_class_init(LecternGainClass *klass) {
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    object_class->set_property = lectern_gain_set_property;
    object_class->get_property = lectern_gain_get_property;
    g_object_class_install_property(object_class, PROP_GAIN,
        g_param_spec_double("gain", "Gain", "Linear gain before the limiter (1: passthrough)", 0.0,
                            LECTERN_GAIN_MAXIMUM, 1.0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    gst_element_class_set_static_metadata(element_class, "Lectern gain", "Filter/Effect/Audio",
        "A gain with a peak limiter at -1 dBFS; passthrough at unity", "Lectern");
    GstCaps *caps = gst_caps_from_string(LECTERN_GAIN_CAPS);
    gst_audio_filter_class_add_pad_templates(GST_AUDIO_FILTER_CLASS(klass), caps);
    gst_caps_unref(caps);
    GST_AUDIO_FILTER_CLASS(klass)->setup = lectern_gain_setup;
    GST_BASE_TRANSFORM_CLASS(klass)->transform_ip = lectern_gain_transform_ip;
    GST_BASE_TRANSFORM_CLASS(klass)->transform_ip_on_passthrough = FALSE;
}

static void lectern_gain_init(LecternGain *self) {
    self->gain = 1.0;
    self->reduction = 1.0;
    self->release = 0.0;
    gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
    gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), TRUE);
}

bool lectern_gst_register_gain(void) {
    return gst_element_register(NULL, "lecterngain", GST_RANK_NONE, lectern_gain_get_type());
}
