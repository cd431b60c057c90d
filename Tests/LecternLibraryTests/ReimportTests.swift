import Foundation
import LecternLibrary
import Testing
import TestSupport

@Suite("Re-import")
struct ReimportTests {
    /// The first import of "/books/Mort": a, b, c with tags and chapters.
    static let first = ImportedBook(sourcePath: "/books/Mort", albumKey: "", title: "Mort", author: "Terry Pratchett",
                                    coverPath: nil, files: [
        track("/books/Mort/a.mp3", duration: 1_000_000, title: "A", artist: "Old Artist", album: "Mort", genre: "Fantasy",
              chapters: [.init(title: "A1", start: 0, end: 500_000), .init(title: "A2", start: 500_000, end: nil)]),
        track("/books/Mort/b.mp3", duration: 2_000_000, title: "B", artist: "Old Artist"),
        track("/books/Mort/c.mp3", duration: 3_000_000, title: "C", artist: "Old Artist", chapters: [.init(title: "C1", start: 0, end: nil)]),
    ])

    /// The folder later: c is gone, d is new, b and a have new tags (listed in another order), a has new chapters.
    static let second = ImportedBook(sourcePath: "/books/Mort", albumKey: "", title: "Mort (Unabridged)", author: "T. Pratchett",
                                     coverPath: "/books/Mort/cover.jpg", files: [
        track("/books/Mort/b.mp3", duration: 2_100_000, title: "B2", artist: "New Artist", composer: "Someone"),
        track("/books/Mort/d.mp3", duration: 4_000_000, title: "D", artist: "New Artist"),
        track("/books/Mort/a.mp3", duration: 1_100_000, title: "A2", artist: "New Artist", album: "Mort", genre: "Humour",
              chapters: [.init(title: "New 1", start: 0, end: 100), .init(title: "New 2", start: 100, end: 200),
                         .init(title: "New 3", start: 200, end: nil)]),
    ])

    @Test("Re-importing updates tags, appends new files, marks missing ones, keeps everything the user did")
    func reimportKeepsUserData() throws {
        let t = try TestLibrary()
        let library = t.library
        let shelf = try library.createShelf(named: "Mine", in: nil)
        let first = try library.importBook(Self.first, into: nil)
        #expect(first.created)
        let id = first.id
        let ids = try library.fileIds(of: id)  // a, b, c
        // What the user did.
        try library.renameBook(id, to: "My Mort")
        try library.moveBook(id, to: shelf.id)
        #expect(try library.savePosition(of: id, file: ids[2], offset: 42))
        let mark = try library.addBookmark(to: id, file: ids[2], offset: 7, title: "On c", note: "keep me")
        try library.setSettings(of: id, BookSettings(volume: 2, speed: 1.25, shuffle: true, loop: .chapter))
        try library.setNote(of: id, "my note")
        try library.setFinished(id, true)
        try library.markPlayed(id, at: Date(timeIntervalSince1970: 1_600_000_000))
        try library.setCurrentBook(id)
        let before = try library.book(id)

        let second = try library.importBook(Self.second, into: nil)
        #expect(second.id == id)
        #expect(!second.created)
        #expect(try library.bookCount() == 1)

        let book = try library.book(id)
        #expect(book.title == "My Mort")
        #expect(book.shelfId == shelf.id)
        #expect(book.positionFileId == ids[2])
        #expect(book.positionOffset == 42)
        #expect(book.settings == BookSettings(volume: 2, speed: 1.25, shuffle: true, loop: .chapter))
        #expect(book.note == "my note")
        #expect(book.finished)
        #expect(book.lastPlayedAt == Date(timeIntervalSince1970: 1_600_000_000))
        #expect(book.userOrder == before.userOrder)
        #expect(book.addedAt == before.addedAt)
        #expect(book.modifiedAt > before.modifiedAt)  // new tags
        #expect(book.author == "Terry Pratchett")  // set by the first import: kept
        #expect(book.coverPath == "/books/Mort/cover.jpg")  // there was none
        #expect(try library.currentBook() == id)
        #expect(try library.bookmarks(of: id) == [try library.bookmark(mark.id!)])
        #expect(try library.bookmark(mark.id!).note == "keep me")

        let files = try library.files(of: id)
        #expect(files.map(\.path) == ["/books/Mort/a.mp3", "/books/Mort/b.mp3", "/books/Mort/c.mp3", "/books/Mort/d.mp3"])
        #expect(files.map(\.position) == [0, 1, 2, 3])
        #expect(Array(files.map(\.id!).prefix(3)) == ids)
        #expect(files.map(\.available) == [true, true, false, true])
        #expect(files.map(\.duration) == [1_100_000, 2_100_000, 3_000_000, 4_000_000])
        #expect(files.map(\.title) == ["A2", "B2", "C", "D"])
        #expect(files.map(\.artist) == ["New Artist", "New Artist", "Old Artist", "New Artist"])
        #expect(files.map(\.genre) == ["Humour", nil, nil, nil])
        #expect(files.map(\.composer) == [nil, "Someone", nil, nil])

        let chapters = try library.chapters(of: id)
        #expect(chapters[ids[0]]?.map(\.title) == ["New 1", "New 2", "New 3"])
        #expect(chapters[ids[2]]?.map(\.title) == ["C1"])  // a missing file keeps its chapters
        #expect(chapters[ids[1]] == nil)
        #expect(try library.totals(of: [id]) == [id: BookTotals(files: 4, available: 3, duration: 10_200_000)])
        #expect(try library.integrityCheck() == "ok")
    }

