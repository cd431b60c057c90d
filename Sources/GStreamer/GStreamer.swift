import CGStreamer
import CGStreamerShims

/// Process-wide GStreamer set-up.
///
/// ```swift
/// GStreamer.initialize()   // any thread, any number of times
/// let playbin = try Playbin(audioSink: "fakesink sync=true")
/// ```
/// ``Playbin`` and ``Discoverer`` call it themselves; call it directly only to pay the start-up cost early.
public enum GStreamer {
    /// Runs `gst_init` once; Swift runs a static initializer exactly once, thread-safely (swift_once).
    private static let initialized: Void = {
        gst_init(nil, nil)
        // Lectern's gain stage (lecterngain, gain.c), which the playbin's audio filter holds.
        _ = lectern_gst_register_gain()
        // Skip silence (lecternsilence, silence.c), last in the same filter.
        _ = lectern_gst_register_silence()
    }()

    /// Initializes GStreamer (gst_init) the first time it is called; later calls return at once. Thread-safe.
    public static func initialize() {
        _ = initialized
    }

    /// Whether an element factory of this name is installed ("wavparse": gstreamer1.0-plugins-good).
    public static func hasElement(_ name: String) -> Bool {
        initialize()
        guard let factory = gst_element_factory_find(name) else { return false }
        gst_object_unref(UnsafeMutableRawPointer(factory))
        return true
    }
}

// MARK: - Time conversions at the C boundary

/// GST_CLOCK_TIME_NONE, the "unknown" GstClockTime.
let clockTimeNone = GstClockTime(lectern_gst_clock_time_none())

extension Duration {
    /// Whole nanoseconds, as GStreamer counts time (gint64). Sub-nanosecond parts are dropped.
    var gstNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// A GstClockTime, or nil for GST_CLOCK_TIME_NONE.
    init?(gstClockTime: GstClockTime) {
        guard gstClockTime != clockTimeNone, gstClockTime <= GstClockTime(Int64.max) else { return nil }
        self = .nanoseconds(Int64(gstClockTime))
    }
}

// MARK: - Pointer casts the C macros (GST_OBJECT, G_OBJECT, ...) would do

/// Reinterprets a GStreamer instance pointer as its parent type, as the C cast macros do.
@inline(__always)
func upcast<From, To>(_ pointer: UnsafeMutablePointer<From>, to: To.Type = To.self) -> UnsafeMutablePointer<To> {
    UnsafeMutablePointer<To>(OpaquePointer(pointer))
}

/// Takes ownership of a GError: returns its message and frees it.
func consumeError(_ error: UnsafeMutablePointer<GError>?) -> String? {
    guard let error else { return nil }
    defer { g_error_free(error) }
    return error.pointee.message.map { String(cString: $0) }
}
