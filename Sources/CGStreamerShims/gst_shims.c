// See include/gst_shims.h: each function stands in for one macro or variadic call Swift cannot make.
// GStreamer headers are included here only, never in the public header.
#include "gst_shims.h"

#include <gst/gst.h>
#include <string.h>

void lectern_gst_object_set_string(void *object, const char *property, const char *value) {
    g_object_set(G_OBJECT(object), property, value, NULL);
}

void lectern_gst_object_set_double(void *object, const char *property, double value) {
    g_object_set(G_OBJECT(object), property, (gdouble)value, NULL);
}

void lectern_gst_object_set_bool(void *object, const char *property, bool value) {
    g_object_set(G_OBJECT(object), property, (gboolean)(value ? TRUE : FALSE), NULL);
}

void lectern_gst_object_set_int(void *object, const char *property, int32_t value) {
    g_object_set(G_OBJECT(object), property, (gint)value, NULL);
}

void lectern_gst_object_set_object(void *object, const char *property, void *value) {
    g_object_set(G_OBJECT(object), property, value, NULL);
}

char *lectern_gst_object_get_string(void *object, const char *property) {
    gchar *value = NULL;
    g_object_get(G_OBJECT(object), property, &value, NULL);
    return value;
}

double lectern_gst_object_get_double(void *object, const char *property) {
    gdouble value = 0;
    g_object_get(G_OBJECT(object), property, &value, NULL);
    return value;
}

bool lectern_gst_object_get_bool(void *object, const char *property) {
    gboolean value = FALSE;
    g_object_get(G_OBJECT(object), property, &value, NULL);
    return value != FALSE;
}

int32_t lectern_gst_object_get_int(void *object, const char *property) {
    gint value = 0;
    g_object_get(G_OBJECT(object), property, &value, NULL);
    return value;
}

uint64_t lectern_gst_object_get_uint64(void *object, const char *property) {
    guint64 value = 0;
    g_object_get(G_OBJECT(object), property, &value, NULL);
    return value;
}

void *lectern_gst_object_get_object(void *object, const char *property) {
    gpointer value = NULL;
    g_object_get(G_OBJECT(object), property, &value, NULL);
    return value;
}

void lectern_gst_free(void *pointer) {
    g_free(pointer);
}

void lectern_gst_set_object_arg(void *object, const char *property, const char *value) {
    gst_util_set_object_arg(G_OBJECT(object), property, value);
}

unsigned long lectern_gst_connect_about_to_finish(void *playbin,
                                                  void (*callback)(void *playbin, void *user_data),
                                                  void *user_data) {
    return g_signal_connect(playbin, "about-to-finish", G_CALLBACK(callback), user_data);
}

void lectern_gst_signal_disconnect(void *object, unsigned long handler_id) {
    g_signal_handler_disconnect(object, handler_id);
}

uint32_t lectern_gst_message_type(void *message) {
    return (uint32_t)GST_MESSAGE_TYPE(GST_MESSAGE(message));
}

void *lectern_gst_message_src(void *message) {
    return GST_MESSAGE_SRC(GST_MESSAGE(message));
}

bool lectern_gst_message_from_sink(void *message) {
    GstObject *source = GST_MESSAGE_SRC(GST_MESSAGE(message));
    return source != NULL && GST_IS_ELEMENT(source) && GST_OBJECT_FLAG_IS_SET(source, GST_ELEMENT_FLAG_SINK);
}

// The URI of the stream `object` belongs to, walking up its parents (each taken with a reference, under its
// object lock: the streaming threads that post errors and the thread that takes a finished stream's bin out of
// playbin run at the same time).
// playbin (1.22, playbin2) gives each stream a "uridecodebin" of its own (the shared output chain has none), whose
// "uri" is the string playbin was given; a source element (filesrc) knows its URI itself.
static char *stream_uri_of(GstObject *start) {
    GstObject *object = start != NULL ? gst_object_ref(start) : NULL;
    while (object != NULL) {
        if (GST_IS_ELEMENT(object)) {
            GstElementFactory *factory = gst_element_get_factory(GST_ELEMENT(object));
            if (factory != NULL && g_strcmp0(GST_OBJECT_NAME(factory), "uridecodebin") == 0) {
                char *uri = NULL;
                g_object_get(object, "uri", &uri, NULL);
                gst_object_unref(object);
                return uri;
            }
            if (GST_IS_URI_HANDLER(object) && gst_uri_handler_get_uri_type(GST_URI_HANDLER(object)) == GST_URI_SRC) {
                char *uri = gst_uri_handler_get_uri(GST_URI_HANDLER(object));
                gst_object_unref(object);
                return uri;
            }
        }
        GstObject *parent = gst_object_get_parent(object);
        gst_object_unref(object);
        object = parent;
    }
    return NULL;
}

static GQuark stream_uri_quark(void) {
    return g_quark_from_static_string("lectern-stream-uri");  // thread-safe; only for errors and their reading
}

