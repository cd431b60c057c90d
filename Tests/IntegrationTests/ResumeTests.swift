import DBus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Integration.Player {
    /// ActivateBook and restarts: books resume where they were left, with their settings.
    @Suite struct Resume {
        /// Imports longbook (3 × 20 s) and mp3book (2 × 20 s); leaves longbook paused 5 s into 2.ogg, saved, and
        /// mp3book current (paused). Returns (longbook, mp3book, the file id of 2.ogg, the saved offset).
        private static func leaveLongBookInItsSecondFile(_ d: DaemonFixture) async throws -> (Int64, Int64, Int64, Int64) {
            let long = try await d.importOK(d.media.longBook)[0]
            let mp3 = try await d.importOK(d.media.mp3Book)[0]
            let second = try await d.fileID(of: long, endingWith: "/longbook/2.ogg")
            try await d.lib("ActivateBook", [.int64(long), .boolean(true)])
            #expect(try await d.waitForStatus("Playing") == "Playing")
            try await d.call("Next")
            try await d.waitForURL(endingWith: "/longbook/2.ogg")
            try await d.setPosition(5_000_000)
            try await d.call("Pause")
            #expect(try await d.waitForStatus("Paused") == "Paused")
            try await d.lib("ActivateBook", [.int64(mp3), .boolean(false)])
            #expect(try await d.waitForURL(endingWith: "/mp3book/01.mp3")?.hasSuffix("/01.mp3") == true)
            let saved = try await d.waitForSavedPosition(of: long, file: second, near: 5_000_000, within: 500_000)
            return (long, mp3, second, saved)
        }

        @Test func activatingABookResumesAtItsSavedPlace() async throws {
            try await DaemonFixture.with { d in
                let (long, _, _, saved) = try await Self.leaveLongBookInItsSecondFile(d)
                let mark = d.signals.mark
                try await d.lib("ActivateBook", [.int64(long), .boolean(true)])
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }
                #expect(near(seeked?.seekedPosition, saved, within: 100_000), "Seeked \(seeked.map { "\($0)" } ?? "never came")")
                let metadata = d.signals.since(mark).first {
                    $0.playerChanges["Metadata"]?.stringKeyedDictionary?["xesam:url"]?.string?.hasSuffix("/longbook/2.ogg") == true
                }
                #expect(metadata != nil, "no Metadata change to 2.ogg")
                if let seeked, let metadata {
                    #expect(metadata.index < seeked.index, "Seeked (#\(seeked.index)) came before the Metadata change (#\(metadata.index))")
                }
                #expect(try await d.currentURL() == MediaLibrary.uri(d.media.longBook.appendingPathComponent("2.ogg")))
                let position = try await d.position()
                #expect(position >= saved - 100_000 && position < saved + 1_500_000, "Position \(position), saved \(saved)")
                try await d.signals.barrier()
                #expect(d.currentBookChanges(since: mark) == [long])
                #expect(try await d.currentBook() == long)
                #expect((try await d.getBook(long)["last_played"]?.int64 ?? 0) > 0)
            }
        }

        /// Restarted with nothing current (the current book was deleted), the lock screen and the media keys still
        /// offer Play: it plays the book played last, where it was left, and CanPlay said it could.
        @Test func playWithNothingLoadedPlaysTheBookPlayedLast() async throws {
            try await DaemonFixture.with { d in
                let (long, mp3, _, saved) = try await Self.leaveLongBookInItsSecondFile(d)
                // mp3book, current and played since, deleted: no book is current, and longbook is the book played last.
                try await d.lib("DeleteBook", [.int64(mp3)])
                #expect(try await d.waitForCurrentBook(0) == 0)
                #expect(await d.stopDaemon() == 0)

                let replacement = try await d.startReplacementDaemon()
                do {
                    // Published once the library is read (the player is on the bus before that).
                    #expect(try await d.waitForProperty("CanPlay") { $0 == .boolean(true) } == .boolean(true))
                    let all = try await d.getAll()
                    #expect(all["Metadata"] == .emptyVardict && all["PlaybackStatus"] == .string("Stopped"), "\(all)")
                    try await d.call("Play")
                    #expect(try await d.waitForStatus("Playing") == "Playing")
                    #expect(try await d.waitForURL(endingWith: "/longbook/2.ogg")?.hasSuffix("/longbook/2.ogg") == true)
                    let position = try await d.position()
                    #expect(position >= saved - 100_000 && position < saved + 1_500_000, "Position \(position), saved \(saved)")
                    #expect(try await d.currentBook() == long)
                } catch {
                    await d.stopReplacement(replacement)
                    throw error
                }
                #expect(await d.stopReplacement(replacement) == 0)
            }
        }

        @Test func perBookSettingsAreRestoredOnActivation() async throws {
            try await DaemonFixture.with { d in
                let long = try await d.importOK(d.media.longBook)[0]
                let mp3 = try await d.importOK(d.media.mp3Book)[0]
                try await d.lib("SetBookSettings", [.int64(long), .vardict(["speed": .double(1.5), "volume": .double(0.4),
                                                                             "loop": .string("Track"), "shuffle": .boolean(true)])])
                func settings() async throws -> [String: DBusValue] {
                    let all = try await d.getAll()
                    return ["Rate": all["Rate"] ?? .string("?"), "Volume": all["Volume"] ?? .string("?"),
                            "LoopStatus": all["LoopStatus"] ?? .string("?"), "Shuffle": all["Shuffle"] ?? .string("?")]
                }
                let custom: [String: DBusValue] = ["Rate": .double(1.5), "Volume": .double(0.4), "LoopStatus": .string("Track"), "Shuffle": .boolean(true)]
                let defaults: [String: DBusValue] = ["Rate": .double(1), "Volume": .double(1), "LoopStatus": .string("None"), "Shuffle": .boolean(false)]

                try await d.lib("ActivateBook", [.int64(long), .boolean(false)])
                #expect(try await settings() == custom)
                try await d.lib("ActivateBook", [.int64(mp3), .boolean(true)])
                #expect(try await settings() == defaults)
                try await d.lib("ActivateBook", [.int64(long), .boolean(true)])
                #expect(try await settings() == custom)

                // Changed by an MPRIS client while current: saved to the book, restored next time.
                try await d.set("Rate", .double(2))
                let deadline = ContinuousClock.now + .seconds(5)
                while try await d.getBook(long)["speed"] != .double(2), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(try await d.getBook(long)["speed"] == .double(2))
                try await d.lib("ActivateBook", [.int64(mp3), .boolean(false)])
                #expect(try await settings() == defaults)
                #expect(try await d.getBook(mp3)["speed"] == .double(1))
                try await d.lib("ActivateBook", [.int64(long), .boolean(false)])
                var restored = try await settings()
                #expect(restored == custom.merging(["Rate": .double(2)]) { $1 }, "\(restored)")

                // Changed through the library while current: applied at once (what is saved: see the next test).
                try await d.lib("SetBookSettings", [.int64(long), .vardict(["volume": .double(0.7), "loop": .string("Playlist")])])
                restored = try await settings()
                #expect(restored == ["Rate": .double(2), "Volume": .double(0.7), "LoopStatus": .string("Playlist"), "Shuffle": .boolean(true)],
                        "\(restored)")
            }
        }

        /// SetBookSettings on the current book, read back at once and after another book was activated right away.
        @Test(arguments: 0..<3)
        func settingsOfTheCurrentBookReadBackAsSet(round: Int) async throws {
            try await DaemonFixture.with { d in
                let long = try await d.importOK(d.media.longBook)[0]
                let mp3 = try await d.importOK(d.media.mp3Book)[0]
                try await d.lib("ActivateBook", [.int64(long), .boolean(true)])
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let wanted: [String: DBusValue] = ["speed": .double(1.5), "volume": .double(0.4), "loop": .string("Track"), "shuffle": .boolean(true)]
                try await d.lib("SetBookSettings", [.int64(long), .vardict(wanted)])
                let book = try await d.getBook(long)
                let readBack = book.filter { wanted.keys.contains($0.key) }
                try await d.lib("ActivateBook", [.int64(mp3), .boolean(false)])
                let afterSwitch = try await d.getBook(long).filter { wanted.keys.contains($0.key) }
                #expect(readBack == wanted, "GetBook right after SetBookSettings: \(readBack)")
                #expect(afterSwitch == wanted, "GetBook after activating another book: \(afterSwitch)")
            }
        }

        @Test func aFinishedBookStartsOver() async throws {
            try await DaemonFixture.with { d in
                let (long, _, _, _) = try await Self.leaveLongBookInItsSecondFile(d)
                try await d.lib("SetBookFinished", [.int64(long), .boolean(true)])
                try await d.lib("ActivateBook", [.int64(long), .boolean(false)])
                #expect(try await d.waitForURL(endingWith: "/longbook/1.ogg")?.hasSuffix("/longbook/1.ogg") == true)
                #expect(try await d.position() < 500_000)
                #expect(try await d.getBook(long)["finished"] == .boolean(false))
            }
        }

        @Test func afterSIGKILLItComesBackPausedNearTheLastPosition() async throws {
            try await DaemonFixture.with { d in
                let long = try await d.importOK(d.media.longBook)[0]
                try await d.lib("ActivateBook", [.int64(long), .boolean(true)])
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await d.call("Next")
                try await d.waitForURL(endingWith: "/longbook/2.ogg")
                try await d.setPosition(5_000_000)
                // Play about 2 s, reading the position like a client showing it.
                var lastSeen: Int64 = -1
                let until = ContinuousClock.now + .seconds(2)
                while ContinuousClock.now < until {
                    lastSeen = try await d.position()
                    try await Task.sleep(for: .milliseconds(100))
                }
                lastSeen = try await d.position()
                d.daemon.kill()
                #expect(await d.daemon.waitForExit(timeout: .seconds(10)) == 128 + SIGKILL)
                #expect(lastSeen > 6_500_000, "it did not play: \(lastSeen)")
                #expect(try await d.integrityCheck() == "ok")

                let again = try await d.startReplacementDaemon()
                #expect(try await d.waitForCurrentBook(long) == long)
                #expect(try await d.waitForStatus("Paused") == "Paused")
                #expect(try await d.currentURL() == MediaLibrary.uri(d.media.longBook.appendingPathComponent("2.ogg")))
                let position = try await d.position()
                #expect(near(position, lastSeen, within: 1_000_000), "resumed at \(position), last seen \(lastSeen)")
                #expect(try await d.libProperty("DatabaseStatus") == .string("ok"))
                // It was paused there, and stays there.
                try await Task.sleep(for: .milliseconds(300))
                #expect(try await d.position() == position)
                #expect(await d.stopReplacement(again) == 0)
                #expect(try await d.integrityCheck() == "ok")
            }
        }

        @Test func afterSIGTERMItResumesExactly() async throws {
            try await DaemonFixture.with { d in
                let long = try await d.importOK(d.media.longBook)[0]
                try await d.lib("ActivateBook", [.int64(long), .boolean(true)])
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await d.setPosition(8_000_000)
                try await d.waitForPosition(atLeast: 8_500_000)
                let lastSeen = try await d.position()
                #expect(await d.stopDaemon() == 0)

                let again = try await d.startReplacementDaemon()
                #expect(try await d.waitForCurrentBook(long) == long)
                #expect(try await d.waitForStatus("Paused") == "Paused")
                #expect(try await d.currentURL() == MediaLibrary.uri(d.media.longBook.appendingPathComponent("1.ogg")))
                let saved = try await d.getBook(long)["position_offset"]?.int64 ?? -1
                #expect(saved >= lastSeen && saved - lastSeen < 100_000, "saved \(saved), last seen \(lastSeen)")
                let position = try await d.position()
                #expect(near(position, saved, within: 100_000), "resumed at \(position), saved \(saved)")
                #expect(near(position, lastSeen, within: 100_000), "resumed at \(position), last seen \(lastSeen)")
                // Play goes on from there.
                try await d.call("Play")
                #expect(try await d.waitForStatus("Playing") == "Playing")
                #expect(try await d.position() >= position - 50_000)
                #expect(await d.stopReplacement(again) == 0)
                #expect(try await d.integrityCheck() == "ok")
            }
        }
    }
}
