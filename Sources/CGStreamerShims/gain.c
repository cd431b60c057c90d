// lecterngain: the gain stage after scaletempo in the playbin's audio filter (a book's volume above 100 % and its
// loudness normalisation), an optional speech compressor, and a peak limiter behind them. At a gain of 1 with the
// compressor off the element is in passthrough: buffers go through untouched, in whatever format they came
// (docs/decisions/loudness.md).
//
// The formats are scaletempo's own (F32LE, F64LE, S16LE, interleaved), so adding the element changes no
// negotiation: an integer stream stays integer at 100 %, where a float-only limiter (rglimiter) would convert it to
// float and back, with the dither that changes its samples.
//
// The limiter: each frame's gained peak (the loudest channel) above the ceiling (-1 dBFS) sets a gain reduction at
// once (no overshoot: no sample leaves above the ceiling); the reduction then recovers towards none with a 200 ms
// time constant. Channels share the reduction, so the stereo image holds.
//
// The compressor (property "compress"): the RMS level of the gained sound (the channels' mean square, averaged over
// 10 ms) sets a gain, the same for every channel. Above a threshold 6 dB under "compress-level" (the loudness target,
// dBFS) the level rises 3 dB for every 9 (3:1, a 6 dB soft knee); a make-up gain of 4 dB brings the sound at
// "compress-level" back to where it was, so quieter passages come up 4 dB and louder ones down. Far below the level
// (40 dB under it, fading in over 10 dB) no make-up applies: the noise between phrases is not raised. The gain follows
// in dB, down with a 10 ms time constant (attack), up with 150 ms (release); it is worked out every 32 frames (0.7 ms
// at 44.1 kHz) and moves linearly in between, which halves the compressor's cost.
#include <gst/gst.h>
#include <gst/audio/gstaudiofilter.h>
#include <math.h>

#include "gst_shims.h"

#define LECTERN_GAIN_CEILING 0.8912509381337456  // -1 dBFS
#define LECTERN_GAIN_RELEASE_SECONDS 0.2
#define LECTERN_GAIN_MAXIMUM 100.0
#define LECTERN_COMPRESS_AVERAGE_SECONDS 0.01
#define LECTERN_COMPRESS_ATTACK_SECONDS 0.01
#define LECTERN_COMPRESS_RELEASE_SECONDS 0.15
#define LECTERN_COMPRESS_RATIO 3.0
#define LECTERN_COMPRESS_BELOW 6.0      // dB: the threshold under the level
#define LECTERN_COMPRESS_KNEE 6.0       // dB: the soft knee's width
#define LECTERN_COMPRESS_FLOOR 40.0     // dB under the level: no make-up gain below (noise), fading in over 10 dB
#define LECTERN_COMPRESS_STEP 32        // frames between two workings-out of the compressor's gain

typedef struct {
    GstAudioFilter parent;
    double gain;              // linear; under the object lock
    gboolean compress;        // the compressor on; under the object lock
    double compress_level;    // dBFS left unchanged by the compressor; under the object lock
    double envelope;          // the compressor's mean square; streaming thread only
    double compression;       // the compressor's gain in dB; streaming thread only
    double from, to;          // the linear gain the compressor moves from and to over this step; streaming thread only
    gint countdown;           // frames left in this step; streaming thread only
    double average;           // the mean square's per-frame smoothing coefficient; streaming thread only
    double attack, decay;     // the gain's per-step smoothing coefficients; streaming thread only
    double reduction;         // the limiter's gain, 0 < reduction <= 1; streaming thread only
    double release;           // per-frame recovery coefficient; streaming thread only
} LecternGain;

typedef struct {
    GstAudioFilterClass parent_class;
} LecternGainClass;

G_DEFINE_TYPE(LecternGain, lectern_gain, GST_TYPE_AUDIO_FILTER)

enum { PROP_0, PROP_GAIN, PROP_COMPRESS, PROP_COMPRESS_LEVEL };

#define LECTERN_GAIN_CAPS \
    "audio/x-raw, format = (string) { F32LE, F64LE, S16LE }, layout = (string) interleaved, " \
    "rate = (int) [ 1, MAX ], channels = (int) [ 1, MAX ]"

static void lectern_gain_set_property(GObject *object, guint id, const GValue *value, GParamSpec *spec) {
    LecternGain *self = (LecternGain *)object;
    GST_OBJECT_LOCK(self);
    switch (id) {
    case PROP_GAIN: self->gain = g_value_get_double(value); break;
    case PROP_COMPRESS: self->compress = g_value_get_boolean(value); break;
    case PROP_COMPRESS_LEVEL: self->compress_level = g_value_get_double(value); break;
    default:
        GST_OBJECT_UNLOCK(self);
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
        return;
    }
    gboolean passthrough = self->gain == 1.0 && !self->compress;
    GST_OBJECT_UNLOCK(self);
    // Passthrough at unity with the compressor off: the buffers are not even mapped.
    gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), passthrough);
}

static void lectern_gain_get_property(GObject *object, guint id, GValue *value, GParamSpec *spec) {
    LecternGain *self = (LecternGain *)object;
    GST_OBJECT_LOCK(self);
    switch (id) {
    case PROP_GAIN: g_value_set_double(value, self->gain); break;
    case PROP_COMPRESS: g_value_set_boolean(value, self->compress); break;
    case PROP_COMPRESS_LEVEL: g_value_set_double(value, self->compress_level); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec); break;
    }
    GST_OBJECT_UNLOCK(self);
}

