import Foundation
import LecternLibrary
import Testing
import TestSupport

@Suite("Books")
struct BookTests {
    @Test("importBook creates a book with its files in the given order and their chapters")
    func importCreates() throws {
        let t = try TestLibrary()
        let library = t.library
        let shelf = try library.createShelf(named: "Shelf", in: nil)
        let imported = ImportedBook(sourcePath: "/books/Mort", albumKey: "Mort", title: "  Mort  ", author: "Terry Pratchett",
                                    coverPath: "/books/Mort/cover.jpg", files: [
            track("/books/Mort/c.mp3", duration: 3_000_000, title: "Three", artist: "Tony Robinson", album: "Mort",
                  albumArtist: "Terry Pratchett", composer: "Nobody", genre: "Fantasy", trackNumber: 3, chapters: [
                    .init(title: "Opening", start: 0, end: 1_000_000),
                    .init(title: "Middle", start: 1_000_000, end: 2_000_000),
                    .init(title: "End", start: 2_000_000, end: nil),
                  ]),
            track("/books/Mort/a.mp3", duration: nil),
            track("/books/Mort/b.mp3", duration: 2_000_000, chapters: [
                .init(title: "Clamped", start: -5, end: -1),  // negative start and an end before the start
            ]),
        ])
        let start = Date()
        let result = try library.importBook(imported, into: shelf.id)
        #expect(result.created)
        let book = try library.book(result.id)
        #expect(book.id == result.id)
        #expect(book.title == "Mort")
        #expect(book.author == "Terry Pratchett")
        #expect(book.narrator == nil)
        #expect(book.coverPath == "/books/Mort/cover.jpg")
        #expect(book.sourcePath == "/books/Mort")
        #expect(book.albumKey == "Mort")
        #expect(book.shelfId == shelf.id)
        #expect(!book.finished)
        #expect(book.note == "")
        #expect(book.settings == BookSettings())
        #expect(book.positionFileId == nil)
        #expect(book.positionOffset == 0)
        #expect(book.lastPlayedAt == nil)
        #expect(book.userOrder == 1)
        #expect(abs(book.addedAt.timeIntervalSince(start)) < 5)
        #expect(book.modifiedAt == book.addedAt)

        let files = try library.files(of: result.id)
        #expect(files.map(\.path) == ["/books/Mort/c.mp3", "/books/Mort/a.mp3", "/books/Mort/b.mp3"])
        #expect(files.map(\.position) == [0, 1, 2])
        #expect(files.map(\.duration) == [3_000_000, nil, 2_000_000])
        #expect(files.allSatisfy { $0.available && $0.bookId == result.id })
        let first = files[0]
        #expect(first.title == "Three")
        #expect(first.artist == "Tony Robinson")
        #expect(first.album == "Mort")
        #expect(first.albumArtist == "Terry Pratchett")
        #expect(first.composer == "Nobody")
        #expect(first.genre == "Fantasy")
        #expect(first.trackNumber == 3)
        #expect(first.discNumber == nil)

        let chapters = try library.chapters(of: result.id)
        #expect(chapters.count == 2)  // the file without chapters has none stored
        let c = try #require(chapters[files[0].id!])
        #expect(c.map(\.title) == ["Opening", "Middle", "End"])
        #expect(c.map(\.position) == [0, 1, 2])
        #expect(c.map(\.start) == [0, 1_000_000, 2_000_000])
        #expect(c.map(\.end) == [1_000_000, 2_000_000, nil])
        #expect(chapters[files[1].id!] == nil)
        let clamped = try #require(chapters[files[2].id!]?.first)
        #expect(clamped.start == 0)
        #expect(clamped.end == 0)

        #expect(try library.totals(of: [result.id]) == [result.id: BookTotals(files: 3, available: 3, duration: 5_000_000)])
        // The next book comes next in the user's order.
        let second = try library.importBook(importedBook("/books/Eric"), into: nil)
        #expect(second.created)
        #expect(try library.book(second.id).userOrder == 2)
    }

