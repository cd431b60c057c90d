import ChildProcess
import Dispatch
import Foundation
import GStreamer
import LecternCore
import LecternEngine

/// The real ``SpeechEngine``: espeak-ng, a child process per prompt, writes the prompt's sound as WAV to a pipe as it
/// synthesizes it, and a ``SoundClip`` plays the pipe to the book's output as a second stream (`media.role` "a11y"),
/// from its first sentence on. Cut short, the child is killed and the clip stopped. Why espeak-ng, and this way:
/// docs/decisions/spoken-prompts.md.
///
/// ```swift
/// let speech = EspeakSpeech(audioSink: "pulsesink")
/// speech.speak("Paused.", id: 1, voice: SpeechVoice(language: "en-us"))
/// for await event in speech.events { if event == .finished(id: 1) { break } }
/// ```
///
/// Every call returns at once: the child, the clip and their ends are handled on one serial queue
/// (`lectern.speech`), in the order asked; the clip's bus thread only hands its events on.
// @unchecked Sendable: `current` is only touched on `queue`; the rest is immutable.
public final class EspeakSpeech: SpeechEngine, @unchecked Sendable {
    static let program = "espeak-ng"
    /// What the sound server is told of a prompt's stream: Lectern's, spoken for accessibility.
    static let streamProperties = GStreamerEngine.streamProperties.merging(["media.role": "a11y", "media.name": "Lectern prompt"]) { $1 }
    /// The elements a prompt's pipeline needs besides the output (gstreamer1.0-plugins-base and -good).
    static let elements = ["fdsrc", "wavparse", "audioconvert", "audioresample"]
    /// espeak-ng is given at most this much text (a status is a few hundred characters).
    static let longestText = 2_000

    public let events: AsyncStream<SpeechEvent>
    private let continuation: AsyncStream<SpeechEvent>.Continuation
    private let audioSink: String?
    private let queue = DispatchQueue(label: "lectern.speech")
    /// The prompt being spoken; only on `queue`.
    private var current: Prompt?

    /// A prompt's child and clip.
    private struct Prompt {
        let id: Int
        let pid: pid_t
        /// Our ends of the child's standard output (the clip reads it) and error (read when it fails).
        let sound: Int32
        let errors: Int32
        var clip: SoundClip?
    }

    /// - Parameter audioSink: the book's output description (`audio-sink`); nil for autoaudiosink.
    public init(audioSink: String?) {
        self.audioSink = audioSink
        (events, continuation) = AsyncStream.makeStream(of: SpeechEvent.self)
    }

    public func speak(_ text: String, id: Int, voice: SpeechVoice) {
        queue.async { [self] in
            cut()
            start(String(text.prefix(Self.longestText)), id: id, voice: voice)
        }
    }

    public func silence() {
        queue.async { [self] in cut() }
    }

