import DBus
import Foundation
import Testing
import TestSupport

/// org.lectern.Player1 on /org/lectern/Lectern1.
enum Listen {
    static let interface = "org.lectern.Player1"
    static let trackList = "org.mpris.MediaPlayer2.TrackList"
}

extension DaemonFixture {
    @discardableResult
    func listen(_ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await lib(method, arguments, interface: Listen.interface)
    }

    func listenStatus() async throws -> [String: DBusValue] {
        try await listen("GetStatus").first?.stringKeyedDictionary ?? [:]
    }

    func listenProperty(_ name: String) async throws -> DBusValue {
        try await client.call(Lib.busName, path: Lib.path, interface: MPRIS.properties, member: "Get",
                              [.string(Listen.interface), .string(name)], timeout: .seconds(10)).first?.unwrapped ?? .emptyVardict
    }

    func tracks() async throws -> [ObjectPath] {
        (try await get("Tracks", interface: Listen.trackList).elements ?? []).compactMap(\.objectPath)
    }

    func tracksMetadata(_ ids: [ObjectPath]) async throws -> [[String: DBusValue]] {
        (try await call("GetTracksMetadata", [.array(.objectPath, ids.map(DBusValue.objectPath))], interface: Listen.trackList)
            .first?.elements ?? []).map { $0.stringKeyedDictionary ?? [:] }
    }

    /// Waits for the Metadata's trackid to be `id`; returns the Metadata then.
    @discardableResult
    func waitForTrack(_ id: String, timeout: Duration = .seconds(5)) async throws -> [String: DBusValue] {
        let value = try await waitForProperty("Metadata", timeout: timeout) {
            $0.stringKeyedDictionary?["mpris:trackid"]?.objectPath?.rawValue == id
        }
        return value.stringKeyedDictionary ?? [:]
    }

    /// Imports `folder` as one book and activates it (paused unless `play`); returns its id.
    func activateImported(_ folder: URL, play: Bool = false) async throws -> Int64 {
        let book = try await importOK(folder)[0]
        try await lib("ActivateBook", [.int64(book), .boolean(play)])
        _ = try await waitForCurrentBook(book)
        _ = try await waitForStatus(play ? "Playing" : "Paused")
        return book
    }
}

extension Integration.Player {
    /// A book as its listener uses it: chapters as MPRIS tracks, the TrackList, skips across files, speed,
    /// the sleep timer, smart rewind, the end of the book. Real GStreamer on generated files.
    @Suite struct Listening {
        @Test func chaptersOfAnM4BAreTheTracksEverywhere() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.activateImported(try await d.libraryMedia.tree.appendingPathComponent("Chaptered"))
                let prefix = "/org/lectern/Lectern1/book/\(book)/track/"
                var metadata = try await d.waitForTrack(prefix + "0")
                #expect(metadata["xesam:title"]?.string == "Opening")
                #expect(metadata["xesam:album"]?.string == "Chaptered Book")
                #expect(near(metadata["mpris:length"]?.int64, 2_000_000, within: 50_000), "\(metadata)")
                #expect(metadata["lectern:chapterCount"]?.int64 == 3)
                #expect(near(metadata["lectern:bookLength"]?.int64, 6_000_000, within: 100_000))
                #expect(try await d.get("HasTrackList", interface: MPRIS.root) == .boolean(true))

                // TrackList: the chapters, with their metadata.
                let ids = try await d.tracks()
                #expect(ids.map(\.rawValue) == (0..<3).map { prefix + String($0) })
                let all = try await d.tracksMetadata(ids + [ObjectPath("/org/lectern/Lectern1/book/999/track/0")!])
                #expect(all.map { $0["xesam:title"]?.string } == ["Opening", "Middle", "Ending"])
                #expect(all.map { $0["mpris:trackid"]?.objectPath } == ids)

