import CGStreamer
import CGStreamerShims
import Synchronization

/// Errors building a pipeline.
public enum PipelineError: Error, Equatable, Sendable {
    /// A GStreamer element is not installed (e.g. "playbin", "scaletempo").
    case missingElement(String)
    /// The audio sink description did not parse; GStreamer's message.
    case invalidSinkDescription(String)
}

/// One GStreamer `playbin`, audio only, with a gapless "next URI" slot and its bus as Swift events.
///
/// ```swift
/// let playbin = try Playbin(audioSink: "fakesink sync=true")
/// playbin.uri = URL(fileURLWithPath: "/tmp/a.ogg").absoluteString
/// playbin.nextURI = URL(fileURLWithPath: "/tmp/b.ogg").absoluteString   // continues without a gap
/// playbin.setState(.playing)
/// for await event in playbin.events { if event == .endOfStream { break } }
/// ```
///
/// Ownership: one owner calls its methods (not `Sendable`; it is not meant to be shared). The pieces other
/// threads touch are safe on their own: the bus is read by a dedicated thread that delivers ``events`` and the
/// optional event handler; "about-to-finish" runs on a GStreamer streaming thread and only takes the next URI
/// from a lock-protected slot. ``control`` is the `Sendable` handle for seeks and queries from other threads.
///
/// The flags are "audio+soft-volume+download": embedded cover art never starts a video branch, and a stream over HTTP
/// is buffered to a temporary file as it downloads (queue2's download mode, removed with the stream), which its
/// demuxer reads in pull mode: an Ogg stream's length is then exact, where oggdemux in push mode (GStreamer 1.22)
/// reports a guess (measured: 2.5 s or 30.1 s for the same 30.2 s file, run to run). Files are not affected. The
/// audio filter is `scaletempo`, so rate changes keep the pitch, then a gain stage with a limiter (``gain``), then the silence skipper
/// (``skipSilence``). Consecutive files follow without a gap where GStreamer 1.22 alone would leave one (FFmpeg-written
/// MP3s) or lose sound (the last packet of MP4 audio): see gapless.c; the next file plays at the speed from its start,
/// without a seek that would flush the end of the one before still to be heard (speed.c).
/// A `pulsesink` (named, or the one `autoaudiosink` picks) keeps ``soundServerBuffer`` of sound, not GStreamer's
/// 200 ms: the sound server and the streaming thread wake a few times a second instead of a hundred; its stream
/// carries the properties given to `init`, by which the sound server's policies and volume controls know it.
/// `deinit` stops the bus thread, sets NULL and releases the element.
public final class Playbin {
    /// How much sound a `pulsesink` holds ahead, unless its description sets `buffer-time` itself: PulseAudio's
    /// own default for a stream that asks for no latency ("something like 2 s", pa_buffer_attr.tlength). Pausing
    /// (the stream is corked), seeking and rate changes (flushed) and volume (the stream's own, applied by the
    /// server) take effect at once whatever its size. 2 s against 1 s: a quarter less CPU for the player and a
    /// third less for the server (docs/decisions/cpu-while-playing.md).
    public static let soundServerBuffer: Duration = .seconds(2)

    /// Called on the bus thread for every event, before it is yielded to ``events``. It must return quickly:
    /// further bus messages wait for it. The ``PlaybinControl`` is this playbin's thread-safe handle.
    public typealias EventHandler = @Sendable (PlaybinEvent, PlaybinControl) -> Void

    /// Bus messages as values, in order, from the dedicated bus thread; finishes when the playbin is released.
    /// Keeps at most the newest 256 undelivered events, so an unread stream costs nothing.
    public let events: AsyncStream<PlaybinEvent>
    /// The thread-safe handle to the same element (seeks, queries, state changes).
    public let control: PlaybinControl

    /// The audio filter: scaletempo (rate changes keep the pitch), then Lectern's gain stage with its speech
    /// compressor and limiter (lecterngain, gain.c), in passthrough at a gain of 1 with the compressor off, then the
    /// silence skipper (lecternsilence, silence.c), in passthrough when off.
    static let audioFilter = "scaletempo ! lecterngain name=\(gainName) ! lecternsilence name=\(silenceName)"
    private static let gainName = "lectern-gain"
    private static let silenceName = "lectern-silence"

