import Foundation
import LecternLibrary
import Testing
import TestSupport

@Suite("Positions and the current book")
struct PositionTests {
    @Test("savePosition reports whether it changed anything")
    func savePosition() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/p"))
        let files = try library.fileIds(of: id)
        #expect(try library.savePosition(of: id, file: files[0], offset: 1000))
        #expect(try library.book(id).positionFileId == files[0])
        #expect(try library.book(id).positionOffset == 1000)
        #expect(try !library.savePosition(of: id, file: files[0], offset: 1000))
        #expect(try library.savePosition(of: id, file: files[0], offset: 1001))
        #expect(try library.savePosition(of: id, file: files[1], offset: 1001))
        #expect(try !library.savePosition(of: id, file: files[1], offset: 1001))
        #expect(try library.savePosition(of: id, file: files[1], offset: 0))
        #expect(try library.book(id).positionFileId == files[1])
        #expect(try library.book(id).positionOffset == 0)
        // The first position, offset 0: positionFileId goes from NULL to a file.
        let other = try library.add(importedBook("/q"))
        #expect(try library.savePosition(of: other, file: try library.fileIds(of: other)[0], offset: 0))
        // A negative offset is stored as 0.
        #expect(try library.savePosition(of: id, file: files[2], offset: -50))
        #expect(try library.book(id).positionOffset == 0)
        #expect(try !library.savePosition(of: id, file: files[2], offset: -1))
        // Saving a position doesn't count as a modification.
        let modified = try library.book(id).modifiedAt
        #expect(try library.savePosition(of: id, file: files[2], offset: 99))
        #expect(try library.book(id).modifiedAt == modified)
    }

    @Test("savePosition notes lastPlayedAt as markPlayed does, and a missing book is NotFound")
    func savePositionNotesWhenItWasPlayed() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/p"))
        let file = try library.fileIds(of: id)[0]
        // The text against GRDB's own: StoredDateTests.
        for (index, date) in StoredDateTests.dates.prefix(30).enumerated() {
            try library.markPlayed(id, at: date)
            let marked = try library.book(id).lastPlayedAt
            #expect(try library.savePosition(of: id, file: file, offset: Int64(index) + 1, playedAt: date))
            #expect(try library.book(id).lastPlayedAt == marked, "\(date.timeIntervalSince1970)")
        }
        expectError(.notFound, "no such book") { try library.savePosition(of: 9999, file: file, offset: 5) }
    }

    @Test("A file of another book is refused by the trigger and nothing changes")
    func foreignFile() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/p"))
        let other = try library.add(importedBook("/q"))
        let foreign = try library.fileIds(of: other)[1]
        expectError(.invalidArgument, "no position yet") { try library.savePosition(of: id, file: foreign, offset: 5) }
        #expect(try library.book(id).positionFileId == nil)
        try library.savePosition(of: id, file: try library.fileIds(of: id)[1], offset: 5)
        let before = try Snapshot(library)
        expectError(.invalidArgument, "same offset") { try library.savePosition(of: id, file: foreign, offset: 5) }
        expectError(.invalidArgument, "other offset") { try library.savePosition(of: id, file: foreign, offset: 6) }
        expectError(.invalidArgument, "unknown file") { try library.savePosition(of: id, file: 9999, offset: 6) }
        #expect(try Snapshot(library) == before)
    }

    @Test("currentBook / setCurrentBook, across a reopen")
    func currentBook() throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        let a: Int64
        let b: Int64
        do {
            let library = try Library(path: path)
            #expect(try library.currentBook() == nil)
            a = try library.add(importedBook("/a"))
            b = try library.add(importedBook("/b"))
            try library.setCurrentBook(a)
            #expect(try library.currentBook() == a)
            try library.setCurrentBook(b)
            #expect(try library.currentBook() == b)
        }
        let library = try Library(path: path)
        #expect(try library.currentBook() == b)
        try library.setCurrentBook(nil)
        #expect(try library.currentBook() == nil)
        try library.setCurrentBook(nil)
        #expect(try library.currentBook() == nil)
        try library.setCurrentBook(a)
        #expect(try library.currentBook() == a)
    }

    @Test("markPlayed sets lastPlayedAt")
    func markPlayed() throws {
        let library = try Library()
        let id = try library.add(importedBook("/a"))
        let date = Date(timeIntervalSince1970: 1_234_567_890.5)
        try library.markPlayed(id, at: date)
        #expect(try library.book(id).lastPlayedAt == date)
        let start = Date()
        try library.markPlayed(id)
        let now = try #require(try library.book(id).lastPlayedAt)
        #expect(abs(now.timeIntervalSince(start)) < 5)
    }
}

