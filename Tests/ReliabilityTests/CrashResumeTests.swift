import DBus
import Foundation
import Testing
import TestSupport

extension Reliability {
    /// The daemon dies (SIGKILL) or is stopped (SIGTERM) while a book plays: the book comes back where a client
    /// last saw it, and the database stays sound.
    @Suite struct CrashResume {
        /// The real length of each book file, as the generator rounds it to whole buffers.
        static let fileDuration = AudioFiles.duration(ofBuffers: AudioFiles.buffers(forSeconds: ReliabilityMedia.bookFileSeconds))

        /// Where in the whole book the player is: files before the current one plus Position, in µs. The file and
        /// the position are two reads: across a file change they could pair the old file with the new file's position
        /// (a whole file off), so they are read again until the file is the same before and after the position.
        static func bookPosition(_ rig: Rig) async throws -> Int64 {
            var url = try await rig.currentURL() ?? ""
            var position = try await rig.position()
            while case let again = try await rig.currentURL() ?? "", again != url {
                url = again
                position = try await rig.position()
            }
            guard let index = ReliabilityMedia.bookFiles.firstIndex(where: { url.hasSuffix("/book/\($0)") }) else {
                throw RigError("the current file \(url) is not one of the book's")
            }
            return Int64(index) * fileDuration.microsecondsValue + position
        }

        /// Starts a daemon on the rig's database and waits until it resumed `book` (paused) and reports a place in it.
        static func restart(_ rig: Rig, book: Int64, arguments: [String] = []) async throws -> Int64 {
            try await rig.start(arguments: arguments)
            let current = try await rig.poll({ try await rig.currentBook() }, until: { $0 == book })
            guard current == book else { throw RigError("the restarted daemon resumed book \(current), not \(book)\n\(rig.daemonLog)") }
            let url = try await rig.poll({ try await rig.currentURL() ?? "" }, until: { $0.contains("/book/") })
            guard url.contains("/book/") else { throw RigError("no file of the book loaded after the restart: \(url)") }
            return try await bookPosition(rig)
        }

        /// Imports the book, plays it from 3 s before the end of its first file (so that the kills also land
        /// around a file change).
        static func startBook(_ rig: Rig) async throws -> Int64 {
            try await rig.start()
            let book = try await rig.importBook(try await ReliabilityMedia.shared().book)
            try await rig.lectern("ActivateBook", [.int64(book), .boolean(true)])
            _ = try await rig.poll({ try await rig.status() }, until: { $0 == "Playing" })
            try await rig.mpris("Seek", [.int64(fileDuration.microsecondsValue - 3_000_000)])
            return book
        }

        /// The smart rewind after a crash counts the pause from the last moment the book was heard (the saves while
        /// playing note it), not from when playback started.
        @Test func afterSIGKILLTheSmartRewindCountsFromTheLastMomentHeard() async throws {
            let rewind = ["--smart-rewind", "3-3", "--rewind-after", "6"]
            try await Rig.with { rig in
                try await rig.start(arguments: rewind)
                let book = try await rig.importBook(try await ReliabilityMedia.shared().book)
                try await rig.lectern("ActivateBook", [.int64(book), .boolean(true)])
                _ = try await rig.poll({ try await rig.status() }, until: { $0 == "Playing" })
                // Longer than --rewind-after: counted from the start of playback, the crash's pause would earn 3 s back.
                try await Task.sleep(for: .seconds(8))
                let lastSeen = try await Self.bookPosition(rig)
                try await rig.crash()
                let resumed = try await Self.restart(rig, book: book, arguments: rewind)
                #expect(abs(resumed - lastSeen) <= 1_000_000, "resumed at \(resumed) µs, last seen at \(lastSeen) µs")
                try await rig.mpris("Play")
                _ = try await rig.poll({ try await rig.status() }, until: { $0 == "Playing" })
                let playing = try await Self.bookPosition(rig)
                #expect(playing >= resumed - 1_000_000,
                        "resumed at \(resumed) µs but Play went back to \(playing) µs: the pause was counted from before the crash")
                _ = try await rig.stop()
            }
        }

