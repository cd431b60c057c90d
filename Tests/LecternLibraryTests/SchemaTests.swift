import Foundation
import LecternLibrary
import Testing
import TestSupport

@Suite("Schema and migrations")
struct SchemaTests {
    @Test("A new file gets every table, index, trigger and every migration")
    func newFileGetsEveryTable() async throws {
        let t = try TestLibrary()
        #expect(FileManager.default.fileExists(atPath: t.path))
        #expect(t.library.movedAsideCorruptFile == nil)
        #expect(try t.library.integrityCheck() == "ok")
        #expect(try t.library.bookCount() == 0)
        #expect(try t.library.allShelves().isEmpty)
        #expect(try t.library.currentBook() == nil)
        #expect(try t.library.everyBook(in: nil, recursive: true).isEmpty)

        guard let tables = try await sqlite3(t.path, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") else {
            Issue.record("sqlite3 is not installed: the schema was only checked through the API")
            return
        }
        #expect(tables == ["book", "bookDeferred", "bookFile", "bookSearch", "bookSearch_config", "bookSearch_content", "bookSearch_data",
                           "bookSearch_docsize", "bookSearch_idx", "bookTags", "bookmark", "chapter", "currentBook", "fileLyrics",
                           "finishedBook", "grdb_migrations", "listeningSession", "setting", "shelf", "shuffledFile", "undoEntry"])
        let named = try await sqlite3(t.path, "SELECT type || ' ' || name FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name")
        #expect(named == ["trigger bookDeferred_done", "index bookFile_fingerprint", "index bookFile_missing", "index bookFile_order", "index bookFile_path", "index bookFile_totals", "trigger bookProgress_fileDeleted", "trigger bookProgress_fileInserted",
                          "trigger bookProgress_fileUpdated", "trigger bookProgress_placeChanged", "trigger bookSearch_bookDeleted",
                          "trigger bookSearch_bookInserted", "trigger bookSearch_bookUpdated", "trigger bookSearch_bookmarkDeleted",
                          "trigger bookSearch_bookmarkInserted", "trigger bookSearch_bookmarkUpdated", "trigger bookSearch_fileDeleted",
                          "trigger bookSearch_fileInserted", "trigger bookSearch_fileUpdated", "trigger bookSearch_shelfUpdated",
                          "index book_added", "index book_author", "index book_modified", "index book_on_shelfId",
                          "index book_played", "trigger book_position_file", "index book_progress", "index book_series", "index book_source",
                          "index book_title", "index book_user_order", "trigger bookmark_file", "index bookmark_on_bookId",
                          "index chapter_on_fileId", "index finishedBook_at", "trigger finishedBook_marked",
                          "index listeningSession_book", "index listeningSession_started", "index shelf_name",
                          "trigger shuffledFile_file", "index undoEntry_book", "index undoEntry_file", "trigger undoEntry_file",
                          "index undoEntry_placeBook"])
        let views = try await sqlite3(t.path, "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name")
        #expect(views == ["bookProgress", "bookSearchText", "shelfTree"])
        #expect(try await sqlite3(t.path, "SELECT identifier FROM grdb_migrations") == ["v1: shelves, books, files, chapters, bookmarks",
                                                                                  "v2: indexes for the playlist orderings",
                                                                                  "v3: a book's shuffled play order",
                                                                                  "v4: the current book, a row that goes with its book",
                                                                                  "v5: a book's shuffled play order as rows",
                                                                                  "v6: a book's loop in Lectern's words",
                                                                                  "v7: full-text search",
                                                                                  "v8: file fingerprints",
                                                                                  "v9: missing files, offline books, one search row",
                                                                                  "v10: listening history and undo",
                                                                                  "v11: loudness",
                                                                                  "v12: lyrics from tags",
                                                                                  "v13: files' totals from an index",
                                                                                  "v14: skipped intros and outros",
                                                                                  "v15: a book's speech compressor",
                                                                                  "v16: skip silence",
                                                                                  "v17: an import's new books make their search rows once",
                                                                                  "v18: an import makes its books' search rows in one pass",
                                                                                  "v19: a stop's place kept",
                                                                                  "v20: series"])
        #expect(try await sqlite3(t.path, "PRAGMA journal_mode") == ["wal"])
    }

    @Test("An existing empty (0-byte) file is migrated like a new one")
    func emptyFileIsMigrated() throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let library = try Library(path: path)
        #expect(library.movedAsideCorruptFile == nil)
        #expect(try library.integrityCheck() == "ok")
        _ = try library.createShelf(named: "Works", in: nil)
        #expect(try library.allShelves().map(\.name) == ["Works"])
    }

    @Test("A missing directory is created")
    func missingDirectoryIsCreated() throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/a/b/c/library.sqlite"
        let library = try Library(path: path)
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(try library.integrityCheck() == "ok")
    }

    @Test("Reopening an existing file works and keeps every piece of data")
    func reopenKeepsData() async throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        let before: Snapshot
        let bookId: Int64
        do {
            let library = try Library(path: path)
            let shelf = try library.shelf(atPath: "Series/Discworld")
            bookId = try library.add(importedBook("/books/Mort", author: "Terry Pratchett", files: [
                track("/books/Mort/1.mp3", duration: 1_000_000, artist: "Tony Robinson",
                      chapters: [.init(title: "One", start: 0, end: 500_000), .init(title: "Two", start: 500_000, end: nil)]),
                track("/books/Mort/2.mp3", duration: nil),
            ]), into: shelf)
            let files = try library.fileIds(of: bookId)
            #expect(try library.savePosition(of: bookId, file: files[1], offset: 1234))
            _ = try library.addBookmark(to: bookId, file: files[0], offset: 10, title: "Death", note: "tall, dark")
            try library.setSettings(of: bookId, BookSettings(volume: 0.5, speed: 1.5, shuffle: true, loop: .chapter))
            try library.setNote(of: bookId, "read again")
            try library.setFinished(bookId, true)
            try library.markPlayed(bookId, at: Date(timeIntervalSince1970: 1_700_000_000))
            try library.setCurrentBook(bookId)
            before = try Snapshot(library)
        }
        // The pool is closed: the WAL was checkpointed into the file and removed.
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))

        let library = try Library(path: path)
        #expect(library.movedAsideCorruptFile == nil)
        #expect(try library.integrityCheck() == "ok")
        let after = try Snapshot(library)
        #expect(after == before)
        let book = try library.book(bookId)
        #expect(book.title == "Mort")
        #expect(book.note == "read again")
        #expect(book.settings == BookSettings(volume: 0.5, speed: 1.5, shuffle: true, loop: .chapter))
        #expect(book.finished)
        #expect(book.positionOffset == 1234)
        #expect(book.lastPlayedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(try library.currentBook() == bookId)
        // Still writable after reopening, and ids keep growing.
        let second = try library.add(importedBook("/books/Eric"))
        #expect(second > bookId)
        #expect(try library.bookCount() == 2)
        // Each migration ran once.
        if let migrations = try await sqlite3(path, "SELECT count(*) FROM grdb_migrations") { #expect(migrations == ["20"]) }
    }

    @Test("A file migrated by a newer version (an unknown later migration) still opens, with its data")
    func unknownLaterMigrationIsTolerated() async throws {
        guard Subprocess.findExecutable("sqlite3") != nil else {
            Issue.record("sqlite3 is not installed")
            return
        }
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        do {
            let library = try Library(path: path)
            try library.add(importedBook("/books/Mort"))
        }
        _ = try await sqlite3(path, "INSERT INTO grdb_migrations VALUES ('v99: from the future')")
        let library = try Library(path: path)
        #expect(library.movedAsideCorruptFile == nil)
        #expect(try library.everyBook(in: nil, recursive: true).map(\.title) == ["Mort"])
    }

    @Test("The in-memory library has the same schema and rules")
    func inMemory() throws {
        let library = try Library()
        #expect(try library.integrityCheck() == "ok")
        let shelf = try library.createShelf(named: "A", in: nil)
        expectError(.invalidArgument) { try library.createShelf(named: "A", in: nil) }
        let book = try library.add(importedBook("/x"), into: shelf.id)
        expectError(.invalidArgument) { try library.deleteShelf(shelf.id!, recursive: false) }
        #expect(try library.everyBook(in: shelf.id, recursive: false).map(\.id) == [book])
    }
}
