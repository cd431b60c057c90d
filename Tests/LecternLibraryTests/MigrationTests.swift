import Foundation
import GRDB
@testable import LecternLibrary
import Testing
import TestSupport

/// A library written by the version before the current book, shuffled orders and loops had their own rules in
/// the schema (migrated up to v3), opened by this one.
@Suite("Migrations of an existing library")
struct MigrationTests {
    static let lastOldMigration = "v3: a book's shuffled play order"

    /// The ids an old library was made with.
    struct Old {
        var books: [Int64] = []
        var files: [Int64: [Int64]] = [:]
        var deleted: Int64 = 0
    }

    /// Makes a library at v3 in `path`: four books of three files each (loops None, Track, Playlist, None), the
    /// current book given, `orders(old)` as each book's shuffleOrder text, and a fifth book deleted (the highest id).
    static func makeOldLibrary(_ path: String, current: (Old) -> String?, orders: (Old) -> [Int64: String]) throws -> Old {
        let queue = try DatabaseQueue(path: path)
        try Schema.migrator.migrate(queue, upTo: lastOldMigration)
        return try queue.write { db in
            var old = Old()
            for (index, loop) in ["None", "Track", "Playlist", "None", "None"].enumerated() {
                try db.execute(sql: """
                    INSERT INTO book(title, addedAt, modifiedAt, loop, userOrder, volume, speed, shuffle)
                    VALUES (?, '2024-01-02 03:04:05.000', '2024-01-02 03:04:05.000', ?, ?, 0.5, 1.5, 1)
                    """, arguments: ["Book \(index)", loop, index])
                let book = db.lastInsertedRowID
                old.books.append(book)
                for position in 0..<3 {
                    try db.execute(sql: "INSERT INTO bookFile(bookId, path, position) VALUES (?, ?, ?)",
                                   arguments: [book, "/old/\(index)/\(position).mp3", position])
                    old.files[book, default: []].append(db.lastInsertedRowID)
                }
            }
            old.deleted = old.books.removeLast()
            try db.execute(sql: "DELETE FROM book WHERE id = ?", arguments: [old.deleted])
            old.files[old.deleted] = nil
            if let current = current(old) {
                try db.execute(sql: "INSERT INTO setting(key, value) VALUES ('currentBook', ?)", arguments: [current])
            }
            for (book, text) in orders(old) {
                try db.execute(sql: "UPDATE book SET shuffleOrder = ? WHERE id = ?", arguments: [text, book])
            }
            return old
        }
    }

    @Test("The current book, shuffled orders and loops are carried over, and the rules hold after")
    func carriesOver() throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        let old = try Self.makeOldLibrary(path, current: { String($0.books[1]) }, orders: { old in
            let (a, b) = (old.files[old.books[0]]!, old.files[old.books[1]]!)
            return [
                // Repeats, an id of no file, a file of another book, junk: only the book's files, once each.
                old.books[0]: "\(a[2]),\(a[0]),999999,\(a[0]),\(b[1]),x,,\(a[1])",
                old.books[1]: "\(b[1]),\(b[2]),\(b[0])",
                old.books[2]: "\(a[0]),999999",
            ]
        })
        let (a, b) = (old.books[0], old.books[1])
        let filesOfA = old.files[a]!
        let filesOfB = old.files[b]!

        let library = try Library(path: path)
        #expect(library.movedAsideCorruptFile == nil)
        #expect(try library.integrityCheck() == "ok")
        #expect(try library.currentBook() == b)
        #expect(try old.books.map { try library.book($0).loop } == [.none, .chapter, .book, .none])
        #expect(try library.book(b).settings == BookSettings(volume: 0.5, speed: 1.5, shuffle: true, loop: .chapter))
        #expect(try library.book(a).title == "Book 0")
        #expect(try library.shuffleOrder(of: a) == [filesOfA[2], filesOfA[0], filesOfA[1]])
        #expect(try library.shuffleOrder(of: b) == [filesOfB[1], filesOfB[2], filesOfB[0]])
        #expect(try library.shuffleOrder(of: old.books[2]) == [])
        #expect(try library.shuffleOrder(of: old.books[3]) == [])
        #expect(try library.files(of: a).map(\.id!) == filesOfA)

