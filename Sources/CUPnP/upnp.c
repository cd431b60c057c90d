// The UPnP thread: GUPnP's context manager (one context per network interface, as interfaces come and go) and, on
// each context, a control point that finds media renderers. See lectern_upnp.h.
#include "lectern_upnp.h"

#include <dlfcn.h>
#include <libgupnp/gupnp.h>
#include <stdlib.h>
#include <string.h>

// GUPnP's functions this file calls, found by lectern_upnp_load. Each has the type its header declares (__typeof__),
// so calls through the table are checked like direct calls. GSSDP's are found through libgupnp, which needs it.
// (GUPnP's type-checking cast macros would name GUPnP's *_get_type functions: plain casts instead.)
#define LECTERN_UPNP_FUNCTIONS(X) \
    X(gupnp_context_manager_create_full) X(gupnp_context_manager_get_context_filter) \
    X(gupnp_context_manager_manage_control_point) X(gupnp_context_filter_add_entry) \
    X(gupnp_context_filter_set_enabled) X(gupnp_control_point_new) X(gupnp_control_point_get_context) \
    X(gupnp_control_point_list_device_proxies) X(gssdp_resource_browser_set_active) X(gssdp_client_get_interface) \
    X(gssdp_client_get_host_ip) X(gupnp_device_info_get_udn) X(gupnp_device_info_get_friendly_name) \
    X(gupnp_device_info_get_location) X(gupnp_device_info_get_context)

static struct {
#define LECTERN_UPNP_ENTRY(name) __typeof__(name) *name;
    LECTERN_UPNP_FUNCTIONS(LECTERN_UPNP_ENTRY)
#undef LECTERN_UPNP_ENTRY
} upnp;

