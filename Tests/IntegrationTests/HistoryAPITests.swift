import DBus
import Foundation
import Testing
import TestSupport

/// org.lectern.History1 on /org/lectern/Lectern1.
enum History {
    static let interface = "org.lectern.History1"
}

extension DaemonFixture {
    @discardableResult
    func history(_ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await lib(method, arguments, interface: History.interface)
    }

    func undoStack(_ book: Int64 = 0) async throws -> [[String: DBusValue]] {
        (try await history("ListUndo", [.int64(book)]).first?.elements ?? []).compactMap(\.stringKeyedDictionary)
    }

    func sessions(_ book: Int64 = 0) async throws -> [[String: DBusValue]] {
        (try await history("ListSessions", [.int64(book), .int64(0), .int64(0)]).first?.elements ?? []).compactMap(\.stringKeyedDictionary)
    }

    /// Polls the undo stack of `book` until it has `count` places (the book session writes them after the move).
    @discardableResult
    func waitForUndoStack(_ book: Int64, count: Int, timeout: Duration = .seconds(5)) async throws -> [[String: DBusValue]] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let stack = try await undoStack(book)
            if stack.count == count { return stack }
            guard ContinuousClock.now < deadline else { throw FixtureError("book \(book)'s undo stack has \(stack.count) places, not \(count): \(stack)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The file ids of the long book's 1.ogg, 2.ogg and 3.ogg.
    func longBookFiles(_ book: Int64) async throws -> [Int64] {
        var ids: [Int64] = []
        for name in MediaLibrary.longBookFiles { ids.append(try await fileID(of: book, endingWith: "/longbook/" + name)) }
        return ids
    }
}

extension Integration.Library {
    @Suite struct HistoryAPI {
        @Test func undoReturnsToBeforeEachMoveNewestFirstThenHasNothingLeft() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                let files = try await d.longBookFiles(book)
                try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
                try await d.waitForPosition(atLeast: 500_000)
                try await d.listen("JumpToFile", [.int32(1), .int64(10_000_000)])
                try await d.waitForURL(endingWith: "/longbook/2.ogg")
                try await d.waitForPosition(atLeast: 10_300_000)
                try await d.listen("NextChapter")
                try await d.waitForURL(endingWith: "/longbook/3.ogg")
                let stack = try await d.waitForUndoStack(book, count: 2)
                #expect(stack.map { $0["kind"]?.string } == ["chapter", "jump"])
                #expect(stack.map { $0["file"]?.int64 } == [files[1], files[0]])
                #expect(near(stack.first?["offset"]?.int64, 10_300_000, within: 2_000_000), "\(stack)")

                let back = try await d.history("Undo").first?.stringKeyedDictionary ?? [:]
                #expect(back["kind"]?.string == "chapter")
                #expect(back["book"]?.int64 == book)
                try await d.waitForURL(endingWith: "/longbook/2.ogg")
                let position = try await d.position()
                #expect(near(position, stack.first?["offset"]?.int64 ?? 0, within: 1_500_000), "Position \(position), place \(stack)")
                #expect(try await d.status() == "Playing")
                // The undo is not itself a place to go back to.
                #expect(try await d.undoStack(book).count == 1)
                try await d.history("Undo")
                try await d.waitForURL(endingWith: "/longbook/1.ogg")
                #expect(try await d.undoStack(book).isEmpty)
                #expect(await d.errorName { try await d.history("Undo") } == Lib.notFound)
            }
        }

        @Test func skipsInQuickSuccessionAreOneUndo() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                try await d.lib("ActivateBook", [.int64(book), .boolean(false)])
                try await d.listen("JumpToFile", [.int32(0), .int64(15_000_000)])
                try await d.waitForUndoStack(book, count: 1)
                for _ in 0..<3 { try await d.listen("Skip", [.int64(-3_000_000)]) }
                let stack = try await d.waitForUndoStack(book, count: 2)
                #expect(stack.first?["kind"]?.string == "seek")
                #expect(near(stack.first?["offset"]?.int64, 15_000_000, within: 100_000), "\(stack)")
                try await d.history("Undo")
                let position = try await d.waitForProperty("Position") { near($0.int64, 15_000_000, within: 100_000) }.int64
                #expect(near(position, 15_000_000, within: 100_000), "Position \(position ?? -1)")
                #expect(try await d.status() == "Paused")
            }
        }

        @Test func undoingABookChangeGoesBackToTheBookLeftAtItsPlace() async throws {
            try await DaemonFixture.with { d in
                let long = try await d.importOK(d.media.longBook)[0]
                let mp3 = try await d.importOK(d.media.mp3Book)[0]
                let files = try await d.longBookFiles(long)
                try await d.lib("ActivateBook", [.int64(long), .boolean(false)])
                try await d.listen("JumpToFile", [.int32(1), .int64(5_000_000)])
                try await d.waitForSavedPosition(of: long, file: files[1], near: 5_000_000)
                try await d.lib("ActivateBook", [.int64(mp3), .boolean(true)])
                try await d.waitForURL(endingWith: "/mp3book/01.mp3")
                let stack = try await d.waitForUndoStack(mp3, count: 1)
                #expect(stack.first?["kind"]?.string == "book")
                #expect(stack.first?["book"]?.int64 == long)
                #expect(stack.first?["file"]?.int64 == files[1])

                try await d.history("Undo")
                #expect(try await d.waitForCurrentBook(long) == long)
                try await d.waitForURL(endingWith: "/longbook/2.ogg")
                #expect(try await d.waitForStatus("Playing") == "Playing", "playing, as the listener was")
                #expect(near(try await d.position(), 5_000_000, within: 1_500_000))
                // Not a book change to undo in its turn.
                #expect(try await d.undoStack(long).count == 1, "the jump before it stays")
                #expect(try await d.undoStack(mp3).isEmpty)
            }
        }

        @Test func argumentsOutOfRangeAreRefusedAndChangeNothing() async throws {
            try await DaemonFixture.with { d in
                #expect(await d.errorName { try await d.history("Undo") } == Lib.notFound, "no book is current")
                #expect(await d.errorName { try await d.history("ListUndo", [.int64(0)]) } == Lib.notFound)
                #expect(await d.errorName { try await d.history("ListUndo", [.int64(999)]) } == Lib.notFound)
                #expect(await d.errorName { try await d.history("ListSessions", [.int64(999), .int64(0), .int64(0)]) } == Lib.notFound)
                for (from, to) in [(-1, 0), (0, -5), (2_000_000, 1_000_000), (5, 5)] as [(Int64, Int64)] {
                    #expect(await d.errorName { try await d.history("ListSessions", [.int64(0), .int64(from), .int64(to)]) }
                            == Lib.invalidArgument, "\(from) ..< \(to)")
                    #expect(await d.errorName { try await d.history("GetStats", [.int64(from), .int64(to)]) } == Lib.invalidArgument,
                            "\(from) ..< \(to)")
                }
                #expect(await d.errorName { try await d.history("GetStats", [.string("today")]) } == DBusErrors.invalidArgs)
                #expect(try await d.sessions().isEmpty)
                let stats = try await d.history("GetStats", [.int64(0), .int64(0)]).first?.stringKeyedDictionary ?? [:]
                #expect(stats["listened"]?.int64 == 0)
                #expect(stats["days"]?.elements?.isEmpty == true)
            }
        }

        /// The history and the undo stack after a SIGKILL while playing: the session to within the last tick, the places kept.
        @Test func aSIGKILLWhilePlayingLosesAtMostTheLastSecondOfTheSession() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
                try await d.waitForPosition(atLeast: 300_000)
                try await d.listen("Skip", [.int64(2_000_000)])
                try await d.waitForUndoStack(book, count: 1)
                let reached = try await d.waitForPosition(atLeast: 5_000_000)
                let heard = try await d.position()
                d.daemon.kill()
                #expect(await d.daemon.waitForExit(timeout: .seconds(10)) != nil)
                let replacement = try await d.startReplacementDaemon()
                let sessions: [[String: DBusValue]]
                let stack: [[String: DBusValue]]
                do {
                    sessions = try await d.sessions(book)
                    stack = try await d.undoStack(book)
                } catch {
                    await d.stopReplacement(replacement)
                    throw error
                }
                #expect(await d.stopReplacement(replacement) == 0)
                #expect(sessions.count == 1, "\(sessions)")
                let session = sessions.first ?? [:]
                // Heard from ~0 to `heard` with a 2 s skip: book time to within the last tick (500 ms) and a late one.
                let to = session["to"]?.int64 ?? 0
                #expect(to >= heard - 1_000_000 && to <= heard + 200_000, "to \(to), heard \(heard) (reached \(reached))")
                let listened = session["listened"]?.int64 ?? 0
                #expect(listened >= heard - 2_000_000 - 1_000_000 && listened <= heard, "listened \(listened), heard \(heard)")
                #expect(session["speed"]?.double == 1)
                #expect(session["title"]?.string == "longbook")
                #expect(stack.map { $0["kind"]?.string } == ["seek"])
                #expect(try await d.integrityCheck() == "ok")
            }
        }

        /// SIGTERM while playing: the session ends where the listener was, not at the last tick.
        @Test func aSIGTERMWhilePlayingKeepsTheSessionToTheEnd() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
                try await d.waitForPosition(atLeast: 2_000_000)
                let heard = try await d.position()
                #expect(await d.stopDaemon() == 0)
                let replacement = try await d.startReplacementDaemon()
                let sessions: [[String: DBusValue]]
                do { sessions = try await d.sessions(book) } catch {
                    await d.stopReplacement(replacement)
                    throw error
                }
                #expect(await d.stopReplacement(replacement) == 0)
                let to = sessions.first?["to"]?.int64 ?? 0
                #expect(sessions.count == 1 && to >= heard && to <= heard + 2_000_000, "to \(to), heard \(heard): \(sessions)")
            }
        }

        @Test func statsCountWhatWasHeard() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
                try await d.set("Rate", .double(2))
                try await d.waitForPosition(atLeast: 4_000_000)
                try await d.call("Pause")
                try await d.waitForStatus("Paused")
                let heard = try await d.position()
                let stats = try await d.history("GetStats", [.int64(0), .int64(0)]).first?.stringKeyedDictionary ?? [:]
                let listened = stats["listened"]?.int64 ?? 0
                let content = stats["content"]?.int64 ?? 0
                #expect(near(content, heard, within: 1_000_000), "content \(content), heard \(heard)")
                #expect(near(listened * 2, content, within: 1_000_000), "listened \(listened) at 2x, content \(content)")
                #expect(stats["savedBySilence"]?.int64 == 0, "skip silence is off")
                #expect(stats["savedBySpeed"]?.int64 == content - listened)
                let books = stats["books"]?.elements?.compactMap(\.stringKeyedDictionary) ?? []
                #expect(books.map { $0["book"]?.int64 } == [book])
                #expect(stats["days"]?.elements?.count == 1)
                let shelves = stats["shelves"]?.elements?.compactMap(\.stringKeyedDictionary) ?? []
                #expect(shelves.map { $0["shelf"]?.int64 } == [0], "on no shelf: \(shelves)")
            }
        }
    }
}
