import DBus
import Foundation
import Testing
import TestSupport

/// Spoken prompts heard where a listener hears them: lecternd plays a 6 kHz tone (the book) with pulsesink to a
/// headless PulseAudio's "headphones" null sink, whose monitor the test records (parec). The tone's level is measured
/// at its frequency, 50 ms at a time, and speech as the sound that is not the tone: a prompt appears after its event
/// and not before, the book is lowered while it speaks and comes back after it, its position goes on as if nothing
/// had happened; with prompts off, media keys are silent. Prompts are turned on once the book plays: the prompt for the
/// book opened would otherwise be heard at a time no wait can tell.
@Suite(.serialized) struct PromptRouteTests {
    static let prompts = "org.lectern.Prompts1"

    @Test func aPromptIsHeardOverTheDuckedBookWhichComesBackWhereItWas() async throws {
        try await withRouteDaemon(.pulseAudio, extraArguments: ["--prompts"]) { d in
            #expect(try await d.get("Enabled", interface: Self.prompts).bool == true)
            try await d.playTonePromptsOff()
            try await d.set("Enabled", .boolean(true), interface: Self.prompts)
            let recording = try MonitorRecording(d, sink: "headphones")
            defer { recording.stop() }
            try await recording.waitFor(seconds: 1)
            let before = try await d.position()
            let event = recording.sampleCount
            let signalsBefore = d.signals.count
            let said = try await d.call("Say", [.string("status")], interface: Self.prompts, path: RouteDaemon.lecternPath)
            #expect(said.first?.string?.contains("Chapter 1 of 1") == true, "\(said)")
            try await d.waitFor(d.promptStreams, timeout: .seconds(30)) { $0 == 1 }
            try await d.waitFor(d.promptStreams, timeout: .seconds(30)) { $0 == 0 }
            try await recording.waitFor(seconds: recording.seconds + 1)
            recording.stop()
            let after = try await d.position()

            let heard = try recording.heard()
            #expect(heard.speechOnlyAfter(sample: event), "sound other than the book before the prompt was asked for:\n\(heard)")
            #expect(heard.speech.count >= 10, "no prompt heard:\n\(heard)")
            guard let first = heard.speech.first, let last = heard.speech.last else { return }
            let level = heard.medianTone(0..<event / MonitorRecording.window)
            let ducked = heard.medianTone(first..<last + 1)
            let back = heard.medianTone(heard.windows.count - 10..<heard.windows.count)
            #expect(level > 0.1, "the book is not heard: \(level)")
            #expect(ducked < level * 0.5, "the book is not lowered under the prompt: \(ducked) against \(level)\n\(heard)")
            #expect(back > level * 0.8, "the book did not come back: \(back) against \(level)\n\(heard)")
            // The position went on as playing does: no seek, no jump back, not stopped. (The prompt's stream joining the
            // sink can hold the book's output a moment: a Seeked then says where it plays, between the two readings.)
            let seeked = d.signals.all.dropFirst(signalsBefore).filter { $0.message.member == "Seeked" }
                .map { $0.message.arguments.first?.int64 ?? -1 }
            #expect(seeked.allSatisfy { $0 >= before && $0 <= after } && seeked == seeked.sorted(), "Seeked \(seeked)")
            #expect(after > before + 1_000_000, "position \(before) µs before the prompt, \(after) µs after")
            #expect(try await d.status() == "Playing")
        }
    }

    @Test func aMediaKeysStateIsSaidOnceAfterTheKey() async throws {
        try await withRouteDaemon(.pulseAudio) { d in
            try await d.playTone()
            try await d.set("Enabled", .boolean(true), interface: Self.prompts)
            let recording = try MonitorRecording(d, sink: "headphones")
            defer { recording.stop() }
            try await recording.waitFor(seconds: 1)
            let event = recording.sampleCount
            try await d.call("PlayPause")
            try await d.waitFor(d.promptStreams, timeout: .seconds(30)) { $0 == 1 }
            try await d.waitFor(d.promptStreams, timeout: .seconds(30)) { $0 == 0 }
            try await recording.waitFor(seconds: recording.seconds + 0.5)
            recording.stop()
            let heard = try recording.heard()
            #expect(heard.speechOnlyAfter(sample: event), "\(heard)")
            #expect(heard.speech.count >= 5, "\"paused\" not heard:\n\(heard)")
            #expect(try await d.status() == "Paused")
        }
    }

