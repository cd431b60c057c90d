import CGStreamer
import CGStreamerShims
import Synchronization

/// The thread-safe part of a ``Playbin``: state changes, seeks and queries, callable from any thread.
///
/// GStreamer documents `gst_element_set_state`, `gst_element_seek` and the position/duration queries as MT-safe.
/// A ``Playbin`` event handler gets one so it can react on the bus thread (e.g. seek once prerolled) without
/// hopping to the playbin's owner:
/// ```swift
/// let playbin = try Playbin(audioSink: nil) { event, control in
///     if case .asyncDone = event { _ = control.seek(to: .seconds(30)) }
/// }
/// ```
/// It keeps its own reference to the element, so it stays valid after the ``Playbin`` is gone (calls then fail
/// harmlessly on a pipeline in the NULL state).
// @unchecked Sendable: `element` is immutable and only passed to MT-safe GStreamer calls; `rateState` is a Mutex.
public final class PlaybinControl: @unchecked Sendable {
    let element: UnsafeMutablePointer<GstElement>
    /// The playbin's silence skipper (lecternsilence), whose segments tell positions while the sink is ahead.
    private let silence: UnsafeMutablePointer<GstElement>?
    /// The rate of the last seek, the speed: GStreamer keeps it per segment, we keep it so plain seeks preserve it
    /// and the playbin gives it to each next stream (speed.c).
    private let rateState = Mutex<Double>(1)

    init(element: UnsafeMutablePointer<GstElement>, silence: UnsafeMutablePointer<GstElement>? = nil) {
        self.element = element
        self.silence = silence
        gst_object_ref(UnsafeMutableRawPointer(element))
        if let silence { gst_object_ref(UnsafeMutableRawPointer(silence)) }
    }

    deinit {
        if let silence { gst_object_unref(UnsafeMutableRawPointer(silence)) }
        gst_object_unref(UnsafeMutableRawPointer(element))
    }

    /// Asks for a state (gst_element_set_state). Going to `.null` is synchronous and waits for streaming threads.
    /// `.null` and `.ready` drop the stream, and its speed: the stream loaded next starts at rate 1.
    @discardableResult
    public func setState(_ state: PipelineState) -> StateChangeResult {
        if state == .null || state == .ready {
            rateState.withLock { $0 = 1 }
            lectern_gst_set_speed(UnsafeMutableRawPointer(element), 1)
        }
        return StateChangeResult(gst_element_set_state(element, state.gstState))
    }

    /// The current state, or the pending one if a change is in progress (gst_element_get_state, no waiting).
    public var state: PipelineState {
        var current = GST_STATE_VOID_PENDING
        var pending = GST_STATE_VOID_PENDING
        _ = gst_element_get_state(element, &current, &pending, 0)
        return PipelineState(pending == GST_STATE_VOID_PENDING ? current : pending)
    }

    /// The rate set by the last ``seek(to:rate:)``, which a ``Playbin`` gives each stream that follows without a
    /// flush (the next file the gapless handover took) from its start; 1 again once set to `.ready` or `.null`.
    public var rate: Double {
        rateState.withLock { $0 }
    }

    /// Flushing, sample-accurate seek (FLUSH|ACCURATE) at the current ``rate``. Works in PAUSED or PLAYING
    /// once prerolled; `asyncDone` follows. Returns false if the pipeline refused it.
    @discardableResult
    public func seek(to position: Duration) -> Bool {
        seek(to: position, rate: rate)
    }

    /// Flushing, accurate seek that also changes the playback rate (1 = normal, 2 = twice as fast).
    /// With playbin's scaletempo audio filter the pitch is preserved. `rate` must be positive.
    @discardableResult
    public func seek(to position: Duration, rate: Double) -> Bool {
        precondition(rate > 0, "Playbin supports forward playback only (rate \(rate))")
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
        let target = max(position, .zero).gstNanoseconds
        let accepted = gst_element_seek(
            element, rate, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, gint64(target), GST_SEEK_TYPE_NONE, -1
        ) != 0
        if accepted {
            rateState.withLock { $0 = rate }
            lectern_gst_set_speed(UnsafeMutableRawPointer(element), rate)
        }
        return accepted
    }