    @Test("modifiedAt moves when what the book says changes (tags, chapters, files, author, cover), not where its files are")
    func modifiedOnlyWhenTheBookChanges() async throws {
        let library = try Library()
        let id = try library.add(Self.first)
        func modifiedAfter(_ imported: ImportedBook) async throws -> Date {
            try await Task.sleep(for: .milliseconds(10))  // a later clock reading than the previous change
            try library.add(imported)
            return try library.book(id).modifiedAt
        }
        let first = try library.book(id).modifiedAt
        #expect(try await modifiedAfter(Self.first) == first, "the same files and tags")
        var missing = Self.first
        missing.files.removeLast()
        #expect(try await modifiedAfter(missing) == first, "a file gone is missing: the book says the same")
        #expect(try await modifiedAfter(Self.first) == first, "and present again")
        var changed = [first]
        var chapters = Self.first
        chapters.files[2].chapters = [.init(title: "C1", start: 0, end: 1_000)]
        changed.append(try await modifiedAfter(chapters))
        changed.append(try await modifiedAfter(Self.first))  // the chapter back as it was
        var tagged = Self.first
        tagged.files[1].genre = "Satire"
        changed.append(try await modifiedAfter(tagged))
        var author = tagged
        author.author = nil
        #expect(try await modifiedAfter(author) == changed.last, "an author the tags no longer give keeps the book's")
        author.coverPath = "/books/Mort/cover.jpg"
        changed.append(try await modifiedAfter(author))
        author.files.append(track("/books/Mort/d.mp3"))
        changed.append(try await modifiedAfter(author))
        #expect(zip(changed, changed.dropFirst()).allSatisfy { $0 < $1 }, "\(changed)")
    }

    @Test("A file that comes back is available again; the user's file order is kept")
    func fileComesBack() throws {
        let library = try Library()
        let id = try library.add(Self.first)
        let ids = try library.fileIds(of: id)
        try library.reorderFiles(of: id, [ids[2], ids[0], ids[1]])
        try library.add(Self.second)
        #expect(try library.files(of: id).map(\.available) == [false, true, true, true])
        try library.add(Self.first)  // c is back, d is missing now
        let files = try library.files(of: id)
        #expect(files.map(\.path) == ["/books/Mort/c.mp3", "/books/Mort/a.mp3", "/books/Mort/b.mp3", "/books/Mort/d.mp3"])
        #expect(files.map(\.available) == [true, true, true, false])
        #expect(files.map(\.title) == ["C", "A", "B", "D"])
        #expect(files.map(\.position) == [0, 1, 2, 3])
    }

    @Test("A shelf given to the re-import moves the book; none keeps its shelf")
    func shelfOnReimport() throws {
        let library = try Library()
        let a = try library.createShelf(named: "A", in: nil)
        let b = try library.createShelf(named: "B", in: nil)
        let id = try library.add(Self.first, into: a.id)
        try library.add(Self.second, into: nil)
        #expect(try library.book(id).shelfId == a.id)
        try library.add(Self.second, into: b.id)
        #expect(try library.book(id).shelfId == b.id)
        #expect(try library.bookCount() == 1)
    }

