import Foundation
import GRDB
@testable import LecternLibrary
import Testing
import TestSupport

/// Many books imported in one transaction (`importBooks`, what an import does with its batches): a library a client
/// sees exactly as after the same books imported one at a time, each book's search row made once, and a book that
/// fails undone alone.
@Suite("Books imported many in a transaction")
struct ImportBatchTests {
    /// `count` one-file books as an m4b library has them: a folder, a title, an author and a file of its own each.
    static func oneFileBooks(_ count: Int, from first: Int = 0) -> [ImportedBook] {
        (first..<first + count).map { n in
            let folder = "/m4b/Book \(n)"
            return ImportedBook(sourcePath: folder, albumKey: "Saga \(n)", title: "Saga \(n) Wanderer", author: "Writer\(n % 7)",
                                coverPath: nil, files: [
                                    ImportedBook.File(path: folder + "/book.m4b", duration: 1_000_000 * Int64(n + 1), title: "Voyage\(n)",
                                                      artist: "Reader\(n % 5)", album: "Saga \(n)", genre: "Genre\(n % 3)",
                                                      chapters: [.init(title: "Opening", start: 0, end: 500_000)],
                                                      fingerprint: FileFingerprint(size: 1000 + Int64(n), modified: 1, value: "2:1000:\(n)")),
                                ])
        }
    }

