/// A playbin bus message, converted to a value on the bus thread. No GstMessage pointer leaves that thread.
///
/// ```swift
/// for await event in playbin.events {
///     if case .endOfStream = event { break }
/// }
/// ```
public enum PlaybinEvent: Sendable, Equatable {
    /// The playbin itself (not one of its children) changed state.
    case stateChanged(old: PipelineState, new: PipelineState)
    /// An asynchronous state change or a flushing seek completed (the pipeline prerolled).
    case asyncDone
    /// A new stream started in every sink: the first one after a URI is set, or the next one after a gapless switch.
    /// The sinks take it when they receive it: an audio sink that renders ahead (a pulsesink's buffer) before the
    /// previous stream's last sound is heard (``PlaybinControl/heard`` tells when it is). `group`: the stream's group
    /// id (playbin's, one per file), nil without one.
    case streamStart(group: UInt32?)
    /// The last stream ended and no next URI was set.
    case endOfStream
    /// The duration changed (e.g. MP3 without a Xing header); the value queried right then, nil if still unknown.
    case durationChanged(Duration?)
    /// "about-to-finish" fired on a streaming thread: `nextURI` is what the gapless slot held and the playbin now
    /// continues with, nil when the slot was empty (the stream will end with `endOfStream`).
    case aboutToFinish(nextURI: String?)
    /// ``PlaybinControl/markSeek(_:)`` posted `number` just before its seek: every message after it on the bus
    /// (the seek's async-done among them) comes after that seek was made.
    case seekMarked(Int)
    /// A fatal error; the pipeline stops producing data. `debug` is GStreamer's detail for logs; `fromSink`
    /// says the output failed (e.g. the sound server went away), not the stream; `streamURI` is the URI of the
    /// stream whose element failed (around a gapless handover: the current or the next one), nil when no single
    /// stream's element posted it.
    case error(message: String, debug: String?, fromSink: Bool, streamURI: String?)
    /// A non-fatal problem GStreamer reported.
    case warning(message: String, debug: String?)
    /// An element asks the application to set the pipeline to `state` (GST_MESSAGE_REQUEST_STATE). pulsesink posts
    /// PAUSED when the sound server asks its stream to cork (another sound wants the output: a call) and PLAYING
    /// when it may uncork; nothing changes unless the application acts on it.
    case requestState(PipelineState)
    /// Tags the stream told as it plays (GST_MESSAGE_TAG): its title, artists and album, each nil or empty when this
    /// message has none.
    case tags(title: String?, artists: [String], album: String?)
}