    /// Posts `number` on the bus, read back as ``PlaybinEvent/seekMarked(_:)``; made just before a seek, it tells
    /// that seek's async-done from an earlier operation's: GStreamer gives the async-done a seqnum of its own.
    public func markSeek(_ number: Int) {
        _ = lectern_gst_post_application(UnsafeMutableRawPointer(element), seekMarkMessageName, "number", String(number))
    }

    /// Seeks to the current position with a new rate (speed change that keeps the place).
    @discardableResult
    public func setRate(_ rate: Double) -> Bool {
        guard let position else { return false }
        return seek(to: position, rate: rate)
    }

    /// What is heard now: the position in its file, and which stream it is.
    public struct Heard: Sendable, Equatable {
        /// The position in the file heard, nil if unknown (e.g. not prerolled).
        public var position: Duration?
        /// The group id of the stream heard (the one ``PlaybinEvent/streamStart(group:)`` names), nil when it cannot be
        /// told: nothing played since the last flush, or sinks that do not render by the clock (sync=false, behind an
        /// encoder), whose taking a stream is when it is heard.
        public var stream: UInt32?
        /// How much longer (running time) until the next stream, which the sinks took already, is heard; nil when no
        /// next stream was taken.
        public var nextStreamIn: Duration?

        public init(position: Duration?, stream: UInt32? = nil, nextStreamIn: Duration? = nil) {
            self.position = position
            self.stream = stream
            self.nextStreamIn = nextStreamIn
        }
    }

    /// Playback position in the current stream (gst_element_query_position), nil if unknown (e.g. not prerolled);
    /// ``heard``'s position.
    public var position: Duration? { heard.position }

    /// What is heard now. The position is the sink's answer (gst_element_query_position), except while a segment the
    /// silence skipper passed on is still ahead of what is heard: an audio sink takes a segment when it receives it,
    /// up to its buffer early (a splice's resumed point, the next file's start), and the segments that went through
    /// the skipper, on or off, tell the position and the stream by the pipeline's running time instead (silence.c).
    public var heard: Heard {
        var nanoseconds: gint64 = 0
        guard gst_element_query_position(element, GST_FORMAT_TIME, &nanoseconds) != 0, nanoseconds >= 0 else {
            return Heard(position: nil)
        }
        var heard = Heard(position: .nanoseconds(Int64(nanoseconds)))
        if let silence {
            var told = LecternHeard()
            lectern_gst_silence_heard(UnsafeMutableRawPointer(silence), UnsafeMutableRawPointer(element), &told)
            if told.position >= 0 { heard.position = .nanoseconds(told.position) }
            if told.group != 0 { heard.stream = told.group }
            if told.next_stream >= 0 { heard.nextStreamIn = .nanoseconds(told.next_stream) }
        }
        return heard
    }

    /// Listening time the silence skipper removed since the playbin was built (monotonic): its `removed` property,
    /// read under the element's object lock; zero without a skipper.
    public var silenceRemoved: Duration {
        guard let silence else { return .zero }
        return .nanoseconds(Int64(clamping: lectern_gst_object_get_uint64(UnsafeMutableRawPointer(silence), "removed")))
    }

    /// Duration of the current stream (gst_element_query_duration), nil if unknown.
    public var duration: Duration? {
        var nanoseconds: gint64 = 0
        guard gst_element_query_duration(element, GST_FORMAT_TIME, &nanoseconds) != 0, nanoseconds >= 0 else {
            return nil
        }
        return .nanoseconds(Int64(nanoseconds))
    }

    /// Whether the current stream can be moved in by time (a seeking query): a file can; a stream over HTTP when its
    /// server allows ranges and its length is known.
    public var seekable: Bool {
        guard let query = gst_query_new_seeking(GST_FORMAT_TIME) else { return false }
        defer { gst_query_unref(query) }
        guard gst_element_query(element, query) != 0 else { return false }
        var seekable: gboolean = 0
        gst_query_parse_seeking(query, nil, &seekable, nil, nil)
        return seekable != 0
    }
}
