import Foundation
import GRDB

// Books: their files, chapters, names, places on the shelves, and per-book settings.
extension Library {
    /// The books on a shelf (nil = top level), and on the shelves below it when `recursive`.
    public func books(in shelf: Int64?, recursive: Bool) throws -> [Book] {
        try read { db in
            var request = Book.all()
            if let shelf {
                _ = try Self.existingShelf(db, shelf)
                let shelves = recursive ? try Self.descendantShelves(db, of: shelf) + [shelf] : [shelf]
                request = request.filter(shelves.contains(Column("shelfId")))
            } else if !recursive {
                request = request.filter(Column("shelfId") == nil)
            }
            return try request.order(Column("title").collating(.localizedCaseInsensitiveCompare)).fetchAll(db)
        }
    }

    /// The folder of the book `path` lies in (the outermost, when books nest): a change in a book's sub-folder (one
    /// disc of several) is that book's, and reading the sub-folder alone would make a book of its files only. Nil
    /// when `path` is in no book's folder.
    public func bookFolder(enclosing path: String) throws -> String? {
        try read { db in
            try String.fetchOne(db, sql: """
                SELECT sourcePath FROM book
                WHERE sourcePath = ?1 OR (sourcePath <> '/' AND substr(?1, 1, length(sourcePath) + 1) = sourcePath || '/')
                ORDER BY length(sourcePath) LIMIT 1
                """, arguments: [path])
        }
    }

    public func book(_ id: Int64) throws -> Book {
        try read { db in try Self.existingBook(db, id) }
    }

    static func existingBook(_ db: Database, _ id: Int64) throws -> Book {
        guard let book = try Book.fetchOne(db, key: id) else { throw LibraryError.notFound("no book \(id)") }
        return book
    }

    /// The book's files in their order.
    public func files(of book: Int64) throws -> [BookFile] {
        try read { db in
            _ = try Self.existingBook(db, book)
            return try BookFile.filter(Column("bookId") == book).order(Column("position")).fetchAll(db)
        }
    }

    /// The file of one of `books` that the file at `path` is: the one at that path, else one with the fingerprint
    /// `fingerprint` (a copy of it that an import left out). Nil when none of them has it.
    public func file(at path: String, fingerprint: String?, in books: [Int64]) throws -> BookFile? {
        try read { db in
            let ofBooks = BookFile.filter(books.contains(Column("bookId")))
            if let file = try ofBooks.filter(Column("path") == path).fetchOne(db) { return file }
            guard let fingerprint else { return nil }
            return try ofBooks.filter(Column("fingerprint") == fingerprint).order(Column("available").desc, Column("id")).fetchOne(db)
        }
    }

    /// The book's chapters, by file id, in order.
    public func chapters(of book: Int64) throws -> [Int64: [Chapter]] {
        try read { db in
            _ = try Self.existingBook(db, book)
            let chapters = try Chapter.fetchAll(db, sql: """
                SELECT chapter.* FROM chapter JOIN bookFile ON bookFile.id = chapter.fileId
                WHERE bookFile.bookId = ? ORDER BY chapter.fileId, chapter.position
                """, arguments: [book])
            return Dictionary(grouping: chapters, by: \.fileId)
        }
    }