    private let element: UnsafeMutablePointer<GstElement>
    private let gainElement: UnsafeMutablePointer<GstElement>
    private let silenceElement: UnsafeMutablePointer<GstElement>
    private let nextSlot: NextURISlot
    /// The +1 reference "about-to-finish" uses as user data; released in deinit once no callback can run.
    private let nextSlotReference: Unmanaged<NextURISlot>
    private let aboutToFinishHandler: UInt
    private let busReader: BusReader

    /// Builds the playbin.
    /// - Parameters:
    ///   - audioSink: a pipeline description for the audio output, e.g. `"fakesink sync=true"` or
    ///     `"audioconvert ! wavenc ! filesink location=/tmp/x.wav"` (gst_parse_bin_from_description with ghost
    ///     pads); nil uses `autoaudiosink`.
    ///   - streamProperties: properties of the stream a `pulsesink` opens (a PulseAudio proplist: e.g.
    ///     `application.name`, `media.role`), beneath those the sink's description sets. The first
    ///     `application.name` given in the process also becomes GLib's application name
    ///     (`g_set_application_name`), after which pulsesink names its connection to the server.
    ///   - onEvent: optional handler called on the bus thread for each event (see ``EventHandler``).
    public init(audioSink: String? = nil, streamProperties: [String: String] = [:],
                onEvent: EventHandler? = nil) throws(PipelineError) {
        GStreamer.initialize()
        guard let made = gst_element_factory_make("playbin", nil) else {
            throw .missingElement("playbin")
        }
        // Sink the floating reference: we own exactly one reference, released in deinit.
        gst_object_ref_sink(UnsafeMutableRawPointer(made))
        let element = made
        // Before the sink is made: a pulsesink names its connection when it is made, after GLib's application name,
        // which this sets (once per process) from the stream's application.name.
        configureSoundServerSinks(in: element, buffer: Self.soundServerBuffer, streamProperties: streamProperties)

        var filterError: UnsafeMutablePointer<GError>?
        var filter = gst_parse_bin_from_description(Self.audioFilter, 1, &filterError).map { upcast($0, to: GstElement.self) }
        if consumeError(filterError) != nil, let partial = filter {
            gst_object_unref(gst_object_ref_sink(UnsafeMutableRawPointer(partial)))
            filter = nil
        }
        var sink: UnsafeMutablePointer<GstElement>?
        var failure: PipelineError?
        if filter == nil {
            failure = .missingElement("scaletempo")
        } else if !lectern_gst_keep_speed_across_streams(UnsafeMutableRawPointer(element)) {
            // Each next file is given the speed as it enters playsink (speed.c).
            failure = .missingElement("playsink")
        } else if let audioSink {
            var error: UnsafeMutablePointer<GError>?
            sink = gst_parse_bin_from_description(audioSink, 1, &error).map { upcast($0, to: GstElement.self) }
            let message = consumeError(error)
            if sink == nil {
                failure = .invalidSinkDescription(message ?? "cannot parse \"\(audioSink)\"")
            }
        }
        if let failure {
            // Floating references not handed to the playbin: sink and drop them.
            if let filter { gst_object_unref(gst_object_ref_sink(UnsafeMutableRawPointer(filter))) }
            if let sink { gst_object_unref(gst_object_ref_sink(UnsafeMutableRawPointer(sink))) }
            gst_object_unref(UnsafeMutableRawPointer(element))
            throw failure
        }

        let raw = UnsafeMutableRawPointer(element)
        lectern_gst_set_object_arg(raw, "flags", "audio+soft-volume+download")
        // Encoder delay and padding handled where GStreamer 1.22 does not (FFmpeg MP3s, the end of MP4 audio).
        lectern_gst_enable_gapless_fixes(raw)
        // The playbin sinks the floating references of the filter and the sink bin.
        lectern_gst_object_set_object(raw, "audio-filter", UnsafeMutableRawPointer(filter))
        if let sink {
            lectern_gst_object_set_object(raw, "audio-sink", UnsafeMutableRawPointer(sink))
        }

        self.element = element
        // A new reference, released in deinit; the playbin holds the bin it is in for as long.
        self.gainElement = gst_bin_get_by_name(UnsafeMutablePointer<GstBin>(OpaquePointer(filter!)), Self.gainName)!
        self.silenceElement = gst_bin_get_by_name(UnsafeMutablePointer<GstBin>(OpaquePointer(filter!)), Self.silenceName)!
        self.control = PlaybinControl(element: element, silence: silenceElement)
        self.nextSlot = NextURISlot()
        self.nextSlotReference = Unmanaged.passRetained(nextSlot)
        self.aboutToFinishHandler = lectern_gst_connect_about_to_finish(
            raw, playbinAboutToFinish, nextSlotReference.toOpaque()
        )

        let (stream, continuation) = AsyncStream.makeStream(
            of: PlaybinEvent.self, bufferingPolicy: .bufferingNewest(256)
        )
        self.events = stream
        self.busReader = BusReader(
            pipeline: element, control: control, handler: onEvent, continuation: continuation
        )
        busReader.start()
    }

