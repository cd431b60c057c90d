import DBus
import Foundation
import Testing
import TestSupport

/// What a listener hears at another speed across the gapless handover, recorded from a real sound server's sink: every
/// file to its end, the next one at the speed from its start, no gap. A pulsesink holds about 3 s ahead of what is heard
/// (its 2 s and playsink's queue), so anything that flushed the pipeline as the next file starts would cut the end of
/// the one before.
@Suite(.serialized) struct SpeedHandoverRouteTests {
    static let rate = 1.5
    /// The tones of the book's files, one a file, each `toneSeconds` long.
    static let tones: [Double] = [440, 660, 880]
    static let toneSeconds = 4.0
    /// The recording's analysis window.
    static let window = 0.02

    /// The book: one mono WAV file a tone.
    static func book(in folder: TemporaryDirectory) throws -> URL {
        let book = folder.appending("Tones")
        try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
        let rate = AudioFiles.sampleRate
        for (part, frequency) in tones.enumerated() {
            let samples = (0..<Int(toneSeconds * Double(rate))).map {
                Int16(12_000 * sin(2 * Double.pi * frequency * Double($0) / Double(rate)))
            }
            try AudioFiles.wavData(samples).write(to: book.appendingPathComponent("\(part + 1).wav"))
        }
        return book
    }

    @Test(arguments: SoundServerKind.allCases)
    func everyFileIsHeardToItsEndAtSpeedWithoutAGap(_ kind: SoundServerKind) async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-speed-route")
        defer { folder.remove() }
        let source = try Self.book(in: folder)
        let recording = folder.appending("recording.raw")
        try await withRouteDaemon(kind) { d in
            try await d.activateBook(in: source)
            try await d.set("Rate", .double(Self.rate), interface: RouteDaemon.player)
            _ = try await d.waitFor({ try await d.get("Rate").double ?? 0 }) { $0 == Self.rate }

            let recorder = try Subprocess("parec", ["-d", "headphones.monitor", "--format=s16le", "--rate=44100", "--channels=1"],
                                          environment: d.server.environment, stdout: .file(recording), stderr: .null)
            defer { recorder.kill() }
            try await Task.sleep(for: .seconds(1))  // the recorder's stream running before the sound comes
            try await d.call("Play")
            // The book lasts 8 s at 1.5; with the sink's start and a loaded machine, it ends well within 25 s.
            let stopped = try await d.waitFor(d.status, timeout: .seconds(25)) { $0 == "Stopped" }
            #expect(stopped == "Stopped", "\(kind): the book did not play to its end")
            try await Task.sleep(for: .seconds(3))  // the last sound through the monitor
            recorder.terminate()
            _ = await recorder.waitForExit(timeout: .seconds(5))
        }

        let heard = Self.runs(in: try Data(contentsOf: recording))
        let trace = heard.map { "\($0.tone.map { "\(Int($0))" } ?? "-"):\(String(format: "%.2f", $0.seconds))" }.joined(separator: " ")
        // No silence between the tones (a flush at the handover leaves about 0.3 s; a sound server starved on a loaded
        // machine may leave a moment).
        let sounding = heard.drop { $0.tone == nil }.reversed().drop { $0.tone == nil }.reversed()
        let gaps = sounding.filter { $0.tone == nil && $0.seconds > 0.2 }
        #expect(gaps.isEmpty, "\(kind): silence between the files: \(trace)")
        let expected = Self.toneSeconds / Self.rate
        // The first file's start depends on when the recorder's stream took sound; its end, the second file whole and
        // the third's start follow one another.
        let middle = heard.filter { $0.tone == Self.tones[1] }.map(\.seconds).max() ?? 0
        #expect(abs(middle - expected) < 0.25, "\(kind): the second file heard for \(middle) s, \(expected) s at \(Self.rate)x: \(trace)")
        let first = heard.filter { $0.tone == Self.tones[0] }.map(\.seconds).max() ?? 0
        #expect(first > expected - 0.6 && first < expected + 0.25,
                "\(kind): the first file heard for \(first) s, \(expected) s at \(Self.rate)x: \(trace)")
        let last = heard.filter { $0.tone == Self.tones[2] }.map(\.seconds).max() ?? 0
        #expect(abs(last - expected) < 0.25, "\(kind): the last file heard for \(last) s, \(expected) s at \(Self.rate)x: \(trace)")
    }

    /// Runs of the recording's windows by what they hold: one of ``tones`` (the strongest, by Goertzel), or nil for silence.
    /// Runs shorter than 3 windows (a window straddling two tones) join the run before.
    static func runs(in data: Data) -> [(tone: Double?, seconds: Double)] {
        let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let size = Int(window * Double(AudioFiles.sampleRate))
        var labels: [Double?] = []
        for start in stride(from: 0, to: samples.count - size, by: size) {
            let slice = samples[start..<start + size].map(Double.init)
            let rms = (slice.reduce(0) { $0 + $1 * $1 } / Double(size)).squareRoot()
            guard rms > 500 else { labels.append(nil); continue }
            labels.append(tones.max { power(slice, $0) < power(slice, $1) })
        }
        var runs: [(tone: Double?, seconds: Double)] = []
        for label in labels {
            if let lastRun = runs.last, lastRun.tone == label { runs[runs.count - 1].seconds += window } else { runs.append((label, window)) }
        }
        var joined: [(tone: Double?, seconds: Double)] = []
        for run in runs {
            if let previous = joined.last, run.seconds < 3 * window || previous.tone == run.tone {
                joined[joined.count - 1].seconds += run.seconds
            } else {
                joined.append(run)
            }
        }
        return joined
    }

    /// The power of `frequency` in `samples` (Goertzel).
    static func power(_ samples: [Double], _ frequency: Double) -> Double {
        let coefficient = 2 * cos(2 * Double.pi * frequency / Double(AudioFiles.sampleRate))
        var (s1, s2) = (0.0, 0.0)
        for sample in samples {
            (s1, s2) = (sample + coefficient * s1 - s2, s1)
        }
        return s1 * s1 + s2 * s2 - coefficient * s1 * s2
    }
}