                // playerctl next: the next chapter of the same file, at its start, and Seeked says so (KDE Plasma's
                // engine sees no new trackid between object paths, and keeps the previous chapter's place without it).
                var mark = d.signals.mark
                #expect(try await d.playerctl("next").status == 0)
                metadata = try await d.waitForTrack(prefix + "1")
                #expect(metadata["xesam:title"]?.string == "Middle")
                #expect(try await d.position() < 300_000)
                #expect(try await d.listenProperty("ChapterIndex") == .int32(1))
                try await d.signals.barrier()
                let told = d.signals.seeked(since: mark)  // and where a late output plays from, if it was late
                #expect(told.first == 0 && told.count <= 2 && told.allSatisfy { $0 < 300_000 }, "\(told)")

                // Lectern's GoToChapter and TrackList.GoTo.
                try await d.listen("GoToChapter", [.int32(2)])
                try await d.waitForTrack(prefix + "2")
                try await d.call("GoTo", [.objectPath(ids[0])], interface: Listen.trackList)
                try await d.waitForTrack(prefix + "0")
                #expect(await d.errorName { try await d.listen("GoToChapter", [.int32(3)]) } == Lib.invalidArgument)

                // Playing across the boundary at 2 s: the track changes by itself.
                try await d.setPosition(1_700_000)
                mark = d.signals.mark
                try await d.call("Play")
                try await d.waitForTrack(prefix + "1")
                let position = try await d.position()
                #expect(position >= 0 && position < 1_000_000, "Position is within the chapter: \(position)")
                try await d.signals.barrier()
                let seeked = d.signals.seeked(since: mark)
                // Where in the new chapter; before it, at most one that says where a late output played from.
                #expect(seeked.last.map { $0 >= 0 && $0 < 300_000 } == true && seeked.count <= 2
                        && seeked.dropLast().allSatisfy { $0 >= 1_700_000 }, "where in the new chapter: \(seeked)")