        // The id of the book deleted before the migration is not given again.
        let added = try library.add(importedBook("/new"))
        #expect(added > old.deleted)
        // The book's rules came through the new table: a position in another book's file, a bad loop, a title.
        expectError(.invalidArgument) { try library.savePosition(of: a, file: filesOfB[0], offset: 1) }
        #expect(try library.savePosition(of: a, file: filesOfA[1], offset: 7))
        expectError(.invalidArgument) { try library.renameBook(a, to: " ") }
        let other = try DatabaseQueue(path: path)
        #expect(throws: DatabaseError.self, "the old spelling of a loop") {
            try other.write { try $0.execute(sql: "UPDATE book SET loop = 'Track' WHERE id = ?", arguments: [a]) }
        }
        #expect(try library.book(a).loop == .none)
        // Deleting the current book clears it.
        try library.deleteBook(b)
        #expect(try library.currentBook() == nil)
    }

    @Test("A current book that no longer exists, or none, is no current book after the migration")
    func currentBookGone() throws {
        for current in [{ (old: Old) in String(old.deleted) }, { _ in "not a number" }, { _ in nil }] as [(Old) -> String?] {
            let dir = try TemporaryDirectory(prefix: "lectern-library")
            let path = dir.path + "/library.sqlite"
            let old = try Self.makeOldLibrary(path, current: current, orders: { _ in [:] })
            let library = try Library(path: path)
            #expect(try library.currentBook() == nil)
            try library.setCurrentBook(old.books[0])
            #expect(try library.currentBook() == old.books[0])
        }
    }

    /// A library file in a new folder, migrated up to `migration` (the folder goes when the first value does).
    static func library(migratedUpTo migration: String) throws -> (TemporaryDirectory, String, DatabaseQueue) {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        let queue = try DatabaseQueue(path: path)
        try Schema.migrator.migrate(queue, upTo: migration)
        return (dir, path, queue)
    }

    @Test("A library of v6 gets its search index and progress made from what it holds, and kept in step after")
    func searchIndexFromV6() throws {
        let (dir, path, queue) = try Self.library(migratedUpTo: "v6: a book's loop in Lectern's words")
        defer { dir.remove() }
        let (eyre, dune, mort, eyreFiles) = try queue.write { db -> (Int64, Int64, Int64, [Int64]) in
            try db.execute(sql: "INSERT INTO shelf(name) VALUES ('Series')")
            try db.execute(sql: "INSERT INTO shelf(parentId, name) VALUES (?, 'Discworld')", arguments: [db.lastInsertedRowID])
            let discworld = db.lastInsertedRowID
            func book(_ title: String, _ author: String?, shelf: Int64?, note: String = "", finished: Bool = false,
                      files: [(title: String, artist: String?, duration: Int64)]) throws -> (Int64, [Int64]) {
                try db.execute(sql: """
                    INSERT INTO book(shelfId, title, author, addedAt, modifiedAt, note, finished)
                    VALUES (?, ?, ?, '2024-01-02 03:04:05.000', '2024-01-02 03:04:05.000', ?, ?)
                    """, arguments: [shelf, title, author, note, finished])
                let id = db.lastInsertedRowID
                let fileIds = try files.enumerated().map { position, file in
                    try db.execute(sql: "INSERT INTO bookFile(bookId, path, position, title, artist, duration) VALUES (?, ?, ?, ?, ?, ?)",
                                   arguments: [id, "/old/\(id)/\(position).mp3", position, file.title, file.artist, file.duration])
                    return db.lastInsertedRowID
                }
                return (id, fileIds)
            }
            let (eyre, eyreFiles) = try book("Jane Eyre", "Charlotte Brontë", shelf: nil, files: [
                ("Chapter One", "Juliet Stevenson", 3_000_000), ("Chapter Two", "Juliet Stevenson", 1_000_000)])
            let (dune, _) = try book("Dune", "Frank Herbert", shelf: nil, note: "the Litany against Fear", files: [("Part 1", nil, 1_000_000)])
            let (mort, _) = try book("Mort", "Terry Pratchett", shelf: discworld, finished: true, files: [("Mort", "Nigel Planer", 1_000_000)])
            try db.execute(sql: "UPDATE book SET positionFileId = ?, positionOffset = 500000 WHERE id = ?", arguments: [eyreFiles[1], eyre])
            try db.execute(sql: "INSERT INTO bookmark(bookId, fileId, offset, title, note, createdAt) VALUES (?, ?, 0, 'Red room', 'Reread this', '2024-01-02 03:04:05.000')",
                           arguments: [eyre, eyreFiles[0]])
            return (eyre, dune, mort, eyreFiles)
        }
        try queue.close()

        let library = try Library(path: path)
        #expect(try library.integrityCheck() == "ok")
        func found(_ text: String) throws -> [Int64] { try library.search(text, offset: 0, limit: 10).books.map(\.id!) }
        #expect(try found("bronte") == [eyre])
        #expect(try found("juliet") == [eyre])
        #expect(try found("chapter two") == [eyre])
        #expect(try found("reread") == [eyre], "a bookmark's note")
        #expect(try found("red room") == [eyre], "a bookmark's title")
        #expect(try found("litany") == [dune], "a book's note")
        #expect(try found("discw") == [mort], "the series")
        #expect(try found("nigel") == [mort])
        // Mort finished; Jane Eyre 3.5 s of 4; Dune not started.
        #expect(try library.books(in: nil, recursive: true, sortedBy: .progress, offset: 0, limit: 10).books.map(\.id!) == [mort, eyre, dune])
        #expect(try library.books(in: nil, recursive: true, sortedBy: .author, offset: 0, limit: 10).books.map(\.id!) == [eyre, dune, mort])

        // Writes after the migration keep it in step.
        try library.renameBook(eyre, to: "Villette")
        #expect(try found("eyre") == [])
        #expect(try found("villette") == [eyre])
        try library.savePosition(of: eyre, file: eyreFiles[0], offset: 0)
        #expect(try library.books(in: nil, recursive: true, sortedBy: .progress, offset: 0, limit: 10).books.map(\.id!) == [mort, dune, eyre])
        try library.deleteBook(mort)
        #expect(try found("nigel") == [])
    }

    @Test("A library of v8 gets v9: every book available, files keep their state, bookTags copied from the search row")
    func v9FromV8() throws {
        let (dir, path, queue) = try Self.library(migratedUpTo: "v8: file fingerprints")
        defer { dir.remove() }
        let book = try queue.write { db -> Int64 in
            try db.execute(sql: """
                INSERT INTO book(title, author, addedAt, modifiedAt) VALUES ('Dune', 'Frank Herbert', '2024-01-02 03:04:05.000', '2024-01-02 03:04:05.000')
                """)
            let book = db.lastInsertedRowID
            for (position, available) in [true, false].enumerated() {
                try db.execute(sql: "INSERT INTO bookFile(bookId, path, position, artist, genre, available) VALUES (?, ?, ?, 'Scott Brick', 'SF', ?)",
                               arguments: [book, "/old/\(position).mp3", position, available])
            }
            return book
        }
        try queue.close()

        let library = try Library(path: path)
        #expect(try library.bookPlaces() == [BookPlace(id: book, sourcePath: nil, mountPath: nil, offline: false)])
        #expect(try library.files(of: book).map(\.available) == [true, false])
        #expect(try library.availability() == LibraryAvailability(offlineBooks: 0, missingFiles: 1))
        // The triggers of v9 keep Find's tags in step with the view, as v7's did.
        try library.renameBook(book, to: "Dune Messiah")
        _ = try library.add(ImportedBook(sourcePath: "/new", albumKey: "", title: "Emma", author: nil, coverPath: nil,
                                         files: [track("/new/1.mp3", artist: "Juliet Stevenson", genre: "Classics")]))
        #expect(try library.search("juliet", offset: 0, limit: 10).books.map(\.title) == ["Emma"])
        #expect(try library.everyMatch(LibraryQuery(genre: "classics")).map(\.title) == ["Emma"])
        #expect(try library.everyMatch(LibraryQuery(author: "brick")).map(\.title) == ["Dune Messiah"])
        let reader = try DatabaseQueue(path: path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        let differing = try reader.read { db in
            try Int.fetchOne(db, sql: """
                SELECT count(*) FROM bookSearchText v LEFT JOIN bookTags t ON t.bookId = v.id
                WHERE t.bookId IS NULL OR t.author IS NOT v.author OR t.album IS NOT v.album OR t.composer IS NOT v.composer
                   OR t.genre IS NOT v.genre
                """)
        }
        #expect(differing == 0)
    }

    @Test("A library of v9 gets v12: files are read again by the next import, their tags' words kept from then on")
    func v12FromV9() throws {
        let (dir, path, queue) = try Self.library(migratedUpTo: "v9: missing files, offline books, one search row")
        defer { dir.remove() }
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO book(title, addedAt, modifiedAt) VALUES ('Dune', '2024-01-02 03:04:05.000', '2024-01-02 03:04:05.000')
                """)
            try db.execute(sql: """
                INSERT INTO bookFile(bookId, path, position, size, modified, fingerprint) VALUES (?, '/old/1.mp3', 0, 10, 20, 'f')
                """, arguments: [db.lastInsertedRowID])
        }
        try queue.close()

        let library = try Library(path: path)
        // A fingerprint of today's kind: an older one is made again from the file, which is not there.
        let stamp = FileFingerprint(size: 10, modified: 20, value: "2:10:f")
        #expect(try library.unchangedFiles([("/old/1.mp3", stamp)]).isEmpty, "read again: its tags may have words")
        var file = track("/old/1.mp3")
        file.fingerprint = stamp
        file.lyrics = "[00:01.00]words"
        let book = try library.importBook(ImportedBook(sourcePath: "/old", albumKey: "", title: "Dune", author: nil,
                                                      coverPath: nil, files: [file]), into: nil).id
        #expect(try library.unchangedFiles([("/old/1.mp3", stamp)])["/old/1.mp3"]?.lyrics == "[00:01.00]words")
        let fileId = try #require(try library.files(of: book).first?.id)
        #expect(try library.lyrics(of: book) == [fileId: "[00:01.00]words"])
        // Read again without words: none kept.
        file.lyrics = nil
        file.fingerprint = FileFingerprint(size: 11, modified: 21, value: "g")
        _ = try library.importBook(ImportedBook(sourcePath: "/old", albumKey: "", title: "Dune", author: nil, coverPath: nil, files: [file]), into: nil)
        #expect(try library.lyrics(of: book).isEmpty)
    }
    @Test("A library of v15 gets v16: its sessions saved nothing by skip silence, and a negative figure is refused")
    func v16FromV15() throws {
        let (dir, path, queue) = try Self.library(migratedUpTo: "v15: a book's speech compressor")
        defer { dir.remove() }
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO listeningSession(title, startedAt, endedAt, fromPosition, toPosition, listened, content, speed)
                VALUES ('Dune', '2024-01-02 03:04:05.000', '2024-01-02 03:05:05.000', 0, 60000000, 60000000, 60000000, 1)
                """)
        }
        try queue.close()

        let library = try Library(path: path)
        #expect(try library.sessions().map(\.silence) == [0])
        #expect(try library.listeningStats().savedBySilence == 0)
        try library.close()
        let reopened = try DatabaseQueue(path: path)
        defer { try? reopened.close() }
        #expect(throws: DatabaseError.self) {
            try reopened.write { db in try db.execute(sql: "UPDATE listeningSession SET silence = -1") }
        }
    }

    @Test("A library of v18 gets v19: bookmarks and undo places kept, a stop's kind taken, every rule still held")
    func v19FromV18() throws {
        let (dir, path, queue) = try Self.library(migratedUpTo: "v18: an import makes its books' search rows in one pass")
        defer { dir.remove() }
        try queue.write { db in
            for title in ["Dune", "Emma"] {
                try db.execute(sql: "INSERT INTO book(title, addedAt, modifiedAt) VALUES (?, '2024-01-02 03:04:05.000', '2024-01-02 03:04:05.000')",
                               arguments: [title])
                try db.execute(sql: "INSERT INTO bookFile(bookId, path, position) VALUES (?, ?, 0)",
                               arguments: [db.lastInsertedRowID, "/old/\(title).mp3"])
            }
            for (kind, title) in [("user", "Sietch Tabr"), ("sleepTimer", "Sleep timer"), ("unplug", "Output unplugged")] {
                try db.execute(sql: """
                    INSERT INTO bookmark(bookId, fileId, offset, title, note, createdAt, kind)
                    VALUES (1, 1, 5000000, ?, 'a note', '2024-01-02 03:04:05.000', ?)
                    """, arguments: [title, kind])
            }
            try db.execute(sql: """
                INSERT INTO undoEntry(bookId, placeBookId, fileId, offset, kind, createdAt)
                VALUES (1, 1, 1, 7000000, 'chapter', '2024-01-02 03:04:05.000')
                """)
        }
        try queue.close()

        let library = try Library(path: path)
        #expect(try library.bookmarks(of: 1).map { "\($0.kind.rawValue) \($0.title) \($0.offset)" }
                == ["user Sietch Tabr 5000000", "sleepTimer Sleep timer 5000000", "unplug Output unplugged 5000000"])
        _ = try library.addBookmark(to: 1, file: 1, offset: 9_000_000, title: "Stopped", kind: .stop)
        try library.pushUndo(on: 1, placeBook: 1, file: 1, offset: 9_000_000, kind: "stop")
        #expect(try library.popUndo(of: 1).map { "\($0.kind) \($0.offset)" } == "stop 9000000")
        #expect(try library.popUndo(of: 1).map { "\($0.kind) \($0.offset)" } == "chapter 7000000")
        // The search row follows the bookmarks again (the triggers made anew with the table).
        _ = try library.addBookmark(to: 2, file: 2, offset: 0, title: "Highbury")
        #expect(try library.search("highbury", offset: 0, limit: 10).books.map(\.id) == [2])
        #expect(try library.search("sietch", offset: 0, limit: 10).books.map(\.id) == [1])
        try library.close()

        // A bookmark or an undo place naming another book's file is still refused; a book deleted takes its own.
        let reopened = try DatabaseQueue(path: path)
        defer { try? reopened.close() }
        #expect(throws: DatabaseError.self) {
            try reopened.write { db in
                try db.execute(sql: "INSERT INTO bookmark(bookId, fileId, offset, title, createdAt) VALUES (1, 2, 0, 'Wrong', '2024-01-02')")
            }
        }
        #expect(throws: DatabaseError.self) {
            try reopened.write { db in
                try db.execute(sql: "INSERT INTO undoEntry(bookId, placeBookId, fileId, offset, kind, createdAt) VALUES (1, 1, 2, 0, 'seek', '2024-01-02')")
            }
        }
        #expect(throws: DatabaseError.self) {
            try reopened.write { db in try db.execute(sql: "UPDATE bookmark SET kind = 'other'") }
        }
        try reopened.write { db in try db.execute(sql: "DELETE FROM book WHERE id = 2") }
        let (bookmarks, broken, integrity) = try reopened.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM bookmark"), try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count,
             try String.fetchOne(db, sql: "PRAGMA integrity_check"))
        }
        #expect(bookmarks == 4 && broken == 0 && integrity == "ok")
    }
}