    deinit {
        // Stop the bus thread first: going to NULL sets the bus flushing, which would drop the quit message.
        busReader.stop()
        gst_element_set_state(element, GST_STATE_NULL)
        // NULL has joined the streaming threads: no "about-to-finish" callback is running or can start.
        lectern_gst_signal_disconnect(UnsafeMutableRawPointer(element), aboutToFinishHandler)
        nextSlotReference.release()
        gst_object_unref(UnsafeMutableRawPointer(gainElement))
        gst_object_unref(UnsafeMutableRawPointer(silenceElement))
        gst_object_unref(UnsafeMutableRawPointer(element))
    }

    // MARK: Stream

    /// The URI to play ("file:///…"). Setting it takes effect on the next change from NULL/READY to PAUSED or
    /// PLAYING; set the state to `.ready` or `.null` first to replace a playing stream.
    public var uri: String? {
        get {
            let raw = UnsafeMutableRawPointer(element)
            guard let value = lectern_gst_object_get_string(raw, "current-uri")
                ?? lectern_gst_object_get_string(raw, "uri") else { return nil }
            defer { lectern_gst_free(value) }
            return String(cString: value)
        }
        set {
            lectern_gst_object_set_string(UnsafeMutableRawPointer(element), "uri", newValue)
        }
    }

    /// The gapless slot: the URI "about-to-finish" (on a streaming thread) takes and continues with, without a gap.
    /// Taking empties the slot; ``PlaybinEvent/aboutToFinish(nextURI:)`` reports what was taken.
    public var nextURI: String? {
        get { nextSlot.peek() }
        set { nextSlot.put(newValue) }
    }

    // MARK: State, seeking, queries

    /// Asks for a state (gst_element_set_state); see ``StateChangeResult``.
    @discardableResult
    public func setState(_ state: PipelineState) -> StateChangeResult {
        control.setState(state)
    }

    /// The current state, or the pending one while a change is in progress.
    public var state: PipelineState { control.state }

    /// Flushing, sample-accurate seek (FLUSH|ACCURATE) at the current rate; `asyncDone` follows.
    @discardableResult
    public func seek(to position: Duration) -> Bool {
        control.seek(to: position)
    }

    /// Flushing, accurate seek that also sets the rate (pitch kept by scaletempo).
    @discardableResult
    public func seek(to position: Duration, rate: Double) -> Bool {
        control.seek(to: position, rate: rate)
    }

    /// Changes the rate at the current position.
    @discardableResult
    public func setRate(_ rate: Double) -> Bool {
        control.setRate(rate)
    }

    /// The speed: the rate of the last rate seek, which the streams that follow without a flush (the gapless
    /// handover) are given from their start; 1 again once set to `.ready` or `.null` (a stream loaded starts at 1).
    public var rate: Double { control.rate }

    /// Position in the current stream, nil when unknown.
    public var position: Duration? { control.position }

    /// Duration of the current stream, nil when unknown.
    public var duration: Duration? { control.duration }

    /// Linear gain of the audio filter's gain stage, before the output's ``volume``: 0 to 100, 1 (passthrough: not
    /// a sample changed) by default. A peak limiter behind it keeps every sample at or below -1 dBFS.
    public var gain: Double {
        get { lectern_gst_object_get_double(UnsafeMutableRawPointer(gainElement), "gain") }
        set { lectern_gst_object_set_double(UnsafeMutableRawPointer(gainElement), "gain", min(max(newValue, 0), 100)) }
    }

    /// The gain stage's speech compressor: nil (off, by default), or the level in dBFS it leaves unchanged (quieter
    /// passages come up, louder ones down; -60 to 0).
    public var compressor: Double? {
        get {
            let element = UnsafeMutableRawPointer(gainElement)
            return lectern_gst_object_get_bool(element, "compress") ? lectern_gst_object_get_double(element, "compress-level") : nil
        }
        set {
            let element = UnsafeMutableRawPointer(gainElement)
            if let level = newValue { lectern_gst_object_set_double(element, "compress-level", min(max(level, -60), 0)) }
            lectern_gst_object_set_bool(element, "compress", newValue != nil)
        }
    }

