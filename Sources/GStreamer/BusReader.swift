import CGStreamer
import CGStreamerShims
import Foundation

/// Reads a pipeline's bus on a dedicated thread (gst_bus_timed_pop_filtered, blocking) and turns each message
/// into a ``PlaybinEvent`` there; only values leave the thread. The bus's sync handler notes, as each error is
/// posted, the URI of the failing element's stream (`lectern_gst_bus_note_stream_uris`): by the time this thread
/// reads the error, playbin may have taken that element out of its stream.
// @unchecked Sendable: every stored property is immutable after init; `bus` and `pipeline` are only passed to
// MT-safe GStreamer calls (pop/post, pointer comparison); the continuation and handler are Sendable.
final class BusReader: @unchecked Sendable {
    private static let quitMessageName = "lectern-bus-quit"

    private let bus: UnsafeMutablePointer<GstBus>
    /// Compared with GST_MESSAGE_SRC to keep only the playbin's own state changes; never dereferenced here.
    private let pipeline: UnsafeMutableRawPointer
    private let control: PlaybinControl
    private let handler: Playbin.EventHandler?
    private let continuation: AsyncStream<PlaybinEvent>.Continuation
    /// Signalled by the thread as its last act, so `stop()` can join it.
    private let exited = DispatchSemaphore(value: 0)

    init(
        pipeline: UnsafeMutablePointer<GstElement>, control: PlaybinControl,
        handler: Playbin.EventHandler?, continuation: AsyncStream<PlaybinEvent>.Continuation
    ) {
        self.bus = gst_element_get_bus(pipeline)  // +1, released in deinit
        lectern_gst_bus_note_stream_uris(UnsafeMutableRawPointer(bus))
        self.pipeline = UnsafeMutableRawPointer(pipeline)
        self.control = control
        self.handler = handler
        self.continuation = continuation
    }

    deinit {
        gst_object_unref(UnsafeMutableRawPointer(bus))
    }

    func start() {
        let thread = Thread { [self] in
            Thread.current.name = "lectern-gst-bus"  // from inside, 15 bytes at most (Foundation on Linux)
            run()
            exited.signal()
        }
        thread.start()
    }

    /// Asks the thread to finish and waits for it. Must not be called on the bus thread itself.
    func stop() {
        // A pipeline that went to NULL left its bus flushing, which would drop the quit message.
        gst_bus_set_flushing(bus, 0)
        let quit = gst_message_new_application(nil, gst_structure_new_empty(Self.quitMessageName))
        gst_bus_post(bus, quit)
        exited.wait()
    }

    private func run() {
        let wanted: [GstMessageType] = [
            GST_MESSAGE_EOS, GST_MESSAGE_ERROR, GST_MESSAGE_WARNING, GST_MESSAGE_STATE_CHANGED,
            GST_MESSAGE_ASYNC_DONE, GST_MESSAGE_STREAM_START, GST_MESSAGE_DURATION_CHANGED, GST_MESSAGE_APPLICATION,
            GST_MESSAGE_REQUEST_STATE, GST_MESSAGE_TAG,
        ]
        let mask = GstMessageType(rawValue: wanted.reduce(0) { $0 | $1.rawValue })
        while true {
            guard let message = gst_bus_timed_pop_filtered(bus, clockTimeNone, mask) else { continue }
            defer { gst_message_unref(message) }
            if isQuit(message) { break }
            guard let event = convert(message) else { continue }
            handler?(event, control)
            continuation.yield(event)
        }
        continuation.finish()
    }

    private func isQuit(_ message: UnsafeMutablePointer<GstMessage>) -> Bool {
        applicationName(message) == Self.quitMessageName
    }

    private func applicationName(_ message: UnsafeMutablePointer<GstMessage>) -> String? {
        guard typeBits(message) == bits(GST_MESSAGE_APPLICATION),
              let structure = gst_message_get_structure(message),
              let name = gst_structure_get_name(structure) else { return nil }
        return String(cString: name)
    }