    @Test func promptsOffMediaKeysAreSilentAndARequestIsStillSpoken() async throws {
        try await withRouteDaemon(.pulseAudio) { d in
            #expect(try await d.get("Enabled", interface: Self.prompts).bool == false)
            try await d.playTone()
            let recording = try MonitorRecording(d, sink: "headphones")
            defer { recording.stop() }
            try await recording.waitFor(seconds: 0.5)
            try await d.call("PlayPause")
            try await d.call("Previous")
            #expect(try await d.status() == "Paused")
            // The keys' time to be said, had they been: a second and a half of recording after them.
            try await recording.waitFor(seconds: recording.seconds + 1.5)
            #expect(try await d.promptStreams() == 0)
            let event = recording.sampleCount
            try await d.call("Say", [.string("chapter")], interface: Self.prompts, path: RouteDaemon.lecternPath)
            try await d.waitFor(d.promptStreams, timeout: .seconds(30)) { $0 == 1 }
            try await d.waitFor(d.promptStreams, timeout: .seconds(30)) { $0 == 0 }
            recording.stop()
            let heard = try recording.heard()
            #expect(heard.speechOnlyAfter(sample: event), "sound with prompts off:\n\(heard)")
            #expect(!heard.speech.isEmpty, "the requested prompt was not heard:\n\(heard)")
        }
    }
}

extension PromptRouteTests {
    /// The benchmark's figures (scripts/prompts.sh): from an event (a Say call sent; a media key, MPRIS Previous, sent)
    /// to the first sound of its prompt in the output's monitor, as the recording receives it (parec's own latency, at
    /// most 10 ms, included), `LECTERN_PROMPT_EVENTS` of each (5 by default), the book paused. Recorded, never asserted.
    @Test func eventToFirstSoundOfItsPrompt() async throws {
        let events = ProcessInfo.processInfo.environment["LECTERN_PROMPT_EVENTS"].flatMap { Int($0) } ?? 5
        try await withRouteDaemon(.pulseAudio) { d in
            try await d.playTone()
            try await d.call("Pause")
            try await d.set("Enabled", .boolean(true), interface: Self.prompts)
            let recording = try MonitorRecording(d, sink: "headphones")
            defer { recording.stop() }
            var said: [Double] = [], keyed: [Double] = []
            for round in 0..<max(1, events) * 2 {
                try await d.waitFor(d.promptStreams, timeout: .seconds(30)) { $0 == 0 }
                try await recording.waitFor(seconds: recording.seconds + 0.3)
                let mark = recording.sampleCount
                let sent = ContinuousClock.now
                if round % 2 == 0 {
                    try await d.call("Say", [.string("chapter")], interface: Self.prompts, path: RouteDaemon.lecternPath)
                } else {
                    try await d.call("Previous")
                }
                guard let heard = try await recording.firstSound(after: mark) else {
                    Issue.record("round \(round): no prompt heard\n\(d.log)")
                    break
                }
                let milliseconds = (heard - sent).milliseconds
                if round % 2 == 0 { said.append(milliseconds) } else { keyed.append(milliseconds) }
                // Heard: cut short (turning prompts off silences the one speaking).
                try await d.set("Enabled", .boolean(false), interface: Self.prompts)
                try await d.set("Enabled", .boolean(true), interface: Self.prompts)
            }
            #expect(said.count + keyed.count == max(1, events) * 2)
            Figures.record("spoken prompts PulseAudio", "Say → first sound", summarize("Say → first sound of the prompt", said))
            Figures.record("spoken prompts PulseAudio", "media key → first sound",
                           summarize("media key (Previous) → first sound of the prompt", keyed))
        }
    }
}

// MARK: - The book, the prompts' streams, the recording

extension RouteDaemon {
    /// ``playTone()`` with prompts off: no prompt for the book opened (its stream could come after any wait for none).
    func playTonePromptsOff() async throws {
        try await set("Enabled", .boolean(false), interface: PromptRouteTests.prompts)
        try await playTone()
    }

    /// Opens a 60 s 6 kHz tone (the book) and waits until it plays with the position moving.
    func playTone() async throws {
        try await call("OpenUri", [.string(try PromptMedia.tone().absoluteString)])
        guard try await waitFor(status, { $0 == "Playing" }) == "Playing" else { throw RouteTestError("not playing:\n\(log)") }
        guard try await waitFor(position, timeout: .seconds(10), { $0 >= 300_000 }) >= 300_000 else {
            throw RouteTestError("the position does not move:\n\(log)")
        }
    }

    /// The sound server's streams of spoken prompts (media.role "a11y").
    func promptStreams() async throws -> Int {
        try await server.pactl("list", "sink-inputs").components(separatedBy: "media.role = \"a11y\"").count - 1
    }
}

enum PromptMedia {
    /// A 60 s Ogg file of a 6 kHz sine: far above a voice's own pitch and where espeak-ng puts little sound.
    static func tone() throws -> URL {
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lectern-prompt-tone-\(getpid()).ogg")
        if !FileManager.default.fileExists(atPath: file.path) { try AudioFiles.ogg(file, seconds: 60, frequency: 6000) }
        return file
    }
}