static gpointer lectern_upnp_open(gpointer unused) {
    (void)unused;
    void *library = dlopen("libgupnp-1.6.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) return g_strdup(dlerror());
#define LECTERN_UPNP_LOOKUP(name) \
    if (!(upnp.name = (__typeof__(name) *)dlsym(library, #name))) return g_strdup("libgupnp-1.6.so.0 lacks " #name);
    LECTERN_UPNP_FUNCTIONS(LECTERN_UPNP_LOOKUP)
#undef LECTERN_UPNP_LOOKUP
    return NULL;
}

const char *lectern_upnp_load(void) {
    static GOnce once = G_ONCE_INIT;
    return g_once(&once, lectern_upnp_open, NULL);
}

#define LECTERN_UPNP_RENDERER "urn:schemas-upnp-org:device:MediaRenderer:1"

struct lectern_upnp {
    GMainContext *context;
    GMainLoop *loop;
    GThread *thread;
    char *interface;                    // NULL: every interface
    lectern_upnp_renderer_callback callback;
    void *user;
    // The rest: the UPnP thread only.
    GUPnPContextManager *manager;
    GPtrArray *control_points;          // one per context, owned
};

// Tells of a renderer (a device proxy of a control point).
static void lectern_upnp_tell(lectern_upnp *self, GUPnPDeviceProxy *proxy, bool available) {
    GUPnPDeviceInfo *info = (GUPnPDeviceInfo *)proxy;
    const char *udn = upnp.gupnp_device_info_get_udn(info);
    char *name = upnp.gupnp_device_info_get_friendly_name(info);
    const char *location = upnp.gupnp_device_info_get_location(info);
    GSSDPClient *client = (GSSDPClient *)upnp.gupnp_device_info_get_context(info);
    const char *interface = client ? upnp.gssdp_client_get_interface(client) : NULL;
    const char *host = client ? upnp.gssdp_client_get_host_ip(client) : NULL;
    if (udn) self->callback(self->user, available, udn, name ? name : "", location ? location : "",
                            interface ? interface : "", host ? host : "");
    g_free(name);
}

static void lectern_upnp_renderer_available(GUPnPControlPoint *point, GUPnPDeviceProxy *proxy, gpointer data) {
    (void)point;
    lectern_upnp_tell(data, proxy, true);
}

static void lectern_upnp_renderer_unavailable(GUPnPControlPoint *point, GUPnPDeviceProxy *proxy, gpointer data) {
    (void)point;
    lectern_upnp_tell(data, proxy, false);
}

static void lectern_upnp_context_available(GUPnPContextManager *manager, GUPnPContext *context, gpointer data) {
    lectern_upnp *self = data;
    GUPnPControlPoint *point = upnp.gupnp_control_point_new(context, LECTERN_UPNP_RENDERER);
    g_signal_connect_data(point, "device-proxy-available", G_CALLBACK(lectern_upnp_renderer_available), self, NULL, 0);
    g_signal_connect_data(point, "device-proxy-unavailable", G_CALLBACK(lectern_upnp_renderer_unavailable), self, NULL,
                          0);
    upnp.gssdp_resource_browser_set_active((GSSDPResourceBrowser *)point, TRUE);
    upnp.gupnp_context_manager_manage_control_point(manager, point);
    g_ptr_array_add(self->control_points, point);
}

// An interface went away: its renderers went with it, and its control point.
static void lectern_upnp_context_unavailable(GUPnPContextManager *manager, GUPnPContext *context, gpointer data) {
    (void)manager;
    lectern_upnp *self = data;
    for (guint i = self->control_points->len; i > 0; i--) {
        GUPnPControlPoint *point = g_ptr_array_index(self->control_points, i - 1);
        if (upnp.gupnp_control_point_get_context(point) != context) continue;
        for (const GList *l = upnp.gupnp_control_point_list_device_proxies(point); l; l = l->next) {
            lectern_upnp_tell(self, l->data, false);
        }
        g_signal_handlers_disconnect_matched(point, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, self);
        g_ptr_array_remove_index(self->control_points, i - 1);
    }
}

static gpointer lectern_upnp_run(gpointer data) {
    lectern_upnp *self = data;
    g_main_context_push_thread_default(self->context);
    // IPv4: what renderers and DLNA clients speak (an IPv6 context would find the same devices again).
    self->manager = upnp.gupnp_context_manager_create_full(GSSDP_UDA_VERSION_1_0, G_SOCKET_FAMILY_IPV4, 0);
    if (self->interface) {
        GUPnPContextFilter *filter = upnp.gupnp_context_manager_get_context_filter(self->manager);
        upnp.gupnp_context_filter_add_entry(filter, self->interface);
        upnp.gupnp_context_filter_set_enabled(filter, TRUE);
    }
    g_signal_connect_data(self->manager, "context-available", G_CALLBACK(lectern_upnp_context_available), self, NULL, 0);
    g_signal_connect_data(self->manager, "context-unavailable", G_CALLBACK(lectern_upnp_context_unavailable), self, NULL,
                          0);
    g_main_loop_run(self->loop);
    g_signal_handlers_disconnect_matched(self->manager, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, self);
    for (guint i = 0; i < self->control_points->len; i++) {
        g_signal_handlers_disconnect_matched(g_ptr_array_index(self->control_points, i), G_SIGNAL_MATCH_DATA, 0, 0, NULL,
                                             NULL, self);
    }
    g_ptr_array_set_size(self->control_points, 0);
    g_clear_object(&self->manager);
    // What the objects' disposal left to do on the context (sockets closed, byebye sent).
    while (g_main_context_iteration(self->context, FALSE)) {}
    g_main_context_pop_thread_default(self->context);
    return NULL;
}

lectern_upnp *lectern_upnp_start(const char *interface, lectern_upnp_renderer_callback callback, void *user,
                                 char **error) {
    *error = NULL;
    const char *failure = lectern_upnp_load();
    if (failure) {
        *error = strdup(failure);
        return NULL;
    }
    lectern_upnp *self = g_new0(lectern_upnp, 1);
    self->context = g_main_context_new();
    self->loop = g_main_loop_new(self->context, FALSE);
    self->interface = interface && *interface ? g_strdup(interface) : NULL;
    self->callback = callback;
    self->user = user;
    self->control_points = g_ptr_array_new_with_free_func(g_object_unref);
    GError *spawn = NULL;
    self->thread = g_thread_try_new("lectern-upnp", lectern_upnp_run, self, &spawn);
    if (!self->thread) {
        *error = strdup(spawn->message);
        g_error_free(spawn);
        g_main_loop_unref(self->loop);
        g_main_context_unref(self->context);
        g_ptr_array_unref(self->control_points);
        g_free(self->interface);
        g_free(self);
        return NULL;
    }
    return self;
}

static gboolean lectern_upnp_quit(gpointer data) {
    g_main_loop_quit(((lectern_upnp *)data)->loop);
    return G_SOURCE_REMOVE;
}

void lectern_upnp_stop(lectern_upnp *self) {
    // A source of the thread's own context, so that the loop quits there even if it has not started running yet
    // (g_main_context_invoke would call it here, before the loop runs).
    GSource *quit = g_idle_source_new();
    g_source_set_callback(quit, lectern_upnp_quit, self, NULL);
    g_source_attach(quit, self->context);
    g_source_unref(quit);
    g_thread_join(self->thread);
    g_main_loop_unref(self->loop);
    g_main_context_unref(self->context);
    g_ptr_array_unref(self->control_points);
    g_free(self->interface);
    g_free(self);
}
