import Foundation
import LecternLibrary
import Testing
import TestSupport

@Suite("Listening history, statistics and undo stacks")
struct HistoryTests {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)  // 2023-11-14 22:13 UTC

    func session(_ book: Int64?, at start: Date, minutes: Double, speed: Double = 1, from: Int64 = 0) -> ListenedSession {
        let listened = Int64(minutes * 60_000_000)
        let content = Int64(Double(listened) * speed)
        return ListenedSession(bookId: book, startedAt: start, endedAt: start.addingTimeInterval(minutes * 60), fromPosition: from,
                               toPosition: from + content, listened: listened, content: content, speed: speed)
    }

    @Test("a session is stored with its book's title, updated in place, and outlives its book")
    func sessionsAreStoredAndUpdated() throws {
        let t = try TestLibrary()
        let library = t.library
        let book = try library.add(importedBook("/dune", title: "Dune"))
        var first = session(book, at: Self.start, minutes: 1)
        first.id = try library.insertSession(first)
        first.toPosition = 120_000_000
        first.listened = 120_000_000
        first.content = 120_000_000
        first.endedAt = Self.start.addingTimeInterval(120)
        try library.updateSession(first)
        let stored = try library.sessions(of: book)
        #expect(stored.count == 1)
        #expect(stored.first?.title == "Dune")
        #expect(stored.first?.listened == 120_000_000)
        #expect(stored.first?.endedAt == Self.start.addingTimeInterval(120))
        expectError(.notFound) { try library.insertSession(session(9999, at: Self.start, minutes: 1)) }
        try library.deleteBook(book)
        #expect(try library.sessions().map(\.bookId) == [nil])
        #expect(try library.sessions().map(\.title) == ["Dune"])
        expectError(.notFound) { try library.sessions(of: book) }
    }

    @Test("sessions are read by the moment they started, from included, to excluded")
    func sessionsInASpan() throws {
        let t = try TestLibrary()
        let library = t.library
        let book = try library.add(importedBook("/dune"))
        for hour in 0..<4 { _ = try library.insertSession(session(book, at: Self.start.addingTimeInterval(Double(hour) * 3600), minutes: 10)) }
        #expect(try library.sessions().count == 4)
        let span = try library.sessions(from: Self.start.addingTimeInterval(3600), to: Self.start.addingTimeInterval(3 * 3600))
        #expect(span.map(\.startedAt) == [Self.start.addingTimeInterval(3600), Self.start.addingTimeInterval(7200)])
    }

    @Test("statistics per day, book and shelf (with the shelves below), books finished and the time speed saved")
    func statistics() throws {
        let t = try TestLibrary()
        let library = t.library
        let fiction = try library.createShelf(named: "Fiction", in: nil)
        let fantasy = try library.createShelf(named: "Fantasy", in: fiction.id)
        let dune = try library.add(importedBook("/dune", title: "Dune"))
        let hobbit = try library.add(importedBook("/hobbit", title: "The Hobbit"))
        let loose = try library.add(importedBook("/loose", title: "Loose"))
        try library.moveBook(dune, to: fiction.id)
        try library.moveBook(hobbit, to: fantasy.id)
        let day = 86_400.0
        _ = try library.insertSession(session(dune, at: Self.start, minutes: 30, speed: 2))
        _ = try library.insertSession(session(hobbit, at: Self.start.addingTimeInterval(3600), minutes: 20))
        _ = try library.insertSession(session(loose, at: Self.start.addingTimeInterval(day), minutes: 10))
        try library.setFinished(hobbit, true)
        let stats = try library.listeningStats()
        let minute: Int64 = 60_000_000
        #expect(stats.listened == 60 * minute)
        #expect(stats.content == 90 * minute)
        #expect(stats.savedBySpeed == 30 * minute)
        #expect(stats.days.map(\.listened) == [50 * minute, 10 * minute])
        #expect(stats.days.count == 2)
        #expect(stats.books.map(\.name) == ["Dune", "The Hobbit", "Loose"])
        #expect(stats.books.map(\.id) == [dune, hobbit, loose])
        // Fiction counts Dune and the Hobbit (on Fantasy, below it); Loose is on no shelf.
        #expect(stats.shelves.map(\.name) == ["Fiction", "Fantasy", ""])
        #expect(stats.shelves.map(\.listened) == [50 * minute, 20 * minute, 10 * minute])
        #expect(stats.finished.map(\.title) == ["The Hobbit"])
        #expect(stats.finished.first.map { abs($0.finishedAt.timeIntervalSinceNow) < 3600 } == true)
        // Finished again after being heard again: twice.
        try library.setFinished(hobbit, false)
        try library.setFinished(hobbit, true)
        #expect(try library.listeningStats().finished.count == 2)
        // A span: the second day only.
        let second = try library.listeningStats(from: Self.start.addingTimeInterval(day - 60))
        #expect(second.listened == 10 * minute)
        #expect(second.books.map(\.name) == ["Loose"])
        #expect(second.finished.count == 2, "finished now, after the span's start")
    }

    @Test("what skip silence saved is stored with each session and counted apart from what the speed saved")
    func silenceSaved() throws {
        let t = try TestLibrary()
        let library = t.library
        let dune = try library.add(importedBook("/dune", title: "Dune"))
        let hobbit = try library.add(importedBook("/hobbit", title: "The Hobbit"))
        let minute: Int64 = 60_000_000
        // 30 min at 2x, and 5 min of listening skip silence saved (10 of the book): 70 min of the book heard in 30.
        var first = session(dune, at: Self.start, minutes: 30, speed: 2)
        first.content += 5 * minute * 2
        first.silence = 4 * minute
        first.id = try library.insertSession(first)
        #expect(try library.sessions(of: dune).map(\.silence) == [4 * minute], "inserted")
        first.silence = 5 * minute
        try library.updateSession(first)
        #expect(try library.sessions(of: dune).map(\.silence) == [5 * minute], "updated as it grows")
        _ = try library.insertSession(session(hobbit, at: Self.start.addingTimeInterval(3600), minutes: 20))
        // A negative figure is stored as none (the schema refuses it).
        var negative = session(hobbit, at: Self.start.addingTimeInterval(7200), minutes: 1)
        negative.silence = -minute
        _ = try library.insertSession(negative)
        #expect(try library.sessions(of: hobbit).map(\.silence) == [0, 0])

        let stats = try library.listeningStats()
        #expect(stats.listened == 51 * minute)
        #expect(stats.content == 91 * minute)
        #expect(stats.savedBySilence == 5 * minute)
        #expect(stats.savedBySpeed == 35 * minute, "content less listened less what skip silence saved")
        #expect(stats.savedBySpeed + stats.savedBySilence == stats.content - stats.listened)
        #expect(stats.books.map(\.name) == ["Dune", "The Hobbit"])
        #expect(stats.books.map(\.silence) == [5 * minute, 0])
        #expect(stats.books.first?.savedBySpeed == 35 * minute)
        // Dune's day (the sessions may fall on two days in local time).
        #expect(stats.days.first?.silence == 5 * minute && stats.days.dropFirst().allSatisfy { $0.silence == 0 }, "\(stats.days)")
        #expect(stats.shelves.map(\.silence) == [5 * minute])
    }

    @Test("an undo stack keeps its newest 20 places, pops the newest first, and loses a place whose file or book goes")
    func undoStacks() throws {
        let t = try TestLibrary()
        let library = t.library
        let dune = try library.add(importedBook("/dune"))
        let hobbit = try library.add(importedBook("/hobbit"))
        let files = try library.fileIds(of: dune)
        for offset in 0..<25 { try library.pushUndo(on: dune, placeBook: dune, file: files[0], offset: Int64(offset), kind: "seek") }
        #expect(try library.undoEntries(of: dune).map(\.offset) == (5..<25).reversed().map(Int64.init))
        #expect(try library.popUndo(of: dune)?.offset == 24)
        #expect(try library.popUndo(of: dune)?.offset == 23)
        #expect(try library.undoEntries(of: dune).count == 18)
        // A book change: the place is in the book left.
        try library.pushUndo(on: hobbit, placeBook: dune, file: files[1], offset: 7, kind: "book")
        #expect(try library.undoEntries(of: hobbit).map(\.placeBookId) == [dune])
        // A place must be a file of its book, and of a kind undo knows.
        expectError(.invalidArgument) { try library.pushUndo(on: hobbit, placeBook: hobbit, file: files[0], offset: 0, kind: "seek") }
        expectError(.invalidArgument) { try library.pushUndo(on: dune, placeBook: dune, file: files[0], offset: 0, kind: "teleport") }
        // Deleting the book left empties the other's stack of its places; an empty stack pops nothing.
        try library.deleteBook(dune)
        #expect(try library.undoEntries(of: hobbit).isEmpty)
        #expect(try library.popUndo(of: hobbit) == nil)
        expectError(.notFound) { try library.undoEntries(of: dune) }
    }

    @Test("the history and the undo stacks are kept across a reopen")
    func keptAcrossAReopen() throws {
        let t = try TestLibrary()
        let book = try t.library.add(importedBook("/dune"))
        let file = try t.library.fileIds(of: book)[0]
        _ = try t.library.insertSession(session(book, at: Self.start, minutes: 5))
        try t.library.pushUndo(on: book, placeBook: book, file: file, offset: 42, kind: "chapter")
        try t.library.close()
        let again = try Library(path: t.path)
        #expect(try again.sessions().count == 1)
        #expect(try again.undoEntries(of: book).map(\.offset) == [42])
        #expect(try again.undoEntries(of: book).map(\.kind) == ["chapter"])
    }
}