    @Test("The same folder with another album key (other files), or another folder, is another book")
    func identity() throws {
        let library = try Library()
        // Files of their own in each: the same files under another album key are the same book, re-tagged.
        func files(_ album: String) -> [String] { (1...3).map { "\(album)-0\($0).mp3" } }
        let one = try library.importBook(importedBook("/mixed", album: "Mort", paths: files("Mort")), into: nil)
        let two = try library.importBook(importedBook("/mixed", album: "Eric", paths: files("Eric")), into: nil)
        let three = try library.importBook(importedBook("/other", album: "Mort", paths: files("Mort")), into: nil)
        let whole = try library.importBook(importedBook("/mixed", album: "", paths: files("")), into: nil)
        let allCreated = [one, two, three, whole].allSatisfy { $0.created }
        #expect(allCreated)
        #expect(Set([one.id, two.id, three.id, whole.id]).count == 4)
        let again = try library.importBook(importedBook("/mixed", album: "Eric", paths: files("Eric")), into: nil)
        #expect(again.id == two.id)
        #expect(!again.created)
        #expect(try library.bookCount() == 4)
        // Files of the same path in two books are separate rows.
        let shared = ImportedBook(sourcePath: "/shared", albumKey: "x", title: "X", author: nil, coverPath: nil, files: [track("/mixed/Mort-01.mp3")])
        let sharedId = try library.add(shared)
        #expect(try library.files(of: sharedId).map(\.path) == ["/mixed/Mort-01.mp3"])
        #expect(try library.files(of: one.id).count == 3)
    }

    @Test("A refused re-import changes nothing")
    func refusedReimportIsAtomic() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(Self.first)
        let before = try Snapshot(library)
        // b's tags are updated and d inserted before the repeated d fails: all of it must roll back.
        var bad = Self.second
        bad.files.append(track("/books/Mort/d.mp3", title: "again"))
        expectError(.invalidArgument) { try library.importBook(bad, into: nil) }
        #expect(try Snapshot(library) == before)
        #expect(try library.files(of: id).map(\.title) == ["A", "B", "C"])
        expectError(.invalidArgument) { try library.importBook(importedBook("/books/Mort", paths: []), into: nil) }
        #expect(try Snapshot(library) == before)
    }

    /// A file imported alone (opened, or `lectern import FILE`) is some of its book's files: it joins the book of its
    /// folder and album, or the book that has it, and the book's other files, folder and place stay as they are.
    @Test func aFileImportedAloneJoinsItsBookAndLeavesTheRestAlone() throws {
        let t = try TestLibrary()
        let library = t.library
        let saga = try library.add(importedBook("/books/Saga", album: "Saga", files: [
            track("/books/Saga/Disc 1/01.mp3", title: "One"), track("/books/Saga/Disc 2/01.mp3", title: "Two"),
        ]))
        let ids = try library.fileIds(of: saga)
        #expect(try library.savePosition(of: saga, file: ids[1], offset: 42))

        // A file of it, in a disc's folder: the book that has it, its folder still the book's.
        var alone = importedBook("/books/Saga/Disc 2", album: "Saga", files: [track("/books/Saga/Disc 2/01.mp3", title: "Two again")])
        alone.isPartial = true
        let outcome = try library.importBook(alone, into: nil)
        #expect(outcome.id == saga && !outcome.created && outcome.duplicates.isEmpty)
        // A new file of its folder and album: it joins, after the others.
        alone = importedBook("/books/Saga", album: "Saga", files: [track("/books/Saga/03.mp3", title: "Three")])
        alone.isPartial = true
        #expect(try library.importBook(alone, into: nil).id == saga)

        let files = try library.files(of: saga)
        #expect(files.map(\.title) == ["One", "Two again", "Three"])
        #expect(files.allSatisfy { $0.available })
        let book = try library.book(saga)
        #expect(book.sourcePath == "/books/Saga")
        #expect(book.positionFileId == ids[1] && book.positionOffset == 42)
        #expect(try library.bookCount() == 1)

        // Imported as the whole folder, the same files: those not found are missing.
        _ = try library.importBook(importedBook("/books/Saga", album: "Saga", files: [track("/books/Saga/03.mp3", title: "Three")]), into: nil)
        #expect(try library.files(of: saga).map(\.available) == [false, false, true])
    }
}
