import Foundation
import GRDB

/// A book as an import found it on disk: what the files' tags say, in the default order.
public struct ImportedBook: Sendable, Equatable {
    public struct File: Sendable, Equatable {
        public var path: String
        public var duration: Int64?
        public var title, artist, album, albumArtist, composer, genre: String?
        public var trackNumber, discNumber: Int64?
        /// (title, start µs, end µs) within the file; empty = the file is one chapter.
        public var chapters: [ImportedChapter]
        /// The file's size, modification time and fingerprint when read; nil: known by its path alone.
        public var fingerprint: FileFingerprint?
        /// The words in its tags (LRC or plain text), checked by the importer; nil when none.
        public var lyrics: String?

        public init(path: String, duration: Int64? = nil, title: String? = nil, artist: String? = nil,
                    album: String? = nil, albumArtist: String? = nil, composer: String? = nil, genre: String? = nil,
                    trackNumber: Int64? = nil, discNumber: Int64? = nil, chapters: [ImportedChapter] = [],
                    fingerprint: FileFingerprint? = nil, lyrics: String? = nil) {
            self.path = path
            self.duration = duration
            self.title = title
            self.artist = artist
            self.album = album
            self.albumArtist = albumArtist
            self.composer = composer
            self.genre = genre
            self.trackNumber = trackNumber
            self.discNumber = discNumber
            self.chapters = chapters
            self.fingerprint = fingerprint
            self.lyrics = lyrics
        }
    }

    public struct ImportedChapter: Sendable, Equatable {
        public var title: String
        public var start: Int64
        public var end: Int64?
        public init(title: String, start: Int64, end: Int64?) { self.title = title; self.start = start; self.end = end }
    }

    /// The folder the book came from and the album tag that picked it out of the folder ("" = the whole folder).
    public var sourcePath: String
    public var albumKey: String
    public var title: String
    public var author: String?
    public var coverPath: String?
    public var files: [File]
    /// The mount `sourcePath` is on ("/" for the root file system); nil: not known.
    public var mountPath: String?
    /// The files are some of the book's, not all (one file imported or opened alone): the book is the one that has
    /// any of them, and its other files are left as they are, not marked missing.
    public var isPartial: Bool
    /// The series the book is in and its part, as its files' tags or its folders name them; a book that has a series
    /// already (set by hand, or by an import before) keeps its own.
    public var series: String?
    public var seriesPart: String?

    /// What ``Library/importBook(_:into:)`` did with it.
    public struct Outcome: Sendable, Equatable {
        /// The book: new, found again, or (every file a duplicate) the book that has them already.
        public var id: Int64
        public var created: Bool
        /// Files left out as duplicates: the same file (by its fingerprint) in another folder, still there.
        public var duplicates: [String]
    }

    public init(sourcePath: String, albumKey: String, title: String, author: String?, coverPath: String?, files: [File],
                mountPath: String? = nil, isPartial: Bool = false, series: String? = nil, seriesPart: String? = nil) {
        self.mountPath = mountPath
        self.isPartial = isPartial
        self.series = series
        self.seriesPart = seriesPart
        self.sourcePath = sourcePath
        self.albumKey = albumKey
        self.title = title
        self.author = author
        self.coverPath = coverPath
        self.files = files
    }
}

extension Library {
    /// Adds the book, or updates the book it is already (the same folder and album, or most of a book's files found
    /// again: by path, or by fingerprint for a file renamed or moved) without touching its position, bookmarks,
    /// settings, title or shelf (unless `shelf` is given). A file found at a new path keeps its row, and so its
    /// bookmarks and the position in it; the book takes the folder and album it was found in, and is not offline.
    /// Files no longer found are marked missing, never deleted; files found again are present. A file already in the
    /// book from another folder that is still there (a copy) is left out, and a book every file of which is such a
    /// copy is not imported again.
    public func importBook(_ imported: ImportedBook, into shelf: Int64?) throws -> ImportedBook.Outcome {
        let written = try importBooks([imported], into: shelf)
        if let failure = written.failure { throw failure.error }
        return written.outcomes[0]
    }

