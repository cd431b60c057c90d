import Foundation

/// What ``Prompter`` needs from a speech synthesizer and its output: one prompt at a time, the next cutting the
/// current one short.
///
/// Every call returns at once; what a prompt became comes through ``events``. `EspeakSpeech` (LecternDaemon) is the
/// real one (espeak-ng in a child process, played by a small GStreamer pipeline beside the book's); the tests'
/// `FakeSpeech` records what it was asked to say.
public protocol SpeechEngine: AnyObject, Sendable {
    /// What became of each prompt, in order. One consumer: the prompter's `run()`.
    var events: AsyncStream<SpeechEvent> { get }
    /// Speaks `text` with `voice`; whatever it speaks now stops first (its `.finished` comes before this one's).
    func speak(_ text: String, id: Int, voice: SpeechVoice)
    /// Stops what it speaks, if anything (`.finished` follows).
    func silence()
    /// Why it cannot speak (the synthesizer is not installed, the output cannot be made), nil when it can: asked
    /// when prompts are turned on, before the first one.
    func problem() -> String?
}

/// What became of a prompt.
public enum SpeechEvent: Sendable, Equatable {
    /// Its first sound went to the output.
    case started(id: Int)
    /// It was heard to its end, or cut short.
    case finished(id: Int)
    /// It could not be spoken: the synthesizer or the output failed; the message says how.
    case failed(id: Int, String)
}

/// The voice prompts are spoken in: a language (an espeak-ng voice name: "en", "en-us", "de", "fr"...) and a variant
/// of it ("f3", "m2", "klatt"...; nil for the language's own).
public struct SpeechVoice: Sendable, Equatable {
    public var language: String
    public var variant: String?

    public init(language: String = "en", variant: String? = nil) {
        self.language = language
        self.variant = variant
    }

    /// As espeak-ng's `-v` takes it: "en-us+f3".
    public var name: String { variant.map { "\(language)+\($0)" } ?? language }
}