    /// The words the tags of the book's files carry (LRC or plain text), by file id; files without are left out.
    public func lyrics(of book: Int64) throws -> [Int64: String] {
        try read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT fileLyrics.fileId, fileLyrics.text FROM fileLyrics JOIN bookFile ON bookFile.id = fileLyrics.fileId
                WHERE bookFile.bookId = ?
                """, arguments: [book])
            return Dictionary(uniqueKeysWithValues: rows.map { ($0[0] as Int64, $0[1] as String) })
        }
    }

    public func renameBook(_ id: Int64, to title: String) throws {
        let title = try Self.checkName(title, "a book's title")
        try updateBook(id) { $0.title = title }
    }

    public func moveBook(_ id: Int64, to shelf: Int64?) throws {
        try write { db in
            if let shelf { _ = try Self.existingShelf(db, shelf) }
            var book = try Self.existingBook(db, id)
            book.shelfId = shelf
            book.modifiedAt = Date()
            try book.update(db)
        }
    }

    /// Puts every book on `shelf` (and below it when `recursive`, as ``books(in:recursive:matching:sortedBy:offset:limit:)``
    /// lists them) that matches `query` on `target` (nil = the top level), all in one transaction: only their shelf
    /// changes (places, bookmarks, settings and history stay). The ids of the books moved, those already on `target`
    /// left out. NotFound for a shelf that does not exist: nothing is moved.
    public func moveBooks(in shelf: Int64?, recursive: Bool, matching query: LibraryQuery, to target: Int64?) throws -> [Int64] {
        try write { db in
            if let target { _ = try Self.existingShelf(db, target) }
            let (from, condition, arguments) = try Self.matching(query, in: shelf, recursive: recursive, db)
            let moving = "SELECT b.id FROM \(from) WHERE \(condition) AND b.shelfId IS NOT ?"
            let ids = try Int64.fetchAll(db, sql: moving + " ORDER BY b.id", arguments: arguments + [target])
            try db.execute(sql: "UPDATE book SET shelfId = ?, modifiedAt = ? WHERE id IN (\(moving))",
                           arguments: [target, StoredDate.text(Date())] + arguments + [target])
            return ids
        }
    }

    public func deleteBook(_ id: Int64) throws {
        try write { db in
            _ = try Self.existingBook(db, id)
            try Book.deleteOne(db, key: id)
        }
    }

    /// Puts the book's files in the order of `fileIds`, which must name each of its files once.
    public func reorderFiles(of book: Int64, _ fileIds: [Int64]) throws {
        try write { db in
            _ = try Self.existingBook(db, book)
            let current = try Int64.fetchAll(db, sql: "SELECT id FROM bookFile WHERE bookId = ?", arguments: [book])
            guard Set(current) == Set(fileIds), current.count == fileIds.count else {
                throw LibraryError.invalidArgument("the new order must name each of the book's \(current.count) files exactly once")
            }
            for (index, file) in fileIds.enumerated() {
                try db.execute(sql: "UPDATE bookFile SET position = ? WHERE id = ?", arguments: [-1 - index, file])
            }
            try db.execute(sql: "UPDATE bookFile SET position = -1 - position WHERE bookId = ?", arguments: [book])
            try Self.touch(db, book)
        }
    }

    public func setSettings(of book: Int64, _ settings: BookSettings) throws {
        guard settings.volume.isFinite, (0...10).contains(settings.volume) else {
            throw LibraryError.invalidArgument("volume must be between 0 and 10")
        }
        guard settings.speed.isFinite, (0.5...3).contains(settings.speed) else {
            throw LibraryError.invalidArgument("speed must be between 0.5 and 3")
        }
        for (name, seconds) in [("skip_intro", settings.skipIntro), ("skip_outro", settings.skipOutro)]
        where !(seconds.isFinite && (0...BookSettings.maximumSkip).contains(seconds)) {
            throw LibraryError.invalidArgument("\(name) must be between 0 and \(Int(BookSettings.maximumSkip)) seconds")
        }
        guard settings.silenceThreshold.isFinite, BookSettings.silenceThresholds.contains(settings.silenceThreshold) else {
            throw LibraryError.invalidArgument("silence_threshold must be between 0.1 and 10 seconds")
        }
        guard settings.silenceAmount.isFinite, BookSettings.silenceAmounts.contains(settings.silenceAmount) else {
            throw LibraryError.invalidArgument("silence_amount must be between 0.1 and 1")
        }
        try updateBook(book, touching: false) { $0.settings = settings }
    }

    /// Keeps the book's measured loudness (LUFS), or why it could not be measured.
    public func setLoudness(of book: Int64, _ measured: Result<Double, LoudnessProblem>) throws {
        try updateBook(book, touching: false) { book in
            switch measured {
            case .success(let loudness): book.loudness = loudness; book.loudnessProblem = nil
            case .failure(let problem): book.loudness = nil; book.loudnessProblem = problem.reason
            }
        }
    }

    /// The book's shuffled play order as kept (its file ids), until it is reshuffled; empty when none is kept.
    public func shuffleOrder(of book: Int64) throws -> [Int64] {
        try read { db in
            _ = try Self.existingBook(db, book)
            return try Int64.fetchAll(db, sql: "SELECT fileId FROM shuffledFile WHERE bookId = ? ORDER BY position",
                                      arguments: [book])
        }
    }

    /// Keeps the book's shuffled play order: files of the book, each once; empty to forget it.
    public func setShuffleOrder(of book: Int64, _ fileIds: [Int64]) throws {
        try write { db in
            _ = try Self.existingBook(db, book)
            let files = Set(try Int64.fetchAll(db, sql: "SELECT id FROM bookFile WHERE bookId = ?", arguments: [book]))
            guard fileIds.allSatisfy(files.contains), Set(fileIds).count == fileIds.count else {
                throw LibraryError.invalidArgument("the shuffled order must name files of the book, each once")
            }
            try db.execute(sql: "DELETE FROM shuffledFile WHERE bookId = ?", arguments: [book])
            let insert = try db.makeStatement(sql: "INSERT INTO shuffledFile(bookId, position, fileId) VALUES (?, ?, ?)")
            for (position, file) in fileIds.enumerated() {
                try insert.execute(arguments: [book, position, file])
            }
        }
    }

    /// Puts the book in `series` at `part` ("2", "2.5"; nil: no part), or in none (`series` nil or blank), by hand: an
    /// import then keeps it. Names are trimmed; a part without a series is refused.
    public func setSeries(of book: Int64, _ series: String?, part: String?) throws {
        let name = try series.map(Self.trimmed).flatMap { $0.isEmpty ? nil : try Self.checkName($0, "a series") }
        let part = part.map(Self.trimmed).flatMap { $0.isEmpty ? nil : $0 }
        guard name != nil || part == nil else { throw LibraryError.invalidArgument("a part needs a series") }
        guard (part?.unicodeScalars.count ?? 0) <= 32 else { throw LibraryError.invalidArgument("a part in a series is at most 32 characters") }
        try updateBook(book) { ($0.series, $0.seriesPart) = (name, part) }
    }

    /// Every series, by name (case-insensitively), with how many books it has.
    public func allSeries() throws -> [(name: String, books: Int)] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT min(series), count(*) FROM book WHERE series IS NOT NULL
                GROUP BY series COLLATE NOCASE ORDER BY series COLLATE NOCASE
                """).map { (name: $0[0], books: $0[1]) }
        }
    }

    /// The first book after `book` in its series (in ``BookSort/series`` order) that is not finished; nil when it is in
    /// none, or none after it is left.
    public func nextInSeries(after book: Int64) throws -> Int64? {
        try read { db in
            let ordered = try Row.fetchAll(db, sql: """
                SELECT b.id, b.finished FROM book b WHERE b.series = (SELECT series FROM book WHERE id = ?) COLLATE NOCASE
                ORDER BY \(BookSort.series.orderBy(of: "b"))
                """, arguments: [book]).map { (id: $0[0] as Int64, finished: $0[1] as Bool) }
            guard let index = ordered.firstIndex(where: { $0.id == book }) else { return nil }
            return ordered[(index + 1)...].first { !$0.finished }?.id
        }
    }

    public func setNote(of book: Int64, _ note: String) throws {
        try Self.checkNote(note)
        try updateBook(book) { $0.note = note }
    }

    public func setFinished(_ book: Int64, _ finished: Bool) throws {
        try updateBook(book, touching: false) { $0.finished = finished }
    }

    private func updateBook(_ id: Int64, touching: Bool = true, _ change: (inout Book) -> Void) throws {
        try write { db in
            var book = try Self.existingBook(db, id)
            let before = book
            change(&book)
            guard book != before else { return }
            if touching { book.modifiedAt = Date() }
            try book.update(db)
        }
    }

    /// Notes that `book` changed now (its `modifiedAt`).
    static func touch(_ db: Database, _ book: Int64) throws {
        try db.execute(sql: "UPDATE book SET modifiedAt = ? WHERE id = ?", arguments: [StoredDate.text(Date()), book])
    }
}