static gboolean lectern_gain_setup(GstAudioFilter *filter, const GstAudioInfo *info) {
    LecternGain *self = (LecternGain *)filter;
    double rate = GST_AUDIO_INFO_RATE(info);
    self->release = exp(-1.0 / (LECTERN_GAIN_RELEASE_SECONDS * rate));
    self->reduction = 1.0;
    self->average = 1.0 - exp(-1.0 / (LECTERN_COMPRESS_AVERAGE_SECONDS * rate));
    self->attack = 1.0 - exp(-LECTERN_COMPRESS_STEP / (LECTERN_COMPRESS_ATTACK_SECONDS * rate));
    self->decay = 1.0 - exp(-LECTERN_COMPRESS_STEP / (LECTERN_COMPRESS_RELEASE_SECONDS * rate));
    self->envelope = 0.0;
    self->compression = 0.0;
    self->from = self->to = 1.0;
    self->countdown = 0;
    return TRUE;
}

// The compressor's linear gain at the end of the step that starts, around `level` dBFS.
static double lectern_compress_step(LecternGain *self, double level) {
    double loudness = 10.0 * log10(self->envelope + 1e-12);
    double over = loudness - (level - LECTERN_COMPRESS_BELOW);
    double slope = 1.0 - 1.0 / LECTERN_COMPRESS_RATIO;
    double reduction;
    if (2.0 * over <= -LECTERN_COMPRESS_KNEE) {
        reduction = 0.0;
    } else if (2.0 * over >= LECTERN_COMPRESS_KNEE) {
        reduction = slope * over;
    } else {
        double into = over + LECTERN_COMPRESS_KNEE / 2.0;
        reduction = slope * into * into / (2.0 * LECTERN_COMPRESS_KNEE);
    }
    double floor = loudness - (level - LECTERN_COMPRESS_FLOOR);
    double makeup = slope * LECTERN_COMPRESS_BELOW * (floor <= -10.0 ? 0.0 : floor >= 0.0 ? 1.0 : 1.0 + floor / 10.0);
    double target = makeup - reduction;
    self->compression += (target < self->compression ? self->attack : self->decay) * (target - self->compression);
    return pow(10.0, self->compression / 20.0);
}

// The compressor's linear gain for a frame whose gained channels' mean square is `energy`, around `level` dBFS.
static inline double lectern_compress(LecternGain *self, double energy, double level) {
    self->envelope += self->average * (energy - self->envelope);
    if (self->countdown == 0) {
        self->from = self->to;
        self->to = lectern_compress_step(self, level);
        self->countdown = LECTERN_COMPRESS_STEP;
    }
    self->countdown--;
    return self->to + (self->from - self->to) * self->countdown / LECTERN_COMPRESS_STEP;
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
            double peak = 0, energy = 0;                                              \
            for (gint c = 0; c < channels; c++) {                                     \
                double gained = TO_DOUBLE(samples[c]) * gain;                         \
                energy += gained * gained;                                            \
                if (fabs(gained) > peak) peak = fabs(gained);                         \
            }                                                                         \
            double scale = gain;                                                      \
            if (compress) {                                                           \
                double compression = lectern_compress(self, energy / channels, level);\
                scale *= compression;                                                 \
                peak *= compression;                                                  \
            }                                                                         \
            scale *= lectern_gain_limit(self, peak);                                  \
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
    gboolean compress = self->compress;
    double level = self->compress_level;
    GST_OBJECT_UNLOCK(self);
    // Between the properties' change and passthrough taking effect.
    if (gain == 1.0 && !compress) return GST_FLOW_OK;
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
    g_object_class_install_property(object_class, PROP_COMPRESS,
        g_param_spec_boolean("compress", "Compress", "The speech compressor on (off: passthrough at a gain of 1)", FALSE,
                             G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
    g_object_class_install_property(object_class, PROP_COMPRESS_LEVEL,
        g_param_spec_double("compress-level", "Compress level", "The level, dBFS, the compressor leaves unchanged", -60.0,
                            0.0, -18.0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    gst_element_class_set_static_metadata(element_class, "Lectern gain", "Filter/Effect/Audio",
        "A gain and a speech compressor with a peak limiter at -1 dBFS; passthrough at unity", "Lectern");
    GstCaps *caps = gst_caps_from_string(LECTERN_GAIN_CAPS);
    gst_audio_filter_class_add_pad_templates(GST_AUDIO_FILTER_CLASS(klass), caps);
    gst_caps_unref(caps);
    GST_AUDIO_FILTER_CLASS(klass)->setup = lectern_gain_setup;
    GST_BASE_TRANSFORM_CLASS(klass)->transform_ip = lectern_gain_transform_ip;
    GST_BASE_TRANSFORM_CLASS(klass)->transform_ip_on_passthrough = FALSE;
}

static void lectern_gain_init(LecternGain *self) {
    self->gain = 1.0;
    self->compress = FALSE;
    self->compress_level = -18.0;
    self->reduction = 1.0;
    self->release = 0.0;
    self->envelope = 0.0;
    self->compression = 0.0;
    self->from = self->to = 1.0;
    self->countdown = 0;
    self->average = self->attack = self->decay = 0.0;
    gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
    gst_base_transform_set_passthrough(GST_BASE_TRANSFORM(self), TRUE);
}

bool lectern_gst_register_gain(void) {
    return gst_element_register(NULL, "lecterngain", GST_RANK_NONE, lectern_gain_get_type());
}