/// A sink's monitor recorded to a file by parec (mono, 16 bits, 44.1 kHz), and measured in windows of 50 ms.
final class MonitorRecording: Sendable {
    static let rate = 44_100
    /// Samples a window: 50 ms.
    static let window = 2_205
    static let tone = 6_000.0
    /// Sound other than the tone above this (RMS, full scale 1) may be speech; the steady tone alone leaves below 0.01.
    static let speechLevel = 0.02

    let file: URL
    private let process: Subprocess

    init(_ d: RouteDaemon, sink: String) throws {
        file = d.directory.appending("monitor-\(UUID().uuidString).raw")
        process = try Subprocess("parec", ["-d", "\(sink).monitor", "--raw", "--format=s16le", "--rate=\(Self.rate)", "--channels=1",
                                           "--latency-msec=10"], environment: d.server.environment, stdout: .appendingToFile(file))
    }

    func stop() {
        guard process.isRunning else { return }
        process.kill()
        _ = process.waitForExit(timeout: .seconds(5))
    }

    /// Samples recorded so far.
    var sampleCount: Int {
        ((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0) / 2
    }

    var seconds: Double { Double(sampleCount) / Double(Self.rate) }

    /// Waits until `seconds` of sound are recorded.
    func waitFor(seconds: Double) async throws {
        _ = try await poll(timeout: .seconds(30), every: .milliseconds(20), { self.seconds }, until: { $0 >= seconds })
        guard self.seconds >= seconds else { throw RouteTestError("parec recorded \(self.seconds) s, not \(seconds) s") }
    }

    /// When the recording first received sound (10 ms above ``speechLevel``) after sample `mark`: polled every 2 ms,
    /// nil after 10 s.
    func firstSound(after mark: Int) async throws -> ContinuousClock.Instant? {
        let chunk = Self.rate / 100
        var checked = mark
        let deadline = ContinuousClock.now + .seconds(10)
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        while ContinuousClock.now < deadline {
            let now = ContinuousClock.now
            let available = sampleCount
            while checked + chunk <= available {
                try handle.seek(toOffset: UInt64(checked * 2))
                let data = try handle.read(upToCount: chunk * 2) ?? Data()
                let power = data.withUnsafeBytes { raw in
                    raw.bindMemory(to: Int16.self).reduce(0.0) { $0 + pow(Double(Int16(littleEndian: $1)) / 32768, 2) }
                } / Double(chunk)
                if sqrt(power) > Self.speechLevel { return now }
                checked += chunk
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }

    /// Each window's tone amplitude (Goertzel at the tone's frequency) and the RMS of the rest.
    func windows() throws -> [SoundWindow] {
        let data = try Data(contentsOf: file)
        let samples: [Double] = data.withUnsafeBytes { raw in
            raw.bindMemory(to: Int16.self).map { Double(Int16(littleEndian: $0)) / 32768 }
        }
        let coefficient = 2 * cos(2 * Double.pi * Self.tone / Double(Self.rate))
        return stride(from: 0, to: samples.count - Self.window + 1, by: Self.window).map { start in
            let window = samples[start..<start + Self.window]
            var (s1, s2) = (0.0, 0.0)
            for x in window { (s1, s2) = (x + coefficient * s1 - s2, s1) }
            let amplitude = 2 * sqrt(max(0, s1 * s1 + s2 * s2 - coefficient * s1 * s2)) / Double(Self.window)
            let power = window.reduce(0) { $0 + $1 * $1 } / Double(Self.window)
            return SoundWindow(tone: amplitude, other: sqrt(max(0, power - amplitude * amplitude / 2)))
        }
    }

    /// The windows recorded, and those that hold speech: sound other than the tone in two windows in a row at least
    /// (a window where the tone starts, stops or changes level has some too, alone).
    func heard() throws -> Heard {
        let windows = try windows()
        let loud = windows.map { $0.other > Self.speechLevel }
        return Heard(windows: windows, speech: windows.indices.filter { index in
            loud[index] && (index > 0 && loud[index - 1] || index + 1 < loud.count && loud[index + 1])
        })
    }
}

/// 50 ms of the recording: the tone's amplitude and the RMS of everything else (full scale 1).
struct SoundWindow: Sendable {
    let tone: Double
    let other: Double
}

/// A recording measured: its windows, and the indices of those with speech in them.
struct Heard: Sendable, CustomStringConvertible {
    let windows: [SoundWindow]
    let speech: [Int]

    /// Whether all speech comes at or after sample `sample`.
    func speechOnlyAfter(sample: Int) -> Bool { speech.allSatisfy { $0 >= sample / MonitorRecording.window } }

    func medianTone(_ range: Range<Int>) -> Double { median(windows[range].map(\.tone)) }

    var description: String {
        windows.enumerated().map { String(format: "%.2f s tone %.3f other %.3f", Double($0.offset) * 0.05, $0.element.tone, $0.element.other) }
            .joined(separator: "\n")
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    return values.sorted()[values.count / 2]
}
