import Foundation
import LecternCore

/// How `lecternd` was asked to run.
public struct DaemonOptions: Sendable {
    /// A GStreamer pipeline description for the output; nil = autoaudiosink.
    public var audioSink: String?
    /// The bus to use; nil = the session bus.
    public var busAddress: String?
    /// Where embedded covers are written; default `$XDG_CACHE_HOME/lectern/covers`.
    public var cacheDirectory: URL
    /// The library database; default `$XDG_DATA_HOME/lectern/library.sqlite`.
    public var databasePath: String
    /// What to do when the output in use goes away (and comes back).
    public var outputPolicy: OutputPolicyMode
    /// How long after losing its output a returning output still resumes playback; at most ``longestResumeWindow``.
    public var resumeWindow: Duration
    /// A day: an output back after longer than that is not the listener coming back to the same session.
    public static let longestResumeWindow: UInt32 = 86_400
    /// What to do when another sound asks for the output (a call).
    public var interruptions: InterruptionMode
    /// Smart rewind, the sleep timer's fade, Previous's restart threshold.
    public var listening: ListeningOptions
    /// The step of SkipForward / SkipBackward (`lectern skip forward|back`).
    public var skipStep: Duration
    /// How a track's MPRIS title is made from its chapter and book.
    public var titleTemplate: TitleTemplate
    /// Whether a pause because the output went away leaves a bookmark (kind "unplug").
    public var unplugBookmark: Bool
    /// Whether a book of a series played to its end is followed by the next one not finished.
    public var seriesContinue = false
    /// Whether lecternd joins the home network (UPnP: the renderers to cast to), and on which interface ("": every
    /// interface).
    public var network = false
    public var networkInterface = ""
    /// Whether spoken prompts are on (docs/decisions/spoken-prompts.md), and their voice.
    public var prompts = false
    public var promptVoice = SpeechVoice()
    /// The loudness, LUFS, normalisation brings books to (``defaultLoudnessTarget`` unless set).
    public var loudnessTarget = Self.defaultLoudnessTarget
    /// The target of normalisation, LUFS: the level of spoken-word programmes (podcasts, audiobook platforms ask for
    /// -18 to -20), quiet enough for the limiter to leave a normalised book's peaks alone.
    public static let defaultLoudnessTarget = -18.0
    /// The program started with `--media-reader` to read media files in a child process (``MediaReader``):
    /// lecternd itself; nil = read them in the daemon's own process.
    public var mediaReader: String?
    /// How the library folders are watched (lecternd's hidden `--watch-limit`, `--root-check`, `--fallback-scan`:
    /// tests use tiny values).
    public var watching = WatchOptions()

    public init(audioSink: String? = nil, busAddress: String? = nil, cacheDirectory: URL? = nil, databasePath: String? = nil,
                outputPolicy: OutputPolicyMode = .pauseAndResume, resumeWindow: Duration = .seconds(30 * 60),
                interruptions: InterruptionMode = .pause, listening: ListeningOptions = ListeningOptions(), skipStep: Duration = .seconds(15),
                titleTemplate: TitleTemplate = TitleTemplate(), unplugBookmark: Bool = false, mediaReader: String? = nil) {
        self.unplugBookmark = unplugBookmark
        self.mediaReader = mediaReader
        self.listening = listening
        self.skipStep = skipStep
        self.titleTemplate = titleTemplate
        self.databasePath = databasePath ?? XDG.dataHome.appendingPathComponent("lectern/library.sqlite").path
        self.audioSink = audioSink
        self.busAddress = busAddress
        self.cacheDirectory = cacheDirectory ?? XDG.cacheHome.appendingPathComponent("lectern")
        self.outputPolicy = outputPolicy
        self.resumeWindow = resumeWindow
        self.interruptions = interruptions
    }
}

