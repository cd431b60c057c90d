import Foundation

/// What the player needs from an audio pipeline: one stream at a time, with a gapless "next" slot.
///
/// The player actor owns its engine and is the only caller; implementations need not be thread-safe
/// for calls, but deliver their ``events`` from whatever thread they like. Every call returns at once: the
/// player never waits for the pipeline, which reports what a call caused through ``events``.
/// `GStreamerEngine` (LecternDaemon) is the real one; `FakeEngine` (tests) runs on a manual clock.
public protocol AudioEngine: AnyObject {
    /// Events in the order the pipeline produced them. One consumer: the player's `run()`.
    var events: AsyncStream<EngineEvent> { get }

    /// Replaces the current stream with `url`, prerolled and paused at `position`.
    /// `.ready(url, duration:)` follows once the stream can play; `.failed` if it can't. Volume and rate
    /// carry over to the new stream; the gapless slot (`setNext`) is kept.
    func load(_ url: URL, at position: Duration)
    /// Starts or resumes output of the loaded stream.
    func play()
    /// Holds output; the position stays where it is.
    func pause()
    /// Releases the stream and the output device.
    func stop()
    /// Moves within the loaded stream, sample-accurate. Ignored when nothing is loaded.
    func seek(to position: Duration)
    /// The position in the current stream, nil when nothing is loaded or it is not yet known.
    var position: Duration? { get }
    /// Listening time skip silence removed so far (what the pauses lost): it only grows, but may start again at
    /// zero when the engine rebuilds its pipeline. Read at each tick, from the player's executor: it must not wait.
    var silenceRemoved: Duration { get }
    /// Linear volume, 0 = silent, 1 = unity; above 1 amplifies (without clipping).
    func setVolume(_ volume: Double)
    /// A linear gain on top of the volume (a book's loudness normalisation); 1 leaves the sound as it is.
    func setGain(_ gain: Double)
    /// The speech compressor: nil (off: the sound as it is), or the level in dBFS it leaves unchanged.
    func setCompressor(_ level: Double?)
    /// Skip silence: nil (off: every pause as recorded), or how pauses are shortened.
    func setSkipSilence(_ skipping: SkipSilence?)
    /// Playback rate (1 = normal) with the pitch preserved.
    func setRate(_ rate: Double)
    /// The stream to continue with, without a gap, when the current one ends; nil to stop at its end.
    func setNext(_ url: URL?)
}

/// Something the engine reports. Values only: no pipeline object crosses into the player.
public enum EngineEvent: Sendable, Equatable {
    /// The stream loaded from the URL prerolled (at the position asked for); its duration if the container
    /// tells it. A `.ready` for another URL than the last one loaded is stale.
    case ready(URL, duration: Duration?)
    /// The duration became known or changed (e.g. MP3 without a Xing header).
    case durationChanged(Duration)
    /// Playback continued into the stream set with `setNext`, without a gap.
    case advanced(URL)
    /// The current stream ended and no next one was set.
    case endOfStream
    /// The stream failed (unreadable, undecodable); the engine is stopped.
    case failed(String)
    /// The stream set with `setNext` failed while the engine prepared it, before it started. The current stream
    /// plays on to its end and then stands still there (no end of stream comes): the player loads what follows.
    /// The engine is not stopped at the failure: GStreamer 1.22's playbin can deadlock when set to NULL while the
    /// failed stream's thread is blocked on a pad it holds until the current stream ends
    /// (docs/decisions/gstreamer-hangs.md).
    case nextFailed(URL, String)
    /// The output failed (the sound server went away, the device broke), or GStreamer stopped responding and the
    /// engine replaced its pipeline; the engine is stopped, the stream itself is fine and can be loaded again where
    /// it was.
    case outputFailed(String)
    /// The sound server asked the stream to make way for another sound (a cork request: a call, PulseAudio's
    /// module-role-cork). The engine changes nothing by itself: the player decides.
    case interruptionBegan
    /// The sound server said the stream may play again (an uncork request: the call ended).
    case interruptionEnded
    /// Whether the stream loaded from the URL (a stream, not a file) can be moved in: its server allows ranges and
    /// the pipeline answers a seeking query with yes. Follows its `.ready`.
    case seekability(URL, seekable: Bool)
    /// The stream loaded from the URL (a stream, not a file) told its tags as it plays: a title, artists, an album
    /// (nil or empty: not told).
    case tags(URL, title: String?, artists: [String], album: String?)
}