@Suite("Bookmarks")
struct BookmarkTests {
    @Test("Add to a file of the book")
    func add() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/b"))
        let files = try library.fileIds(of: id)
        let start = Date()
        let mark = try library.addBookmark(to: id, file: files[1], offset: 1_500_000, title: "  Death appears ", note: "Chapter 3")
        #expect(mark.id != nil)
        #expect(mark.bookId == id)
        #expect(mark.fileId == files[1])
        #expect(mark.offset == 1_500_000)
        #expect(mark.title == "Death appears")
        #expect(mark.note == "Chapter 3")
        #expect(mark.kind == .user)
        #expect(abs(mark.createdAt.timeIntervalSince(start)) < 5)
        let stored = try library.bookmark(mark.id!)
        #expect(stored.id == mark.id)
        #expect(stored.title == mark.title)
        #expect(stored.fileId == mark.fileId)
        #expect(abs(stored.createdAt.timeIntervalSince(mark.createdAt)) < 0.002)  // stored to the millisecond
        let timer = try library.addBookmark(to: id, file: files[0], offset: 0, title: "Sleep", kind: .sleepTimer)
        let unplug = try library.addBookmark(to: id, file: files[0], offset: 0, title: "Unplugged", kind: .unplug)
        #expect(try library.bookmark(timer.id!).kind == .sleepTimer)
        #expect(try library.bookmark(unplug.id!).kind == .unplug)
        #expect(try library.bookmark(timer.id!).note == "")
    }

    @Test("Refused bookmarks add nothing")
    func refused() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/b"))
        let other = try library.add(importedBook("/c"))
        let files = try library.fileIds(of: id)
        let foreign = try library.fileIds(of: other)[0]
        _ = try library.addBookmark(to: id, file: files[0], offset: 1, title: "existing")
        let before = try Snapshot(library)
        expectError(.notFound, "a file of another book") { try library.addBookmark(to: id, file: foreign, offset: 0, title: "x") }
        expectError(.notFound, "an unknown file") { try library.addBookmark(to: id, file: 9999, offset: 0, title: "x") }
        expectError(.notFound, "an unknown book") { try library.addBookmark(to: 9999, file: files[0], offset: 0, title: "x") }
        expectError(.invalidArgument, "negative offset") { try library.addBookmark(to: id, file: files[0], offset: -1, title: "x") }
        expectError(.invalidArgument, "empty title") { try library.addBookmark(to: id, file: files[0], offset: 0, title: " ") }
        expectError(.invalidArgument, "long title") {
            try library.addBookmark(to: id, file: files[0], offset: 0, title: String(repeating: "t", count: 1025))
        }
        expectError(.invalidArgument, "long note") {
            try library.addBookmark(to: id, file: files[0], offset: 0, title: "x", note: String(repeating: "n", count: 100_001))
        }
        #expect(try Snapshot(library) == before)
        #expect(try library.bookmarks(of: other).isEmpty)
    }

    @Test("Listed in book order: file position, then offset")
    func order() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/b"))
        let f = try library.fileIds(of: id)
        let c1 = try library.addBookmark(to: id, file: f[2], offset: 5, title: "c5")
        let a9 = try library.addBookmark(to: id, file: f[0], offset: 9, title: "a9")
        let b0 = try library.addBookmark(to: id, file: f[1], offset: 0, title: "b0")
        let a1 = try library.addBookmark(to: id, file: f[0], offset: 1, title: "a1")
        let a9bis = try library.addBookmark(to: id, file: f[0], offset: 9, title: "a9 again")
        #expect(try library.bookmarks(of: id).map(\.id) == [a1.id, a9.id, a9bis.id, b0.id, c1.id])
        // The files' order decides, not their ids.
        try library.reorderFiles(of: id, [f[2], f[1], f[0]])
        #expect(try library.bookmarks(of: id).map(\.id) == [c1.id, b0.id, a1.id, a9.id, a9bis.id])
    }

    @Test("Rename, note, delete; unknown ids")
    func editAndDelete() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/b"))
        let file = try library.fileIds(of: id)[0]
        let mark = try library.addBookmark(to: id, file: file, offset: 3, title: "Old")
        try library.renameBookmark(mark.id!, to: " New ")
        #expect(try library.bookmark(mark.id!).title == "New")
        try library.setBookmarkNote(mark.id!, "a note\nover two lines")
        #expect(try library.bookmark(mark.id!).note == "a note\nover two lines")
        try library.setBookmarkNote(mark.id!, String(repeating: "n", count: 100_000))
        #expect(try library.bookmark(mark.id!).note.count == 100_000)
        let before = try Snapshot(library)
        expectError(.invalidArgument) { try library.renameBookmark(mark.id!, to: "") }
        expectError(.invalidArgument) { try library.renameBookmark(mark.id!, to: "a\u{0}") }
        expectError(.invalidArgument) { try library.setBookmarkNote(mark.id!, String(repeating: "n", count: 100_001)) }
        #expect(try Snapshot(library) == before)
        expectError(.notFound) { try library.bookmark(9999) }
        expectError(.notFound) { try library.renameBookmark(9999, to: "x") }
        expectError(.notFound) { try library.setBookmarkNote(9999, "x") }
        expectError(.notFound) { try library.deleteBookmark(9999) }
        try library.deleteBookmark(mark.id!)
        expectError(.notFound) { try library.bookmark(mark.id!) }
        expectError(.notFound) { try library.deleteBookmark(mark.id!) }
        #expect(try library.bookmarks(of: id).isEmpty)
    }

    @Test("1,000 bookmarks on one book")
    func many() async throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/b", paths: (1...20).map { "\($0).mp3" }))
        let files = try library.files(of: id)
        var rng = SeededGenerator(state: 7)
        var expected: [(position: Int64, offset: Int64, id: Int64)] = []
        for index in 0..<1000 {
            let file = files[Int.random(in: 0..<files.count, using: &rng)]
            let offset = Int64.random(in: 0..<50, using: &rng)  // many ties on (file, offset)
            let mark = try library.addBookmark(to: id, file: file.id!, offset: offset, title: "mark \(index)")
            expected.append((file.position, offset, mark.id!))
        }
        expected.sort { ($0.position, $0.offset, $0.id) < ($1.position, $1.offset, $1.id) }
        let listed = try library.bookmarks(of: id)
        #expect(listed.count == 1000)
        #expect(listed.map(\.id!) == expected.map(\.id))
        #expect(Set(listed.map(\.title)).count == 1000)
        try library.deleteBook(id)
        if let count = try await sqlite3(t.path, "SELECT count(*) FROM bookmark") { #expect(count == ["0"]) }
    }
}
