// Named C functions for the GLib/GStreamer macros and variadic functions Swift cannot call.
//
// This header must stay free of GStreamer/GLib headers (void*, stdint, stdbool only): including them here
// would give Swift two definitions of the same C types ("has different definitions in different modules").
// Objects are passed as `void *` and are the GObject/GstElement/GstMessage the caller already holds.
#ifndef LECTERN_GST_SHIMS_H
#define LECTERN_GST_SHIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// g_object_set is variadic: one setter per value type.
void lectern_gst_object_set_string(void *object, const char *property, const char *value);
void lectern_gst_object_set_double(void *object, const char *property, double value);
void lectern_gst_object_set_bool(void *object, const char *property, bool value);
void lectern_gst_object_set_int(void *object, const char *property, int32_t value);
void lectern_gst_object_set_object(void *object, const char *property, void *value);

// g_object_get is variadic: one getter per value type. The string getter returns a copy to free
// with lectern_gst_free (NULL when unset); the object getter returns a new reference (or NULL).
char *lectern_gst_object_get_string(void *object, const char *property);
double lectern_gst_object_get_double(void *object, const char *property);
bool lectern_gst_object_get_bool(void *object, const char *property);
int32_t lectern_gst_object_get_int(void *object, const char *property);
uint64_t lectern_gst_object_get_uint64(void *object, const char *property);
void *lectern_gst_object_get_object(void *object, const char *property);

// g_free, so callers of the getters above need no GLib import to free what they got.
void lectern_gst_free(void *pointer);

// gst_util_set_object_arg wants a GObject*, which Swift only gets through the G_OBJECT cast macro.
// Sets a property from its string form, e.g. playbin "flags" = "audio+soft-volume".
void lectern_gst_set_object_arg(void *object, const char *property, const char *value);

// g_signal_connect is a macro over g_signal_connect_data with a G_CALLBACK cast: connects playbin's
// "about-to-finish" (emitted on a streaming thread). Returns the handler id for lectern_gst_signal_disconnect.
unsigned long lectern_gst_connect_about_to_finish(void *playbin,
                                                  void (*callback)(void *playbin, void *user_data),
                                                  void *user_data);
// g_signal_handler_disconnect wants a gpointer instance reached through casts; kept beside its connect.
void lectern_gst_signal_disconnect(void *object, unsigned long handler_id);

// GST_MESSAGE_TYPE is a macro; returns the GstMessageType bits.
uint32_t lectern_gst_message_type(void *message);
// GST_MESSAGE_SRC is a macro; returns the posting GstObject (not a new reference).
void *lectern_gst_message_src(void *message);
/// Whether the message comes from a sink element (the audio output, e.g. pulsesink inside autoaudiosink).
bool lectern_gst_message_from_sink(void *message);
/// The URI of the stream whose element posted `message` (its playbin uridecodebin's, or the source element's
/// own): as noted when it was posted (``lectern_gst_bus_note_stream_uris``), else found now; NULL when it came
/// from an element no single stream owns (the sinks, playbin itself) or one already taken out of its bin.
/// Free with g_free.
char *lectern_gst_message_source_uri(void *message);
/// Makes `bus` (a GstBus) note in each ERROR message, as it is posted, the URI of the stream of the element that
/// posted it (a sync handler; the bus must have none). Call before the pipeline leaves NULL.
void lectern_gst_bus_note_stream_uris(void *bus);

// Posts an application message named `name` from `element` on its bus, with an optional string field
// `field` = `value` (gst_structure_new is variadic and G_TYPE_STRING is a macro). Returns false if the
// bus refused it (e.g. flushing). Safe from any thread, never blocks.
bool lectern_gst_post_application(void *element, const char *name, const char *field, const char *value);

// GST_CLOCK_TIME_NONE is a macro cast (GstClockTime)-1.
uint64_t lectern_gst_clock_time_none(void);

// A pulsesink added anywhere inside `bin` (a playbin: also the one autoaudiosink picks) whose buffer-time is still
// its default (200 ms) gets `buffer_microseconds` instead. The sound server then wakes the stream for data a few times
// a second instead of a hundred: PulseAudio asks clients that don't need low latency for as much as they can take.
// Volume stays immediate: playsink sets pulsesink's stream volume, which the server applies at once (rewinding).
// Its stream gets the `property_count` properties named and valued by the two arrays (copied here), beneath any its
// description sets (g_object_set with a GstStructure is variadic and boxed; g_signal_connect_data frees the copy).
// The first "application.name" given in the process also becomes GLib's application name, which a pulsesink made
// after this call names its connection after: call it before making the sink.
void lectern_gst_configure_sound_server_sinks(void *bin, int64_t buffer_microseconds,
                                              const char *const *property_names, const char *const *property_values,
                                              size_t property_count);

