import DBus
import Foundation
import Testing
import TestSupport

extension Integration {
    /// A book's pauses shortened, over the bus: a real daemon playing into a fake sink that keeps time, a generated
    /// book of two 12 s files, each a second of tone, 10 s of silence and a second of tone.
    @Suite struct SkipSilence {
        static let second: Int64 = 1_000_000

        /// The book's folder: two mono WAV files of tone, silence, tone.
        func book(in folder: TemporaryDirectory) throws -> URL {
            let book = folder.appending("Pauses")
            try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
            let rate = AudioFiles.sampleRate
            let tone = (0..<rate).map { Int16(12_000 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
            let samples = tone + [Int16](repeating: 0, count: 10 * rate) + tone
            for part in 1...2 { try AudioFiles.wavData(samples).write(to: book.appendingPathComponent("\(part).wav")) }
            return book
        }

        @Test("the settings read back, bad ones are refused; a 10 s pause plays shortened, positions in the file's time")
        func shortensPauses() async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-silence")
            defer { folder.remove() }
            let source = try await offThePool { try book(in: folder) }
            try await DaemonFixture.with { d in
                let id = try #require(try await d.importOK(source).first)
                var details = try await d.getBook(id)
                #expect(details["skip_silence"] == .boolean(false), "off by default")
                #expect(details["silence_threshold"] == .double(0.5) && details["silence_amount"] == .double(0.75))

                try await d.lib("SetBookSettings", [.int64(id), .vardict(["skip_silence": .boolean(true),
                                                                          "silence_threshold": .double(0.5),
                                                                          "silence_amount": .int32(1)])])
                details = try await d.getBook(id)
                #expect(details["skip_silence"] == .boolean(true) && details["silence_amount"] == .double(1))

                for (bad, says) in [(["silence_threshold": .double(0.05)], "silence_threshold must be between 0.1 and 10 seconds"),
                                    (["silence_amount": .double(1.5)], "silence_amount must be between 0.1 and 1"),
                                    (["silence_amount": .double(.nan)], "silence_amount must be between 0.1 and 1"),
                                    (["skip_silence": .string("yes")], "skip_silence is a boolean"),
                                    (["speed": .double(2), "silence_threshold": .double(11)],
                                     "silence_threshold must be between 0.1 and 10 seconds")]
                    as [([String: DBusValue], String)] {
                    let message = await busErrorMessage { try await d.lib("SetBookSettings", [.int64(id), .vardict(bad)]) }
                    #expect(message == "\(Lib.invalidArgument): \(says)", "\(bad)")
                }
                details = try await d.getBook(id)
                #expect(details["silence_threshold"] == .double(0.5) && details["silence_amount"] == .double(1)
                        && details["speed"] == .double(1), "a refused change changed \(details)")

                // Played from the start: the 10 s pause lasts half a second, so the first file's 12 s go by in about
                // 2.5 s, and the positions seen are the file's own: they pass 11 s, where the second tone starts.
                try await d.lib("ActivateBook", [.int64(id), .boolean(false)])
                try await d.waitForStatus("Paused")
                let started = ContinuousClock.now
                try await d.call("Play")
                var status = try await d.listenStatus()
                var seen: [Int64] = []
                while ContinuousClock.now < started + .seconds(30) {
                    status = try await d.listenStatus()
                    guard status["file"] == .int32(0) else { break }
                    seen.append(status["filePosition"]?.int64 ?? 0)
                    try await Task.sleep(for: .milliseconds(20))
                }
                let took = ContinuousClock.now - started
                #expect(status["file"] == .int32(1), "still in \(status)")
                #expect(took < .seconds(8), "the first file took \(took) to play: its 10 s pause was not shortened")
                #expect(seen == seen.sorted(), "positions went back: \(seen)")
                #expect((seen.last ?? 0) > 11 * Self.second, "the first file's positions stopped at \(seen.last ?? 0) µs")
                try await d.call("Pause")
                try await d.waitForStatus("Paused")

                // The CLI says so, changes it and refuses what the daemon would.
                func expectShown(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                    let result = try await d.lectern("skip-silence")
                    #expect(result.status == 0 && result.stdout == text, "\(result)", sourceLocation: sourceLocation)
                }
                try await expectShown("on: pauses over 0.5 s shortened by 100 % of the rest")
                let set = try await d.lectern("skip-silence", "--threshold", "0.8", "--amount", "0.5")
                #expect(set.status == 0, "\(set)")
                try await expectShown("on: pauses over 0.8 s shortened by 50 % of the rest")
                let refused = try await d.lectern("skip-silence", "--amount", "2")
                #expect(refused.status == 64 && refused.stderr.contains("0.1 to 1"), "\(refused)")
                #expect(try await d.lectern("skip-silence", "off").status == 0)
                try await expectShown("off (when on: pauses over 0.8 s shortened by 50 % of the rest)")
                details = try await d.getBook(id)
                #expect(details["skip_silence"] == .boolean(false) && details["silence_threshold"] == .double(0.8))
            }
        }
    }
}