        @Test func afterSIGKILLAtRandomInstantsTheBookResumesWithinOneSecondAndTheDatabaseIsSound() async throws {
            let profile = Profile.current
            let seed = SeededGenerator.seed()
            var random = SeededGenerator(seed: seed)
            try await Rig.with { rig in
                let book = try await Self.startBook(rig)
                var errors: [Int64] = []
                for round in 1...profile.kills {
                    if try await rig.status() != "Playing" {
                        try await rig.mpris("Play")
                        let status = try await rig.poll({ try await rig.status() }, until: { $0 == "Playing" })
                        try #require(status == "Playing", "round \(round): not playing after Play")
                    }
                    // Anywhere in the save cycle, sometimes before the first save.
                    try await Task.sleep(for: .milliseconds(Int.random(in: 150...2_500, using: &random)))
                    let lastSeen = try await Self.bookPosition(rig)
                    try await rig.crash()
                    let integrity = try await rig.integrityCheck()
                    #expect(integrity == "ok", "round \(round) (seed \(seed)): integrity_check says \(integrity)")
                    let resumed = try await Self.restart(rig, book: book)
                    errors.append(resumed - lastSeen)
                    #expect(abs(resumed - lastSeen) <= 1_000_000,
                            "round \(round) (seed \(seed)): last seen at \(lastSeen) µs, resumed at \(resumed) µs")
                }
                let worst = errors.map(abs).max() ?? 0
                Figures.record("sigkill", "kills", "\(profile.kills)")
                Figures.record("sigkill", "resume error max", String(format: "%.3f s", Double(worst) / 1e6))
                Figures.record("sigkill", "resume errors", errors.map { String(format: "%+.2f", Double($0) / 1e6) }.joined(separator: " "))
                try await rig.stop()
            }
        }

        @Test func afterSIGTERMTheBookResumesExactly() async throws {
            try await Rig.with { rig in
                let book = try await Self.startBook(rig)

                // Playing: the place it had when the signal came (a few ms after the client's last look).
                try await Task.sleep(for: .milliseconds(700))
                let seen = try await Self.bookPosition(rig)
                let signalled = ContinuousClock.now
                #expect(try await rig.stop() == 0, "lecternd did not exit 0 on SIGTERM:\n\(rig.daemonLog)")
                let lateness = (ContinuousClock.now - signalled).microsecondsValue
                let resumedPlaying = try await Self.restart(rig, book: book)
                #expect(resumedPlaying >= seen - 20_000 && resumedPlaying <= seen + lateness + 50_000,
                        "seen \(seen) µs, resumed \(resumedPlaying) µs (exit took \(lateness) µs)")

                // Paused: exactly the same place.
                try await rig.mpris("Play")
                try await Task.sleep(for: .milliseconds(500))
                try await rig.mpris("Pause")
                _ = try await rig.poll({ try await rig.status() }, until: { $0 == "Paused" })
                // The player re-anchors its clock on the pipeline's real position a moment after the pause (a few
                // ms): read where a paused player rests.
                try await Task.sleep(for: .milliseconds(300))
                let paused = try await Self.bookPosition(rig)
                #expect(try await rig.stop() == 0)
                let resumedPaused = try await Self.restart(rig, book: book)
                #expect(abs(resumedPaused - paused) <= 1_000, "paused at \(paused) µs, resumed at \(resumedPaused) µs")
                #expect(try await rig.integrityCheck() == "ok")
                Figures.record("sigterm", "resume error (playing)", String(format: "%+.3f s", Double(resumedPlaying - seen) / 1e6))
                Figures.record("sigterm", "resume error (paused)", String(format: "%+.6f s", Double(resumedPaused - paused) / 1e6))
                try await rig.stop()
            }
        }
    }
}

extension Duration {
    var microsecondsValue: Int64 { components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000 }
}