    private func convert(_ message: UnsafeMutablePointer<GstMessage>) -> PlaybinEvent? {
        switch typeBits(message) {
        case bits(GST_MESSAGE_EOS):
            return .endOfStream
        case bits(GST_MESSAGE_ASYNC_DONE):
            return .asyncDone
        case bits(GST_MESSAGE_STREAM_START):
            var group: guint = 0
            return .streamStart(group: gst_message_parse_group_id(message, &group) != 0 ? UInt32(group) : nil)
        case bits(GST_MESSAGE_DURATION_CHANGED):
            return .durationChanged(control.duration)
        case bits(GST_MESSAGE_STATE_CHANGED):
            guard lectern_gst_message_src(UnsafeMutableRawPointer(message)) == pipeline else { return nil }
            var old = GST_STATE_VOID_PENDING
            var new = GST_STATE_VOID_PENDING
            var pending = GST_STATE_VOID_PENDING
            gst_message_parse_state_changed(message, &old, &new, &pending)
            return .stateChanged(old: PipelineState(old), new: PipelineState(new))
        case bits(GST_MESSAGE_ERROR):
            let (text, debug) = parse(message, with: gst_message_parse_error)
            let raw = UnsafeMutableRawPointer(message)
            let uri = lectern_gst_message_source_uri(raw)
            defer { g_free(uri) }
            return .error(message: text, debug: debug, fromSink: lectern_gst_message_from_sink(raw),
                          streamURI: uri.map { String(cString: $0) })
        case bits(GST_MESSAGE_REQUEST_STATE):
            var state = GST_STATE_VOID_PENDING
            gst_message_parse_request_state(message, &state)
            return .requestState(PipelineState(state))
        case bits(GST_MESSAGE_TAG):
            var list: UnsafeMutablePointer<GstTagList>?
            gst_message_parse_tag(message, &list)
            guard let list else { return nil }
            defer { gst_tag_list_unref(list) }
            func strings(_ tag: String) -> [String] {
                (0..<gst_tag_list_get_tag_size(list, tag)).compactMap { index in
                    var value: UnsafePointer<gchar>?
                    guard gst_tag_list_peek_string_index(list, tag, index, &value) != 0, let value else { return nil }
                    return String(cString: value)
                }
            }
            let (title, artists, album) = (strings("title").first, strings("artist"), strings("album").first)
            guard title != nil || !artists.isEmpty || album != nil else { return nil }
            return .tags(title: title, artists: artists, album: album)
        case bits(GST_MESSAGE_WARNING):
            let (text, debug) = parse(message, with: gst_message_parse_warning)
            return .warning(message: text, debug: debug)
        case bits(GST_MESSAGE_APPLICATION):
            guard let structure = gst_message_get_structure(message) else { return nil }
            switch applicationName(message) {
            case aboutToFinishMessageName:
                return .aboutToFinish(nextURI: gst_structure_get_string(structure, "uri").map { String(cString: $0) })
            case seekMarkMessageName:
                return gst_structure_get_string(structure, "number").flatMap { Int(String(cString: $0)) }.map { .seekMarked($0) }
            default:
                return nil
            }
        default:
            return nil
        }
    }

    private func parse(
        _ message: UnsafeMutablePointer<GstMessage>,
        with parser: (
            UnsafeMutablePointer<GstMessage>?, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>?,
            UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        ) -> Void
    ) -> (String, String?) {
        var error: UnsafeMutablePointer<GError>?
        var debug: UnsafeMutablePointer<gchar>?
        parser(message, &error, &debug)
        defer { g_free(debug) }
        let text = consumeError(error) ?? "unknown GStreamer error"
        return (text, debug.map { String(cString: $0) })
    }

    private func typeBits(_ message: UnsafeMutablePointer<GstMessage>) -> UInt32 {
        lectern_gst_message_type(UnsafeMutableRawPointer(message))
    }

    private func bits(_ type: GstMessageType) -> UInt32 {
        UInt32(truncatingIfNeeded: type.rawValue)
    }
}
