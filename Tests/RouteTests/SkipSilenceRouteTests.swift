import DBus
import Foundation
import Testing
import TestSupport

/// Skip silence on a real sound server's stream (a pulsesink keeping 2 s), with a second stream attaching as playback
/// starts (a recorder on the sink's monitor): the pauses are shortened in time, each is told with a Seeked in the
/// file's time, and Position moves otherwise only at the Rate.
@Suite(.serialized) struct SkipSilenceRouteTests {
    static let second: Int64 = 1_000_000

    typealias Reading = PositionReading

    /// A book of two mono WAV files, each a second of tone, 10 s of silence and a second of tone.
    static func book(in folder: TemporaryDirectory) throws -> URL {
        let book = folder.appending("Pauses")
        try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
        let rate = AudioFiles.sampleRate
        let tone = (0..<rate).map { Int16(12_000 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
        let samples = tone + [Int16](repeating: 0, count: 10 * rate) + tone
        for part in 1...2 { try AudioFiles.wavData(samples).write(to: book.appendingPathComponent("\(part).wav")) }
        return book
    }

    @Test(arguments: SoundServerKind.allCases)
    func shortenedPausesAreToldWhileARecorderAttaches(_ kind: SoundServerKind) async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-silence-route")
        defer { folder.remove() }
        let source = try Self.book(in: folder)
        try await withRouteDaemon(kind) { d in
            try await d.activateBook(in: source, settings: ["skip_silence": .boolean(true), "silence_amount": .int32(1)])

            let mark = d.signals.count
            let recorder = try Subprocess("parec", ["-d", "headphones.monitor"],
                                          environment: d.server.environment, stdout: .null, stderr: .null)
            defer { recorder.kill() }
            let started = ContinuousClock.now
            try await d.call("Play")
            var readings: [Reading] = []
            while ContinuousClock.now < started + .seconds(25) {
                guard let reading = try await d.positionReading() else { continue }
                readings.append(reading)
                let (url, position) = (reading.url, reading.position)
                if url.hasSuffix("2.wav"), position >= 11_300_000 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            let took = ContinuousClock.now - started
            try await d.call("Pause")
            #expect(readings.last.map { $0.url.hasSuffix("2.wav") && $0.position >= 11_300_000 } == true,
                    "\(kind): the second file's last tone not reached in \(took): \(readings.last.map { "\($0.url) \($0.position)" } ?? "")")
            // Both 10 s pauses shortened to half a second: 24 s of book in about 5 s, with the server's start.
            #expect(took < .seconds(12), "\(kind): \(took) to play through the book")

            // The last jump's Seeked may reach the test's recorder after the reading that saw the jump: up to 2 s more.
            func seekedSinceMark() -> [(time: ContinuousClock.Instant, position: Int64)] {
                d.signals.all.dropFirst(mark).filter { $0.message.member == "Seeked" }
                    .map { (time: $0.time, position: $0.message.arguments.first?.int64 ?? -1) }
            }
            let told = ContinuousClock.now + .seconds(2)
            while seekedSinceMark().count(where: { $0.position > 10 * Self.second }) < 2, ContinuousClock.now < told {
                try await Task.sleep(for: .milliseconds(50))
            }
            let seeked = seekedSinceMark()
            #expect(seeked.count { $0.position > 10 * Self.second } >= 2, "\(kind): a Seeked for each pause: \(seeked.map(\.position))")
            let unannounced = movesWithoutSeeked(readings, seeked: seeked.map(\.time))
            #expect(unannounced.isEmpty, "\(kind): moves without a Seeked: \(unannounced)\nSeeked: \(seeked.map(\.position))")
        }
    }
}
