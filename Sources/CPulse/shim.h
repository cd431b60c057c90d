// libpulse (asynchronous API with the threaded main loop): its types, and the functions Sources/PulseAudio calls
// as a table filled at run time. lecternd is not linked with libpulse: lectern_pulse_load opens it (dlopen) when the
// output watcher first connects, after start-up, so that start-up doesn't load it and the 17 libraries it brings
// (X11, xcb, libsndfile and its codecs...) even where no sound server runs. Each entry has the type of the function
// as the header declares it (__typeof__), so calls through the table are checked like direct calls.
#include <dlfcn.h>
#include <pulse/pulseaudio.h>

#define LECTERN_PULSE_FUNCTIONS(X) \
    X(pa_threaded_mainloop_new) X(pa_threaded_mainloop_free) X(pa_threaded_mainloop_start) \
    X(pa_threaded_mainloop_stop) X(pa_threaded_mainloop_lock) X(pa_threaded_mainloop_unlock) \
    X(pa_threaded_mainloop_get_api) \
    X(pa_context_new) X(pa_context_unref) X(pa_context_connect) X(pa_context_disconnect) X(pa_context_get_state) \
    X(pa_context_errno) X(pa_context_set_state_callback) X(pa_context_set_subscribe_callback) \
    X(pa_context_subscribe) X(pa_context_get_server_info) X(pa_context_get_sink_info_list) \
    X(pa_context_get_sink_info_by_index) X(pa_context_get_sink_info_by_name) X(pa_context_get_sink_input_info_list) \
    X(pa_context_move_sink_input_by_index) X(pa_context_set_sink_input_mute) \
    X(pa_operation_unref) X(pa_proplist_gets) X(pa_strerror)

/// libpulse's functions, as loaded by lectern_pulse_load.
struct lectern_pulse {
#define LECTERN_PULSE_ENTRY(name) __typeof__(name) *_Nonnull name;
    LECTERN_PULSE_FUNCTIONS(LECTERN_PULSE_ENTRY)
#undef LECTERN_PULSE_ENTRY
};

/// Opens libpulse and fills `functions`. NULL when done; else why it could not (all of `functions` is then unset).
static inline const char *_Nullable lectern_pulse_load(struct lectern_pulse *_Nonnull functions) {
    void *library = dlopen("libpulse.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) return dlerror();
#define LECTERN_PULSE_LOOKUP(name) \
    if (!(functions->name = (__typeof__(name) *)dlsym(library, #name))) return "libpulse.so.0 lacks " #name;
    LECTERN_PULSE_FUNCTIONS(LECTERN_PULSE_LOOKUP)
#undef LECTERN_PULSE_LOOKUP
    return NULL;
}