// The bus's sync handler: runs in the thread that posts, while the posting element is still in its stream's bin.
// By the time the bus thread pops an error, playbin may have taken that bin out (a stream that failed after
// "about-to-finish" handed over to the next one), and the element's parents no longer lead to its URI. The URI
// goes in the message's qdata: its structure may not be writable here (a bin on the way may hold a reference).
static GstBusSyncReply note_stream_uri(GstBus *bus, GstMessage *message, gpointer data) {
    (void)bus;
    (void)data;
    if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
        char *uri = stream_uri_of(GST_MESSAGE_SRC(message));
        if (uri != NULL) {
            gst_mini_object_set_qdata(GST_MINI_OBJECT(message), stream_uri_quark(), uri, g_free);
        }
    }
    return GST_BUS_PASS;
}

void lectern_gst_bus_note_stream_uris(void *bus) {
    gst_bus_set_sync_handler(GST_BUS(bus), note_stream_uri, NULL, NULL);
}

char *lectern_gst_message_source_uri(void *message) {
    const char *noted = gst_mini_object_get_qdata(GST_MINI_OBJECT(message), stream_uri_quark());
    if (noted != NULL) {
        return g_strdup(noted);
    }
    return stream_uri_of(GST_MESSAGE_SRC(GST_MESSAGE(message)));
}

bool lectern_gst_post_application(void *element, const char *name, const char *field, const char *value) {
    GstStructure *structure = gst_structure_new_empty(name);
    if (field != NULL && value != NULL) {
        gst_structure_set(structure, field, G_TYPE_STRING, value, NULL);
    }
    GstMessage *message = gst_message_new_application(GST_OBJECT(element), structure);
    return gst_element_post_message(GST_ELEMENT(element), message) != FALSE;
}

uint64_t lectern_gst_clock_time_none(void) {
    return GST_CLOCK_TIME_NONE;
}

// What "deep-element-added" gives each pulsesink (user data, freed with the handler): the buffer to hold and the
// properties of its stream.
typedef struct {
    gint64 buffer_time;
    GstStructure *stream_properties;
} SoundServerSinkSettings;

static void sound_server_sink_settings_free(gpointer data, GClosure *closure) {
    (void)closure;
    SoundServerSinkSettings *settings = data;
    gst_structure_free(settings->stream_properties);
    g_free(settings);
}

// gst_structure_foreach: copies one field of the sink's own stream-properties over ours (user data).
static gboolean copy_stream_property(GQuark field, const GValue *value, gpointer user_data) {
    gst_structure_id_set_value((GstStructure *)user_data, field, value);
    return TRUE;
}

// "deep-element-added": a pulsesink whose buffer-time is still its default gets the one asked for; its stream gets
// the properties asked for, under those its description set itself.
static void sound_server_sink_added(GstBin *bin, GstBin *sub_bin, GstElement *element, gpointer user_data) {
    (void)bin;
    (void)sub_bin;
    const SoundServerSinkSettings *settings = user_data;
    GstElementFactory *factory = gst_element_get_factory(element);
    if (factory == NULL || strcmp(GST_OBJECT_NAME(factory), "pulsesink") != 0) {
        return;
    }
    GObjectClass *object_class = G_OBJECT_GET_CLASS(element);
    GParamSpec *spec = g_object_class_find_property(object_class, "buffer-time");
    if (spec != NULL && G_PARAM_SPEC_VALUE_TYPE(spec) == G_TYPE_INT64) {
        gint64 current = 0;
        g_object_get(element, "buffer-time", &current, NULL);
        if (current == G_PARAM_SPEC_INT64(spec)->default_value) {
            g_object_set(element, "buffer-time", settings->buffer_time, NULL);
        }
    }
    if (gst_structure_n_fields(settings->stream_properties) == 0) {
        return;
    }
    spec = g_object_class_find_property(object_class, "stream-properties");
    if (spec != NULL && G_PARAM_SPEC_VALUE_TYPE(spec) == GST_TYPE_STRUCTURE) {
        GstStructure *own = NULL;
        g_object_get(element, "stream-properties", &own, NULL);
        GstStructure *merged = gst_structure_copy(settings->stream_properties);
        if (own != NULL) {
            gst_structure_foreach(own, copy_stream_property, merged);
            gst_structure_free(own);
        }
        g_object_set(element, "stream-properties", merged, NULL);
        gst_structure_free(merged);
    }
}

void lectern_gst_configure_sound_server_sinks(void *bin, int64_t buffer_microseconds,
                                              const char *const *property_names, const char *const *property_values,
                                              size_t property_count) {
    SoundServerSinkSettings *settings = g_new0(SoundServerSinkSettings, 1);
    settings->buffer_time = (gint64)buffer_microseconds;
    settings->stream_properties = gst_structure_new_empty("stream-properties");
    for (size_t i = 0; i < property_count; i++) {
        gst_structure_set(settings->stream_properties, property_names[i], G_TYPE_STRING, property_values[i], NULL);
    }
    // A pulsesink names its connection to the server after GLib's application name when it is made: make that the
    // stream's, once per process (GLib warns when it is set twice).
    const gchar *name = gst_structure_get_string(settings->stream_properties, "application.name");
    static gsize application_named = 0;
    if (name != NULL && g_once_init_enter(&application_named)) {
        g_set_application_name(name);
        g_once_init_leave(&application_named, 1);
    }
    g_signal_connect_data(bin, "deep-element-added", G_CALLBACK(sound_server_sink_added), settings,
                          sound_server_sink_settings_free, 0);
}