    /// What ``importBooks(_:into:for:)`` wrote: the books' outcomes, in order, and the book that could not be written.
    public struct ImportedBooks: Sendable {
        /// One for each book written, from the first: fewer than the books given when one failed or time ran out.
        public var outcomes: [ImportedBook.Outcome]
        /// The book after the last written, when it could not be (its title, its tags, a rule of the schema): nothing
        /// of it was written.
        public var failure: (index: Int, error: LibraryError)?
    }

    /// Imports `books` as ``importBook(_:into:)`` does each, in one transaction (a commit, and the search index's
    /// new entries merged, once for them all, not once a book): from the first, until one fails or 4/5 of `budget` has
    /// run out after a book (the rest is for the books' search rows, made after them). A book that fails is undone
    /// alone (a savepoint of its own), the books before it are written, and the rest are not:
    /// ``ImportedBooks/failure`` says which and why. A write that fails otherwise (the disk full) throws, and writes
    /// none of them. Each book's search row is made once, after every book (Schema v17, v18), for all of them in a
    /// few statements.
    public func importBooks(_ books: [ImportedBook], into shelf: Int64?, for budget: Duration? = nil) throws -> ImportedBooks {
        let start = ContinuousClock.now
        return try write { db in
            if let shelf { _ = try Self.existingShelf(db, shelf) }
            var written = ImportedBooks(outcomes: [], failure: nil)
            var order = UserOrder()
            // Books inserted while this row exists make no search row of their own: their rows of bookDeferred do.
            try Self.run(db, "INSERT INTO bookDeferred(bookId) VALUES (0)")
            for (index, imported) in books.enumerated() {
                // The books' own rows take 4/5 of the time; their search rows, made after them, the rest.
                if let budget, index > 0, ContinuousClock.now - start >= budget * 4 / 5 { break }
                do {
                    let title = try Self.checkName(Self.prefix(imported.title, Limits.name), "a book's title")
                    guard !imported.files.isEmpty else { throw LibraryError.invalidArgument("a book needs at least one file") }
                    // The book's savepoint, by statements prepared once (as ``run(_:_:_:)``'s): GRDB's `inSavepoint`
                    // prepares its own each time, which costs a one-file book more than any of its rows.
                    try Self.run(db, "SAVEPOINT importedBook")
                    let outcome: ImportedBook.Outcome
                    do {
                        outcome = try Self.importBook(db, imported, title: title, into: shelf, order: &order)
                        try Self.run(db, "RELEASE SAVEPOINT importedBook")
                    } catch {
                        try Self.run(db, "ROLLBACK TO SAVEPOINT importedBook")
                        try Self.run(db, "RELEASE SAVEPOINT importedBook")
                        throw error
                    }
                    written.outcomes.append(outcome)
                } catch let error as LibraryError {
                    written.failure = (index, error)
                    break
                } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                    written.failure = (index, Self.translate(error))
                    break
                }
            }
            // The search rows and progress of every book written, made together: the search index (FTS5) writes
            // its new entries when a statement ends, so that they are one segment of the index, not one a book; and
            // while the row of book 0 is there, deleting the books' rows makes nothing again (Schema v18).
            if !written.outcomes.isEmpty { try db.execute(sql: Schema.remakeDeferred) }
            try Self.run(db, "DELETE FROM bookDeferred WHERE bookId <> 0")
            try Self.run(db, "DELETE FROM bookDeferred WHERE bookId = 0")
            return written
        }
    }

    /// The "User" order of the books a transaction adds: each after the last, read once a transaction (the
    /// transaction's books are the only ones added meanwhile).
    private struct UserOrder {
        private var next: Int64?

        mutating func take(_ db: Database) throws -> Int64 {
            let order = try next ?? Int64.fetchOne(db.cachedStatement(sql: "SELECT ifnull(max(userOrder), 0) + 1 FROM book")) ?? 1
            next = order + 1
            return order
        }
    }

    /// ``importBook(_:into:)``'s write, in the caller's transaction; `title` checked.
    private static func importBook(_ db: Database, _ imported: ImportedBook, title: String, into shelf: Int64?,
                                   order: inout UserOrder) throws -> ImportedBook.Outcome {
        let known = try KnownFiles(db, imported.files)
        if let original = known.bookHoldingEveryFile() {
            return ImportedBook.Outcome(id: original, created: false, duplicates: imported.files.map(\.path))
        }
        let now = Date()
        var book: Book
        let created: Bool
        // Whether what the book says changed (its author, cover, files and their tags): what moves `modifiedAt`.
        // Where its files are (paths, present or missing, offline) is not what it says.
        var says = false
        if let existing = try Self.bookToUpdate(db, imported, known) {
            book = existing
            created = false
            if let shelf { book.shelfId = shelf }
            if book.coverPath == nil || !FileManager.default.fileExists(atPath: book.coverPath!) { book.coverPath = imported.coverPath }
            if book.author == nil { book.author = imported.author }
            if book.series == nil, let series = imported.series {
                (book.series, book.seriesPart) = (Self.prefix(series, Limits.name), imported.seriesPart.map { Self.prefix($0, 32) })
            }
            if !imported.isPartial && (book.sourcePath != imported.sourcePath || book.albumKey != imported.albumKey) {
                // Found by its files in another folder (moved) or under another album tag (re-tagged): no book
                // has the imported folder and album (bookToUpdate looked for that one first). Some of its files
                // say nothing of where the book is (one disc's folder of several).
                book.sourcePath = imported.sourcePath
                book.albumKey = imported.albumKey
            }
            // Found on disk: not offline, and on the mount it was found on.
            book.offline = false
            book.mountPath = imported.mountPath ?? book.mountPath
            says = book.author != existing.author || book.series != existing.series
                || book.coverPath.map(Self.fileName) != existing.coverPath.map(Self.fileName)
            try book.update(db)
        } else {
            book = Book(id: nil, shelfId: shelf, title: title, author: imported.author, narrator: nil,
                        coverPath: imported.coverPath, sourcePath: imported.sourcePath, albumKey: imported.albumKey,
                        addedAt: now, modifiedAt: now, lastPlayedAt: nil, finished: false, note: "",
                        volume: 1, speed: 1, shuffle: false, loop: .none, positionFileId: nil, positionOffset: 0,
                        userOrder: try order.take(db), mountPath: imported.mountPath)
            book.series = imported.series.map { Self.prefix($0, Limits.name) }
            book.seriesPart = imported.series == nil ? nil : imported.seriesPart.map { Self.prefix($0, 32) }
            book.id = try Self.insertNew(db, book)
            created = true
        }
        let bookId = book.id!
        // The search index and progress made once, after every book of the transaction (Schema v7's bookDeferred,
        // its rows deleted by ``importBooks(_:into:for:)``): a new book's, which its insert left to this row (v17),
        // and an old book's when a file of it is written (a book none of whose files changed makes no row again).
        var isDeferred = false
        func deferRows() throws {
            guard !isDeferred else { return }
            try Self.run(db, "INSERT OR IGNORE INTO bookDeferred(bookId) VALUES (?)", [bookId])
            isDeferred = true
        }
        if created { try deferRows() }
        let rows = created ? [] : try BookFile.fetchAll(db.cachedStatement(sql: "SELECT * FROM bookFile WHERE bookId = ?"), arguments: [bookId])
        let (files, duplicates) = known.leavingOutCopies(in: bookId, imported.files)
        guard !files.isEmpty else {
            if says && !created { try Self.touch(db, bookId) }
            return ImportedBook.Outcome(id: bookId, created: created, duplicates: duplicates)
        }
        let matched = known.match(files, to: rows)
        // Paths that change go through a name of their own first: files may have swapped names.
        for (path, row) in matched where row.path != path {
            try deferRows()
            try Self.run(db, "UPDATE bookFile SET path = ? WHERE id = ?", ["\u{1}moving \(row.id!)", row.id!])
        }
        var nextPosition = (rows.map(\.position).max() ?? -1) + 1
        for file in files {
            var record: BookFile
            if let known = matched[file.path] {
                record = known
                record.path = file.path
            } else {
                record = BookFile(id: nil, bookId: bookId, path: file.path, position: nextPosition, duration: nil,
                                  title: nil, artist: nil, album: nil, albumArtist: nil, composer: nil, genre: nil,
                                  trackNumber: nil, discNumber: nil, available: true)
                nextPosition += 1
            }
            record.duration = file.duration
            record.title = file.title.map { Self.prefix($0, Limits.name) }
            record.artist = file.artist
            record.album = file.album
            record.albumArtist = file.albumArtist
            record.composer = file.composer
            record.genre = file.genre
            record.trackNumber = file.trackNumber
            record.discNumber = file.discNumber
            record.available = true
            if let fingerprint = file.fingerprint {
                (record.size, record.modified, record.fingerprint) = (fingerprint.size, fingerprint.modified, fingerprint.value)
            }
            // The same row, fingerprint included: the same bytes, so the same chapters. Nothing to write (a rescan
            // of an unchanged folder writes no file).
            if let known = matched[file.path], record == known, record.fingerprint != nil { continue }
            try deferRows()
            // A new row has no chapters nor words yet (a row deleted before it took its own with it: foreign keys).
            let isNew = record.id == nil
            if isNew { record.id = try Self.insertNew(db, record) } else { try record.save(db) }
            let chapters = file.chapters.enumerated().map { index, chapter in
                Chapter(id: nil, fileId: record.id!, position: Int64(index), title: Self.prefix(chapter.title, Limits.name),
                        start: max(0, chapter.start), end: chapter.end.map { max($0, max(0, chapter.start)) })
            }
            let old = isNew ? [] : try Chapter.fetchAll(db.cachedStatement(sql: "SELECT * FROM chapter WHERE fileId = ? ORDER BY position"),
                                                        arguments: [record.id!])
            let oldLyrics = isNew ? nil : try String.fetchOne(db.cachedStatement(sql: "SELECT text FROM fileLyrics WHERE fileId = ?"),
                                                              arguments: [record.id!])
            says = says || matched[file.path].map { !$0.saysTheSame(as: record) } ?? true
                || old.map(\.said) != chapters.map(\.said) || oldLyrics != file.lyrics
            if !old.isEmpty { try Self.run(db, "DELETE FROM chapter WHERE fileId = ?", [record.id!]) }
            for chapter in chapters { try Self.insertNew(db, chapter) }
            if oldLyrics != nil { try Self.run(db, "DELETE FROM fileLyrics WHERE fileId = ?", [record.id!]) }
            if let lyrics = file.lyrics {
                try Self.run(db, "INSERT INTO fileLyrics(fileId, text) VALUES (?, ?)", [record.id!, lyrics])
            }
        }
        if says && !created { try Self.touch(db, bookId) }
        let kept = Set(matched.values.compactMap(\.id))
        for var gone in rows where !imported.isPartial && gone.available && !kept.contains(gone.id!) {
            gone.available = false
            try gone.update(db)
        }
        return ImportedBook.Outcome(id: bookId, created: created, duplicates: duplicates)
    }

    /// Runs `sql`, a statement an import runs for each book or file, prepared once per connection: preparing a
    /// statement compiles the triggers it fires (a book's search row, from the view `bookSearchText`), which cost an
    /// import of one-file books more than their writes.
    private static func run(_ db: Database, _ sql: String, _ arguments: StatementArguments = []) throws {
        try db.cachedStatement(sql: sql).execute(arguments: arguments)
    }

    /// Inserts `book` (no id yet) and returns its id. The row is the one GRDB's `insert` writes from the record (every
    /// column; the dates as ``StoredDate`` writes them), by a statement prepared once: encoding the record cost a
    /// one-file book about as much as its SQL.
    private static func insertNew(_ db: Database, _ book: Book) throws -> Int64 {
        try run(db, RawInsert.book.sql, [
            book.shelfId, book.title, book.author, book.narrator, book.coverPath, book.sourcePath, book.albumKey,
            StoredDate.text(book.addedAt), StoredDate.text(book.modifiedAt), book.lastPlayedAt.map(StoredDate.text),
            book.finished, book.note, book.volume, book.speed, book.shuffle, book.loop.rawValue, book.positionFileId,
            book.positionOffset, book.userOrder, book.offline, book.mountPath, book.normalise, book.loudness,
            book.loudnessProblem, book.skipIntro, book.skipOutro, book.compress, book.skipSilence, book.silenceThreshold,
            book.silenceAmount, book.series, book.seriesPart,
        ])
        return db.lastInsertedRowID
    }

    /// Inserts `file` (no id yet) as ``insertNew(_:_:)-(_,Book)`` inserts a book, and returns its id.
    private static func insertNew(_ db: Database, _ file: BookFile) throws -> Int64 {
        try run(db, RawInsert.file.sql, [
            file.bookId, file.path, file.position, file.duration, file.title, file.artist, file.album, file.albumArtist,
            file.composer, file.genre, file.trackNumber, file.discNumber, file.available, file.size, file.modified,
            file.fingerprint,
        ])
        return db.lastInsertedRowID
    }

    /// Inserts `chapter` (no id yet) as ``insertNew(_:_:)-(_,Book)`` inserts a book.
    private static func insertNew(_ db: Database, _ chapter: Chapter) throws {
        try run(db, RawInsert.chapter.sql, [chapter.fileId, chapter.position, chapter.title, chapter.start, chapter.end])
    }

    /// The statements of ``insertNew(_:_:)-(_,Book)`` and its twins: every column of the table but the id, in the
    /// order of the values they pass (a test holds the columns to the schema's).
    struct RawInsert {
        let table: String
        let columns: [String]
        /// `INSERT INTO table(columns) VALUES (?, …)`, the names quoted: made once, the key of its cached statement.
        let sql: String

        init(table: String, columns: [String]) {
            self.table = table
            self.columns = columns
            sql = "INSERT INTO \(table)(\(columns.map { "\"\($0)\"" }.joined(separator: ", "))) VALUES ("
                + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        }

        static let book = RawInsert(table: "book", columns: [
            "shelfId", "title", "author", "narrator", "coverPath", "sourcePath", "albumKey", "addedAt", "modifiedAt",
            "lastPlayedAt", "finished", "note", "volume", "speed", "shuffle", "loop", "positionFileId", "positionOffset",
            "userOrder", "offline", "mountPath", "normalise", "loudness", "loudnessProblem", "skipIntro", "skipOutro",
            "compress", "skipSilence", "silenceThreshold", "silenceAmount", "series", "seriesPart",
        ])
        static let file = RawInsert(table: "bookFile", columns: [
            "bookId", "path", "position", "duration", "title", "artist", "album", "albumArtist", "composer", "genre",
            "trackNumber", "discNumber", "available", "size", "modified", "fingerprint",
        ])
        static let chapter = RawInsert(table: "chapter", columns: ["fileId", "position", "title", "start", "end"])
        static let all = [book, file, chapter]
    }

    private static func fileName(_ path: String) -> String { (path as NSString).lastPathComponent }

    /// The book `imported` updates: the one from the same folder and album, else the one most of whose files it
    /// holds (more than half of them, by path or moved; any of them when `imported` is partial); nil for a new book.
    private static func bookToUpdate(_ db: Database, _ imported: ImportedBook, _ known: KnownFiles) throws -> Book? {
        let sameSource = try db.cachedStatement(sql: "SELECT * FROM book WHERE sourcePath = ? AND albumKey = ?")
        if let same = try Book.fetchOne(sameSource, arguments: [imported.sourcePath, imported.albumKey]) {
            return same
        }
        for (book, files) in known.booksByFilesFound() {
            let count = try BookFile.filter(Column("bookId") == book).fetchCount(db)
            if imported.isPartial || files * 2 > count { return try Book.fetchOne(db, key: book) }
        }
        return nil
    }

    /// What the library holds of the file at `path` when it is as an import last read it (the same size and
    /// modification time as `stamp`): its tags, chapters and fingerprint, so that it need not be read again.
    /// Looked up for many files in one read.
    /// A stored fingerprint of an older kind (``FileFingerprint/isCurrent(_:path:)``) is made again here (a few reads, no
    /// media reader), and the new one stored with the file by the import.
    public func unchangedFiles(_ stamps: [(path: String, stamp: FileFingerprint)]) throws -> [String: ImportedBook.File] {
        var found = try storedFiles(stamps)
        for (path, file) in found where !(file.fingerprint?.value.map { FileFingerprint.isCurrent($0, path: path) } ?? false) {
            let now = FileFingerprint.of(path)
            found[path]?.fingerprint = now
            // Changed since the stat: read again.
            if now?.size != file.fingerprint?.size || now?.modified != file.fingerprint?.modified { found[path] = nil }
        }
        return found
    }

    private func storedFiles(_ stamps: [(path: String, stamp: FileFingerprint)]) throws -> [String: ImportedBook.File] {
        try read { db in
            let statement = try db.cachedStatement(sql: """
                SELECT * FROM bookFile WHERE path = ? AND size = ? AND modified = ? AND fingerprint IS NOT NULL
                ORDER BY available DESC, id DESC LIMIT 1
                """)
            var found: [String: ImportedBook.File] = [:]
            for (path, stamp) in stamps {
                guard let row = try BookFile.fetchOne(statement, arguments: [path, stamp.size, stamp.modified]) else { continue }
                found[path] = try Self.imported(db, row)
            }
            return found
        }
    }

    /// The present files of book `id` as an import gives them (tags, chapters, fingerprint), in the book's order.
    public func importedFiles(ofBook id: Int64) throws -> [ImportedBook.File] {
        try read { db in
            try BookFile.filter(Column("bookId") == id && Column("available") == true).order(Column("position"))
                .fetchAll(db).map { try Self.imported(db, $0) }
        }
    }

    /// `row` as the import that wrote it gave it.
    private static func imported(_ db: Database, _ row: BookFile) throws -> ImportedBook.File {
        let chapters = try Chapter.filter(Column("fileId") == row.id!).order(Column("position")).fetchAll(db)
        let lyrics = try String.fetchOne(db, sql: "SELECT text FROM fileLyrics WHERE fileId = ?", arguments: [row.id!])
        return ImportedBook.File(
            path: row.path, duration: row.duration, title: row.title, artist: row.artist, album: row.album,
            albumArtist: row.albumArtist, composer: row.composer, genre: row.genre, trackNumber: row.trackNumber,
            discNumber: row.discNumber, chapters: chapters.map { .init(title: $0.title, start: $0.start, end: $0.end) },
            fingerprint: FileFingerprint(size: row.size ?? 0, modified: row.modified ?? 0, value: row.fingerprint),
            lyrics: lyrics)
    }
}

private extension BookFile {
    /// Whether `other` says what this file says: its tags and duration (not where it is, nor whether it is there).
    func saysTheSame(as other: BookFile) -> Bool {
        duration == other.duration && title == other.title && artist == other.artist && album == other.album
            && albumArtist == other.albumArtist && composer == other.composer && genre == other.genre
            && trackNumber == other.trackNumber && discNumber == other.discNumber
    }
}

private extension Chapter {
    /// The chapter without its row's id: what it says.
    var said: Chapter { Chapter(id: nil, fileId: fileId, position: position, title: title, start: start, end: end) }
}
