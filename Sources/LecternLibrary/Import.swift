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

        public init(path: String, duration: Int64? = nil, title: String? = nil, artist: String? = nil,
                    album: String? = nil, albumArtist: String? = nil, composer: String? = nil, genre: String? = nil,
                    trackNumber: Int64? = nil, discNumber: Int64? = nil, chapters: [ImportedChapter] = []) {
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

    public init(sourcePath: String, albumKey: String, title: String, author: String?, coverPath: String?, files: [File]) {
        self.sourcePath = sourcePath
        self.albumKey = albumKey
        self.title = title
        self.author = author
        self.coverPath = coverPath
        self.files = files
    }
}

extension Library {
    /// Adds the book, or, when the same folder (and album) was imported before, updates its files and tags
    /// without touching its position, bookmarks, settings, title or shelf (unless `shelf` is given).
    /// Files no longer found are marked unavailable, never deleted. Returns the book's id and whether it is new.
    public func importBook(_ imported: ImportedBook, into shelf: Int64?) throws -> (id: Int64, created: Bool) {
        let title = try Self.checkName(Self.prefix(imported.title, Limits.name), "a book's title")
        guard !imported.files.isEmpty else { throw LibraryError.invalidArgument("a book needs at least one file") }
        return try write { db in
            if let shelf { _ = try Self.existingShelf(db, shelf) }
            let now = Date()
            var book: Book
            let created: Bool
            if let existing = try Book.filter(Column("sourcePath") == imported.sourcePath && Column("albumKey") == imported.albumKey).fetchOne(db) {
                book = existing
                created = false
                if let shelf { book.shelfId = shelf }
                if book.coverPath == nil || !FileManager.default.fileExists(atPath: book.coverPath!) { book.coverPath = imported.coverPath }
                if book.author == nil { book.author = imported.author }
                book.modifiedAt = now
                try book.update(db)
            } else {
                let nextOrder = try Int64.fetchOne(db, sql: "SELECT ifnull(max(userOrder), 0) + 1 FROM book") ?? 1
                book = Book(id: nil, shelfId: shelf, title: title, author: imported.author, narrator: nil,
                            coverPath: imported.coverPath, sourcePath: imported.sourcePath, albumKey: imported.albumKey,
                            addedAt: now, modifiedAt: now, lastPlayedAt: nil, finished: false, note: "",
                            volume: 1, speed: 1, shuffle: false, loop: .none, positionFileId: nil, positionOffset: 0,
                            userOrder: nextOrder)
                try book.insert(db)
                created = true
            }
            let bookId = book.id!
            // The search index and progress made once, after every file (Schema v7's bookDeferred).
            try db.execute(sql: "INSERT OR IGNORE INTO bookDeferred(bookId) VALUES (?)", arguments: [bookId])
            var existing = Dictionary(uniqueKeysWithValues: try BookFile.filter(Column("bookId") == bookId).fetchAll(db).map { ($0.path, $0) })
            var nextPosition = (existing.values.map(\.position).max() ?? -1) + 1
            for file in imported.files {
                var record: BookFile
                if let known = existing.removeValue(forKey: file.path) {
                    record = known
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
                try record.save(db)
                try Chapter.filter(Column("fileId") == record.id!).deleteAll(db)
                for (index, chapter) in file.chapters.enumerated() {
                    var row = Chapter(id: nil, fileId: record.id!, position: Int64(index),
                                      title: Self.prefix(chapter.title, Limits.name), start: max(0, chapter.start),
                                      end: chapter.end.map { max($0, max(0, chapter.start)) })
                    try row.insert(db)
                }
            }
            for var gone in existing.values where gone.available {
                gone.available = false
                try gone.update(db)
            }
            try db.execute(sql: "DELETE FROM bookDeferred WHERE bookId = ?", arguments: [bookId])
            return (bookId, created)
        }
    }
}