                // Another book: the track list is replaced.
                mark = d.signals.mark
                let other = try await d.activateImported(d.media.longBook)
                let replaced = await d.signals.waitFor(since: mark) { $0.member == "TrackListReplaced" }
                let otherIDs = (0..<3).map { "/org/lectern/Lectern1/book/\(other)/track/\($0)" }
                #expect(replaced?.arguments.first?.elements?.compactMap(\.objectPath).map(\.rawValue) == otherIDs)
                #expect(try await d.tracks().map(\.rawValue) == otherIDs)
            }
        }

        @Test func theTitleTemplateShapesTheTrackTitle() async throws {
            try await DaemonFixture.with(daemonArguments: ["--title-template", "{n}/{count} {chapter} · {book} {unknown}"]) { d in
                let book = try await d.activateImported(try await d.libraryMedia.tree.appendingPathComponent("Chaptered"))
                let metadata = try await d.waitForTrack("/org/lectern/Lectern1/book/\(book)/track/0")
                #expect(metadata["xesam:title"]?.string == "1/3 Opening · Chaptered Book {unknown}")
                // The current track is one of the track list's, with the same title.
                let ids = try await d.tracks()
                let current = try #require(metadata["mpris:trackid"]?.objectPath)
                #expect(ids.contains(current))
                #expect(try await d.tracksMetadata([current]).first?["xesam:title"] == metadata["xesam:title"])
            }
        }

        @Test func skipsAndJumpsCrossFilesAndAnnounceSeeked() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.activateImported(d.media.longBook)
                let prefix = "/org/lectern/Lectern1/book/\(book)/track/"

                var mark = d.signals.mark
                try await d.listen("JumpToFile", [.int32(1), .int64(18_000_000)])
                try await d.waitForTrack(prefix + "1")
                var seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }
                #expect(near(seeked?.seekedPosition, 18_000_000, within: 1_000))

                // +5 s from 18 s of a 20 s file: 3 s into the third. Metadata first, then Seeked.
                mark = d.signals.mark
                try await d.listen("Skip", [.int64(5_000_000)])
                try await d.waitForTrack(prefix + "2")
                seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }
                #expect(near(seeked?.seekedPosition, 3_000_000, within: 100_000), "\(String(describing: seeked))")
                let metadataIndex = d.signals.since(mark).first { $0.playerChanges["Metadata"] != nil }?.index
                #expect(metadataIndex != nil && metadataIndex! < (seeked?.index ?? 0), "Seeked came before the Metadata change")
                #expect(near(try await d.position(), 3_000_000, within: 100_000))

                // The CLI: back 15 s is 8 s into the second file; jump; status.
                #expect(try await d.lectern("skip", "-15").status == 0)
                try await d.waitForTrack(prefix + "1")
                #expect(near(try await d.position(), 8_000_000, within: 200_000))
                #expect(try await d.lectern("jump", "1", "0:05").status == 0)
                try await d.waitForTrack(prefix + "0")
                #expect(near(try await d.position(), 5_000_000, within: 100_000))
                let status = try await d.lectern("status")
                #expect(status.status == 0)
                #expect(status.stdout.contains("file 1/3"), "\(status.stdout)")
                #expect(status.stdout.contains("chapter 1/3"), "\(status.stdout)")
                #expect(status.stdout.contains("book 0:05 / 0:59") || status.stdout.contains("book 0:05 / 1:00"), "\(status.stdout)")

                let figures = try await d.listenStatus()
                #expect(figures["book"] == .int64(book))
                #expect(figures["files"] == .int32(3))
                #expect(near(figures["bookLength"]?.int64, 60_000_000, within: 300_000))
                #expect(near(figures["remaining"]?.int64, 55_000_000, within: 300_000))

                // Refused: no such file, a position outside it, a malformed skip.
                #expect(await d.errorName { try await d.listen("JumpToFile", [.int32(3), .int64(0)]) } == Lib.invalidArgument)
                #expect(await d.errorName { try await d.listen("JumpToFile", [.int32(0), .int64(21_000_000)]) } == Lib.invalidArgument)
                #expect(try await d.lectern("skip", "soon").status != 0)
                #expect(near(try await d.position(), 5_000_000, within: 100_000))
            }
        }

        @Test func speedIsTheBooksAndMPRISRateFollowsIt() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.activateImported(d.media.longBook)
                let mark = d.signals.mark
                _ = try await d.client.call(Lib.busName, path: Lib.path, interface: MPRIS.properties, member: "Set",
                                            [.string(Listen.interface), .string("Speed"), .variant(.double(1.5))], timeout: .seconds(10))
                #expect(try await d.get("Rate") == .double(1.5))
                #expect(await d.signals.waitFor(since: mark) { $0.playerChanges["Rate"] == .double(1.5) } != nil)
                #expect(try await d.lectern("speed", "2").status == 0)
                #expect(try await d.listenProperty("Speed") == .double(2))
                #expect(try await d.lectern("speed").stdout == "2x")
                #expect(try await d.lectern("speed", "9").status != 0)
                #expect(await d.errorName {
                    _ = try await d.client.call(Lib.busName, path: Lib.path, interface: MPRIS.properties, member: "Set",
                                                [.string(Listen.interface), .string("Speed"), .variant(.double(.nan))], timeout: .seconds(10))
                } == Lib.invalidArgument)
                // Saved with the book.
                let deadline = ContinuousClock.now + .seconds(3)
                var saved: Double?
                while ContinuousClock.now < deadline {
                    saved = try await d.getBook(book)["speed"]?.double
                    if saved == 2 { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(saved == 2)
            }
        }

        @Test func theSleepTimerPausesAndLeavesABookmark() async throws {
            try await DaemonFixture.with(daemonArguments: ["--sleep-fade", "1"]) { d in
                let book = try await d.activateImported(d.media.longBook, play: true)
                // What is left counts down from 2 s while the test looks: no more than the time since it was set has
                // gone (a loaded machine can answer the calls in between a second or more apart).
                let set = ContinuousClock.now
                try await d.listen("SetSleepTimer", [.int64(2_000_000)])
                let setAt = try await d.position()  // no earlier than where the timer started counting
                #expect(try await d.listenProperty("SleepTimer") == .string("time"))
                let left = try await d.listenProperty("SleepTimeLeft").int64 ?? -1
                let since = ContinuousClock.now - set
                #expect(left >= 2_000_000 - Int64(since / .microseconds(1)) - 50_000 && left <= 2_000_000,
                        "SleepTimeLeft \(left), \(since) after SetSleepTimer")
                // Said while the timer runs: when the answer came within its 2 s, it had not fired yet.
                let status = try await d.lectern("status").stdout
                if ContinuousClock.now - set < .seconds(2) {
                    #expect(status.contains("sleep in 0:0"), "\(status)")
                } else {
                    print("theSleepTimerPausesAndLeavesABookmark: `lectern status` answered 2 s or more after the timer was set, not checked")
                }

                #expect(try await d.waitForStatus("Paused", timeout: .seconds(6)) == "Paused")
                #expect(try await d.listenProperty("SleepTimer") == .string("off"))
                let position = try await d.position()
                // 2 s of the timer from where it was set, and 1.5 s for its fade and a late wake-up.
                #expect(position >= 1_800_000 && position < setAt + 3_500_000, "paused at \(position), timer set at \(setAt)")
                #expect(try await d.get("Volume") == .double(1), "the fade does not change the volume clients see")
                var marks: [[String: DBusValue]] = []
                let deadline = ContinuousClock.now + .seconds(3)
                while marks.isEmpty && ContinuousClock.now < deadline {
                    marks = try await d.bookmarks(of: book)
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(marks.count == 1)
                #expect(marks.first?["kind"]?.string == "sleepTimer", "\(marks)")
                #expect(near(marks.first?["offset"]?.int64, position, within: 300_000))

                // At the end of the chapter, from the CLI; off cancels.
                #expect(try await d.lectern("sleep", "20m").status == 0)
                #expect(try await d.listenProperty("SleepTimer") == .string("time"))
                #expect(try await d.lectern("sleep", "off").status == 0)
                #expect(try await d.listenProperty("SleepTimer") == .string("off"))
                #expect(try await d.lectern("sleep", "chapter").status == 0)
                #expect(try await d.listenProperty("SleepTimer") == .string("chapter"))
                #expect(try await d.lectern("sleep", "never").status != 0)
            }
        }

        @Test func theSleepTimerAtTheEndOfAChapterStopsAtTheNextOnesStart() async throws {
            try await DaemonFixture.with(daemonArguments: ["--sleep-fade", "1"]) { d in
                let book = try await d.activateImported(try await d.libraryMedia.tree.appendingPathComponent("Chaptered"))
                try await d.setPosition(800_000)
                try await d.listen("SleepAtChapterEnd")
                try await d.call("Play")
                try await d.waitForTrack("/org/lectern/Lectern1/book/\(book)/track/1", timeout: .seconds(20))
                #expect(try await d.waitForStatus("Paused", timeout: .seconds(20)) == "Paused")
                let position = try await d.position()
                #expect(position < 500_000, "paused \(position) µs into the next chapter")
            }
        }

        @Test func aLongPauseResumesEarlier() async throws {
            try await DaemonFixture.with(daemonArguments: ["--smart-rewind", "2-2", "--rewind-after", "1"]) { d in
                _ = try await d.activateImported(d.media.longBook)
                try await d.setPosition(10_000_000)
                try await d.call("Play")
                _ = try await d.waitForStatus("Playing")
                try await d.call("Pause")
                _ = try await d.waitForStatus("Paused")
                let pausedAt = try await d.position()
                try await Task.sleep(for: .milliseconds(1500))
                let mark = d.signals.mark
                try await d.call("Play")
                let seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }
                #expect(near(seeked?.seekedPosition, pausedAt - 2_000_000, within: 150_000),
                        "paused at \(pausedAt), resumed at \(String(describing: seeked?.seekedPosition))")
                #expect(try await d.status() == "Playing")

                // A short pause: no rewind. Short as lecternd counts it (from handling Pause to handling Play) only when
                // Pause sent to Play answered took less than --rewind-after: on a loaded machine the two calls can be
                // handled more than a second apart, and then a rewind is right.
                let pauseSent = ContinuousClock.now
                try await d.call("Pause")
                _ = try await d.waitForStatus("Paused")
                let mark2 = d.signals.mark
                try await d.call("Play")
                let pauseLasted = ContinuousClock.now - pauseSent
                _ = try await d.waitForStatus("Playing")
                try await d.signals.barrier()
                if pauseLasted < .seconds(1) {
                    let pausedAt = try await d.position()
                    // None before the place paused at (a late output, if any, is told where it plays: not earlier).
                    #expect(d.signals.seeked(since: mark2).allSatisfy { $0 >= pausedAt - 300_000 },
                            "a pause of less than \(pauseLasted) rewound: \(d.signals.seeked(since: mark2))")
                } else {
                    print("aLongPauseResumesEarlier: the short pause took \(pauseLasted) from Pause to Play's reply, not checked")
                }
            }
        }

        @Test func reachingTheEndFinishesTheBookAndItStartsOver() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.activateImported(d.media.shortBook, play: true)
                #expect(try await d.waitForStatus("Stopped", timeout: .seconds(10)) == "Stopped")
                let deadline = ContinuousClock.now + .seconds(3)
                var finished = false
                while !finished && ContinuousClock.now < deadline {
                    finished = try await d.getBook(book)["finished"]?.bool == true
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(finished)
                try await d.lib("ActivateBook", [.int64(book), .boolean(false)])
                #expect(try await d.waitForURL(endingWith: "/short/1.ogg")?.hasSuffix("/short/1.ogg") == true)
                #expect(try await d.position() < 100_000)
                #expect(try await d.getBook(book)["finished"]?.bool == false)
            }
        }

        @Test func aFileThatCannotBePlayedIsReportedAndTheNextOnePlays() async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-badfile")
            defer { folder.remove() }
            for name in MediaLibrary.shortFiles {
                try FileManager.default.copyItem(at: try await MediaLibrary.shared().shortBook.appendingPathComponent(name),
                                                 to: folder.appending(name))
            }
            try await DaemonFixture.with { d in
                // A file of the book that no longer plays (damaged since the import).
                let book = try await d.importOK(folder.url)[0]
                try Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: folder.appending("2.ogg"))
                let mark = d.signals.mark
                try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
                let failed = await d.signals.waitFor(since: mark, timeout: .seconds(10)) { $0.member == "FileFailed" }
                #expect(failed?.interface == Listen.interface && failed?.path == Lib.path)
                #expect(failed?.arguments.first == .int32(1))
                #expect(failed?.arguments[1].string?.hasSuffix("/2.ogg") == true, "\(String(describing: failed))")
                #expect(try await d.waitForURL(endingWith: "/3.ogg")?.hasSuffix("/3.ogg") == true)
                #expect(try await d.listenProperty("LastError").string?.contains("/2.ogg: ") == true)
                #expect(try await d.waitForStatus("Stopped", timeout: .seconds(30)) == "Stopped", "3.ogg played to its end:\n\(d.log)")
            }
        }

        @Test func theShuffledOrderIsKeptAcrossARestart() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.activateImported(try await d.libraryMedia.big)
                try await d.set("Shuffle", .boolean(true))
                var order = [try await d.currentURL() ?? ""]
                for _ in 0..<5 {
                    try await d.call("Next")
                    let value = try await d.waitForProperty("Metadata") { $0.stringKeyedDictionary?["xesam:url"]?.string != order.last }
                    order.append(value.stringKeyedDictionary?["xesam:url"]?.string ?? "")
                }
                #expect(Set(order).count == 6)
                #expect(await d.stopDaemon() == 0)

                let again = try await d.startReplacementDaemon()
                #expect(try await d.waitForCurrentBook(book) == book)
                #expect(try await d.waitForURL(endingWith: order[5]) == order[5])
                #expect(try await d.get("Shuffle") == .boolean(true))
                // Back through the same order.
                for expected in order.dropLast().reversed() {
                    try await d.call("Previous")
                    #expect(try await d.waitForURL(endingWith: expected) == expected)
                }
                #expect(await d.stopReplacement(again) == 0)
            }
        }
    }
}