    /// Skip silence: nil (off, by default) or how pauses are shortened (see ``SilenceSkipping``). The threshold is
    /// clamped to 0.1...10 s and the amount to 0...1. Off, not a sample or event changes.
    public var skipSilence: SilenceSkipping? {
        get {
            let element = UnsafeMutableRawPointer(silenceElement)
            guard lectern_gst_object_get_bool(element, "enabled") else { return nil }
            let threshold = lectern_gst_object_get_double(element, "threshold")
            return SilenceSkipping(threshold: .nanoseconds(Int64((threshold * 1e9).rounded())),
                                   amount: lectern_gst_object_get_double(element, "amount"))
        }
        set {
            let element = UnsafeMutableRawPointer(silenceElement)
            if let skipping = newValue {
                let (seconds, attoseconds) = skipping.threshold.components
                let threshold = Double(seconds) + Double(attoseconds) / 1e18
                let range = SilenceSkipping.thresholdRange
                lectern_gst_object_set_double(element, "threshold", min(max(threshold, range.lowerBound), range.upperBound))
                lectern_gst_object_set_double(element, "amount", min(max(skipping.amount, 0), 1))
            }
            lectern_gst_object_set_bool(element, "enabled", newValue != nil)
        }
    }

    /// Listening time the silence skipper removed since this playbin was built (monotonic).
    public var silenceRemoved: Duration { control.silenceRemoved }

    /// Linear volume (playbin "volume", soft-volume): 0 silent, 1 unity, up to 10.
    public var volume: Double {
        get { lectern_gst_object_get_double(UnsafeMutableRawPointer(element), "volume") }
        set { lectern_gst_object_set_double(UnsafeMutableRawPointer(element), "volume", min(max(newValue, 0), 10)) }
    }
}

// MARK: - Gapless slot

/// The next URI, shared by the owner (puts) and the "about-to-finish" streaming thread (takes).
final class NextURISlot: Sendable {
    private let value = Mutex<String?>(nil)

    func put(_ uri: String?) {
        value.withLock { $0 = uri }
    }

    func peek() -> String? {
        value.withLock { $0 }
    }

    func take() -> String? {
        value.withLock { slot in
            defer { slot = nil }
            return slot
        }
    }
}

/// Name of the application message "about-to-finish" posts so the bus thread reports it in bus order.
let aboutToFinishMessageName = "lectern-about-to-finish"
/// Name of the application message ``PlaybinControl/markSeek(_:)`` posts.
let seekMarkMessageName = "lectern-seek-mark"

/// "about-to-finish" handler, on a streaming thread: takes the next URI, sets it synchronously as playbin's
/// `uri` (which is how gapless works) and posts a note on the bus. Never blocks beyond the slot's lock.
private func playbinAboutToFinish(_ playbin: UnsafeMutableRawPointer?, _ userData: UnsafeMutableRawPointer?) {
    guard let playbin, let userData else { return }
    let slot = Unmanaged<NextURISlot>.fromOpaque(userData).takeUnretainedValue()
    let next = slot.take()
    if let next {
        lectern_gst_object_set_string(playbin, "uri", next)
    }
    _ = lectern_gst_post_application(playbin, aboutToFinishMessageName, "uri", next)
}

/// Gives every pulsesink that will be added inside `bin` `buffer` of sound (unless its description sets its own) and
/// `streamProperties` (see ``Playbin/init(audioSink:streamProperties:onEvent:)``). Call before the sink is made.
func configureSoundServerSinks(in bin: UnsafeMutablePointer<GstElement>, buffer: Duration, streamProperties: [String: String]) {
    let microseconds = buffer.components.seconds * 1_000_000 + buffer.components.attoseconds / 1_000_000_000_000
    // C copies of the properties for the call, which copies them again into the settings its handler keeps.
    let names = streamProperties.keys.sorted()
    let cNames: [UnsafePointer<CChar>?] = names.map { UnsafePointer(g_strdup($0)) }
    let cValues: [UnsafePointer<CChar>?] = names.map { UnsafePointer(g_strdup(streamProperties[$0])) }
    lectern_gst_configure_sound_server_sinks(UnsafeMutableRawPointer(bin), microseconds, cNames, cValues, names.count)
    for copy in cNames + cValues { g_free(UnsafeMutableRawPointer(mutating: copy)) }
}