    /// Every row a search reads, by book: the index's columns, Find's tags and the stored progress.
    static func searchRows(_ path: String) throws -> [String] {
        let reader = try DatabaseQueue(path: path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        return try reader.read { db in
            try String.fetchAll(db, sql: """
                SELECT b.id || '|' || b.title || '|' || s.author || '|' || ifnull(s.series, '') || '|' || s.album || '|'
                       || s.genre || '|' || s.files || '|' || t.author || '|' || t.album || '|' || t.genre || '|' || b.progress
                FROM book b JOIN bookSearch s ON s.rowid = b.id JOIN bookTags t ON t.bookId = b.id ORDER BY b.id
                """)
        }
    }

    /// The rows that differ from what the books' values make now, and the rows left deferred.
    static func drift(_ path: String) throws -> [Int] {
        let reader = try DatabaseQueue(path: path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        return try reader.read { db in
            let columns = ["title", "author", "narrator", "series", "album", "composer", "genre", "files", "notes"]
            let differing = try Int.fetchOne(db, sql: """
                SELECT count(*) FROM bookSearchText v LEFT JOIN bookSearch s ON s.rowid = v.id LEFT JOIN bookTags t ON t.bookId = v.id
                WHERE s.rowid IS NULL OR t.bookId IS NULL OR \(columns.map { "s.\($0) IS NOT v.\($0)" }.joined(separator: " OR "))
                """) ?? -1
            return [differing, try Int.fetchOne(db, sql: "SELECT count(*) FROM bookDeferred") ?? -1]
        }
    }

    /// Every column of `table`'s rows, quoted (a type of its own for each storage class), in the order of their ids.
    static func quotedRows(_ library: Library, _ table: String) throws -> [String] {
        try library.read { db in
            let columns = try db.columns(in: table).map { "quote(\"\($0.name)\")" }
            return try String.fetchAll(db, sql: "SELECT \(columns.joined(separator: " || '|' || ")) FROM \(table) ORDER BY id")
        }
    }

    @Test("An import's own INSERTs name every column the records write but the id")
    func rawInsertsNameEveryColumnOfTheRecords() throws {
        var books = Self.oneFileBooks(1)
        books[0].files[0].chapters = [.init(title: "One", start: 0, end: nil)]
        let test = try TestLibrary()
        _ = try test.library.importBooks(books, into: nil)
        let written: [(insert: Library.RawInsert, columns: [String])] = try test.library.read { db in
            [(.book, try Book.fetchOne(db)?.databaseDictionary.keys.sorted() ?? []),
             (.file, try BookFile.fetchOne(db)?.databaseDictionary.keys.sorted() ?? []),
             (.chapter, try Chapter.fetchOne(db)?.databaseDictionary.keys.sorted() ?? [])]
        }
        for (insert, columns) in written {
            #expect(insert.columns.sorted() == columns.filter { $0 != "id" }, "\(insert.table)")
        }
    }

    @Test("An import writes a new book's, file's and chapter's rows as GRDB's records write them")
    func rowsAsRecordsWriteThem() throws {
        var books = Self.oneFileBooks(3)
        books[0].coverPath = "/m4b/Book 0/cover.jpg"
        books[0].mountPath = "/"
        books[1].author = nil
        books[1].files[0] = ImportedBook.File(path: "/m4b/Book 1/book.mp3", title: nil, trackNumber: 3, discNumber: 1,
                                              chapters: [.init(title: "One", start: 0, end: nil), .init(title: "Two", start: 9, end: 12)],
                                              fingerprint: nil, lyrics: "[00:01.00]Words")
        let imported = try TestLibrary()
        let shelf = try imported.library.shelf(atPath: "Sagas")
        #expect(try imported.library.importBooks(books, into: shelf).outcomes.count == 3)
        // The same values written by GRDB from the records read back, in another library.
        let recorded = try TestLibrary()
        #expect(try recorded.library.shelf(atPath: "Sagas") == shelf)
        let (bookRows, fileRows, chapterRows) = try imported.library.read { db in
            (try Book.fetchAll(db), try BookFile.fetchAll(db), try Chapter.fetchAll(db))
        }
        try recorded.library.write { db in
            for var row in bookRows { try row.insert(db) }
            for var row in fileRows { try row.insert(db) }
            for var row in chapterRows { try row.insert(db) }
        }
        #expect(chapterRows.count == 4)
        for table in ["book", "bookFile", "chapter"] {
            #expect(try Self.quotedRows(imported.library, table) == Self.quotedRows(recorded.library, table), "\(table)")
        }
    }

    @Test("Many one-file books in one transaction are found by title, author, reader, file title and tags as one at a time")
    func batchedAsOneAtATime() throws {
        let books = Self.oneFileBooks(60)
        let single = try TestLibrary()
        let batched = try TestLibrary()
        let shelf = try batched.library.shelf(atPath: "Sagas/Long")
        #expect(try single.library.shelf(atPath: "Sagas/Long") == shelf)
        for book in books { _ = try single.library.importBook(book, into: shelf) }
        let written = try batched.library.importBooks(books, into: shelf)
        #expect(written.failure == nil)
        #expect(written.outcomes.count == books.count)
        #expect(written.outcomes.allSatisfy { $0.created && $0.duplicates.isEmpty })

        #expect(try Self.searchRows(batched.path) == Self.searchRows(single.path))
        #expect(try Self.searchRows(batched.path).count == books.count)
        #expect(try Self.drift(batched.path) == [0, 0])
        for library in [single.library, batched.library] {
            func found(_ text: String) throws -> [String] { try library.search(text, offset: 0, limit: 50).books.map(\.title) }
            #expect(try found("saga 17 wanderer") == ["Saga 17 Wanderer"], "the title")
            #expect(try found("voyage42") == ["Saga 42 Wanderer"], "the file's title")
            #expect(try found("writer3").count == 9, "the author: books 3, 10, 17 … 59")
            #expect(try found("reader4").count == 12, "the file's artist")
            #expect(try found("genre2").count == 20, "the genre")
            #expect(try found("long").count == 50, "the series (a page of 50 of the 60)")
            #expect(try library.search("", LibraryQuery(author: "writer5"), offset: 0, limit: 50).books.count == 8, "Find's tags: books 5, 12 … 54")
            let book = try #require(try library.search("saga 42", offset: 0, limit: 1).books.first)
            #expect(try library.chapters(of: book.id!).values.flatMap { $0 }.map(\.title) == ["Opening"])
        }
    }

    @Test("Each new book's search row is made once, after its files, and a later import of the same books writes none")
    func searchRowMadeOnce() throws {
        let t = try TestLibrary()
        try t.library.close()
        // Counts each book's rows of bookTags as they are made: bookTags is made from the book's search row just made.
        let raw = try DatabaseQueue(path: t.path)
        try raw.write { db in
            try db.execute(sql: """
                CREATE TABLE madeRows(bookId INTEGER);
                CREATE TRIGGER countMadeRows AFTER INSERT ON bookTags BEGIN INSERT INTO madeRows VALUES (NEW.bookId); END;
                """)
        }
        try raw.close()
        let library = try Library(path: t.path)
        let books = Self.oneFileBooks(20)
        #expect(try library.importBooks(Array(books[..<10]), into: nil).outcomes.count == 10)
        #expect(try library.importBook(books[10], into: nil).created)
        #expect(try library.importBooks(Array(books[11...]), into: nil).outcomes.count == 9)
        func made() throws -> [Int64: Int] {
            let rows = try DatabaseQueue(path: t.path).read { try Int64.fetchAll($0, sql: "SELECT bookId FROM madeRows") }
            return Dictionary(rows.map { ($0, 1) }, uniquingKeysWith: +)
        }
        let ids = try library.books(in: nil, recursive: true).map(\.id!)
        #expect(ids.count == 20)
        #expect(try made() == Dictionary(uniqueKeysWithValues: ids.map { ($0, 1) }))
        // The same books again: nothing they say changed, no row is made again.
        let again = try library.importBooks(books, into: nil)
        #expect(again.outcomes.map(\.created) == Array(repeating: false, count: 20))
        #expect(try made() == Dictionary(uniqueKeysWithValues: ids.map { ($0, 1) }))
        #expect(try Self.drift(t.path) == [0, 0])
    }

    @Test("A book that fails in the middle of a transaction is undone alone: the books before it are kept and searchable")
    func failureInTheMiddle() throws {
        let t = try TestLibrary()
        let library = t.library
        let good = Self.oneFileBooks(5)
        // One file twice (UNIQUE(bookId, path)): the book's row is written before its second file fails.
        var twice = importedBook("/m4b/Twice", title: "Twice Told", author: "Echo", paths: ["a.m4b"])
        twice.files.append(twice.files[0])
        let blank = importedBook("/m4b/Blank", title: " \n ")

        let first = try library.importBooks(Array(good[..<2]) + [twice] + Array(good[2...]), into: nil)
        #expect(first.outcomes.count == 2)
        #expect(first.failure?.index == 2)
        #expect(first.failure?.error.kind == .invalidArgument)
        let second = try library.importBooks([good[2], blank, good[3]], into: nil)
        #expect(second.outcomes.count == 1)
        #expect(second.failure?.index == 1)
        #expect(second.failure?.error.kind == .invalidArgument)
        #expect(try library.importBooks(Array(good[3...]), into: nil).outcomes.count == 2)

        #expect(try library.books(in: nil, recursive: true).map(\.title).sorted() == good.map(\.title).sorted())
        #expect(try library.search("twice", offset: 0, limit: 10).books.isEmpty)
        #expect(try library.search("echo", offset: 0, limit: 10).books.isEmpty)
        #expect(try library.search("wanderer", offset: 0, limit: 10).books.count == 5)
        #expect(try Self.drift(t.path) == [0, 0])
        let leftovers = try DatabaseQueue(path: t.path).read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM bookFile WHERE path LIKE '/m4b/Twice%' OR path LIKE '/m4b/Blank%'")
        }
        #expect(leftovers == 0)
        // The single-book call still throws the book's error.
        expectError(.invalidArgument) { try library.importBook(twice, into: nil) }
        expectError(.invalidArgument) { try library.importBook(blank, into: nil) }
    }

    @Test("A transaction ends after its time: the books after are written by the next, the library the same")
    func endsAfterItsTime() throws {
        let timed = try TestLibrary()
        let whole = try TestLibrary()
        let books = Self.oneFileBooks(12)
        var rest = books[...]
        var transactions = 0
        while !rest.isEmpty {
            let written = try timed.library.importBooks(Array(rest), into: nil, for: .zero)
            #expect(written.failure == nil)
            #expect(written.outcomes.count == 1, "a book at least, and with no time left, no more")
            rest = rest.dropFirst(written.outcomes.count)
            transactions += 1
        }
        #expect(transactions == 12)
        #expect(try whole.library.importBooks(books, into: nil).outcomes.count == 12)
        #expect(try Self.searchRows(timed.path) == Self.searchRows(whole.path))
    }

    @Test("A library of v16 gets v17: its books found as before, and books imported after it made once and found")
    func v17FromV16() throws {
        let (dir, path, queue) = try MigrationTests.library(migratedUpTo: "v16: skip silence")
        defer { dir.remove() }
        // Books written by v16's triggers: a row at the book's insert, made again at each file's.
        let (dune, duneFile) = try queue.write { db -> (Int64, Int64) in
            try db.execute(sql: """
                INSERT INTO book(title, author, sourcePath, albumKey, addedAt, modifiedAt)
                VALUES ('Dune', 'Frank Herbert', '/old/dune', 'Dune', '2024-01-02 03:04:05.000', '2024-01-02 03:04:05.000')
                """)
            let dune = db.lastInsertedRowID
            try db.execute(sql: "INSERT INTO bookFile(bookId, path, position, title, artist, duration) VALUES (?, '/old/dune/1.m4b', 0, 'Arrakis', 'Scott Brick', 4000000)",
                           arguments: [dune])
            let file = db.lastInsertedRowID
            try db.execute(sql: "UPDATE book SET positionFileId = ?, positionOffset = 1000000 WHERE id = ?", arguments: [file, dune])
            return (dune, file)
        }
        try queue.close()

        let library = try Library(path: path)
        #expect(try library.integrityCheck() == "ok")
        func found(_ text: String) throws -> [String] { try library.search(text, offset: 0, limit: 50).books.map(\.title).sorted() }
        #expect(try found("herbert") == ["Dune"])
        #expect(try found("arrakis") == ["Dune"])
        #expect(try found("scott brick") == ["Dune"])
        func progress() throws -> Double? {
            try DatabaseQueue(path: path).read { try Double.fetchOne($0, sql: "SELECT progress FROM book WHERE id = ?", arguments: [dune]) }
        }
        #expect(try progress() == 0.25)

        // After it: new books, and the old book found again with a second file, in one transaction.
        let dunePart2 = ImportedBook(sourcePath: "/old/dune", albumKey: "Dune", title: "Dune", author: "Frank Herbert", coverPath: nil,
                                     files: [track("/old/dune/1.m4b", duration: 4_000_000, title: "Arrakis", artist: "Scott Brick"),
                                             track("/old/dune/2.m4b", duration: 4_000_000, title: "Sietch", artist: "Scott Brick")])
        let written = try library.importBooks(Self.oneFileBooks(3) + [dunePart2], into: nil)
        #expect(written.failure == nil)
        #expect(written.outcomes.map(\.created) == [true, true, true, false])
        #expect(written.outcomes.last?.id == dune)
        #expect(try found("sietch") == ["Dune"])
        #expect(try found("wanderer") == ["Saga 0 Wanderer", "Saga 1 Wanderer", "Saga 2 Wanderer"])
        #expect(try library.files(of: dune).map(\.id).first == duneFile)
        // The place, 1 s into the first of now two files of 4 s.
        #expect(try progress() == 0.125)
        #expect(try Self.drift(path) == [0, 0])
    }

    @Test("Books found again with more files keep how far through they are: not started, at their place, finished")
    func progressOfBooksFoundAgain() throws {
        let t = try TestLibrary()
        func book(_ n: Int, files: Int) -> ImportedBook {
            ImportedBook(sourcePath: "/again/\(n)", albumKey: "", title: "Again \(n)", author: nil, coverPath: nil,
                         files: (0..<files).map { track("/again/\(n)/\($0).mp3", duration: 4_000_000) })
        }
        let ids = try t.library.importBooks((0..<3).map { book($0, files: 1) }, into: nil).outcomes.map(\.id)
        let placed = try #require(try t.library.files(of: ids[1]).first?.id)
        _ = try t.library.savePosition(of: ids[1], file: placed, offset: 1_000_000)
        try t.library.setFinished(ids[2], true)

        #expect(try t.library.importBooks((0..<3).map { book($0, files: 2) }, into: nil).outcomes.map(\.created) == [false, false, false])
        func titles(_ progress: LibraryQuery.Progress) throws -> [String] {
            try t.library.search("", LibraryQuery(progress: progress), offset: 0, limit: 10).books.map(\.title)
        }
        #expect(try titles(.notStarted) == ["Again 0"])
        #expect(try titles(.inProgress) == ["Again 1"])
        #expect(try titles(.finished) == ["Again 2"])
        #expect(try t.library.read { db in try Double.fetchAll(db, sql: "SELECT progress FROM book ORDER BY id") } == [0, 0.125, 1])
    }
}