    @Test("A book read from its row has every column's value, as written")
    func everyColumnIsRead() async throws {
        let t = try TestLibrary()
        let library = t.library
        let shelf = try library.createShelf(named: "Shelf", in: nil).id!
        let id = try library.add(importedBook("/every", album: "Album Key", title: "Every Column", author: "An Author",
                                              cover: "/every/cover.jpg"), into: shelf)
        let file = try library.fileIds(of: id)[1]
        let settings = BookSettings(volume: 0.5, speed: 1.25, shuffle: true, loop: .book, normalise: true, skipIntro: 12.5,
                                    skipOutro: 8, compress: true, skipSilence: true, silenceThreshold: 0.8, silenceAmount: 0.6)
        try library.setSettings(of: id, settings)
        try library.setLoudness(of: id, .success(-21.5))
        try library.setNote(of: id, "a note")
        try library.setFinished(id, true)
        _ = try library.savePosition(of: id, file: file, offset: 1234, playedAt: Date(timeIntervalSince1970: 1_700_000_000.125))
        // No call writes a narrator or the user's order: the sqlite3 shell does (a test package).
        _ = try #require(try await sqlite3(t.path, "UPDATE book SET narrator = 'A Narrator', userOrder = 42, offline = 1, "
                                     + "mountPath = '/mnt/disk' WHERE id = \(id)"))
        // The table's columns: one added must be read by Book(row:) and checked here (progress, kept by triggers for
        // the listings' order, is not a Book's).
        let columns = try #require(try await sqlite3(t.path, "SELECT name FROM pragma_table_info('book') ORDER BY name"))
        #expect(columns == ["addedAt", "albumKey", "author", "compress", "coverPath", "finished", "id", "lastPlayedAt", "loop",
                            "loudness", "loudnessProblem", "modifiedAt", "mountPath", "narrator", "normalise", "note", "offline",
                            "positionFileId", "positionOffset", "progress", "series", "seriesPart", "shelfId", "shuffle", "silenceAmount",
                            "silenceThreshold", "skipIntro", "skipOutro", "skipSilence", "sourcePath", "speed", "title",
                            "userOrder", "volume"])
        let book = try library.book(id)
        #expect(book.id == id && book.shelfId == shelf && book.title == "Every Column" && book.author == "An Author")
        #expect(book.narrator == "A Narrator" && book.coverPath == "/every/cover.jpg" && book.sourcePath == "/every")
        #expect(book.albumKey == "Album Key" && book.note == "a note" && book.finished && book.userOrder == 42)
        #expect(book.settings == settings)
        #expect(book.loudness == -21.5 && book.loudnessProblem == nil)
        #expect(book.positionFileId == file && book.positionOffset == 1234)
        #expect(book.lastPlayedAt == Date(timeIntervalSince1970: 1_700_000_000.125))
        #expect(book.offline && book.mountPath == "/mnt/disk")
        #expect(abs(book.addedAt.timeIntervalSinceNow) < 600 && book.modifiedAt >= book.addedAt)
        // The same through a listing, a search and a random pick.
        #expect(try library.everyBook(in: shelf, recursive: false) == [book])
        #expect(try library.search("every", offset: 0, limit: 1).books == [book])
        #expect(try library.randomBook(LibraryQuery(title: "every"))?.book == book)
        // A measurement that failed replaces the loudness with its reason, and the reverse.
        try library.setLoudness(of: id, .failure(LoudnessProblem("all silence")))
        #expect(try library.book(id).loudness == nil && library.book(id).loudnessProblem == "all silence")
        try library.setLoudness(of: id, .success(-30))
        #expect(try library.book(id).loudness == -30 && library.book(id).loudnessProblem == nil)
    }

    @Test("A title over 1,024 characters is cut to 1,024")
    func longTitleIsCut() throws {
        let library = try Library()
        let id = try library.add(importedBook("/long", title: String(repeating: "t", count: 5000)))
        #expect(try library.book(id).title == String(repeating: "t", count: 1024))
    }

    @Test("A long title of multi-code-point characters is cut, not refused")
    func longEmojiTitleIsCut() throws {
        let library = try Library()
        let id = try library.add(importedBook("/flags", title: String(repeating: "🇫🇷", count: 2000)))
        #expect(try library.book(id).title.unicodeScalars.count <= 1024)
    }

    @Test("Refused imports create nothing")
    func refusedImports() throws {
        let t = try TestLibrary()
        let library = t.library
        try library.add(importedBook("/existing"))
        let before = try Snapshot(library)
        expectError(.invalidArgument, "no files") { try library.importBook(importedBook("/a", paths: []), into: nil) }
        expectError(.invalidArgument, "empty title") { try library.importBook(importedBook("/a", title: "  "), into: nil) }
        expectError(.notFound, "unknown shelf") { try library.importBook(importedBook("/a"), into: 777) }
        // The second file fails after the book and the first file were inserted: all of it is rolled back.
        expectError(.invalidArgument, "duplicate path") {
            try library.importBook(importedBook("/a", files: [track("/a/1.mp3"), track("/a/2.mp3"), track("/a/1.mp3")]), into: nil)
        }
        #expect(try Snapshot(library) == before)
        #expect(try library.bookCount() == 1)
        #expect(try library.integrityCheck() == "ok")
    }

    @Test("Listing by shelf: top level, one shelf, recursively; ordered by title")
    func listing() throws {
        let t = try TestLibrary()
        let library = t.library
        let series = try #require(try library.shelf(atPath: "Series"))
        let discworld = try #require(try library.shelf(atPath: "Series/Discworld"))
        let other = try #require(try library.shelf(atPath: "Other"))
        let top1 = try library.add(importedBook("/t1", title: "zebra"))
        let top2 = try library.add(importedBook("/t2", title: "Apple"))
        let s1 = try library.add(importedBook("/s1", title: "Mort"), into: series)
        let d1 = try library.add(importedBook("/d1", title: "Eric"), into: discworld)
        let d2 = try library.add(importedBook("/d2", title: "guards"), into: discworld)
        let o1 = try library.add(importedBook("/o1", title: "Other book"), into: other)

        #expect(try library.everyBook(in: nil, recursive: false).map(\.id) == [top2, top1])
        #expect(try library.everyBook(in: nil, recursive: true).map(\.id) == [top2, d1, d2, s1, o1, top1])
        #expect(try library.everyBook(in: series, recursive: false).map(\.id) == [s1])
        #expect(try library.everyBook(in: series, recursive: true).map(\.id) == [d1, d2, s1])
        #expect(try library.everyBook(in: discworld, recursive: false).map(\.id) == [d1, d2])
        #expect(try library.everyBook(in: discworld, recursive: true).map(\.id) == [d1, d2])
        #expect(try library.everyBook(in: other, recursive: true).map(\.id) == [o1])
        #expect(try library.bookCount() == 6)
    }

    @Test("book(_:), files(of:), chapters(of:) of unknown books")
    func unknownBook() throws {
        let library = try Library()
        try library.add(importedBook("/a"))
        expectError(.notFound) { try library.book(999) }
        expectError(.notFound) { try library.files(of: 999) }
        expectError(.notFound) { try library.renameBook(999, to: "X") }
        expectError(.notFound) { try library.moveBook(999, to: nil) }
        expectError(.notFound) { try library.deleteBook(999) }
        expectError(.notFound) { try library.reorderFiles(of: 999, []) }
        expectError(.notFound) { try library.setSettings(of: 999, BookSettings()) }
        expectError(.notFound) { try library.setNote(of: 999, "x") }
        expectError(.notFound) { try library.setFinished(999, true) }
        expectError(.notFound) { try library.bookmarks(of: 999) }
        expectError(.notFound) { try library.addBookmark(to: 999, file: 1, offset: 0, title: "x") }
    }

    @Test("Skipped intros and outros are 0 to 600 seconds each; out of range changes nothing")
    func skipBounds() throws {
        let library = try Library()
        let id = try library.add(importedBook("/b"))
        try library.setSettings(of: id, BookSettings(skipIntro: 12))
        for (intro, outro) in [(600.5, 0.0), (0, -1), (.nan, 0), (0, .infinity)] {
            expectError(.invalidArgument, "skipping \(intro), \(outro)") {
                try library.setSettings(of: id, BookSettings(skipIntro: intro, skipOutro: outro))
            }
        }
        #expect(try library.book(id).settings == BookSettings(skipIntro: 12))
        try library.setSettings(of: id, BookSettings(skipIntro: 600, skipOutro: 600))
        #expect(try library.book(id).settings == BookSettings(skipIntro: 600, skipOutro: 600))
    }

    @Test("Skip silence: a threshold of 0.1 to 10 seconds, an amount of 0.1 to 1; out of range changes nothing")
    func silenceBounds() throws {
        let library = try Library()
        let id = try library.add(importedBook("/b"))
        #expect(try library.book(id).settings == BookSettings(skipSilence: false, silenceThreshold: 0.5, silenceAmount: 0.75))
        let chosen = BookSettings(skipSilence: true, silenceThreshold: 1.5, silenceAmount: 0.5)
        try library.setSettings(of: id, chosen)
        for (threshold, amount) in [(0.09, 0.5), (10.01, 0.5), (Double.nan, 0.5), (1, 0.09), (1, 1.01), (1, -.infinity)] {
            expectError(.invalidArgument, "threshold \(threshold), amount \(amount)") {
                try library.setSettings(of: id, BookSettings(skipSilence: true, silenceThreshold: threshold, silenceAmount: amount))
            }
        }
        #expect(try library.book(id).settings == chosen)
        // Off, the values are kept for the next time it is on.
        let off = BookSettings(skipSilence: false, silenceThreshold: 10, silenceAmount: 0.1)
        try library.setSettings(of: id, off)
        #expect(try library.book(id).settings == off)
    }

    @Test("Operations on an unknown book that report nothing")
    func unknownBookSilent() throws {
        let library = try Library()
        let real = try library.add(importedBook("/a"))
        let file = try library.fileIds(of: real)[0]
        expectError(.notFound) { try library.chapters(of: 999) }
        expectError(.notFound) { try library.savePosition(of: 999, file: file, offset: 0) }
        expectError(.notFound) { try library.markPlayed(999) }
        expectError(.notFound) { try library.setCurrentBook(999) }
        #expect(try library.currentBook() == nil)
    }

    @Test("Rename: trimmed, modifiedAt moves; invalid titles refused")
    func rename() async throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/r", title: "Old"))
        let before = try library.book(id)
        try await Task.sleep(for: .milliseconds(10))
        try library.renameBook(id, to: "  New title ")
        let after = try library.book(id)
        #expect(after.title == "New title")
        #expect(after.modifiedAt > before.modifiedAt)
        #expect(after.addedAt == before.addedAt)
        let snapshot = try Snapshot(library)
        for bad in ["", "   ", String(repeating: "x", count: 1025), "a\u{0}b"] {
            expectError(.invalidArgument, "\(bad.prefix(10).debugDescription)") { try library.renameBook(id, to: bad) }
        }
        #expect(try Snapshot(library) == snapshot)
        try library.renameBook(id, to: String(repeating: "y", count: 1024))
        #expect(try library.book(id).title.count == 1024)
    }

    @Test("Move to a shelf and back to none")
    func moveBook() throws {
        let t = try TestLibrary()
        let library = t.library
        let shelf = try library.createShelf(named: "S", in: nil)
        let id = try library.add(importedBook("/m"))
        try library.moveBook(id, to: shelf.id)
        #expect(try library.book(id).shelfId == shelf.id)
        #expect(try library.everyBook(in: shelf.id, recursive: false).map(\.id) == [id])
        #expect(try library.everyBook(in: nil, recursive: false).isEmpty)
        try library.moveBook(id, to: nil)
        #expect(try library.book(id).shelfId == nil)
        #expect(try library.everyBook(in: nil, recursive: false).map(\.id) == [id])
        #expect(try library.everyBook(in: shelf.id, recursive: false).isEmpty)
        // The shelf is empty again: it can be deleted without `recursive`.
        try library.deleteShelf(shelf.id!, recursive: false)
    }

    @Test("Delete: files, chapters and bookmarks go; it's no longer the current book")
    func deleteBook() async throws {
        let t = try TestLibrary()
        let library = t.library
        let keep = try library.add(importedBook("/keep"))
        let id = try library.add(importedBook("/gone", files: [
            track("/gone/1.mp3", chapters: [.init(title: "c", start: 0, end: nil)]), track("/gone/2.mp3"),
        ]))
        let files = try library.fileIds(of: id)
        let mark = try library.addBookmark(to: id, file: files[1], offset: 3, title: "b")
        let keptMark = try library.addBookmark(to: keep, file: try library.fileIds(of: keep)[0], offset: 3, title: "k")
        try library.savePosition(of: id, file: files[1], offset: 10)
        try library.setCurrentBook(id)

        try library.deleteBook(id)
        expectError(.notFound) { try library.book(id) }
        expectError(.notFound) { try library.files(of: id) }
        expectError(.notFound) { try library.bookmark(mark.id!) }
        expectError(.notFound) { try library.deleteBook(id) }
        expectError(.notFound) { try library.chapters(of: id) }
        #expect(try library.totals(of: [id]).isEmpty)
        #expect(try library.currentBook() == nil)
        #expect(try library.bookmark(keptMark.id!).title == "k")
        #expect(try library.bookCount() == 1)
        if let counts = try await sqlite3(t.path, "SELECT (SELECT count(*) FROM bookFile) || ' ' || (SELECT count(*) FROM chapter) || ' ' || (SELECT count(*) FROM bookmark)") {
            #expect(counts == ["3 0 1"])
        }

        // Deleting another book leaves the current book alone.
        let other = try library.add(importedBook("/other"))
        try library.setCurrentBook(keep)
        try library.deleteBook(other)
        #expect(try library.currentBook() == keep)
        #expect(try library.integrityCheck() == "ok")
    }

    @Test("reorderFiles with a permutation")
    func reorder() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/o", paths: ["1", "2", "3", "4", "5"]))
        let ids = try library.fileIds(of: id)
        let order = [ids[3], ids[0], ids[4], ids[2], ids[1]]
        try library.reorderFiles(of: id, order)
        let files = try library.files(of: id)
        #expect(files.map(\.id!) == order)
        #expect(files.map(\.position) == [0, 1, 2, 3, 4])
        try library.reorderFiles(of: id, order)  // the same order again
        #expect(try library.fileIds(of: id) == order)
        try library.reorderFiles(of: id, ids)
        #expect(try library.fileIds(of: id) == ids)
    }

    @Test("reorderFiles with a wrong list is refused and changes nothing")
    func reorderRefused() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/o", paths: ["1", "2", "3"]))
        let otherBook = try library.add(importedBook("/p", paths: ["1"]))
        let foreign = try library.fileIds(of: otherBook)[0]
        let ids = try library.fileIds(of: id)
        try library.reorderFiles(of: id, [ids[2], ids[1], ids[0]])
        let before = try Snapshot(library)
        let wrong: [(String, [Int64])] = [
            ("missing", [ids[0], ids[1]]),
            ("extra foreign", [ids[0], ids[1], ids[2], foreign]),
            ("extra unknown", [ids[0], ids[1], ids[2], 9999]),
            ("duplicate", [ids[0], ids[1], ids[1]]),
            ("duplicate and extra", [ids[0], ids[1], ids[2], ids[2]]),
            ("foreign instead of one", [ids[0], ids[1], foreign]),
            ("empty", []),
        ]
        for (name, list) in wrong {
            expectError(.invalidArgument, Comment(rawValue: name)) { try library.reorderFiles(of: id, list) }
        }
        #expect(try Snapshot(library) == before)
        #expect(try library.fileIds(of: id) == [ids[2], ids[1], ids[0]])
    }

    @Test("The shuffled order is kept with the book, survives a re-import, names its files once and goes with the book")
    func shuffleOrder() async throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/shuffled"))
        let files = try library.fileIds(of: id)
        #expect(files.count >= 2)
        #expect(try library.shuffleOrder(of: id) == [])
        let modified = try library.book(id).modifiedAt
        try library.setShuffleOrder(of: id, files.reversed())
        #expect(try library.shuffleOrder(of: id) == files.reversed())
        #expect(try library.book(id).modifiedAt == modified)
        _ = try library.add(importedBook("/shuffled"))  // the same folder again
        #expect(try library.shuffleOrder(of: id) == files.reversed())
        try library.setShuffleOrder(of: id, [files[1], files[0]])  // a shorter order replaces the longer one
        #expect(try library.shuffleOrder(of: id) == [files[1], files[0]])
        try library.setShuffleOrder(of: id, [])
        #expect(try library.shuffleOrder(of: id) == [])
        expectError(.notFound) { try library.setShuffleOrder(of: 999_999, files) }
        expectError(.notFound) { try library.shuffleOrder(of: 999_999) }

        try library.setShuffleOrder(of: id, files)
        let other = try library.add(importedBook("/other"))
        let before = try library.shuffleOrder(of: id)
        expectError(.invalidArgument, "a file of another book") { try library.setShuffleOrder(of: id, [try library.fileIds(of: other)[0]]) }
        expectError(.invalidArgument, "a file twice") { try library.setShuffleOrder(of: id, [files[0], files[0]]) }
        expectError(.invalidArgument, "no such file") { try library.setShuffleOrder(of: id, [999_999]) }
        #expect(try library.shuffleOrder(of: id) == before)
        try library.setShuffleOrder(of: other, try library.fileIds(of: other))

        try library.deleteBook(id)
        #expect(try library.shuffleOrder(of: other) == library.fileIds(of: other))
        if let rows = try await sqlite3(t.path, "SELECT DISTINCT bookId FROM shuffledFile") { #expect(rows == [String(other)]) }
    }

    @Test("Settings: set and get, bounds and NaN refused")
    func settings() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/s"))
        #expect(try library.book(id).settings == BookSettings(volume: 1, speed: 1, shuffle: false, loop: .none))
        let modified = try library.book(id).modifiedAt
        let chosen = BookSettings(volume: 0.25, speed: 1.75, shuffle: true, loop: .book)
        try library.setSettings(of: id, chosen)
        #expect(try library.book(id).settings == chosen)
        #expect(try library.book(id).modifiedAt == modified)  // settings don't count as a modification
        for ok in [BookSettings(volume: 0, speed: 0.5), BookSettings(volume: 10, speed: 3, loop: .chapter), chosen] {
            try library.setSettings(of: id, ok)
            #expect(try library.book(id).settings == ok)
        }
        let before = try Snapshot(library)
        let bad: [BookSettings] = [
            BookSettings(volume: -0.01), BookSettings(volume: 10.01), BookSettings(volume: .nan), BookSettings(volume: .infinity),
            BookSettings(speed: 0.49), BookSettings(speed: 3.01), BookSettings(speed: .nan), BookSettings(speed: -.infinity),
            BookSettings(speed: 0),
        ]
        for settings in bad {
            expectError(.invalidArgument, "\(settings)") { try library.setSettings(of: id, settings) }
        }
        #expect(try Snapshot(library) == before)
    }

    @Test("Note: set, unicode, limit of 100,000 characters")
    func note() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/n"))
        try library.setNote(of: id, "Line 1\nLine 2 — ünïcødé 🎧")
        #expect(try library.book(id).note == "Line 1\nLine 2 — ünïcødé 🎧")
        let longest = String(repeating: "n", count: 100_000)
        try library.setNote(of: id, longest)
        #expect(try library.book(id).note == longest)
        let before = try Snapshot(library)
        expectError(.invalidArgument) { try library.setNote(of: id, longest + "n") }
        #expect(try Snapshot(library) == before)
        try library.setNote(of: id, "")
        #expect(try library.book(id).note == "")
    }

    @Test("A note with a NUL character is refused or kept whole")
    func noteWithNul() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/n"))
        let note = "before\u{0}after"
        try library.setNote(of: id, "kept")
        expectError(.invalidArgument) { try library.setNote(of: id, note) }
        #expect(try library.book(id).note == "kept")
    }

    @Test("Finished flag")
    func finished() throws {
        let library = try Library()
        let id = try library.add(importedBook("/f"))
        #expect(try !library.book(id).finished)
        try library.setFinished(id, true)
        #expect(try library.book(id).finished)
        try library.setFinished(id, true)
        #expect(try library.book(id).finished)
        try library.setFinished(id, false)
        #expect(try !library.book(id).finished)
    }
}
