import CGStreamer
import CGStreamerShims
import Synchronization

/// A short sound played once beside anything else: WAV data read from a file descriptor (a pipe a child process
/// writes), through a pipeline of its own to an output described as for ``Playbin``.
///
/// ```swift
/// let clip = try SoundClip(wavFrom: pipe, audioSink: "pulsesink", streamProperties: ["media.role": "a11y"]) { event in
///     if event == .endOfStream { print("heard") }
/// }
/// clip.play()
/// clip.stop()      // any time; no event comes after it returns
/// ```
///
/// `onEvent` runs on the clip's bus thread (see ``Playbin/EventHandler``): it must return quickly and not call
/// `stop()`. Its state changes to `.playing` (the first sound is at the output), `.endOfStream` and `.error` are
/// what it says. The descriptor stays the caller's: `stop()` (or deinit) is done reading it, and it may be closed then.
// @unchecked Sendable: `element` is only passed to MT-safe GStreamer calls (state changes); the bus reader is
// Sendable; `stop()` is idempotent behind a Mutex.
public final class SoundClip: @unchecked Sendable {
    private let element: UnsafeMutablePointer<GstElement>
    private let control: PlaybinControl
    private let busReader: BusReader
    private let stopped = Mutex(false)

    /// How much sound a `pulsesink` holds ahead: little, so that a clip cut short stops soon.
    public static let soundServerBuffer: Duration = .milliseconds(100)

    /// Builds the pipeline, in the NULL state.
    /// - Parameters:
    ///   - descriptor: where the WAV data comes from (a pipe's read end).
    ///   - audioSink: the output's description (a pipeline's end: `"pulsesink"`, `"fakesink sync=true"`); nil for
    ///     `autoaudiosink`.
    ///   - streamProperties: the sound server stream's properties (`media.role`...), as ``Playbin`` takes them.
    public init(wavFrom descriptor: Int32, audioSink: String?, streamProperties: [String: String] = [:],
                onEvent: @escaping @Sendable (PlaybinEvent) -> Void) throws(PipelineError) {
        GStreamer.initialize()
        guard let pipeline = gst_pipeline_new("lectern-clip") else { throw .missingElement("pipeline") }
        gst_object_ref_sink(UnsafeMutableRawPointer(pipeline))
        configureSoundServerSinks(in: pipeline, buffer: Self.soundServerBuffer, streamProperties: streamProperties)
        let description = "fdsrc fd=\(descriptor) ! wavparse ! audioconvert ! audioresample ! \(audioSink ?? "autoaudiosink")"
        var error: UnsafeMutablePointer<GError>?
        let chain = gst_parse_bin_from_description(description, 0, &error)
        let message = consumeError(error)
        guard let chain else {
            gst_object_unref(UnsafeMutableRawPointer(pipeline))
            throw .invalidSinkDescription(message ?? "cannot parse \"\(description)\"")
        }
        // The pipeline sinks the bin's floating reference.
        gst_bin_add(upcast(pipeline, to: GstBin.self), upcast(chain, to: GstElement.self))
        element = pipeline
        control = PlaybinControl(element: pipeline)
        let (_, continuation) = AsyncStream.makeStream(of: PlaybinEvent.self, bufferingPolicy: .bufferingNewest(0))
        busReader = BusReader(pipeline: pipeline, control: control, handler: { event, _ in onEvent(event) },
                              continuation: continuation)
        busReader.start()
    }

    deinit {
        stop()
        gst_object_unref(UnsafeMutableRawPointer(element))
    }

    /// Starts it; the events say how it goes.
    public func play() {
        control.setState(.playing)
    }

    /// Stops the bus thread (no event after this returns) and the pipeline. Must not be called from `onEvent`.
    public func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        busReader.stop()
        gst_element_set_state(element, GST_STATE_NULL)
    }
}
