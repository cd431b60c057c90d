import DBus
import Foundation
import Testing
import TestSupport

/// The gapless handover and skip silence on a real sound server's stream, where more is taken ahead than a file's
/// sound lasts: a pulsesink keeps 2 s and playsink's queue before it about 1 s more, and a sink takes a stream's start
/// and a segment when it receives them, not when they are heard. What clients are shown follows what is heard: the
/// next file's Metadata when its sound is heard, a shortened pause's Seeked when the splice is heard, and Position
/// never stands while sound plays nor moves otherwise than at the Rate without a Seeked.
@Suite(.serialized) struct HeardHandoverRouteTests {
    static let second: Int64 = 1_000_000

    typealias Reading = PositionReading

    /// A Seeked received at `time`.
    struct Signal {
        let time: ContinuousClock.Instant
        let position: Int64
    }

    /// The book of two mono WAV files: with skip silence, each a second of tone, 10 s of silence and a second of tone
    /// (2.5 s heard at amount 1); without, each 4 s of tone.
    static func book(in folder: TemporaryDirectory, pauses: Bool) throws -> URL {
        let book = folder.appending(pauses ? "Pauses" : "Tones")
        try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
        let rate = AudioFiles.sampleRate
        let tone = (0..<rate).map { Int16(12_000 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
        let samples = pauses ? tone + [Int16](repeating: 0, count: 10 * rate) + tone : tone + tone + tone + tone
        for part in 1...2 { try AudioFiles.wavData(samples).write(to: book.appendingPathComponent("\(part).wav")) }
        return book
    }

    @Test(arguments: SoundServerKind.allCases, [true, false])
    func theNextFileAndShortenedPausesShowWhenHeard(_ kind: SoundServerKind, skipSilence: Bool) async throws {
        try await Self.playAndCheck(kind, skipSilence: skipSilence, rate: 1)
    }

    /// At another speed the next file is played at it from its start, without a seek that would flush the end of the
    /// one before: shown when heard, and Position moves at the Rate throughout.
    @Test(arguments: SoundServerKind.allCases, [true, false])
    func theNextFileAndShortenedPausesShowWhenHeardAtSpeed(_ kind: SoundServerKind, skipSilence: Bool) async throws {
        try await Self.playAndCheck(kind, skipSilence: skipSilence, rate: 1.5)
    }

    /// Plays the book from the start at `rate` into the second file, reading Position and Metadata, and checks them.
    static func playAndCheck(_ kind: SoundServerKind, skipSilence: Bool, rate: Double) async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-heard-route")
        defer { folder.remove() }
        let source = try Self.book(in: folder, pauses: skipSilence)
        try await withRouteDaemon(kind) { d in
            try await d.activateBook(in: source, settings: skipSilence ? ["skip_silence": .boolean(true), "silence_amount": .int32(1)] : [:])
            if rate != 1 {
                try await d.set("Rate", .double(rate), interface: RouteDaemon.player)
                _ = try await d.waitFor({ try await d.get("Rate").double ?? 0 }) { $0 == rate }
            }

            let mark = d.signals.count
            let started = ContinuousClock.now
            try await d.call("Play")
            var readings: [Reading] = []
            let end: Int64 = skipSilence ? 11_300_000 : 1_500_000  // in the second file: its last tone, or 1.5 s in
            while ContinuousClock.now < started + .seconds(25) {
                guard let reading = try await d.positionReading() else { continue }
                readings.append(reading)
                let (url, position) = (reading.url, reading.position)
                if url.hasSuffix("2.wav"), position >= end { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            try await d.call("Pause")
            let seeked = d.signals.all.dropFirst(mark).filter { $0.message.member == "Seeked" }
                .map { Signal(time: $0.time, position: $0.message.arguments.first?.int64 ?? -1) }
            Self.check(readings, seeked, started: started, end: end, skipSilence: skipSilence, rate: rate,
                       label: "\(kind), skip silence \(skipSilence ? "on" : "off"), rate \(rate)")
        }
    }

    /// The readings and Seeked signals from Play (at `started`) until the reading in the second file at `end` µs, played
    /// at `rate`.
    static func check(_ readings: [Reading], _ seeked: [Signal], started: ContinuousClock.Instant, end: Int64,
                      skipSilence: Bool, rate: Double = 1, label: String) {
        // How long the first file is heard: 1 s of tone, the pause shortened to the threshold (0.5 s), 1 s of tone.
        let firstHeard: Duration = (skipSilence ? .seconds(2.5) : .seconds(4)) / rate
        let firstLength: Int64 = skipSilence ? 12 * Self.second : 4 * Self.second
        let trace = readings.map { "\(($0.asked - started).milliseconds.rounded()) ms: \($0.url.suffix(5)) \($0.position / 1000)" }
        #expect(readings.last.map { $0.url.hasSuffix("2.wav") && $0.position >= end } == true,
                "\(label): the second file not played into: \(trace.suffix(5))")

        let seekedTrace = seeked.map { "\(($0.time - started).milliseconds.rounded()) ms: \($0.position / 1000)" }

        // The second file shows once its sound is heard: no earlier than the first file's sound after Play.
        let second = readings.first { $0.url.hasSuffix("2.wav") }
        #expect(second.map { $0.answered - started >= firstHeard - .milliseconds(500) } == true,
                "\(label): the second file shown \(second.map { ($0.answered - started).milliseconds } ?? -1) ms after Play, its sound is heard from \(firstHeard.milliseconds) ms on\n\(trace)")
        #expect(readings.drop { !$0.url.hasSuffix("2.wav") }.allSatisfy { $0.url.hasSuffix("2.wav") },
                "\(label): the file shown went back\n\(trace)")
        // And the first file was heard to about its end before: as far as its readings and the Seeked signals before
        // the second file (a pause's jump) tell, at the Rate since (a loaded machine reads seldom).
        if let second {
            let known = readings.filter { $0.url.hasSuffix("1.wav") }.map { (time: $0.asked, position: $0.position) }
                + seeked.filter { $0.time < second.asked && $0.position >= Self.second }.map { (time: $0.time, position: $0.position) }
            let firstEnd = known.map { $0.position + Int64((second.answered - $0.time).milliseconds * 1000 * rate) }.max() ?? -1
            #expect(firstEnd >= firstLength - 600_000, "\(label): the second file shown at \(firstEnd) µs of the first at most\n\(trace)")
        }

        if skipSilence {
            // The first pause's jump is told once heard: after the first second of tone and the threshold (file time).
            let jump = seeked.first { $0.position > 5 * Self.second && $0.position < 12 * Self.second }
            #expect(jump.map { $0.time - started >= .milliseconds(1200) / rate } == true,
                    "\(label): the first pause's Seeked \(seekedTrace)")
        }

        // Position never stands while sound plays, in either file, once the output started: pulsesink's clock may
        // stand for a moment in its first 1.5 s (on these null sinks), which the position waits for, and a sound server
        // starved on a loaded machine may stand for some hundreds of milliseconds.
        var standing: [String] = []
        var since: Reading?
        for reading in readings + [Reading(asked: .now, answered: .now, position: -1, url: "")]
        where reading.asked - started >= .milliseconds(1500) {
            if let first = since, first.url == reading.url, abs(reading.position - first.position) < 30_000 { continue }
            if let first = since, let last = readings.last(where: { $0.asked < reading.asked }), last.asked - first.answered > .seconds(1) {
                standing.append("\(first.position / 1000) ms for \((last.asked - first.answered).milliseconds.rounded()) ms")
            }
            since = reading
        }
        #expect(standing.isEmpty, "\(label): Position stood \(standing)\n\(trace)")

        // Within a file, Position moves only at the Rate, or with a Seeked.
        let unannounced = movesWithoutSeeked(readings, seeked: seeked.map(\.time), rate: rate)
        #expect(unannounced.isEmpty, "\(label): moves without a Seeked: \(unannounced)\nSeeked: \(seekedTrace)")
    }
}