    public func problem() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let found = path.split(separator: ":").contains { access("\($0)/\(Self.program)", X_OK) == 0 }
        guard found else { return "\(Self.program) is not installed (not found in PATH: \(path))" }
        if let missing = Self.elements.first(where: { !GStreamer.hasElement($0) }) {
            return "the GStreamer element \(missing) is not installed"
        }
        return nil
    }

    /// Where espeak-ng keeps its languages and voices: Debian's multiarch folder (/usr/lib/<triplet>/espeak-ng-data),
    /// or upstream's; nil when none is there.
    static var dataFolder: String? {
        let lib = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? []
        let candidates = lib.sorted().map { "/usr/lib/\($0)/espeak-ng-data" } + ["/usr/share/espeak-ng-data", "/usr/local/share/espeak-ng-data"]
        return candidates.first { FileManager.default.fileExists(atPath: "\($0)/lang") }
    }

    /// Why espeak-ng would not speak with `voice` (no such language, no such variant); nil when it would, or when its
    /// data cannot be found to tell (it is then not installed, which ``problem()`` says).
    public static func unknown(_ voice: SpeechVoice) -> String? {
        guard let data = dataFolder else { return nil }
        let files = FileManager.default.enumerator(atPath: "\(data)/lang")?.compactMap { ($0 as? String)?.split(separator: "/").last } ?? []
        guard files.contains(where: { $0.lowercased() == voice.language.lowercased() }) else {
            return "espeak-ng has no language \"\(voice.language)\" (\(data)/lang)"
        }
        if let variant = voice.variant, !FileManager.default.fileExists(atPath: "\(data)/voices/!v/\(variant)") {
            return "espeak-ng has no voice variant \"\(variant)\" (\(data)/voices/!v)"
        }
        return nil
    }

    // MARK: - On the queue

    private func start(_ text: String, id: Int, voice: SpeechVoice) {
        // Close-on-exec from the start: no other child (a media reader spawned meanwhile) inherits them.
        var input: [Int32] = [-1, -1], output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        for index in 0..<3 {
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, kind, 0, &pair) == 0 else {
                let reason = String(cString: strerror(errno))
                (input + output + errors).filter { $0 >= 0 }.forEach { close($0) }
                return fail(id, "socketpair: \(reason)")
            }
            switch index {
            case 0: input = pair
            case 1: output = pair
            default: errors = pair
            }
        }
        // -b 1: the text is UTF-8; --stdout: WAV on standard output, sentence by sentence as it is made.
        let spawned = spawnChild(Self.program, arguments: ["--stdout", "-b", "1", "-v", voice.name],
                                 descriptors: [(input[0], 0), (output[1], 1), (errors[1], 2)])
        [input[0], output[1], errors[1]].forEach { close($0) }
        guard case .success(let pid) = spawned else {
            [input[1], output[0], errors[0]].forEach { close($0) }
            if case .failure(let error) = spawned { fail(id, problem() ?? error.description) }
            return
        }
        // Far less than a pipe holds: written at once, and the end of the input is the end of the text.
        Array(text.utf8).withUnsafeBytes { _ = write(input[1], $0.baseAddress, $0.count) }
        close(input[1])
        current = Prompt(id: id, pid: pid, sound: output[0], errors: errors[0])
        do {
            let clip = try SoundClip(wavFrom: output[0], audioSink: audioSink, streamProperties: Self.streamProperties) {
                [weak self, queue, continuation] event in
                switch event {
                case .stateChanged(_, .playing): continuation.yield(.started(id: id))
                case .endOfStream: queue.async { [weak self] in self?.ended(id, failure: nil) }
                case .error(let message, _, _, _): queue.async { [weak self] in self?.ended(id, failure: message) }
                default: break
                }
            }
            current?.clip = clip
            clip.play()
        } catch {
            ended(id, failure: "the prompt's pipeline: \(error)")
        }
    }

    /// The prompt being spoken is cut short by the next one, or silenced.
    private func cut() {
        guard let prompt = current else { return }
        current = nil
        _ = release(prompt, kill: true)
        continuation.yield(.finished(id: prompt.id))
    }

    /// The clip of prompt `id` reached its end, or failed.
    private func ended(_ id: Int, failure: String?) {
        guard let prompt = current, prompt.id == id else { return }  // already cut short
        current = nil
        let (status, said) = release(prompt, kill: failure != nil)
        if let failure {
            let child = said.isEmpty ? describeExit(status) : said
            continuation.yield(.failed(id: id, "\(failure) (\(Self.program): \(child))"))
        } else {
            continuation.yield(.finished(id: id))
        }
    }

    private func fail(_ id: Int, _ message: String) {
        continuation.yield(.failed(id: id, message))
    }

    /// Stops the clip, ends the child (killed, or already done) and closes the pipes; its exit status and what it
    /// wrote to its standard error.
    private func release(_ prompt: Prompt, kill: Bool) -> (Int32?, String) {
        prompt.clip?.stop()
        if kill { Foundation.kill(prompt.pid, SIGKILL) }
        var status: Int32 = 0
        let waited = waitpid(prompt.pid, &status, 0) == prompt.pid
        var bytes = [UInt8](repeating: 0, count: 1024)
        let count = read(prompt.errors, &bytes, bytes.count)
        close(prompt.sound)
        close(prompt.errors)
        let said = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return (waited ? status : nil, said)
    }
}
