import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Player {
    /// A book's intros and outros skipped, over the bus: a real daemon playing into a fake sink that keeps time, a
    /// generated book of three 6 s files, 2 s skipped at each end of each.
    @Suite struct SkipParts {
        static let second: Int64 = 1_000_000

        /// The book's folder: three WAV files of 6 s.
        func book(in folder: TemporaryDirectory) throws -> URL {
            let book = folder.appending("Announced")
            try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
            for part in 1...3 { try AudioFiles.wav(book.appendingPathComponent("\(part).wav"), seconds: 6) }
            return book
        }

        @Test("the settings read back, bad ones are refused; the book starts after the intro and each file ends before its outro")
        func skipsIntrosAndOutros() async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-skip")
            defer { folder.remove() }
            let source = try book(in: folder)
            try await DaemonFixture.with { d in
                let id = try #require(try await d.importOK(source).first)
                var details = try await d.getBook(id)
                #expect(details["skip_intro"] == .double(0) && details["skip_outro"] == .double(0), "off by default")

                try await d.lib("SetBookSettings", [.int64(id), .vardict(["skip_intro": .double(2), "skip_outro": .int64(2)])])
                details = try await d.getBook(id)
                #expect(details["skip_intro"] == .double(2) && details["skip_outro"] == .double(2))

                let bound = "must be between 0 and 600 seconds"
                for (bad, says) in [(["skip_intro": .double(601)], "skip_intro \(bound)"),
                                    (["skip_outro": .double(-1)], "skip_outro \(bound)"),
                                    (["skip_intro": .double(.nan)], "skip_intro \(bound)"),
                                    (["skip_outro": .string("8")], "skip_outro is a number"),
                                    (["speed": .double(2), "skip_intro": .double(1_000)], "skip_intro \(bound)")]
                    as [([String: DBusValue], String)] {
                    let message = await busErrorMessage { try await d.lib("SetBookSettings", [.int64(id), .vardict(bad)]) }
                    #expect(message == "\(Lib.invalidArgument): \(says)", "\(bad)")
                }
                details = try await d.getBook(id)
                #expect(details["skip_intro"] == .double(2) && details["skip_outro"] == .double(2) && details["speed"] == .double(1),
                        "a refused change changed \(details)")

                // Activated paused: at 2 s into the first file.
                try await d.lib("ActivateBook", [.int64(id), .boolean(false)])
                try await d.waitForStatus("Paused")
                var status = try await d.listenStatus()
                #expect(status["file"] == .int32(0) && status["filePosition"] == .int64(2 * Self.second), "\(status)")
                // The time left: 2 s of this file, 2 s of each of the two others.
                #expect(near(status["remaining"]?.int64, 6 * Self.second, within: 50_000), "\(status)")
                #expect(near(status["chapterRemaining"]?.int64, 2 * Self.second, within: 50_000), "\(status)")

                // Played: the second file comes near 4 s of the first, and starts at 2 s.
                try await d.signals.barrier()
                let mark = d.signals.mark
                try await d.call("Play")
                var lastInFirst: Int64 = 0
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline {
                    status = try await d.listenStatus()
                    guard status["file"] == .int32(0) else { break }
                    lastInFirst = max(lastInFirst, status["filePosition"]?.int64 ?? 0)
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(status["file"] == .int32(1), "still in \(status)")
                #expect(lastInFirst > 3 * Self.second && lastInFirst < 4_300_000,
                        "the first file played to \(lastInFirst) µs: its outro starts at 4 s")
                let seeked = await d.signals.waitFor(since: mark, timeout: .seconds(10)) { $0.seekedPosition == 2 * Self.second }
                #expect(seeked != nil, "no Seeked to 2 s in the second file: \(d.signals.seeked(since: mark))")
                try await d.call("Pause")
                try await d.waitForStatus("Paused")

                // lectern status shows the time left in the chapter, to where the outro begins (2 s before the end).
                status = try await d.listenStatus()
                let left = try #require(status["chapterRemaining"]?.int64, "\(status)")
                let outro = (status["fileLength"]?.int64 ?? 0) - 2 * Self.second
                #expect(near(left, outro - (status["filePosition"]?.int64 ?? 0), within: 1_000), "\(status)")
                let shownStatus = try await d.lectern("status")
                let chapterLine = shownStatus.stdout.split(separator: "\n").first { $0.contains("chapter 2/3") }
                #expect(chapterLine?.hasSuffix(" left") == true, "\(shownStatus)")

                // The CLI says so, changes it and refuses what the daemon would.
                func expectShown(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                    let result = try await d.lectern("skip-parts")
                    #expect(result.status == 0 && result.stdout == text, "\(result)", sourceLocation: sourceLocation)
                }
                try await expectShown("skipping the first 2 s and the last 2 s of every file")
                let set = try await d.lectern("skip-parts", "--outro", "0")
                #expect(set.status == 0, "\(set)")
                try await expectShown("skipping the first 2 s of every file")
                let refused = try await d.lectern("skip-parts", "--intro", "700")
                #expect(refused.status == 64 && refused.stderr.contains("0 to 600"), "\(refused)")
                #expect(try await d.lectern("skip-parts", "off").status == 0)
                try await expectShown("off: files play whole")
                details = try await d.getBook(id)
                #expect(details["skip_intro"] == .double(0) && details["skip_outro"] == .double(0))
            }
        }
    }
}