// The speed across the gapless handover (speed.c): each stream that starts in `playbin` without a flush (the next
// file about-to-finish took) gets the speed in its segments as it enters playsink, as a flushing seek would give it,
// so that it is played at the speed from its start and nothing before it is flushed. Call once, on a new playbin;
// false when it has no playsink. lectern_gst_set_speed sets the speed (1 at first), for streams started from then on:
// the rate of each rate seek, and 1 when a new stream is loaded (the first stream of a load keeps its own segment).
bool lectern_gst_keep_speed_across_streams(void *playbin);
void lectern_gst_set_speed(void *playbin, double rate);

// Gapless fixes (gapless.c), connected to `bin`'s "deep-element-added" (a playbin, or any bin that will hold the
// decoding elements): MP3s written by FFmpeg get the encoder delay and padding trimmed that FFmpeg records in the LAME
// tag under its own version string ("Lavc"/"Lavf"), which mpegaudioparse 1.22 ignores; MP4 sound tracks whose edit
// skips priming samples get their last packet decoded, which qtdemux 1.22 drops.
void lectern_gst_enable_gapless_fixes(void *bin);
// The same for a GstDiscoverer (through its "source-setup"), so that the durations it reports agree.
void lectern_gst_enable_gapless_fixes_in_discoverer(void *discoverer);
// Where FFmpeg's version string of the LAME tag starts in `data` (the start of an MP3 stream, after any ID3v2
// tag), or -1 when the first frame has no such tag (LAME's own "LAME" tag, no tag, not MP3, too short).
long lectern_mp3_ffmpeg_gapless_tag(const uint8_t *data, size_t size);
// Lengthens, in place, the single priming-skipping edit of each sound track of the moov box `data` (a whole box,
// from its header) just past the track's last packet; returns how many it changed, or -1 if `data` is no moov box.
// `added_ns` (may be NULL) gets the last change's lengthening in nanoseconds.
long lectern_mp4_extend_priming_edits(uint8_t *data, size_t size, uint64_t *added_ns);

// lecterngain (gain.c): a gain and an optional speech compressor with a peak limiter at -1 dBFS behind them, in
// passthrough at a gain of 1 with the compressor off; the formats of scaletempo (F32LE, F64LE, S16LE). Properties
// "gain" (double, 0 to 100, default 1), "compress" (boolean, default false), "compress-level" (double, dBFS, the level
// the compressor leaves unchanged, -60 to 0, default -18). Registers the element in this process (once, after
// gst_init); false if it could not be.
bool lectern_gst_register_gain(void);

// lecternsilence (silence.c): skip silence, placed after lecterngain. Pauses longer than "threshold" (double, seconds of
// the file's time, 0.1 to 10, default 0.5) are shortened: beyond it, the share "amount" (double, 0 to 1, default 0.75)
// of each 200 ms is removed; a 10 ms window whose RMS is below "level" (double, dBFS, default -45) is silent. Off unless
// "enabled" (boolean, default false): passthrough. "removed" (uint64, read-only): nanoseconds of listening time removed
// since the element was made. Positions stay in the file's time (segments, not new timestamps). Registers the element
// in this process (once, after gst_init); false if it could not be.
bool lectern_gst_register_silence(void);
// What `pipeline` (holding the lecternsilence `silence`) plays now, told by the segments that went through the skipper
// (on or off) since the last flush and the pipeline's running time: an audio sink that renders ahead (a pulsesink's
// buffer) takes a segment, and the next file's start, when it receives them, and would answer early.
typedef struct {
    int64_t position;     // ns of the file's time while a later segment was pushed already; -1: the sink's answer holds
    uint32_t group;       // the group id of the stream heard (playbin's, one per file); 0 when unknown
    int64_t next_stream;  // ns of running time until the next stream is heard; -1 when none is ahead
} LecternHeard;
// All unknown (-1, 0, -1) when the sinks do not render by running time (not synced, or behind an encoder).
void lectern_gst_silence_heard(void *silence, void *pipeline, LecternHeard *heard);

// The integrated loudness (EBU R128, gated; LUFS) and the sample peak (linear) of the files `uris` decoded one after
// another as one programme (loudness.c), within `timeout_microseconds` for them all. Returns 0 (`integrated` is
// -INFINITY when every block is below the absolute gate: silence), -1 when a file cannot be decoded or holds no sound,
// -2 when the time ran out. On -1, `error` gets why (free with lectern_gst_free).
int lectern_measure_loudness(const char *const *uris, size_t count, int64_t timeout_microseconds,
                             double *integrated, double *peak, char **error);

#endif
